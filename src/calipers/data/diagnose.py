"""The diagnostic pass: re-read a file that failed the fast path and report every problem with its
line (or Parquet row) and field. Runs only when something is wrong, so it can afford Python."""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

import duckdb

from calipers.data import jsontext
from calipers.data.duck import connect
from calipers.data.files import UTF8_HINT, csv_rows, first_bad_utf8, open_bytes, sql_literal
from calipers.data.guards import CSV_FALSE, CSV_NUMBER, CSV_TRUE
from calipers.data.model import FIELD_BY_NAME, FIELDS
from calipers.data.sampleset import arrow_table
from calipers.data.validate import FLAT_FIELDS, RecordChecker, describe
from calipers.errors import Problem, ValidationError

_CSV_NUMBER = re.compile(CSV_NUMBER)


def raise_diagnosis(path: Path, kind: str, run: str | None, *, fallback: str) -> None:
    problems = problems_of(path, kind, run)
    if not problems:  # the fast path saw something the precise pass cannot place
        problems = [Problem(fallback, file=str(path))]
    encoding = any(p.message == "not UTF-8 text" for p in problems)
    raise ValidationError(problems, hint=UTF8_HINT if encoding else None)


def problems_of(path: Path, kind: str, run: str | None) -> list[Problem]:
    """Every problem of the file, by line (or row) and field; [] for a clean file."""
    checker = RecordChecker(str(path), run_override=run)
    if kind == "jsonl":
        return _diagnose_jsonl(path, checker)
    if kind == "csv":
        return _diagnose_csv(path, checker)
    return _diagnose_parquet(path, checker)


# Free JSON values (any JSON): every strict-JSON rule applies inside them. Elsewhere the type
# rules (`validate`) refuse NaN and out-of-range numbers; a repeated key is refused everywhere.
_FREE = re.compile(
    r"decision(?:$|[.\[])|(?:assertions\[\d+\]\.value|tools\[\d+\]\.input)(?:$|[.\[])"
)


def strict_problems(record: Any, file: str, line: int, *, unit: str = "line") -> list[Problem]:
    """What strict JSON (`jsontext`) refuses in the record's known fields (a `jsontext.parse`
    result): a key twice anywhere (also at the top level), and inside the free JSON values NaN,
    ±Infinity, integers beyond 64 bits and nesting beyond `jsontext.MAX_DEPTH`."""
    if not isinstance(record, dict):
        return []
    out: list[Problem] = []
    top = jsontext.repeated_key(record)
    if top is not None:
        out.append(
            Problem("the key appears twice in one object", file=file, line=line, field=top,
                    expected="each key once", got="a repeated key", unit=unit)
        )  # fmt: skip
    for name, value in record.items():
        if name not in FIELD_BY_NAME:
            continue
        for found in jsontext.problems(value, name):
            if found.kind == "repeated" or _FREE.match(found.field):
                out.append(
                    Problem(found.message, file=file, line=line, field=found.field,
                            expected=_STRICT_EXPECTED[found.kind], got=found.got, unit=unit)
                )  # fmt: skip
    return out


_STRICT_EXPECTED = {
    "repeated": "each key once",
    "constant": "a finite number",
    "integer": "an integer within 64 bits",
    "depth": f"at most {jsontext.MAX_DEPTH} levels of nesting",
}


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
                obj = jsontext.parse(text)
            except jsontext.JSONError as exc:
                deep = exc.column is None
                problems.append(
                    Problem(
                        exc.message
                        if deep
                        else f"invalid JSON: {exc.message.removeprefix('not JSON: ')} "
                        f"at column {exc.column}",
                        file=name,
                        line=line,
                        field=exc.field,
                        expected=f"at most {jsontext.MAX_DEPTH} levels of nesting"
                        if deep
                        else "one JSON object per line",
                        got=describe(text.strip()),
                    )
                )
                continue
            strict = strict_problems(obj, name, line)
            problems.extend(strict)
            if not strict:
                problems.extend(checker.check(obj, line))
    return problems


def _csv_value(kind: str, text: str) -> Any:
    """A CSV cell as the record checker sees it: numbers and the boolean words converted where
    the field wants them, a `decision` holding strict JSON as that JSON (the fast path's
    `guards.from_text` reads them the same way)."""
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
    if kind == "JSON":
        try:
            value = jsontext.parse(text)
        except jsontext.JSONError:
            return text  # not JSON (a trailing comma too): the text, as a string
        if any(f.kind == "constant" and f.got != "an overflow" for f in jsontext.problems(value)):
            return text  # NaN or Infinity: not JSON, so a string
        return value
    return text


def _diagnose_csv(path: Path, checker: RecordChecker) -> list[Problem]:
    bad = first_bad_utf8(path)
    if bad is not None:  # the line of the byte itself, not of the row being read
        return [
            Problem("not UTF-8 text", file=str(path), line=bad.line, expected="UTF-8",
                    got=bad.describe())
        ]  # fmt: skip
    types = {f.name: f.duckdb_type for f in FLAT_FIELDS}
    problems: list[Problem] = []
    with open_bytes(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8-sig", newline="")
        reader = csv_rows(text)
        try:
            header: list[str] = next(reader, [])
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
                strict = strict_problems(rec, str(path), line)
                problems.extend(strict or checker.check(rec, line))
        except csv.Error as exc:
            problems.append(Problem(f"malformed CSV: {exc}", file=str(path), line=reader.line_num))
    return problems


def _diagnose_parquet(path: Path, checker: RecordChecker) -> list[Problem]:
    con = connect()
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
        strict = strict_problems(_free_parsed(rec), str(path), i, unit="row")
        problems.extend(strict)
        for p in [] if strict else checker.check(rec, i):
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


def _free_parsed(rec: dict[str, Any]) -> dict[str, Any]:
    """The free JSON values of a Parquet row (JSON text in their columns), parsed."""

    def value(text: Any) -> Any:
        if not isinstance(text, str):
            return text
        try:
            return jsontext.parse(text)
        except jsontext.JSONError:
            return None  # DuckDB's cast to JSON refuses such text, with its own message

    out: dict[str, Any] = {"decision": value(rec.get("decision"))}
    for name, key in (("assertions", "value"), ("tools", "input")):
        items = rec.get(name)
        if isinstance(items, list):
            out[name] = [
                {key: value(item.get(key))} if isinstance(item, dict) else None for item in items
            ]
    return out
