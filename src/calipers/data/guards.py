"""SQL that reads each field of a sample file exactly as the record checker (`validate.py`) would:
a value of the wrong type fails the read (then the diagnostic pass names the line and field)
instead of being cast. Without these, DuckDB would round an epoch of 1.5 to 2, read "12" as 12,
an object as its JSON text, 0.5 as true.

The rules, per field type (the same on every path; `tests/test_type_rules.py` checks every field
with every wrong type on both):

- string: JSON a string, or a number as its text; CSV any text; Parquet a string or number
  column. (`group` is strict: a string only.)
- integer: JSON an integer (12.0 too: nothing is rounded); CSV an integral number; Parquet an
  integer column, or a float column whose values are integral.
- number: JSON a number; CSV a number; Parquet a numeric column.
- boolean: JSON true or false; CSV true/false/t/f/1/0/yes/no; Parquet a boolean column.
- list of strings (red_flags, bonuses): strings only.

NaN and Infinity pass the type check and are refused by the value rules (finite numbers only).
An integer beyond 64 bits is refused for an integer or number field (never rounded to a float);
for a string field it is its digits, like any number.
"""

from __future__ import annotations

import json

from calipers.data.files import sql_literal, sql_name
from calipers.data.model import INT64_MAX, Field

_INT = ("INTEGER", "BIGINT")
# What Python's float() reads in a CSV cell, as RE2 (DuckDB) and `re` both understand it.
CSV_NUMBER = (
    r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?"
    r"|[nN][aA][nN])\s*"
)
CSV_TRUE = ("true", "t", "1", "yes")
CSV_FALSE = ("false", "f", "0", "no")
_NUMERIC_COLUMNS = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
    "UBIGINT", "FLOAT", "DOUBLE",
)  # fmt: skip
_INTEGER_COLUMNS = _NUMERIC_COLUMNS[:9]

# Nested lists of objects: each key's type (the same tables as validate.py's).
ASSERTION = {"name": "VARCHAR", "type": "VARCHAR", "layer": "VARCHAR", "weight": "DOUBLE",
             "passed": "BOOLEAN", "value": "JSON", "detail": "VARCHAR"}  # fmt: skip
JUDGMENT = {"judge": "VARCHAR", "dimension": "VARCHAR", "score": "DOUBLE", "scale_min": "DOUBLE",
            "scale_max": "DOUBLE", "rationale": "VARCHAR", "red_flags": "VARCHAR[]",
            "bonuses": "VARCHAR[]", "error": "VARCHAR", "prompt_hash": "VARCHAR",
            "repeat": "INTEGER"}  # fmt: skip
HUMAN = {"dimension": "VARCHAR", "score": "DOUBLE"}
TOOL = {"name": "VARCHAR", "input": "JSON", "output": "VARCHAR"}
NESTED = {"assertions": ASSERTION, "judgments": JUDGMENT, "human": HUMAN, "tools": TOOL}


def wrong(f: Field, what: str) -> str:
    """SQL that fails the read; the diagnostic pass then names the line."""
    return f"error({sql_literal(f'{f.name}: {what}')})"


def json_kind_ok(kind: str, v: str, depth: int = 0) -> str:
    """SQL: the JSON value `v` (SQL NULL when the key is absent) is of `kind`, or null."""
    if kind == "JSON":
        return "true"
    return f"({v} IS NULL OR json_type({v}) = 'NULL' OR ({_kind_test(kind, v, depth)}))"


def _kind_test(kind: str, v: str, depth: int = 0) -> str:
    """SQL: the JSON value `v`, not null, is of `kind`."""
    t = f"json_type({v})"
    if kind == "VARCHAR":
        ok = f"{t} IN ('VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE')"
    elif kind in _INT:
        ok = (
            f"{t} IN ('BIGINT', 'UBIGINT') OR ({t} = 'DOUBLE' AND isfinite({v}::DOUBLE) "
            f"AND {v}::DOUBLE = floor({v}::DOUBLE))"
        )
    elif kind == "DOUBLE":
        # a number; an integer beyond 64 bits (JSON allows one) is refused, not rounded
        ok = (
            f"CASE WHEN {t} = 'BIGINT' THEN true "
            f"WHEN {t} = 'UBIGINT' THEN {v}::UBIGINT <= {INT64_MAX} "
            f"WHEN {t} = 'DOUBLE' THEN abs({v}::DOUBLE) < 9.2e18 "
            f"OR NOT regexp_full_match({v}::VARCHAR, '-?[0-9]+') ELSE false END"
        )
    elif kind == "BOOLEAN":
        ok = f"{t} = 'BOOLEAN'"
    elif kind == "VARCHAR[]":
        x = f"e{depth}"
        ok = (
            f"{t} = 'ARRAY' AND NOT coalesce(list_bool_or(list_transform("
            f"json_type({v}, '$[*]'), lambda {x}: {x} <> 'VARCHAR')), false)"
        )
    else:
        raise ValueError(kind)
    return ok


def _json_list_ok(struct: dict[str, str], v: str) -> str:
    """SQL: `v` is a JSON array of objects whose keys have their types. The array is parsed twice
    (the element types in one pass, every element's values as JSON leaves in another), not once
    per key per element: extracting each key from each object re-parsed the object eleven times
    for a judgment, and made these checks most of an import's time."""
    leaves = sql_literal(json.dumps([{key: "JSON" for key in struct}]))
    keys = " AND ".join(
        json_kind_ok(kind, f"o.{sql_name(key)}", depth=1) for key, kind in struct.items()
    )
    # json_transform keeps the first of a key given twice: such an object is refused instead
    return (
        f"json_type({v}) = 'ARRAY' AND NOT coalesce(list_bool_or(list_transform("
        f"json_type({v}, '$[*]'), lambda t: t <> 'OBJECT')), false) AND NOT coalesce("
        f"list_bool_or(list_transform(json_transform({v}, {leaves}), lambda o: NOT ({keys}))), "
        "false) AND NOT coalesce(list_bool_or(list_transform(json_keys("
        f"{v}, '$[*]'), lambda k: len(k) <> len(list_distinct(k)))), false)"
    )


def from_json(f: Field) -> str:
    """The field read from a JSON column of the same name."""
    col = sql_name(f.name)
    null = f"{col} IS NULL OR json_type({col}) = 'NULL'"
    if f.duckdb_type == "JSON":
        return col
    if f.name in NESTED:
        ok = _json_list_ok(NESTED[f.name], col)
        # json_transform, unlike a cast, takes objects with keys left out
        shape = json.dumps([{k: [v[:-2]] if v.endswith("[]") else v
                             for k, v in NESTED[f.name].items()}])  # fmt: skip
        value = f"json_transform({col}, {sql_literal(shape)})::{f.duckdb_type}"
        return (
            f"CASE WHEN {null} THEN NULL::{f.duckdb_type} WHEN {ok} THEN {value} "
            f"ELSE {wrong(f, 'not a list of objects of the right types')} END"
        )
    if f.name in ("scores", "score_weights"):
        ok = (
            f"json_type({col}) = 'OBJECT' AND NOT coalesce(list_bool_or(list_transform("
            f"json_type({col}, '$.*'), lambda s: s NOT IN "
            f"('NULL', 'BIGINT', 'UBIGINT', 'DOUBLE'))), false)"
            # 19 digits in a row may be an integer beyond 64 bits: then each value is tested
            f" AND (NOT regexp_matches({col}::VARCHAR, '[0-9]{{19}}') OR NOT coalesce("
            f"list_bool_or(list_transform(json_extract({col}, '$.*'), lambda n: json_type(n) "
            f"<> 'NULL' AND NOT ({_kind_test('DOUBLE', 'n')}))), false))"
        )
        return (
            f"CASE WHEN {null} THEN NULL::{f.duckdb_type} WHEN {ok} THEN {col}::{f.duckdb_type} "
            f"ELSE {wrong(f, 'not an object of numbers')} END"
        )
    if f.strict:
        return (
            f"CASE WHEN {col} IS NULL THEN NULL::VARCHAR WHEN json_type({col}) = 'VARCHAR' "
            f"THEN {col} ->> '$' WHEN json_type({col}) = 'NULL' THEN NULL::VARCHAR "
            f"ELSE {wrong(f, 'a value that is not a string')} END"
        )
    kind = f.duckdb_type
    if kind == "VARCHAR":
        value = f"{col} ->> '$'"
    elif kind in _INT:
        value = (
            f"CASE WHEN json_type({col}) = 'DOUBLE' THEN {col}::DOUBLE::{kind} "
            f"ELSE {col}::{kind} END"
        )
    else:
        value = f"{col}::{kind}"
    # the common case, a value of the right type, costs one json_type (the null tests after it)
    return (
        f"CASE WHEN {col} IS NULL THEN NULL::{kind} WHEN {_kind_test(kind, col)} THEN {value} "
        f"WHEN json_type({col}) = 'NULL' THEN NULL::{kind} ELSE {wrong(f, 'wrong type')} END"
    )


def from_text(f: Field, column: str) -> str:
    """The field read from a CSV cell (text; an empty cell is NULL)."""
    col = sql_name(column)
    kind = f.duckdb_type
    if kind == "VARCHAR":
        return col
    number = f"regexp_full_match({col}, {sql_literal(CSV_NUMBER)})"
    if kind == "BOOLEAN":
        word = f"lower(trim({col}))"
        return (
            f"CASE WHEN {col} IS NULL THEN NULL::BOOLEAN "
            f"WHEN {word} IN {CSV_TRUE} THEN true WHEN {word} IN {CSV_FALSE} THEN false "
            f"ELSE {wrong(f, 'not true or false')} END"
        )
    if kind in _INT:
        as_double = f"trim({col})::DOUBLE"
        return (
            f"CASE WHEN {col} IS NULL THEN NULL::{kind} "
            f"WHEN regexp_full_match({col}, '\\s*[+-]?\\d+\\s*') THEN trim({col})::{kind} "
            f"WHEN {number} AND isfinite({as_double}) AND {as_double} = floor({as_double}) "
            f"THEN {as_double}::{kind} ELSE {wrong(f, 'not an integer')} END"
        )
    if kind == "DOUBLE":
        return (
            f"CASE WHEN {col} IS NULL THEN NULL::DOUBLE WHEN {number} THEN trim({col})::DOUBLE "
            f"ELSE {wrong(f, 'not a number')} END"
        )
    if kind == "JSON":  # a cell that is not JSON text is a string (the decision `approve`)
        # DuckDB's json_valid takes NaN, Infinity and trailing commas; strict JSON does not, so
        # a cell with one of them outside its strings is text too (as `diagnose` reads it)
        bare = f"regexp_replace({col}, '\"(?:[^\"\\\\]|\\\\.)*\"', '', 'g')"
        lax = f"regexp_matches({bare}, 'NaN|Infinity|,\\s*[\\]}}]')"
        return f"CASE WHEN json_valid({col}) AND NOT {lax} THEN {col}::JSON ELSE to_json({col}) END"
    return f"CAST({col} AS {kind})"


def from_column(f: Field, column_type: str) -> str:
    """The field read from a typed (Parquet) column: by its type, then (floats for integers) its
    values."""
    col = sql_name(f.name)
    kind = f.duckdb_type
    base = column_type.split("(")[0].upper()
    numeric = base in _NUMERIC_COLUMNS or base == "DECIMAL"
    if kind == "BOOLEAN":
        ok = base == "BOOLEAN"
    elif kind in _INT:
        if base in _INTEGER_COLUMNS:
            ok = True
        elif numeric:
            return (
                f"CASE WHEN {col} IS NULL THEN NULL::{kind} WHEN isfinite({col}::DOUBLE) AND "
                f"{col} = floor({col}) THEN {col}::{kind} "
                f"ELSE {wrong(f, 'not an integer')} END"
            )
        else:
            ok = False
    elif kind == "DOUBLE":
        ok = numeric
    elif kind == "VARCHAR":
        ok = base == "VARCHAR" or (numeric and not f.strict)
    else:  # nested and JSON columns: DuckDB's cast, then the value rules
        return f"CAST({col} AS {kind})"
    if not ok:
        return (
            f"CASE WHEN {col} IS NULL THEN NULL::{kind} "
            f"ELSE {wrong(f, f'a {column_type} column')} END"
        )
    return f"CAST({col} AS {kind})"
