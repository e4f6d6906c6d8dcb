"""Arize Phoenix experiment downloads (checked with arize-phoenix 20.26.1): what the UI's
experiment "Download JSON" gives, `GET /v1/experiments/{id}/json`, saved as
`<experiment name>.json`: a JSON array (indented), one object per dataset example × repetition,
its keys in a fixed order: example_id, repetition_number, input, reference_output, output,
error, latency_ms, start_time, end_time, trace_id, prompt_token_count, completion_token_count,
annotations (one per evaluator: name, annotator_kind, label, score, explanation, error, …).

One sample per object. The file names neither experiment nor dataset: `run` is the file's stem
(Phoenix names the download after the experiment; rename the file or pass --run), `task` is
`phoenix`. `sample_id` is Phoenix's example id (a GlobalID such as
`RGF0YXNldEV4YW1wbGU6MQ==`: it pairs experiments on the same dataset), `epoch` its
`repetition_number` as is (1-based). `scores` are the annotations' finite numeric scores by
evaluator name; a label-only annotation and a failed evaluator (its `error`) have none.
`correct` only when the file has one scored evaluator and all its scores are 0 or 1 (Phoenix
names no primary evaluator). `error` is the task's error (the task raised): such a run has no
output. `output`, `input` and `expected` (reference_output) are strings as is, other JSON as
JSON text; `latency_s` = latency_ms / 1000; tokens from the token counts when Phoenix has them.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from calipers.data.adapters import values
from calipers.data.adapters.jsonfile import load_json
from calipers.data.adapters.unimported import Unimported, held
from calipers.data.adapters.values import Notes, Rows
from calipers.errors import InputError

TASK = "phoenix"
_HINT = "Pass the JSON an experiment's download gives (GET /v1/experiments/<id>/json)."
_HEAD = re.compile(r'^\s*\[\s*(?:\]|\{\s*"example_id"\s*:\s*"[^"]*"\s*,\s*"repetition_number"\s*:)')
_KEYS = ("example_id", "repetition_number", "output", "error", "annotations")
READ = {"example_id", "repetition_number", "input", "reference_output", "output", "error",
        "latency_ms", "prompt_token_count", "completion_token_count", "annotations"}  # fmt: skip
SKIPPED = {
    "metadata": "the example's metadata",
    "start_time": "timestamps (latency_s is latency_ms)",
    "end_time": "timestamps (latency_s is latency_ms)",
    "trace_id": "Phoenix's trace id",
}
ANNOTATION_SKIPPED = {
    "label": "the evaluator's label (its score is imported)",
    "explanation": "the evaluator's explanation",
    "annotator_kind": "the kind of evaluator (CODE, LLM, HUMAN)",
    "metadata": "the evaluator's metadata",
    "trace_id": "Phoenix's trace id",
    "error": "the evaluator's error (a failed evaluator has no score)",
    "start_time": "timestamps",
    "end_time": "timestamps",
}


def detect(path: Path) -> bool:
    """A .json opening as Phoenix's download does: an array of objects starting with
    example_id then repetition_number."""
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return _HEAD.match(f.read(1024)) is not None
    except OSError:
        return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per experiment run (example × repetition) of the download."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a Phoenix experiment download", hint=_HINT)
    data = load_json(path, cut_short="a partial download")
    if not isinstance(data, list):
        raise InputError(
            f"{path}: not a Phoenix experiment download (not a JSON array)", hint=_HINT
        )
    if not data:
        raise InputError(f"{path}: holds no experiment runs", hint=_HINT)
    rows: list[dict[str, Any]] = []
    notes = Notes()
    left = Unimported(TOOL)
    seen: dict[tuple[str, int], int] = {}
    for number, record in enumerate(data):
        if not (isinstance(record, dict) and all(k in record for k in _KEYS)):
            raise InputError(
                f"{path}: item {number} is not a Phoenix experiment run "
                f"(expected an object with {', '.join(_KEYS)})",
                hint=_HINT,
            )
        row = _row(record, path.stem, (path, f"item {number}"), notes)
        pair = (row["sample_id"], row["epoch"])
        if pair in seen:
            raise InputError(
                f"{path}: item {number}: example {pair[0]} repetition {pair[1]} again "
                f"(first at item {seen[pair]})",
                hint="Download one experiment per file.",
            )
        seen[pair] = number
        rows.append(row)
        where = f"item {number}"
        left.fields(path, held(record), READ, SKIPPED, where)
        for annotation in record["annotations"] or []:
            if isinstance(annotation, dict):
                left.fields(path, held(annotation), {"name", "score"}, ANNOTATION_SKIPPED, where,
                            "annotations[].")  # fmt: skip
    labels = {
        str(a["name"]) for r in data for a in r["annotations"] or []
        if isinstance(a, dict) and a.get("name") and a.get("label") is not None
    }  # fmt: skip
    label_only(path, rows, labels, left)
    return Rows(finish(rows), notes.lines(), left.entries())


TOOL = "phoenix"


def label_only(path: Path, rows: list[dict[str, Any]], labels: set[str], left: Unimported) -> None:
    """An evaluator that gave labels and never a score: not-in-model, named as a metric."""
    scored = {name for row in rows for name in row.get("scores", {})}
    for name in sorted(labels - scored):
        left.metric(path, name, "not-in-model",
                    "an evaluator with labels and no numeric score (calipers' scores are "
                    "numbers; Phoenix's meanScore is null)")  # fmt: skip


def _row(record: dict[str, Any], run: str, place: tuple[Path, str], notes: Notes) -> dict[str, Any]:
    file, item = place
    where = f"{file}, {item}"
    row: dict[str, Any] = {
        "run": run,
        "task": TASK,
        "sample_id": values.key(record["example_id"], where, "example_id"),
        "epoch": values.count(record["repetition_number"], where, "repetition_number"),
    }
    for field, key in (("input", "input"), ("expected", "reference_output"), ("output", "output")):
        text = _text(record.get(key))
        if text is not None:
            row[field] = text
    if record.get("error"):
        row["error"] = str(record["error"])
    latency = record.get("latency_ms")
    if isinstance(latency, int | float) and _number(latency) and latency >= 0:
        row["latency_s"] = latency / 1000
    for field, key in (
        ("tokens_in", "prompt_token_count"),
        ("tokens_out", "completion_token_count"),
    ):
        count = record.get(key)
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            row[field] = count
    scores: dict[str, float] = {}
    for annotation in record["annotations"] or []:
        # A failed evaluator has an error and no score; a label-only one (a str result) no score.
        if isinstance(annotation, dict) and not annotation.get("error") and annotation.get("name"):
            name = str(annotation["name"])
            score = annotation.get("score")
            number = notes.score(file, name, score, item) if not isinstance(score, str) else None
            if number is not None:
                scores[name] = number
    if scores:
        row["scores"] = scores
    return row


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def finish(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`correct` where the rows have one scored evaluator whose scores are all 0 or 1."""
    keys = {key for row in rows for key in row.get("scores", {})}
    values = [v for row in rows for v in row.get("scores", {}).values()]
    if len(keys) == 1 and all(v in (0.0, 1.0) for v in values):
        for row in rows:
            if row.get("scores"):
                row["correct"] = next(iter(row["scores"].values())) == 1.0
    return rows


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
