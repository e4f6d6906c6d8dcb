"""The fast staging of a JSON Lines file: DuckDB's own reader parses every line once, with each
leaf of the model (a scalar field, a key of a nested object, a map value, a string of a list) read
as its JSON text, and the type rules are checked on those texts, which name their JSON type by
their first character (`"` a string, `t`/`f` a boolean, a digit or `-` a number).

Why: the strict staging (`readers._jsonl_select`, the rules in `guards`) reads each nested list as
one JSON value and parses it again four times (element types, key types, repeated keys, the typed
transform), which made a 1,000,000-sample import 4.5× DuckDB's own read of the file. Reading the
leaves as JSON keeps one parse; DuckDB's reader itself refuses what is not an object where one is
expected, a key given twice and a map key given twice.

The fast path only ever takes what the strict path takes, and stores the same values; a value it is
not sure of is not an error here but a reason to stage the file again by the strict path, which
then refuses or takes it exactly as before (so every error keeps its file, line and field):

- a string field takes a string, or an integer of up to 18 digits (its text is the same by both
  paths); any other number (a fraction, an exponent, 19 digits or more) takes the strict path;
- an integer field takes an integer written without a fraction or exponent (12.0 takes the
  strict path, which accepts it);
- a number field takes a number below 9.2e18 in magnitude: a larger one may be an integer beyond
  64 bits, NaN or ±Infinity, which the strict path and the diagnostic pass tell apart;
- a boolean field takes true or false; a list of strings, strings; a nested list, objects (a null
  element takes the strict path); a map, numbers or null.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from calipers.data.files import sql_literal, sql_name
from calipers.data.guards import NESTED
from calipers.data.model import FIELDS, Field
from calipers.data.tabular import create_within_memory, keyed

# the largest magnitude taken as a number: below 2⁶³, so an integer written with 19 digits or more
# that is beyond 64 bits (refused by the strict rules) never passes as a float
_LARGEST = "9.2e18"
_NOT_FAST = "calipers: a value the fast staging leaves to the strict one"
_DIGITS = tuple("-0123456789")


def _text(v: str) -> str:
    return f"{v}::VARCHAR"


def _is_number(v: str) -> str:
    return f"left({_text(v)}, 1) IN {_DIGITS}"


def _leaf_ok(kind: str, v: str, *, strict: bool = False) -> str:
    """SQL, never NULL: the JSON leaf `v` (SQL NULL when absent or null) is one the fast path
    takes for a field of DuckDB type `kind`."""
    text = _text(v)
    absent = f"{v} IS NULL OR {text} = 'null'"
    if kind == "JSON":
        return "true"
    if kind == "VARCHAR":
        string = f"left({text}, 1) = '\"'"
        if strict:
            return f"({absent} OR {string})"
        return f"({absent} OR {string} OR regexp_full_match({text}, '-?[0-9]{{1,18}}'))"
    if kind in ("INTEGER", "BIGINT"):
        return f"({absent} OR regexp_full_match({text}, '-?[0-9]+'))"
    if kind == "DOUBLE":
        return f"({absent} OR ({_is_number(v)} AND abs({v}::DOUBLE) < {_LARGEST}))"
    if kind == "BOOLEAN":
        return f"({absent} OR {text} IN ('true', 'false'))"
    if kind == "VARCHAR[]":
        return (
            f"({v} IS NULL OR NOT coalesce(list_bool_or(list_transform({v}, lambda e: "
            f"e IS NULL OR left(e::VARCHAR, 1) <> '\"')), false))"
        )
    raise ValueError(kind)


def _leaf_value(kind: str, v: str) -> str:
    """SQL: the JSON leaf `v`, taken by `_leaf_ok`, as the strict path converts it."""
    if kind == "JSON":
        return v
    if kind == "VARCHAR":
        return f"{v} ->> '$'"
    if kind == "VARCHAR[]":
        return f"list_transform({v}, lambda e: e ->> '$')"
    return f"{v}::{kind}"


def _read_type(f: Field) -> str:
    """The type the reader gives the field: JSON for every leaf."""
    if f.name in NESTED:
        keys = ", ".join(
            f"{sql_name(k)} {'JSON[]' if kind == 'VARCHAR[]' else 'JSON'}"
            for k, kind in NESTED[f.name].items()
        )
        return f"STRUCT({keys})[]"
    if f.duckdb_type.startswith("MAP("):
        return "MAP(VARCHAR, JSON)"
    return "JSON"


def _field_ok(f: Field) -> str:
    col = sql_name(f.name)
    if f.name in NESTED:
        keys = " AND ".join(
            _leaf_ok(kind, f"o.{sql_name(k)}") for k, kind in NESTED[f.name].items()
        )
        return (
            f"({col} IS NULL OR NOT coalesce(list_bool_or(list_transform({col}, "
            f"lambda o: o IS NULL OR NOT ({keys}))), false))"
        )
    if f.duckdb_type.startswith("MAP("):
        return (
            f"({col} IS NULL OR NOT coalesce(list_bool_or(list_transform(map_values({col}), "
            f"lambda x: NOT {_leaf_ok('DOUBLE', 'x')})), false))"
        )
    return _leaf_ok(f.duckdb_type, col, strict=f.strict)


def _field_value(f: Field) -> str:
    col = sql_name(f.name)
    if f.name in NESTED:
        members = ", ".join(
            f"{sql_literal(k)}: {_leaf_value(kind, f'o.{sql_name(k)}')}"
            for k, kind in NESTED[f.name].items()
        )
        return f"list_transform({col}, lambda o: {{{members}}})::{f.duckdb_type}"
    return _leaf_value(f.duckdb_type, col)  # a map: MAP(VARCHAR, JSON) cast, values checked


def select(path: Path, run: str | None, *, object_size: int) -> str:
    """The staging query: every row's leaves checked (a row that fails makes the query fail, and
    the caller stage the file by the strict path), then converted to the model's types."""
    columns = "{" + ", ".join(f"{sql_literal(f.name)}: {sql_literal(_read_type(f))}"
                              for f in FIELDS) + "}"  # fmt: skip
    ok = " AND ".join(_field_ok(f) for f in FIELDS)
    values = ", ".join(
        f"{keyed(f.name, _field_value(f), run)} AS {sql_name(f.name)}" for f in FIELDS
    )
    return (
        f"SELECT {values} FROM read_json({sql_literal(str(path))}, format='newline_delimited', "
        f"columns={columns}, maximum_object_size={object_size}) "
        f"WHERE CASE WHEN {ok} THEN true ELSE error({sql_literal(_NOT_FAST)}) END"
    )


def stage(
    con: duckdb.DuckDBPyConnection, table: str, path: Path, run: str | None, *, object_size: int
) -> bool:
    """Stage `path` into the temporary table `table` by the fast path; False (and no table) when
    anything stops it: a value it leaves to the strict path, a line DuckDB cannot read or a line
    longer than `object_size` (the strict path has its own answer to each). Memory is as for the
    strict path: once more on one thread, then an error naming the limit."""
    try:
        create_within_memory(con, table, select(path, run, object_size=object_size), path)
    except duckdb.InterruptException:
        raise
    except duckdb.Error:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        return False
    return True
