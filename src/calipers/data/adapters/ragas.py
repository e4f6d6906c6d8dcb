"""ragas results (checked with ragas 0.4.3): `EvaluationResult.to_pandas()` saved as CSV
(`to_csv(index=False)`) or JSON Lines (`to_json(orient="records", lines=True)`): one row per
sample of the evaluation dataset, its fields (user_input, retrieved_contexts, reference_contexts,
response, multi_responses, reference, rubrics, …) followed by one column per metric
(`exact_match`, `faithfulness`, …).

One sample per row. `run` is the file's stem (ragas names no system: name the file after it,
or pass --as); `task` is `ragas`; `sample_id` hashes the row's user_input and reference, so two
systems evaluated on the same questions pair (a question asked twice is epochs 0, 1, … in row
order); `input` is user_input, `output` response, `expected` reference (a list or conversation as
JSON text). `scores` are the metric columns: every column that is not one of ragas' sample
fields, whose mean is ragas' own score for the metric (`print(result)`); an empty cell (pandas'
NaN: ragas could not score the row) is no score, and any other text is left out with a note.
Not imported: contexts, rubrics and the other sample fields.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from calipers.data.adapters import csvfile
from calipers.data.adapters.jsonfile import first_json_line, json_line
from calipers.data.adapters.values import Notes, Rows
from calipers.errors import InputError

TASK = "ragas"
_HINT = (
    "Pass a ragas result saved from `result.to_pandas()` with `.to_csv(PATH, index=False)` or "
    "`.to_json(PATH, orient='records', lines=True)`."
)
# ragas' SingleTurnSample and MultiTurnSample fields, and the testset generator's columns
FIELDS = {
    "user_input", "retrieved_contexts", "reference_contexts", "retrieved_context_ids",
    "reference_context_ids", "response", "multi_responses", "reference", "rubrics",
    "reference_tool_calls", "reference_topics", "persona_name", "query_style", "query_length",
    "synthesizer_name",
}  # fmt: skip


def _looks(columns: list[str]) -> bool:
    return bool(columns) and columns[0] == "user_input" and ("response" in columns
                                                             or "reference" in columns)  # fmt: skip


def detect(path: Path) -> bool:
    """A CSV or JSON Lines file whose first column is ragas' user_input."""
    name = path.name.lower()
    try:
        if csvfile.is_csv(path):
            return _looks(csvfile.header(path))
        if (name.endswith(".jsonl") or name.endswith(".ndjson")) and path.is_file():
            first = first_json_line(path)
            return isinstance(first, dict) and _looks(list(first))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return False
    return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per row of the result."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a ragas result", hint=_HINT)
    notes = Notes()
    records = list(_csv(path) if csvfile.is_csv(path) else _jsonl(path))
    if not records:
        raise InputError(f"{path}: holds no rows", hint=_HINT)
    run = Path(path.name.removesuffix(".gz")).stem or path.name
    seen: dict[str, int] = {}
    rows = []
    for line, record in records:
        if "user_input" not in record:
            raise InputError(f"{path}, line {line}: no user_input (not a ragas result row)",
                             hint=_HINT)  # fmt: skip
        key = json.dumps([record["user_input"], record.get("reference")], sort_keys=True,
                         ensure_ascii=False, default=str)  # fmt: skip
        sample = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
        epoch = seen.get(sample, 0)
        seen[sample] = epoch + 1
        row: dict[str, Any] = {"run": run, "task": TASK, "sample_id": sample, "epoch": epoch}
        for field, name in (("input", "user_input"), ("output", "response"),
                            ("expected", "reference")):  # fmt: skip
            value = record.get(name)
            if value not in (None, ""):
                row[field] = value if isinstance(value, str) else json.dumps(value)
        scores = {}
        for name, value in record.items():
            if name not in FIELDS:
                score = notes.score(path, name, _number(value), f"line {line}")
                if score is not None:
                    scores[name] = score
        if scores:
            row["scores"] = scores
        rows.append(row)
    return Rows(rows, notes.lines())


def _csv(path: Path) -> Any:
    head, records = csvfile.records(path, _HINT)
    if not _looks(head):
        raise InputError(f"{path}: not a ragas result (its first column is not user_input)",
                         hint=_HINT)  # fmt: skip
    for line, cells in records:
        yield line, {name: csvfile.cell(cells, i) for i, name in enumerate(head)}


def _jsonl(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as f:
            for number, text in enumerate(f, start=1):
                if text.strip():
                    record = json_line(path, number, text, cut_short="a partial copy")
                    if not isinstance(record, dict):
                        raise InputError(f"{path}, line {number}: not a JSON object", hint=_HINT)
                    yield number, record
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason})", hint=_HINT) from None


def _number(value: Any) -> Any:
    """A metric cell: a number as written (CSV text parsed), None for an empty cell."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        return float(value)
    except ValueError:
        return value
