"""The flat files, CSV and Parquet, read into a staging table of the model's typed columns (the
fast path of `readers`; `guards` holds the type rules), and the staging query's memory fallback
that every format shares."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import duckdb

from calipers.data import guards
from calipers.data.files import (
    CSV_FIELD_LIMIT,
    UTF8_HINT,
    csv_rows,
    first_bad_utf8,
    open_bytes,
    sql_literal,
    sql_name,
)
from calipers.data.mapping import missing_columns_hint
from calipers.data.model import FIELD_BY_NAME, FIELDS, KEY
from calipers.data.validate import FLAT_FIELDS
from calipers.errors import InputError, Problem, ValidationError


def keyed(name: str, value: str, run: str | None) -> str:
    """A field's final expression: `--run` overrides the run, a missing epoch is 0."""
    if name == "run" and run is not None:
        return sql_literal(run)
    if name == "epoch":
        return f"coalesce({value}, 0)"
    return value


def create_within_memory(
    con: duckdb.DuckDBPyConnection, table: str, select: str, path: Path
) -> None:
    """CREATE TEMP TABLE … AS the staging query; when it runs out of memory (`memory_limit`,
    CALIPERS_MEMORY_LIMIT), once more on one thread: each of DuckDB's JSON readers holds its own
    buffers, and reading every field as JSON for the type rules needs them (a 921 MB file of
    1,000,000 samples does not fit 600 MB on two threads, and does on one, in about twice the time).
    Out of memory on one thread too is an error that says so."""
    try:
        con.execute(f"CREATE TEMP TABLE {table} AS {select}")
        return
    except duckdb.OutOfMemoryException:
        con.execute(f"DROP TABLE IF EXISTS {table}")
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    con.execute("SET threads = 1")
    try:
        con.execute(f"CREATE TEMP TABLE {table} AS {select}")
    except duckdb.OutOfMemoryException as exc:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        raise InputError(
            f"{path}: reading it needs more memory than the limit of {limit} "
            f"({str(exc).splitlines()[0]})",
            hint="Raise it with CALIPERS_MEMORY_LIMIT (e.g. CALIPERS_MEMORY_LIMIT=2GB), or split "
            "the file.",
        ) from None
    finally:
        con.execute(f"SET threads = {int(threads)}")


def csv_header(path: Path) -> list[str]:
    """The header row; an Excel UTF-8 byte-order mark before it is not part of the first name."""
    with open_bytes(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8-sig", newline="")
        try:
            return next(csv_rows(text))
        except StopIteration:
            return []
        except UnicodeDecodeError:
            bad = first_bad_utf8(path)  # the line of the byte (the reader reads ahead)
            raise ValidationError(
                [
                    Problem(
                        "not UTF-8 text",
                        file=str(path),
                        line=bad.line if bad else 1,
                        expected="UTF-8",
                        got=bad.describe() if bad else "a byte that is not UTF-8",
                    )
                ],
                hint=UTF8_HINT,
            ) from None


def csv_columns(path: Path, run: str | None) -> tuple[list[str], list[str]]:
    header = csv_header(path)
    problems: list[Problem] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for col in header:
        if col in seen:
            problems.append(
                Problem(
                    "duplicate column",
                    file=str(path),
                    line=1,
                    field=col,
                    expected="each column once",
                    got="twice",
                )
            )
        seen.add(col)
    required = [k for k in KEY if k != "epoch" and not (k == "run" and run is not None)]
    for col in required:
        if col not in seen:
            hint = " (or give --as NAME)" if col == "run" else ""
            problems.append(
                Problem(
                    f"missing required column{hint}",
                    file=str(path),
                    line=1,
                    field=col,
                    expected=f"a '{col}' column",
                    got="no such column",
                )
            )
    flat = {f.name for f in FLAT_FIELDS}
    ignored = [c for c in header if c not in flat and not c.startswith("scores.")]
    if ignored:
        warnings.append(
            f"{path}: column(s) ignored: {', '.join(ignored)} (CSV carries the flat "
            "fields and scores.NAME; nested fields need JSON Lines)"
        )
    if problems:
        missing = any(p.message.startswith("missing required column") for p in problems)
        raise ValidationError(problems, hint=missing_columns_hint(header) if missing else None)
    return header, warnings


# DuckDB reads CSV lines up to 2 MB by default; longer ones are read again with room for them,
# up to the documented bound (`CSV_FIELD_LIMIT`, 1 GiB).
_CSV_LINE_SIZES = (2 << 20, 64 << 20, CSV_FIELD_LIMIT)


def stage_csv(con: duckdb.DuckDBPyConnection, table: str, path: Path, run: str | None) -> list[str]:
    for size in _CSV_LINE_SIZES:
        select, warnings = csv_select(path, run, line_size=size)
        try:
            create_within_memory(con, table, select, path)
            return warnings
        except duckdb.InvalidInputException as exc:
            if "line size" not in str(exc).lower() or size == _CSV_LINE_SIZES[-1]:
                raise
            con.execute(f"DROP TABLE IF EXISTS {table}")
    return []


def csv_select(
    path: Path, run: str | None, *, line_size: int = _CSV_LINE_SIZES[0]
) -> tuple[str, list[str]]:
    """Every cell is read as text and converted by the type rules (`guards`)."""
    header, warnings = csv_columns(path, run)
    columns = "{" + ", ".join(f"{sql_literal(c)}: 'VARCHAR'" for c in header) + "}"
    size = f", max_line_size={line_size}" if line_size != _CSV_LINE_SIZES[0] else ""
    source = (
        f"read_csv({sql_literal(str(path))}, header=true, auto_detect=false, delim=',', "
        f"quote='\"', escape='\"', nullstr='', columns={columns}{size})"
    )
    by_name = {f.name: f for f in FLAT_FIELDS}
    score_field = FIELD_BY_NAME["cost_usd"]  # any number field: scores.NAME are numbers
    typed = [
        f"{guards.from_text(by_name[c], c)} AS {sql_name(c)}" for c in header if c in by_name
    ] + [
        f"{guards.from_text(replace(score_field, name=c), c)} AS {sql_name(c)}"
        for c in header if c.startswith("scores.")
    ]  # fmt: skip
    present = [c for c in header if c in by_name or c.startswith("scores.")]
    inner = f"(SELECT {', '.join(typed) or 'NULL AS _none'} FROM {source})"
    return _select_from(inner, {c: "typed" for c in present}, run), warnings


def _select_from(source: str, present: dict[str, str], run: str | None) -> str:
    """The model's columns from `source`, whose `present` columns map to their type ("typed":
    already converted by the type rules)."""
    score_cols = [c for c in present if c.startswith("scores.")]
    exprs = []
    for f in FIELDS:
        if f.name == "scores" and score_cols and "scores" not in present:
            entries = ", ".join(
                f'struct_pack(key := {sql_literal(c[7:])}, value := "{c}"::DOUBLE)'
                for c in score_cols
            )
            expr = (
                f"map_from_entries(list_filter([{entries}], lambda e: e.value IS NOT NULL))"
                f"::{f.duckdb_type}"
            )
        elif f.name in present:
            column_type = present[f.name]
            converted = (
                sql_name(f.name) if column_type == "typed" else guards.from_column(f, column_type)
            )
            expr = keyed(f.name, converted, run)
        else:
            expr = keyed(f.name, f"NULL::{f.duckdb_type}", run)
        exprs.append(f"{expr} AS {sql_name(f.name)}")
    return f"SELECT {', '.join(exprs)} FROM {source}"


def parquet_select(
    con: duckdb.DuckDBPyConnection, path: Path, run: str | None
) -> tuple[str, list[str]]:
    source = f"read_parquet({sql_literal(str(path))})"
    present = {r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    known = {f.name for f in FIELDS}
    ignored = [c for c in present if c not in known and not c.startswith("scores.")]
    warnings = [f"{path}: column(s) ignored: {', '.join(ignored)}"] if ignored else []
    return _select_from(source, present, run), warnings
