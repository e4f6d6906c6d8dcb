"""Arize Phoenix experiment downloads as CSV (checked with arize-phoenix 20.26.1): what the UI's
experiment "Download CSV" gives, `GET /v1/experiments/{id}/csv`, saved as `<experiment
name>.csv`: one row per dataset example × repetition, the columns example_id,
repetition_number, input, reference_output, output, metadata, error, latency_ms, start_time,
end_time, trace_id, prompt_token_count, completion_token_count, then nine per evaluator:
annotation_<name>_label, _score, _explanation, _metadata, _annotator_kind, _trace_id, _error,
_start_time, _end_time.

Read as the JSON download is (`phoenix.py`), to the same rows: `run` is the file's stem (the
experiment's name), `task` `phoenix`, `sample_id` the example id, `epoch` the repetition number,
`scores` each evaluator's score where it has one and no error, `correct` only with one scored
evaluator whose scores are all 0 or 1. Pandas writes a missing value as an empty cell, so an
empty score is no score, and a count may be written `12.0`. Not imported, as from the JSON:
labels, explanations, metadata, trace ids and times.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from calipers.data.adapters import csvfile, phoenix
from calipers.data.adapters.unimported import Unimported
from calipers.data.adapters.values import Notes, Rows
from calipers.errors import InputError

_HINT = "Pass the CSV an experiment's download gives (GET /v1/experiments/<id>/csv)."
_FIRST = ["example_id", "repetition_number", "input", "reference_output", "output"]
_KIND = re.compile(r"^annotation_(?P<name>.+)_annotator_kind$")


def detect(path: Path) -> bool:
    """A .csv whose header opens as Phoenix's experiment download does."""
    if not csvfile.is_csv(path):
        return False
    try:
        return csvfile.header(path)[: len(_FIRST)] == _FIRST
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per experiment run (example × repetition) of the download."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a Phoenix experiment CSV", hint=_HINT)
    head, records = csvfile.records(path, _HINT)
    if head[: len(_FIRST)] != _FIRST or "error" not in head:
        raise InputError(
            f"{path}: not a Phoenix experiment CSV (expected the columns {', '.join(_FIRST)}, "
            "error, …)",
            hint=_HINT,
        )
    index = {name: i for i, name in enumerate(head)}
    evaluators = [m["name"] for name in head if (m := _KIND.match(name))]
    rows: list[dict[str, Any]] = []
    notes = Notes()
    left = Unimported(phoenix.TOOL)
    labels: set[str] = set()
    seen: dict[tuple[str, int], int] = {}
    for line, cells in records:
        record = {name: csvfile.cell(cells, i) for name, i in index.items()}
        _left_out(path, record, evaluators, line, left)
        labels |= {n for n in evaluators if record.get(f"annotation_{n}_label")}
        row = _row(record, evaluators, path, line, notes)
        pair = (row["sample_id"], row["epoch"])
        if pair in seen:
            raise InputError(
                f"{path}, line {line}: example {pair[0]} repetition {pair[1]} again "
                f"(first at line {seen[pair]})",
                hint="Download one experiment per file.",
            )
        seen[pair] = line
        rows.append(row)
    if not rows:
        raise InputError(f"{path}: holds no experiment runs", hint=_HINT)
    phoenix.label_only(path, rows, labels, left)
    return Rows(phoenix.finish(rows), notes.lines(), left.entries())


def _left_out(
    path: Path, record: dict[str, str], evaluators: list[str], line: int, left: Unimported
) -> None:
    """The columns as the JSON download's fields (phoenix.py): `annotation_<name>_label` as
    `annotations[].label`; a column of neither is unknown."""
    found = {}
    for column, cell in record.items():
        if not cell or cell in ("{}", "[]"):
            continue
        name = next((n for n in evaluators if column.startswith(f"annotation_{n}_")), None)
        if name is None:
            found[column] = cell
        else:
            found["annotations[]." + column.removeprefix(f"annotation_{name}_")] = cell
    read = phoenix.READ | {"annotations[].name", "annotations[].score"}
    skipped = dict(phoenix.SKIPPED)
    skipped.update({f"annotations[].{k}": v for k, v in phoenix.ANNOTATION_SKIPPED.items()})
    left.fields(path, found, read, skipped, f"line {line}")


def _row(
    record: dict[str, str], evaluators: list[str], path: Path, line: int, notes: Notes
) -> dict[str, Any]:
    where = f"{path}, line {line}"
    if not record["example_id"]:
        raise InputError(f"{where}, column example_id: empty", hint=_HINT)
    repetition = _whole(record["repetition_number"])
    if repetition is None:
        raise InputError(
            f"{where}, column repetition_number: expected a whole number ≥ 0, got "
            f"{record['repetition_number']!r}",
            hint=_HINT,
        )
    row: dict[str, Any] = {
        "run": path.name.removesuffix(".gz").removesuffix(".csv"),
        "task": phoenix.TASK,
        "sample_id": record["example_id"],
        "epoch": repetition,
    }
    for field, key in (("input", "input"), ("expected", "reference_output"), ("output", "output")):
        if record[key]:
            row[field] = record[key]
    if record["error"]:
        row["error"] = record["error"]
    latency_ms = csvfile.number(record.get("latency_ms", ""))
    latency = notes.number(path, "latency_ms", latency_ms, f"line {line}")
    if latency is not None:
        row["latency_s"] = latency / 1000
    for field, key in (("tokens_in", "prompt_token_count"),
                       ("tokens_out", "completion_token_count")):  # fmt: skip
        count = _whole(record.get(key, ""))
        if count is not None:
            row[field] = count
    scores: dict[str, float] = {}
    for name in evaluators:
        prefix = f"annotation_{name}_"
        if record.get(prefix + "error"):
            continue  # a failed evaluator has no score
        value = csvfile.number(record.get(prefix + "score", ""))
        score = notes.score(path, name, value, f"line {line}")
        if score is not None:
            scores[name] = score
    if scores:
        row["scores"] = scores
    return row


def _whole(text: str) -> int | None:
    value = csvfile.number(text)
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None
