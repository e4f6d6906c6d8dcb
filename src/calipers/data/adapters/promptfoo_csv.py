"""promptfoo's table as CSV: `promptfoo eval -o results.csv` (checked with promptfoo 0.123.1).

The header is `Description` (when the tests have descriptions), one column per test variable,
then one block per column of promptfoo's table (a prompt on a provider): `[<provider>] <prompt
label>` (the output), `Status` (PASS, FAIL or ERROR), `Score` (rounded to 2 decimals), `Named
Scores` (JSON), one `Metric: <name>` per named metric (rounded), `Grader Reason` and `Comment`.
Its column names repeat once per block, so it is read by position, never as calipers' own CSV.

One sample per test × block. `run` is the provider, with ` / <prompt label>` when the blocks use
more than one prompt (as the JSON importer names them); `task` is `promptfoo` (the CSV does not
carry the config's description); `sample_id` hashes the test's description and variables as the
JSON importer does, so a test pairs with its `-o results.json` import where its variables are
strings; a test repeated (`--repeat`) is epochs 0, 1, … in row order. `correct` is the status
(PASS or FAIL, exactly as promptfoo decided); an ERROR row has `error` and neither correct nor
scores (promptfoo writes its score as 0.00, which measures nothing). `scores.score` is the Score
column as written, rounded to 2 decimals by promptfoo; the named metrics come from `Named
Scores`, unrounded. Not in the CSV, so not imported: tokens, cost, latency, each assertion's
result, the named metrics' weights, the error's text; the note at import says to pass
`-o results.json` for them.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from calipers.data import jsontext
from calipers.data.adapters import csvfile
from calipers.data.adapters.values import Notes, Rows
from calipers.errors import InputError

TASK = "promptfoo"
_HINT = "Pass what `promptfoo eval -o results.csv` writes, or better `-o results.json`."
_OUTPUT = re.compile(r"^\[(?P<provider>.*?)\] (?P<prompt>.*)$", re.DOTALL)
_STATUS = {"PASS": True, "FAIL": False}
LOST = (
    "promptfoo's CSV rounds scores to 2 decimals and has no tokens, cost, latency, assertion "
    "results or metric weights; `promptfoo eval -o results.json` has them all"
)


def _blocks(head: list[str]) -> list[int]:
    """Where each output block starts: `[provider] prompt` followed by `Status`, `Score`."""
    return [
        i for i, name in enumerate(head)
        if _OUTPUT.match(name) and head[i + 1 : i + 3] == ["Status", "Score"]
    ]  # fmt: skip


def detect(path: Path) -> bool:
    """A .csv whose header holds promptfoo's output blocks."""
    if not csvfile.is_csv(path):
        return False
    try:
        return bool(_blocks(csvfile.header(path)))
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per test × output block."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a promptfoo CSV", hint=_HINT)
    head, records = csvfile.records(path, _HINT)
    starts = _blocks(head)
    if not starts:
        raise InputError(
            f"{path}: not promptfoo's CSV (no `[provider] prompt`, Status, Score columns)",
            hint=_HINT,
        )
    ends = [*starts[1:], len(head)]
    blocks = [_block(head, s, e) for s, e in zip(starts, ends, strict=True)]
    names = _run_names([(b["provider"], b["prompt"]) for b in blocks])
    described = head[0] == "Description"
    variables = head[1 if described else 0 : starts[0]]
    rows: list[dict[str, Any]] = []
    notes = Notes()
    seen: dict[tuple[str, str], int] = {}
    for line, cells in records:
        values = cells[1 if described else 0 : starts[0]]
        key = {
            "description": csvfile.cell(cells, 0) if described else None,
            "vars": dict(zip(variables, values, strict=False)),
        }
        text = json.dumps(key, sort_keys=True, ensure_ascii=False, default=str)
        sample = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
        for block, run in zip(blocks, names, strict=True):
            epoch = seen.get((run, sample), 0)
            seen[(run, sample)] = epoch + 1
            row = _row(cells, block, (path, line), notes)
            rows.append({"run": run, "task": TASK, "sample_id": sample, "epoch": epoch, **row})
    if not rows:
        raise InputError(f"{path}: holds no test rows", hint=_HINT)
    return Rows(rows, [f"{path}: {LOST}", *notes.lines()])


def _block(head: list[str], start: int, end: int) -> dict[str, Any]:
    match = _OUTPUT.match(head[start])
    assert match is not None
    columns = {name: i for i, name in enumerate(head[start:end], start=start)}
    return {
        "provider": match["provider"], "prompt": match["prompt"], "output": start,
        "status": columns["Status"], "score": columns["Score"],
        "named": columns.get("Named Scores"), "reason": columns.get("Grader Reason"),
        "name": head[start],
    }  # fmt: skip


def _run_names(columns: list[tuple[str, str]]) -> list[str]:
    several = len({prompt for _, prompt in columns}) > 1
    names = [f"{p} / {label}" if several else p for p, label in columns]
    return [f"{n} #{i}" if names.count(n) > 1 else n for i, n in enumerate(names)]


def _row(
    cells: list[str], block: dict[str, Any], place: tuple[Path, int], notes: Notes
) -> dict[str, Any]:
    path, line = place
    where, record = f"{path}, line {line}", f"line {line}"
    status = csvfile.cell(cells, block["status"])
    column = f"Status of {block['name']!r}"
    row: dict[str, Any] = {}
    output = csvfile.cell(cells, block["output"])
    if output:
        row["output"] = output
    if status == "ERROR":
        reason = csvfile.cell(cells, block["reason"]) if block["reason"] is not None else ""
        row["error"] = f"promptfoo: ERROR{': ' + reason if reason else ''}"
        return row
    if status not in _STATUS:
        raise InputError(
            f"{where}, column {column}: expected PASS, FAIL or ERROR, got {status!r}",
            hint="calipers reads promptfoo's statuses as written; fix the file.",
        )
    row["correct"] = _STATUS[status]
    scores: dict[str, float] = {}
    score = csvfile.number(csvfile.cell(cells, block["score"]))
    number = notes.score(path, "score", score, record)
    if number is not None:
        scores["score"] = number
    named = csvfile.cell(cells, block["named"]) if block["named"] is not None else ""
    if named.strip():
        try:
            parsed = jsontext.loads_tool(named)
        except jsontext.JSONError as exc:
            raise InputError(
                f"{where}, column 'Named Scores' of {block['name']!r}: not JSON ({exc})",
                hint="promptfoo writes the named scores as a JSON object; fix the cell.",
            ) from None
        if not isinstance(parsed, dict):
            raise InputError(
                f"{where}, column 'Named Scores' of {block['name']!r}: expected a JSON object",
                hint="promptfoo writes the named scores as a JSON object; fix the cell.",
            )
        for name, value in parsed.items():
            if name == "score":
                continue
            number = notes.score(path, str(name), value, record)
            if number is not None:
                scores[str(name)] = number
    if scores:
        row["scores"] = scores
    return row
