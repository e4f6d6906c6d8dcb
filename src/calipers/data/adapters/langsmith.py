"""LangSmith experiment results (checked with the langsmith SDK 0.15.1): the table
`ExperimentResults.to_pandas()` makes of an `evaluate(...)` run, saved as CSV
(`to_csv(index=False)`), JSON (`to_json(orient="records")`, an array of row objects) or JSON
Lines (`lines=True`). Its columns: `inputs.<key>` (the example's inputs), `outputs.<key>` (the
run's), `error`, `reference.<key>` (the example's reference outputs), `feedback.<key>` (each
evaluator's score, or its value where it gave no score), `execution_time` (seconds),
`example_id` (the dataset example) and `id` (the run).

One sample per row. `run` is the file's stem (the SDK names no experiment in the table: save it
under the experiment's name, or pass --as); `task` is `langsmith`; `sample_id` is the example id,
so experiments on one dataset pair; an example seen again (`num_repetitions`) is epochs 0, 1, …
in row order. `scores` are the feedback columns: a number as is, a bool as 1 or 0 (as LangSmith
averages it); an empty cell is no score, and a categorical value (text) is left out with a note.
`input`, `output` and `expected` are the inputs, outputs and reference columns (one as text,
several as a JSON object of those present); `latency_s` is execution_time; `error` the run's
error (its scores are kept: LangSmith's averages count them). Not imported: the run id,
evaluator comments (not in the table).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from calipers.data.adapters import csvfile
from calipers.data.adapters.jsonfile import first_json_line, json_line, load_json
from calipers.data.adapters.values import Notes, Rows
from calipers.errors import InputError

TASK = "langsmith"
_HINT = (
    "Pass a LangSmith experiment's results table: `results.to_pandas()` saved with "
    ".to_csv(PATH, index=False) or .to_json(PATH, orient='records', default_handler=str)."
)
_NEEDED = ("example_id", "execution_time")
_HEAD = re.compile(r'^\s*\[\s*\{\s*"inputs\.')
_BOOL = {"True": 1.0, "False": 0.0, "true": 1.0, "false": 0.0}


def _looks(columns: list[str]) -> bool:
    return all(c in columns for c in _NEEDED) and any(c.startswith("inputs.") for c in columns)


def detect(path: Path) -> bool:
    """A CSV, JSON or JSON Lines file with the SDK's table's columns."""
    name = path.name.lower()
    try:
        if csvfile.is_csv(path):
            return _looks(csvfile.header(path))
        if not path.is_file():
            return False
        if name.endswith(".json"):
            with path.open(encoding="utf-8", errors="replace") as f:
                head = f.read(8192)
            return _HEAD.match(head) is not None and all(f'"{c}"' in head for c in _NEEDED)
        if name.endswith(".jsonl") or name.endswith(".ndjson"):
            first = first_json_line(path)
            return isinstance(first, dict) and _looks(list(first))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return False
    return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per row of the table."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a LangSmith results table", hint=_HINT)
    records = list(_records(path))
    if not records:
        raise InputError(f"{path}: holds no rows", hint=_HINT)
    notes = Notes()
    run = Path(path.name.removesuffix(".gz")).stem or path.name
    seen: dict[str, int] = {}
    rows = []
    for where, record in records:
        example = record.get("example_id")
        if not isinstance(example, str) or not example:
            raise InputError(
                f"{path}, {where}, field 'example_id': expected the example's id, got {example!r}",
                hint=_HINT,
            )
        epoch = seen.get(example, 0)
        seen[example] = epoch + 1
        row: dict[str, Any] = {"run": run, "task": TASK, "sample_id": example, "epoch": epoch}
        for field, prefix in (("input", "inputs."), ("output", "outputs."),
                              ("expected", "reference.")):  # fmt: skip
            text = _text({k[len(prefix) :]: v for k, v in record.items() if k.startswith(prefix)})
            if text is not None:
                row[field] = text
        if record.get("error") not in (None, ""):
            row["error"] = str(record["error"])
        latency = notes.number(path, "execution_time", _value(record.get("execution_time")),
                               where)  # fmt: skip
        if latency is not None:
            row["latency_s"] = latency
        scores = {}
        for key, value in record.items():
            if key.startswith("feedback."):
                score = notes.score(path, key[len("feedback.") :], _value(value), where)
                if score is not None:
                    scores[key[len("feedback.") :]] = score
        if scores:
            row["scores"] = scores
        rows.append(row)
    return Rows(rows, notes.lines())


def _records(path: Path) -> Any:
    if csvfile.is_csv(path):
        head, records = csvfile.records(path, _HINT)
        if not _looks(head):
            raise InputError(f"{path}: not a LangSmith results table (expected the columns "
                             "inputs.*, example_id, execution_time)", hint=_HINT)  # fmt: skip
        for line, cells in records:
            yield f"line {line}", {n: csvfile.cell(cells, i) for i, n in enumerate(head)}
        return
    if path.name.lower().endswith(".json"):
        data = load_json(path, cut_short="a partial copy", hint=_HINT)
        if not isinstance(data, list):
            raise InputError(f"{path}: not a LangSmith results table (not a JSON array)",
                             hint=_HINT)  # fmt: skip
        for number, record in enumerate(data):
            if not isinstance(record, dict):
                raise InputError(f"{path}, item {number}: not a JSON object", hint=_HINT)
            yield f"item {number}", record
        return
    with path.open(encoding="utf-8") as f:
        for number, text in enumerate(f, start=1):
            if text.strip():
                record = json_line(path, number, text, cut_short="a partial copy")
                if not isinstance(record, dict):
                    raise InputError(f"{path}, line {number}: not a JSON object", hint=_HINT)
                yield f"line {number}", record


def _value(value: Any) -> Any:
    """A cell as LangSmith meant it: a bool as 1 or 0, CSV text as its number; "" is none."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if not isinstance(value, str):
        return value
    if value in _BOOL:
        return _BOOL[value]
    if not value.strip():
        return None
    try:
        return float(value)
    except ValueError:
        return value


def _text(fields: dict[str, Any]) -> str | None:
    present = {k: v for k, v in fields.items() if v not in (None, "")}
    if not present:
        return None
    if len(present) == 1:
        (value,) = present.values()
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return json.dumps(present, ensure_ascii=False)
