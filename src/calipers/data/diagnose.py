"""The diagnostic pass: re-read a file that failed the fast path and report every problem with its
line (or Parquet row) and field. Runs only when something is wrong, so it can afford Python."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import duckdb

from calipers.data.files import open_bytes, sql_literal
from calipers.data.guards import CSV_FALSE, CSV_NUMBER, CSV_TRUE
from calipers.data.model import FIELDS
from calipers.data.sampleset import arrow_table
from calipers.data.validate import FLAT_FIELDS, RecordChecker, describe
from calipers.errors import Problem, ValidationError

_CSV_NUMBER = re.compile(CSV_NUMBER)


def raise_diagnosis(path: Path, kind: str, run: str | None, *, fallback: str) -> None:
    checker = RecordChecker(str(path), run_override=run)
    if kind == "jsonl":
        problems = _diagnose_jsonl(path, checker)
    elif kind == "csv":
        problems = _diagnose_csv(path, checker)
    else:
        problems = _diagnose_parquet(path, checker)
    if not problems:  # the fast path saw something the precise pass cannot place
        problems = [Problem(fallback, file=str(path))]
    raise ValidationError(problems)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate field '{k}' in one object")
        out[k] = v
    return out


def _diagnose_jsonl(path: Path, checker: RecordChecker) -> list[Problem]:
    problems: list[Problem] = []
    name = str(path)
    with open_bytes(path) as fh:
        for line, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(
                    Problem(
                        "not UTF-8 text",
                        file=name,
                        line=line,
                        expected="UTF-8",
                        got=f"byte 0x{raw[exc.start]:02x} at column {exc.start + 1}",
                    )
                )
                continue
            try:
                obj = json.loads(text, object_pairs_hook=_no_duplicate_keys)
            except RecursionError:
                problems.append(
                    Problem(
                        "JSON nested too deeply to read",
                        file=name,
                        line=line,
                        expected="a sample nested at most a few hundred levels",
                        got=describe(text.strip()),
                    )
                )
                continue
            except json.JSONDecodeError as exc:
                problems.append(
                    Problem(
                        f"invalid JSON: {exc.msg} at column {exc.colno}",
                        file=name,
                        line=line,
                        expected="one JSON object per line",
                        got=describe(text.strip()),
                    )
                )
                continue
            except ValueError as exc:
                problems.append(Problem(str(exc), file=name, line=line))
                continue
            problems.extend(checker.check(obj, line))
    return problems


def _csv_value(kind: str, text: str) -> Any:
    """A CSV cell as the record checker sees it: numbers and the boolean words converted where
    the field wants them (the fast path's `guards.from_text` reads them the same way)."""
    if text == "":
        return None
    if kind in ("INTEGER", "BIGINT", "DOUBLE") and _CSV_NUMBER.fullmatch(text):
        number = float(text)
        if kind != "DOUBLE" and math.isfinite(number) and number.is_integer():
            return int(text) if re.fullmatch(r"\s*[+-]?\d+\s*", text) else int(number)
        return number
    if kind == "BOOLEAN":
        low = text.strip().lower()
        return True if low in CSV_TRUE else False if low in CSV_FALSE else text
    return text


def _diagnose_csv(path: Path, checker: RecordChecker) -> list[Problem]:
    types = {f.name: f.duckdb_type for f in FLAT_FIELDS}
    problems: list[Problem] = []
    with open_bytes(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
        reader = csv.reader(text)
        try:
            header = next(reader)
            for row in reader:
                line = reader.line_num
                if len(row) != len(header):
                    problems.append(
                        Problem(
                            "wrong number of columns",
                            file=str(path),
                            line=line,
                            expected=f"{len(header)} columns",
                            got=f"{len(row)}",
                        )
                    )
                    continue
                rec: dict[str, Any] = {}
                scores: dict[str, Any] = {}
                for col, value in zip(header, row, strict=True):
                    if col.startswith("scores."):
                        scores[col[7:]] = _csv_value("DOUBLE", value)
                    elif col in types:
                        rec[col] = _csv_value(types[col], value)
                if scores:
                    rec["scores"] = scores
                problems.extend(checker.check(rec, line))
        except UnicodeDecodeError as exc:
            problems.append(
                Problem(
                    "not UTF-8 text",
                    file=str(path),
                    line=reader.line_num + 1,
                    expected="UTF-8",
                    got=str(exc.reason),
                )
            )
        except csv.Error as exc:
            problems.append(Problem(f"malformed CSV: {exc}", file=str(path), line=reader.line_num))
    return problems


def _diagnose_parquet(path: Path, checker: RecordChecker) -> list[Problem]:
    con = duckdb.connect()
    source = f"read_parquet({sql_literal(str(path))}, file_row_number=true)"
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
    except duckdb.Error as exc:
        return [
            Problem(
                f"not a readable Parquet file: {exc}".splitlines()[0],
                file=str(path),
                expected="a Parquet file",
                got="unreadable bytes",
            )
        ]
    types = {f.name: f.duckdb_type for f in FIELDS}
    problems: list[Problem] = []
    for col, col_type, *_ in described:
        if col not in types:
            continue
        want = types[col]
        bad = con.execute(
            f'SELECT file_row_number, "{col}"::VARCHAR FROM {source} WHERE "{col}" IS NOT NULL '
            f'AND TRY_CAST("{col}" AS {want}) IS NULL ORDER BY 1'
        ).fetchall()
        if bad:
            row, value = bad[0]
            problems.append(
                Problem(
                    f"column type {col_type} cannot hold this field ({len(bad)} row(s) fail)",
                    file=str(path),
                    line=int(row) + 1,
                    field=col,
                    unit="row",
                    expected=want,
                    got=describe(value),
                )
            )
    if problems:
        return problems
    table = arrow_table(con.sql(f"SELECT * EXCLUDE (file_row_number) FROM {source}"))
    for i, rec in enumerate(table.to_pylist(), start=1):
        for name in ("scores", "score_weights"):
            if isinstance(rec.get(name), list):  # Arrow maps arrive as (key, value) pairs
                rec[name] = dict(rec[name])
        for p in checker.check(rec, i):
            problems.append(
                Problem(
                    p.message,
                    file=p.file,
                    line=p.line,
                    field=p.field,
                    expected=p.expected,
                    got=p.got,
                    unit="row",
                )
            )
    return problems
