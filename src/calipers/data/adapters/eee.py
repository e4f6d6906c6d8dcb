"""Every Eval Ever (EEE) instance-level results (checked with every-eval-ever 0.3.0, schema
0.3.0): `<uuid>_samples.jsonl`, one record per sample and aggregate result
(instance_level_eval.schema.json): schema_version, evaluation_id, model_id, evaluation_name,
evaluation_result_id (the aggregate result it scores, e.g. `acc`), sample_id, interaction_type,
input {raw, reference[], choices}, output {raw[]} or messages[], evaluation {score, is_correct,
tool_calls_count}, token_usage, performance {latency_ms}, error, metadata.

One sample per model × evaluation × sample id: its records (one per aggregate result) are merged,
each score under its `evaluation_result_id` (`score` where a record names none). `run` is the
model_id, `task` the evaluation_name, epoch 0 (EEE has no repeats; calipers' export writes an
epoch other than 0 into metadata, `calipers.epoch`, and that is read back). `correct` is
`is_correct` where the file scores one result per sample (with several, each result has its own
is_correct, and no single outcome is the sample's); a record written by `calipers export --format
eee` says in its metadata (`calipers.correct`) whether calipers had one, and that is read back.
`output` is output.raw (one answer as text, several as a JSON list) or, for multi-turn and
agentic records, the last assistant message; `input` is input.raw, `expected` the references
(one as text, several as a JSON list); tokens, latency (ms → s), tool_calls_count and the error
as written. The aggregate file (`<uuid>.json`) holds no samples: it is named and skipped
(`manifests`). Not imported: formatted prompts, choices, answer attribution, reasoning traces,
sample hashes and the rest of metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from calipers.data.adapters import values
from calipers.data.adapters.jsonfile import first_json_line, json_line
from calipers.data.adapters.values import Notes, Rows
from calipers.errors import InputError

_HINT = (
    "Pass Every Eval Ever's instance-level JSON Lines (<uuid>_samples.jsonl, written by "
    "`every_eval_ever convert … --include_samples` or `calipers export --format eee`)."
)
_KEYS = ("schema_version", "evaluation_id", "model_id", "evaluation_name", "sample_id",
         "evaluation")  # fmt: skip
CORRECT = "calipers.correct"  # metadata of calipers' own export: "true", "false" or "none"
EPOCH = "calipers.epoch"  # … and an observation's epoch, where not 0


def detect(path: Path) -> bool:
    """A JSON Lines file whose first line is an EEE instance record."""
    name = path.name.lower()
    if not (name.endswith(".jsonl") or name.endswith(".ndjson")) or not path.is_file():
        return False
    try:
        first = first_json_line(path)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(first, dict) and all(k in first for k in _KEYS)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per model × evaluation × sample id."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not EEE instance-level results", hint=_HINT)
    merged: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    outcomes: dict[tuple[str, str, str, int], list[tuple[bool, bool | None]]] = {}
    metrics: set[tuple[str, str, str, int, str]] = set()  # (run, task, sample, result)
    notes = Notes()
    try:
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                record = json_line(path, number, line, cut_short="a partial copy")
                where = f"{path}, line {number}"
                if not isinstance(record, dict) or not all(k in record for k in _KEYS):
                    raise InputError(
                        f"{where}: not an EEE instance record (expected an object with "
                        f"{', '.join(_KEYS)})",
                        hint=_HINT,
                    )
                _merge(record, (path, number), merged, outcomes, metrics, notes)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason})", hint=_HINT) from None
    if not merged:
        raise InputError(f"{path}: holds no instance records", hint=_HINT)
    results = {m[4] for m in metrics}
    rows = []
    for key, row in merged.items():
        seen = outcomes[key]
        exported = {value for own, value in seen if own}  # calipers' own `correct`, on each
        if len(exported) == 1:
            value = exported.pop()
        else:
            value = seen[0][1] if len(results) == 1 and not seen[0][0] else None
        if value is not None:
            row["correct"] = value
        rows.append(row)
    return Rows(rows, notes.lines())


def _merge(
    record: dict[str, Any],
    place: tuple[Path, int],
    merged: dict[tuple[str, str, str, int], dict[str, Any]],
    outcomes: dict[tuple[str, str, str, int], list[tuple[bool, bool | None]]],
    metrics: set[tuple[str, str, str, int, str]],
    notes: Notes,
) -> None:
    file, number = place
    where = f"{file}, line {number}"
    run = values.key(record["model_id"], where, "model_id")
    task = values.key(record["evaluation_name"], where, "evaluation_name")
    sample = values.key(record["sample_id"], where, "sample_id")
    metric = record.get("evaluation_result_id")
    metric = "score" if metric is None else values.key(metric, where, "evaluation_result_id")
    evaluation = record["evaluation"]
    if not isinstance(evaluation, dict):
        raise values.refuse(where, "evaluation", "an object {score, is_correct}", evaluation)
    key = (run, task, sample, _epoch(record, where))
    row = merged.get(key)
    if row is None:
        row = merged[key] = _row(record, key, place, notes)
        outcomes[key] = []
    if (*key, metric) in metrics:
        raise InputError(
            f"{where}: sample {sample} of {run} on {task} has result {metric!r} again",
            hint="Each instance record scores one sample for one aggregate result.",
        )
    metrics.add((*key, metric))
    score = notes.score(file, metric, evaluation.get("score"), f"line {number}")
    if score is not None:
        row.setdefault("scores", {})[metric] = score
    outcomes[key].append(_outcome(record, evaluation, where))


def _epoch(record: dict[str, Any], where: str) -> int:
    metadata = record.get("metadata")
    if not isinstance(metadata, dict) or EPOCH not in metadata:
        return 0
    text = metadata[EPOCH]
    if isinstance(text, str) and text.isdigit():
        return int(text)
    raise values.refuse(where, f"metadata.{EPOCH}", "a whole number ≥ 0 as text", text)


def _outcome(
    record: dict[str, Any], evaluation: dict[str, Any], where: str
) -> tuple[bool, bool | None]:
    """(written by calipers' export, the outcome)."""
    metadata = record.get("metadata")
    if isinstance(metadata, dict) and CORRECT in metadata:
        return True, {"true": True, "false": False}.get(str(metadata[CORRECT]))
    if evaluation.get("is_correct") is None:
        return False, None
    return False, values.flag(evaluation["is_correct"], where, "evaluation.is_correct")


def _row(
    record: dict[str, Any], key: tuple[str, str, str, int], place: tuple[Path, int], notes: Notes
) -> dict[str, Any]:
    run, task, sample, epoch = key
    row: dict[str, Any] = {"run": run, "task": task, "sample_id": sample, "epoch": epoch}
    given = record.get("input")
    if isinstance(given, dict):
        if isinstance(given.get("raw"), str):
            row["input"] = given["raw"]
        reference = given.get("reference")
        if isinstance(reference, list) and reference:
            row["expected"] = reference[0] if len(reference) == 1 else json.dumps(reference)
    output = _output(record)
    if output is not None:
        row["output"] = output
    if record.get("error"):
        row["error"] = str(record["error"])
    file, line = place[0], f"line {place[1]}"
    usage = record.get("token_usage")
    if isinstance(usage, dict):
        for field, name in (("tokens_in", "input_tokens"), ("tokens_out", "output_tokens")):
            count = notes.number(file, f"token_usage.{name}", usage.get(name), line, whole=True)
            if count is not None:
                row[field] = count
    performance = record.get("performance")
    if isinstance(performance, dict):
        latency = notes.number(file, "performance.latency_ms", performance.get("latency_ms"), line)
        if latency is not None:
            row["latency_s"] = latency / 1000
    evaluation = record["evaluation"]
    calls = notes.number(file, "evaluation.tool_calls_count", evaluation.get("tool_calls_count"),
                         line, whole=True)  # fmt: skip
    if calls is not None:
        row["tool_calls"] = calls
    return row


def _output(record: dict[str, Any]) -> str | None:
    output = record.get("output")
    if isinstance(output, dict) and isinstance(output.get("raw"), list) and output["raw"]:
        raw = output["raw"]
        return raw[0] if len(raw) == 1 and isinstance(raw[0], str) else json.dumps(raw)
    messages = record.get("messages")
    if isinstance(messages, list):
        said = [m.get("content") for m in messages
                if isinstance(m, dict) and m.get("role") == "assistant"
                and isinstance(m.get("content"), str)]  # fmt: skip
        if said:
            return str(said[-1])
    return None
