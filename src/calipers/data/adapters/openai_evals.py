"""OpenAI evals record logs (`oaieval <completion_fn> <eval> [--record_path FILE]`, evals 3.x;
default path `/tmp/evallogs/<run_id>_<completion_fn>_<eval>.jsonl`). JSON Lines written by
evals' LocalRecorder: first `{"spec": {completion_fns, eval_name, run_id, …}}`, then, in batches,
event lines `{run_id, event_id, sample_id, type, data, created_by, created_at}`, and
`{"final_report": {…}}` once the eval ends (before the last batch of events, so anywhere).

One sample per `sample_id` (`<eval>.<split>.<index in the samples file>`, so it pairs across runs
of the same eval) and per repeat: the k-th `match` event of a sample is its epoch k, as is its
k-th `metrics` event (an eval that records several per sample scores each as a trial, which is
what evals' accuracy averages over). `run` is the completion fns (`,`-joined), `task` the eval's
`eval_name` (`match.dev.v0`).

`correct` is a match event's `correct`; `scores` are a metrics event's finite numeric values
(booleans as 0/1). `expected` is the match's `expected` (a list of references joined by newlines).
The k-th `sampling` event gives epoch k its `output` (`sampled`, when one completion), `input`
(`prompt`: a string, or chat messages as JSON) and tokens (`usage.prompt_tokens` /
`completion_tokens`, which evals sums into the final report's `usage_*`). An `error` event is
the sample's `error`. Other event types (`raw_sample`, `extra`, `embedding`, …) are not read,
and the import lists them (`unimported`).

Model-graded evals (evals' `ModelBasedClassify`: `modelgraded_spec` in the eval's args) take the
**last** completion fn as the grader (evals 3.x: `self.eval_completion_fn = completion_fns[-1]`)
and the others as the system under test: `run` is those (`lookup-a` for `oaieval lookup-a,judge`),
and the sampling events whose `model` is the grader's give `grader_tokens_in`/`_out`, apart from
the subject's `tokens_in`/`_out` (together: the final report's `usage_*`). With one completion fn
it grades itself: its grading calls are not told apart, so tokens are left absent (a warning).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from calipers.data import jsontext
from calipers.data.adapters.unimported import Unimported
from calipers.data.adapters.values import Notes, Rows, key
from calipers.errors import InputError

_HINT = "Pass the record log `oaieval ... --record_path FILE` wrote (JSON Lines)."
_EPOCH_EVENTS = ("match", "metrics")


def _spec(line: str) -> dict[str, Any] | None:
    try:
        first = jsontext.loads_tool(line)
    except ValueError:
        return None
    spec = first.get("spec") if isinstance(first, dict) else None
    if isinstance(spec, dict) and "eval_name" in spec and "completion_fns" in spec:
        return spec
    return None


def detect(path: Path) -> bool:
    """A file whose first line is evals' run spec: `{"spec": {"completion_fns", "eval_name"…}}`."""
    if not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as f:
            if f.read(9) != '{"spec": ':  # evals' json.dumps of {"spec": …}: cheap refusal
                return False
            f.seek(0)
            return _spec(f.readline(1 << 20)) is not None
    except (OSError, UnicodeDecodeError):
        return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per sample_id and repeat of the record log."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not an oaieval record log", hint=_HINT)
    events: dict[str, dict[str, list[dict[str, Any]]]] = {}
    spec: dict[str, Any] | None = None
    final: dict[str, Any] | None = None
    try:
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                if number == 1:
                    spec = _spec(line)
                    if spec is None:
                        raise InputError(
                            f"{path}, line 1: not an oaieval record log (expected the run "
                            'spec: {"spec": {"completion_fns", "eval_name", …}})',
                            hint=_HINT,
                        )
                    continue
                record = _record(path, number, line)
                if record is None and '"final_report"' in line:
                    report = jsontext.loads_tool(line).get("final_report")
                    final = report if isinstance(report, dict) else final
                if record is not None:
                    sample = key(record["sample_id"], f"{path}, line {number}", "sample_id")
                    by_type = events.setdefault(sample, {})
                    record["data"]["_line"] = number
                    by_type.setdefault(str(record["type"]), []).append(record["data"])
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not readable: {exc}") from None
    if spec is None:
        raise InputError(f"{path}: is empty", hint=_HINT)
    fns = spec["completion_fns"]
    fns = [str(f) for f in fns] if isinstance(fns, list) else [str(fns)]
    grader = _grader(spec, fns)
    run = ",".join(fns[:-1] if grader and len(fns) > 1 else fns)
    task = str(spec["eval_name"])
    notes = Notes()
    rows = [
        r for sample, by_type in events.items()
        for r in _rows(run, task, sample, by_type, path, notes)
    ]  # fmt: skip
    warnings = notes.lines()
    if grader:
        warnings += _split_usage(rows, events, grader, run.split(","), path)
    left = Unimported("openai-evals")
    _left_out(path, events, left)
    if final is not None:
        for name, value in final.items():
            if _number(value) and not isinstance(value, bool):
                left.metric(path, f"final_report.{name}", "aggregate-only", "oaieval's report",
                            kind="total", value=value)  # fmt: skip
    if not rows:
        raise InputError(
            f"{path}: holds no match, metrics or error events",
            hint="The eval may have stopped before recording any sample (or logs none).",
        )
    return Rows(rows, warnings, left.entries())


_READ_EVENTS = {"match", "metrics", "sampling", "error"}


def _left_out(path: Path, events: dict[str, dict[str, list[Any]]], left: Unimported) -> None:
    for by_type in events.values():
        for kind, found in by_type.items():
            if kind not in _READ_EVENTS:
                for data in found:
                    left.field(path, f"{kind} events", "unknown", f"line {data.get('_line', 0)}",
                               "an event type calipers does not read")  # fmt: skip


def _grader(spec: dict[str, Any], fns: list[str]) -> str | None:
    """The grader of a model-graded eval (evals' ModelBasedClassify takes the last completion fn),
    else None."""
    config = _obj(spec.get("run_config"))
    eval_spec = _obj(config.get("eval_spec"))
    args = _obj(eval_spec.get("args"))
    graded = "modelgraded_spec" in args or "modelgraded" in str(eval_spec.get("cls") or "")
    return fns[-1] if graded and fns else None


def _split_usage(
    rows: list[dict[str, Any]],
    events: dict[str, dict[str, list[dict[str, Any]]]],
    grader: str,
    subjects: list[str],
    path: Path,
) -> list[str]:
    """Each sample's sampling usage, the subject's and the grader's apart (by the event's model);
    with the grader among the subjects (one fn grading itself), none (a warning)."""
    for row in rows:
        for field in ("tokens_in", "tokens_out", "output", "input"):
            row.pop(field, None)
    if grader in subjects:
        return [
            f"{path}: the completion fn {grader} also grades (a model-graded eval with one "
            "completion fn): its answering and grading tokens are not told apart, and are left "
            "out of tokens_in/out"
        ]
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_sample.setdefault(row["sample_id"], []).append(row)
    for sample, found in by_sample.items():
        samplings = events.get(sample, {}).get("sampling", [])
        own = [s for s in samplings if s.get("model") != grader]
        graded = [s for s in samplings if s.get("model") == grader]
        for epoch, row in enumerate(found):
            if len(own) == len(found):
                _add_sampling(row, own[epoch])
            if len(graded) == len(found):
                usage = _usage(graded[epoch])
                row.update({f"grader_{k}": v for k, v in usage.items()})
    return []


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _usage(data: dict[str, Any]) -> dict[str, int]:
    usage = data.get("usage")
    out = {}
    if isinstance(usage, dict):
        for field, key in (("tokens_in", "prompt_tokens"), ("tokens_out", "completion_tokens")):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                out[field] = value
    return out


def _record(path: Path, number: int, line: str) -> dict[str, Any] | None:
    try:
        record = jsontext.loads_tool(line)
    except ValueError as exc:
        raise InputError(
            f"{path}, line {number}: not JSON ({exc})",
            hint="The file may be cut short (oaieval still writing, or a partial copy).",
        ) from None
    if isinstance(record, dict) and ("final_report" in record or "spec" in record):
        return None
    if not (
        isinstance(record, dict)
        and isinstance(record.get("type"), str)
        and record.get("sample_id") is not None
        and isinstance(record.get("data"), dict)
    ):
        raise InputError(
            f"{path}, line {number}: not an oaieval event "
            "(expected an object with sample_id, type and a data object)",
            hint=_HINT,
        )
    return record


def _rows(
    run: str, task: str, sample: str, by_type: dict[str, list[Any]], path: Path, notes: Notes
) -> list[dict[str, Any]]:
    matches, metrics = by_type.get("match", []), by_type.get("metrics", [])
    samplings, errors = by_type.get("sampling", []), by_type.get("error", [])
    epochs = max(len(matches), len(metrics), 1 if errors else 0)
    rows = []
    for epoch in range(epochs):
        row: dict[str, Any] = {"run": run, "task": task, "sample_id": sample, "epoch": epoch}
        if epoch < len(matches):
            _add_match(row, matches[epoch])
        if epoch < len(metrics):
            data = metrics[epoch]
            note = notes.bind(path, data.get("_line", 0))
            scores = {  # a boolean is 1 or 0, as oaieval's own report reads it
                str(k): n for k, v in data.items() if k != "_line"
                and (n := note(str(k), float(v) if isinstance(v, bool) else v)) is not None
            }  # fmt: skip
            if scores:
                row["scores"] = scores
        # Without one sampling per trial, which completion a trial scored is not known.
        if len(samplings) == epochs:
            _add_sampling(row, samplings[epoch])
        if errors and epoch == epochs - 1:
            row["error"] = "; ".join(_error_text(e) for e in errors)
        rows.append(row)
    return rows


def _add_match(row: dict[str, Any], data: dict[str, Any]) -> None:
    if isinstance(data.get("correct"), bool):
        row["correct"] = data["correct"]
    expected = data.get("expected")
    if isinstance(expected, list) and all(isinstance(e, str) for e in expected):
        expected = "\n".join(expected)
    if isinstance(expected, str):
        row["expected"] = expected


def _add_sampling(row: dict[str, Any], data: dict[str, Any]) -> None:
    prompt, sampled = data.get("prompt"), data.get("sampled")
    if isinstance(prompt, str):
        row["input"] = prompt
    elif prompt is not None:
        row["input"] = json.dumps(prompt, ensure_ascii=False)
    if isinstance(sampled, list) and len(sampled) == 1:
        sampled = sampled[0]
    if isinstance(sampled, str):
        row["output"] = sampled
    row.update(_usage(data))


def _error_text(data: dict[str, Any]) -> str:
    kind, message = data.get("type"), data.get("message")
    return ": ".join(str(x) for x in (kind, message) if x) or "error"


def _number(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    return isinstance(value, int | float) and math.isfinite(value)
