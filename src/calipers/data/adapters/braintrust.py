"""Braintrust experiment exports, in the documented shape of an experiment's events (no
Braintrust release runs offline, so this is read from the documentation, not checked against
the tool): what `GET /v1/experiment/{id}/fetch` returns, `{"events": [...]}`
(https://www.braintrust.dev/docs/api-reference/experiments/fetch-experiment-get-form), the same
events as a JSON array (the UI's experiment export, https://braintrust.dev/docs/annotate/export),
or one event per line. An event (ExperimentEvent) has id, span_id, root_span_id, span_parents,
is_root, input, output, expected, error, scores ({name: number or null}), metadata, metrics
(start, end, prompt_tokens, completion_tokens, tokens), span_attributes {name, type}, created,
experiment_id and dataset_record_id. An experiment logs one trace per test case: the root span
holds its input, output, expected and scores; child spans (the task, LLM calls, scorers) hold
the rest.

One sample per root span (`is_root`, else `span_id == root_span_id`, else no span_parents). `run`
is the file's stem (the events name no experiment, only its id: save the export under the
experiment's name, or pass --as); `task` is `braintrust`; `sample_id` hashes the root's input, as
Braintrust matches test cases across experiments by input; a case run again (`trial_count`) is
epochs 0, 1, … in file order. `scores` are the root's finite scores (null: the scorer gave none);
tokens are the root's metrics, else the sum over the trace's `llm` spans; `latency_s` is the
root's end − start; `error` the root's error. Not imported: metadata, tags, the child spans'
inputs and outputs, and the scorer spans' own scores (Braintrust copies them to the root).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from calipers.data.adapters.jsonfile import first_json_line, json_line, load_json
from calipers.data.adapters.values import Notes, Rows, is_number
from calipers.errors import InputError

TASK = "braintrust"
_HINT = (
    "Pass a Braintrust experiment's events: the UI's experiment export (JSON), or what "
    'GET /v1/experiment/<id>/fetch returns ({"events": [...]}).'
)
_HEAD = re.compile(r'^\s*(?:\{\s*"events"\s*:\s*)?\[\s*\{')
_SPAN = ('"span_id"', '"root_span_id"')


def detect(path: Path) -> bool:
    """A .json of experiment events, or JSON Lines whose first line is one."""
    name = path.name.lower()
    try:
        if not path.is_file():
            return False
        if name.endswith(".json"):
            with path.open(encoding="utf-8", errors="replace") as f:
                head = f.read(8192)
            return _HEAD.match(head) is not None and all(k in head for k in _SPAN)
        if name.endswith(".jsonl") or name.endswith(".ndjson"):
            first = first_json_line(path)
            return isinstance(first, dict) and "span_id" in first and "root_span_id" in first
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return False
    return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per root span."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a Braintrust export", hint=_HINT)
    events = _events(path)
    roots = [(where, e) for where, e in events if _is_root(e)]
    if not roots:
        raise InputError(f"{path}: holds no root spans (no test case)", hint=_HINT)
    llm: dict[str, list[dict[str, Any]]] = {}
    for _, event in events:
        if _dict(event, "span_attributes").get("type") == "llm":
            llm.setdefault(str(event.get("root_span_id")), []).append(_dict(event, "metrics"))
    notes = Notes()
    run = Path(path.name.removesuffix(".gz")).stem or path.name
    seen: dict[str, int] = {}
    rows = []
    for where, root in roots:
        if "input" not in root:
            raise InputError(f"{path}, {where}, field 'input': missing on a root span",
                             hint=_HINT)  # fmt: skip
        key = json.dumps(root["input"], sort_keys=True, ensure_ascii=False)
        sample = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
        epoch = seen.get(sample, 0)
        seen[sample] = epoch + 1
        row: dict[str, Any] = {"run": run, "task": TASK, "sample_id": sample, "epoch": epoch}
        for field in ("input", "output", "expected"):
            if root.get(field) is not None:
                value = root[field]
                row[field] = value if isinstance(value, str) else json.dumps(value)
        if root.get("error") not in (None, ""):
            error = root["error"]
            row["error"] = error if isinstance(error, str) else json.dumps(error)
        scores_in = root.get("scores") or {}
        if not isinstance(scores_in, dict):
            raise InputError(f"{path}, {where}, field 'scores': expected an object",
                             hint=_HINT)  # fmt: skip
        scores = {
            str(k): s for k, v in scores_in.items()
            if (s := notes.score(path, str(k), v, where)) is not None
        }  # fmt: skip
        if scores:
            row["scores"] = scores
        metrics = _dict(root, "metrics")
        spans = llm.get(str(root.get("root_span_id")), [])
        for field, name in (("tokens_in", "prompt_tokens"), ("tokens_out", "completion_tokens")):
            count = _count(metrics.get(name), spans, name)
            if count is not None:
                row[field] = count
        latency = _latency(metrics.get("start"), metrics.get("end"))
        if latency is not None:
            row["latency_s"] = latency
        rows.append(row)
    return Rows(rows, notes.lines())


def _events(path: Path) -> list[tuple[str, dict[str, Any]]]:
    if path.name.lower().endswith(".json"):
        data = load_json(path, cut_short="a partial download", hint=_HINT)
        if isinstance(data, dict) and isinstance(data.get("events"), list):
            data = data["events"]
        if not isinstance(data, list):
            raise InputError(f"{path}: not Braintrust events (expected {{\"events\": [...]}} or "
                             "an array of events)", hint=_HINT)  # fmt: skip
        items = [(f"event {i}", e) for i, e in enumerate(data)]
    else:
        items = []
        with path.open(encoding="utf-8") as f:
            for number, text in enumerate(f, start=1):
                if text.strip():
                    items.append(
                        (
                            f"line {number}",
                            json_line(path, number, text, cut_short="a partial copy"),
                        )
                    )
    for where, event in items:
        if not isinstance(event, dict) or "span_id" not in event:
            raise InputError(f"{path}, {where}: not an experiment event (no span_id)", hint=_HINT)
    return items


def _latency(start: Any, end: Any) -> float | None:
    if is_number(start) and is_number(end) and float(end) >= float(start):
        return float(end) - float(start)
    return None


def _is_root(event: dict[str, Any]) -> bool:
    if isinstance(event.get("is_root"), bool):
        return bool(event["is_root"])
    if event.get("root_span_id") is not None:
        return bool(event.get("span_id") == event.get("root_span_id"))
    return not event.get("span_parents")


def _count(value: Any, spans: list[dict[str, Any]], name: str) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    counts = [m.get(name) for m in spans]
    whole = [c for c in counts if isinstance(c, int) and not isinstance(c, bool) and c >= 0]
    return sum(whole) if whole and len(whole) == len(counts) else None


def _dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, dict) else {}
