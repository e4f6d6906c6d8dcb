"""`--map FIELD=COLUMN,…`: read a JSON Lines, CSV or Parquet file whose columns have other names
(`sample_id=doc_id,scores.acc=acc,run=model`). The file is rewritten with the model's names into a
temporary file, which then goes through the same validation as any file; every problem names the
original file (and, for JSON Lines and CSV, the same line, since lines are kept one for one).

Only names change, with one exception: a column whose name says it holds milliseconds (or
micro-, nanoseconds: `latency_ms`, `latencyMs`, `duration_us`) mapped to `latency_s` is divided
into seconds, with a warning saying so — never read as seconds. Otherwise values are never
converted here, so the type rules are the same as for a file written with the model's names.
Columns the map does not name keep their own names. A CSV's rows are written out again with
`\n` line ends (Python's `csv` module writes `\r\n`), one line for one line.

A COLUMN may name a nested field with dots (`scores.acc=outputs.score`): in JSON Lines, the value
under each key in turn (a key that itself holds a dot is taken as it is first); in Parquet, a
struct's field. `--task NAME` (`ColumnMap.constants`) gives every sample read one task, in place of
any task column: a table without one is read, and another tool's rows are named alike.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import duckdb

from calipers.data import jsontext
from calipers.data.duck import connect
from calipers.data.files import (
    UTF8_HINT,
    csv_rows,
    first_bad_utf8,
    open_bytes,
    sql_literal,
    sql_name,
)
from calipers.data.model import FIELD_BY_NAME
from calipers.errors import InputError, Problem, ValidationError

_HINT = "Write --map FIELD=COLUMN[,FIELD=COLUMN…], e.g. --map sample_id=doc_id,scores.acc=acc."
# a column name ending in a unit of time below the second: the divisor into seconds
_SUBSECOND = re.compile(
    r"(?:^|[_\-. ]|(?<=[a-z]))(?P<unit>ms|msec|millis|milliseconds|us|usec|micros|microseconds"
    r"|ns|nanos|nanoseconds)$",
    re.IGNORECASE,
)
_DIVISOR = {"m": 1e3, "u": 1e6, "n": 1e9}
_SECONDS = ("latency_s",)  # the fields in seconds


class ColumnMap(dict[str, str]):
    """{column: field} of `--map`, and `constants` ({field: value}: `--task NAME`) that every
    sample read gets in place of its own. True when either holds anything."""

    def __init__(self, columns: dict[str, str] | None = None,
                 constants: dict[str, str] | None = None) -> None:  # fmt: skip
        super().__init__(columns or {})
        self.constants: dict[str, str] = dict(constants or {})

    def __bool__(self) -> bool:
        return bool(len(self) or self.constants)


def constants_of(mapping: dict[str, str] | None) -> dict[str, str]:
    """The constant fields of a map (`--task NAME`): {} for a plain {column: field}."""
    return dict(getattr(mapping, "constants", {}) or {})


def with_task(text: str | None, task: str | None) -> str | None:
    """`--map`'s text carrying `--task NAME` to `parse_map` (a `str` that knows its task)."""
    if task is None:
        return text
    carried = _MapText(text or "")
    carried.task = task
    return carried


class _MapText(str):
    task: str | None = None


def divisor(column: str, field: str) -> float | None:
    """How much a mapped column's values are divided by to be `field`'s (None: not at all):
    1000 for `latency_s=latency_ms`."""
    if field not in _SECONDS:
        return None
    match = _SUBSECOND.search(column)
    if match is None:
        return None
    return _DIVISOR[match["unit"][0].lower()]


def conversion_notes(path: Path, mapping: dict[str, str]) -> list[str]:
    """A warning for each column converted into seconds."""
    notes = []
    for column, field in mapping.items():
        by = divisor(column, field)
        if by is not None:
            unit = {1e3: "milliseconds", 1e6: "microseconds", 1e9: "nanoseconds"}[by]
            notes.append(
                f"{path}: --map {field}={column}: read as {unit} (the column's name says so) and "
                f"divided by {by:,.0f} into seconds"
            )
    return notes


def missing_columns_hint(columns: list[str] | None = None) -> str:
    """The hint of an error about a required field the file lacks: name it with --map."""
    there = f" Columns there: {', '.join(columns[:20])}." if columns else ""
    return (
        "If the file names a field otherwise, map its columns: --map FIELD=COLUMN,… (e.g. "
        f"--map sample_id=doc_id,task=dataset,run=model; see `calipers schema`).{there}"
    )


def parse_map(text: str | None, task: str | None = None) -> dict[str, str]:
    """`FIELD=COLUMN,…` → {column: field}. Every FIELD is a sample field or `scores.NAME`.
    `task` (`--task NAME`, or carried by `with_task`) names the task of every sample read."""
    task = task if task is not None else getattr(text, "task", None)
    out = ColumnMap(constants={"task": _task_name(task)} if task is not None else None)
    if not text:
        return out
    for part in text.split(","):
        field, sep, column = (s.strip() for s in part.partition("="))
        if not sep or not field or not column:
            raise InputError(f"--map: '{part}' is not FIELD=COLUMN", hint=_HINT)
        if field not in FIELD_BY_NAME and not (field.startswith("scores.") and len(field) > 7):
            raise InputError(
                f"--map: '{field}' is not a sample field",
                hint="The fields are listed by `calipers schema`; a metric is scores.NAME.",
            )
        if column in out:
            raise InputError(f"--map: column '{column}' is mapped twice", hint=_HINT)
        if field in out.values():
            raise InputError(f"--map: field '{field}' is given twice", hint=_HINT)
        if field in out.constants:
            raise InputError(
                f"--map {field}={column} and --task both give the task",
                hint="Give one: --task NAME names the task of every sample read.",
            )
        out[column] = field
    return out


def _task_name(task: str) -> str:
    if not task.strip():
        raise InputError("--task: the task name is empty", hint="Give --task NAME.")
    return task


def mapped_copy(path: Path, kind: str, mapping: dict[str, str], directory: Path) -> Path:
    """A copy of `path` (format `kind`) in `directory` with the mapped columns renamed (and the
    constant fields of `--task` set)."""
    target = directory / f"mapped{''.join(path.suffixes[-2:-1]) or ''}.{_EXT[kind]}"
    if kind == "jsonl":
        _jsonl(path, mapping, target)
    elif kind == "csv":
        _csv(path, mapping, target)
    else:
        _parquet(path, mapping, target)
    return target


_EXT = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet"}


def _missing(path: Path, columns: set[str], mapping: dict[str, str]) -> None:
    absent = [c for c in mapping if c not in columns]
    if absent:
        raise InputError(
            f"{path}: --map names column(s) not in the file: {', '.join(absent)}",
            hint=f"Columns there: {', '.join(sorted(columns))}.",
        )


def _jsonl(path: Path, mapping: dict[str, str], target: Path) -> None:
    seen: set[str] = set()
    constants = constants_of(mapping)
    nested = [c for c in mapping if "." in c]
    with open_bytes(path) as src, target.open("w", encoding="utf-8") as out:
        for raw in src:
            try:
                record = jsontext.parse(raw) if raw.strip() else None
            except jsontext.JSONError:
                out.write(raw.decode("utf-8", "replace").rstrip("\n") + "\n")  # reported later
                continue
            # a key given twice would be written once: the line goes on as it is, and is refused
            if isinstance(record, dict):
                seen |= set(record)
            if (
                not isinstance(record, dict)
                or any(f.kind == "repeated" for f in jsontext.problems(record))
                or jsontext.repeated_key(record) is not None
            ):
                out.write(raw.decode("utf-8", "replace").rstrip("\n") + "\n")
                continue
            seen |= set(record)
            renamed: dict[str, object] = {}
            for key, value in record.items():
                field: str = mapping.get(str(key), str(key))
                if field in constants:
                    continue  # --task: the task given, not the file's
                _put(renamed, field, _scaled(str(key), field, value, mapping))
            for column in nested:
                if column not in record:
                    found, value = _dig(record, column)
                    if found:
                        seen.add(column)
                        _put(renamed, mapping[column], _scaled(column, mapping[column], value,
                                                               mapping))  # fmt: skip
            renamed.update(constants)
            out.write(json.dumps(renamed) + "\n")
    _missing(path, seen, mapping)


def _scaled(column: str, field: str, value: object, mapping: dict[str, str]) -> object:
    by = divisor(column, field) if column in mapping else None
    if by is not None and isinstance(value, int | float) and not isinstance(value, bool):
        return value / by
    return value


def _put(renamed: dict[str, object], field: str, value: object) -> None:
    if field.startswith("scores."):
        scores = renamed.setdefault("scores", {})
        if isinstance(scores, dict):
            scores[field[7:]] = value
    else:
        renamed[field] = value


def _dig(record: dict[str, object], column: str) -> tuple[bool, object]:
    """The value at a dotted path (`outputs.score`): (found, value). At each level a key holding
    the rest's dots whole is taken first (`{"a.b": 1}` for `a.b`)."""
    if column in record:
        return True, record[column]
    head, dot, rest = column.partition(".")
    while dot:
        inner = record.get(head)
        if isinstance(inner, dict):
            found, value = _dig(inner, rest)
            if found:
                return True, value
        more, dot, rest = rest.partition(".")
        head = f"{head}.{more}"
    return False, None


def _csv(path: Path, mapping: dict[str, str], target: Path) -> None:
    """Every row read and written again (`\n` line ends whatever the file's, `\r\n` included;
    a quoted field keeps its own line breaks, so line numbers stay the file's)."""
    bad = first_bad_utf8(path)
    if bad is not None:  # named by the line of the byte, before a row is rewritten
        problem = Problem("not UTF-8 text", file=str(path), line=bad.line, expected="UTF-8",
                          got=bad.describe())  # fmt: skip
        raise ValidationError([problem], hint=UTF8_HINT)
    with open_bytes(path) as src:
        text = io.TextIOWrapper(src, encoding="utf-8-sig", newline="")  # an Excel BOM dropped
        rows = csv_rows(text)
        header: list[str] = next(rows, [])
        _missing(path, set(header), mapping)
        scale = {
            i: by for i, c in enumerate(header)
            if c in mapping and (by := divisor(c, mapping[c])) is not None
        }  # fmt: skip
        constants = constants_of(mapping)
        names = [mapping.get(c, c) for c in header]
        kept = [i for i, name in enumerate(names) if name not in constants]  # --task replaces
        with target.open("w", encoding="utf-8", newline="") as out:
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow([names[i] for i in kept] + list(constants))
            for row in rows:
                for i, by in scale.items():
                    if i < len(row):
                        row[i] = _divided(row[i], by)
                if constants or len(kept) < len(names):
                    row = [row[i] for i in kept if i < len(row)] + list(constants.values())
                writer.writerow(row)


def _divided(cell: str, by: float) -> str:
    """A CSV cell's number divided (text that is not a number is left for the type rules)."""
    try:
        value = float(cell)
    except ValueError:
        return cell
    return repr(value / by)


def _parquet(path: Path, mapping: dict[str, str], target: Path) -> None:
    con = connect()
    try:
        source = f"read_parquet({sql_literal(str(path))})"
        described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
        types = {r[0]: str(r[1]) for r in described}
        nested = {
            c: _struct_path(con, source, c, types) for c in mapping if c not in types and "." in c
        }
        _missing(path, set(types) | {c for c, e in nested.items() if e}, mapping)
        constants = constants_of(mapping)

        def expr(column: str) -> str:
            by = divisor(column, mapping[column]) if column in mapping else None
            kind = types.get(column, "")
            numeric = any(t in kind for t in ("INT", "DOUBLE", "FLOAT", "DECIMAL"))
            name = nested.get(column) or sql_name(column)
            return f"{name} / {by}" if by is not None and numeric else name

        columns = [c for c in [*types, *nested] if mapping.get(c, c) not in constants]
        select = ", ".join(
            [f"{expr(c)} AS {sql_name(mapping.get(c, c))}" for c in columns]
            + [f"{sql_literal(v)} AS {sql_name(f)}" for f, v in constants.items()]
        )
        con.execute(
            f"COPY (SELECT {select} FROM {source}) TO {sql_literal(str(target))} (FORMAT parquet)"
        )
    finally:
        con.close()


def _struct_path(
    con: duckdb.DuckDBPyConnection, source: str, column: str, types: dict[str, str]
) -> str | None:
    """The SQL of a Parquet struct's field named with dots (`outputs.score`), or None."""
    parts = column.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        if head in types and types[head].startswith("STRUCT"):
            sql = ".".join([sql_name(head), *(sql_name(p) for p in parts[cut:])])
            try:
                con.execute(f"DESCRIBE SELECT {sql} FROM {source}")
            except duckdb.Error:
                return None
            return sql
    return None
