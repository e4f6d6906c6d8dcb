"""The fast staging of a JSON Lines file: DuckDB's own reader parses every line once, with each
leaf of the model (a scalar field, a key of a nested object, a map value, a string of a list) read
as its JSON text, and the type rules are checked on those texts, which name their JSON type by
their first character (`"` a string, `t`/`f` a boolean, a digit or `-` a number).

Why: the strict staging (`readers._jsonl_select`, the rules in `guards`) reads each nested list as
one JSON value and parses it again four times (element types, key types, repeated keys, the typed
transform), which made a 1,000,000-sample import 4.5× DuckDB's own read of the file. Reading the
leaves as JSON keeps one parse; DuckDB's reader itself refuses what is not an object where one is
expected and a key given twice, and its cast to a map refuses a map key given twice.

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

What it costs (callgrind, one thread, the instructions 20,000 more samples of the benchmark file
add): the JSON read itself is about a third; the rest is the leaf tests and conversions. Three
changes took a quarter off (1.83 → 1.40 billion): a leaf's text is converted by a VARCHAR cast
(`'0.77'::DOUBLE`), which reads the number once, where the JSON cast parsed the text as a JSON
document first; a map (`scores`) is read as its object's JSON text, checked by what follows each
key (`_map_ok`) and cast once (read as MAP(VARCHAR, JSON), then cast to MAP(VARCHAR, DOUBLE), each
map's keys were hashed twice: DuckDB checks a map's keys are unique whenever it makes one), a sixth
of the query; and a nested list's keys are checked where they are converted (`_member`).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
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


def _text(v: str) -> str:
    return f"{v}::VARCHAR"


def _is_number(v: str) -> str:
    # the first character of a JSON number: a digit or '-' ("-" is 45, "0"…"9" are 48…57)
    return f"(ascii({_text(v)}) BETWEEN 48 AND 57 OR ascii({_text(v)}) = 45)"


def _leaf_ok(kind: str, v: str, *, strict: bool = False) -> str:
    """SQL, never NULL: the JSON leaf `v` (SQL NULL when absent or null) is one the fast path
    takes for a field of DuckDB type `kind`. The test of the common kind comes first: an OR stops
    at the first true one."""
    text = _text(v)
    absent = f"{v} IS NULL OR {text} = 'null'"
    if kind == "JSON":
        return "true"
    if kind == "VARCHAR":
        string = f"left({text}, 1) = '\"'"
        if strict:
            return f"({string} OR {absent})"
        return f"({string} OR {absent} OR regexp_full_match({text}, '-?[0-9]{{1,18}}'))"
    if kind in ("INTEGER", "BIGINT"):
        return f"({v} IS NULL OR regexp_full_match({text}, '-?[0-9]+') OR {text} = 'null')"
    if kind == "DOUBLE":
        number = f"{_is_number(v)} AND abs({text}::DOUBLE) < {_LARGEST}"
        return f"({v} IS NULL OR ({number}) OR {text} = 'null')"
    if kind == "BOOLEAN":
        return f"({text} IN ('true', 'false') OR {absent})"
    if kind == "VARCHAR[]":
        return (
            f"({v} IS NULL OR NOT coalesce(list_bool_or(list_transform({v}, lambda e: "
            f"e IS NULL OR left(e::VARCHAR, 1) <> '\"')), false))"
        )
    raise ValueError(kind)


def _leaf_value(kind: str, v: str) -> str:
    """SQL: the JSON leaf `v`, taken by `_leaf_ok`, as the strict path converts it. A number or
    boolean is cast from its text, which DuckDB's reader wrote (the shortest text that reads back
    as the same double): the same value as the JSON cast gives, read once instead of twice."""
    if kind == "JSON":
        return v
    if kind == "VARCHAR":
        return f"{v} ->> '$'"
    if kind == "VARCHAR[]":
        return f"list_transform({v}, lambda e: e ->> '$')"
    return f"{_text(v)}::{kind}"


def _is_map(f: Field) -> bool:
    return f.duckdb_type.startswith("MAP(")


def _read_type(f: Field) -> str:
    """The type the reader gives the field: JSON for every leaf, and for a map its whole object."""
    if f.name in NESTED:
        keys = ", ".join(
            f"{sql_name(k)} {'JSON[]' if kind == 'VARCHAR[]' else 'JSON'}"
            for k, kind in NESTED[f.name].items()
        )
        return f"STRUCT({keys})[]"
    return "JSON"


def _map_ok(col: str) -> str:
    """SQL: the map's JSON text (the reader writes it without spaces) is an object whose values are
    numbers or null. Any other value follows its key's closing quote and colon: `":"` a string,
    `":t` or `":f` a boolean, `":{` an object, `":[` an array. Inside a key or a string those
    characters have their quote escaped (`\\"`), so they never hide a value; a key that holds `\\":`
    only sends the file to the strict path. A number's size and NaN are tested on the cast values
    (`_map_bounds`); a key given twice fails the cast, as it failed the MAP read before."""
    text = _text(col)
    other = " OR ".join(
        f"contains({text}, {sql_literal(k)})" for k in ('":"', '":t', '":f', '":{', '":[')
    )
    return f"({col} IS NULL OR (left({text}, 1) = '{{' AND NOT ({other})))"


def _map_bounds(col: str) -> str:
    """SQL, never NULL: every value of the cast map is below `_LARGEST` in magnitude (NaN and ±∞
    are not), or null."""
    return (
        f"NOT coalesce(list_bool_or(list_transform(map_values({col}), "
        f"lambda x: NOT abs(x) < {_LARGEST})), false)"
    )


def _field_ok(f: Field) -> str:
    col = sql_name(f.name)
    if f.name in NESTED:  # no null element (`list_count` counts the others); the keys: `_member`
        return f"({col} IS NULL OR list_count({col}) = len({col}))"
    if _is_map(f):
        return _map_ok(col)
    return _leaf_ok(f.duckdb_type, col, strict=f.strict)


def _member(kind: str, v: str) -> str:
    """SQL: a key of a nested list's object, checked and converted in one expression (one lambda
    per list: DuckDB sets up a lambda's expressions again for every chunk of rows, which cost a
    twelfth of the query when each list had a lambda for its checks and one for its values)."""
    refuse = f"error({sql_literal(_NOT_FAST)})"
    if kind == "JSON":
        return v
    if kind == "VARCHAR[]":
        return (
            f"list_transform({v}, lambda e: CASE WHEN left(e::VARCHAR, 1) = '\"' "
            f"THEN e ->> '$' ELSE {refuse} END)"
        )
    return f"CASE WHEN {_leaf_ok(kind, v)} THEN {_leaf_value(kind, v)} ELSE {refuse} END"


def _field_value(f: Field) -> str:
    col = sql_name(f.name)
    if f.name in NESTED:
        members = ", ".join(
            f"{sql_literal(k)}: {_member(kind, f'o.{sql_name(k)}')}"
            for k, kind in NESTED[f.name].items()
        )
        return f"list_transform({col}, lambda o: {{{members}}})::{f.duckdb_type}"
    if _is_map(f):
        return f"{col}::{f.duckdb_type}"  # the object's text, its values checked by `_map_ok`
    return _leaf_value(f.duckdb_type, col)


# A small file is read here first for the fields it names: DuckDB binds the query in 40–60 ms
# when it reads all of the model's fields (most of it the nested lists' lambdas and the reader's
# STRUCT types), against about 5 ms for the four fields of a minimal sample (2026-11-27).
# Above this size the read itself outweighs the binding.
SCANNED_BYTES = 1 << 20
# `\u0041`…: an ASCII character written as an escape, which could spell a field's name in a key
_ASCII_ESCAPE = re.compile(rb"\\u00[2-7][0-9a-fA-F]")
_COMPRESSED = (b"\x1f\x8b", b"\x28\xb5\x2f\xfd")  # gzip, zstd: DuckDB would unpack them


@dataclass(frozen=True)
class Named:
    """The model's fields a file names, read from the file as it was (`seen`: its size, change
    time and inode) before the query read it."""

    fields: frozenset[str]
    seen: tuple[int, int, int]

    def still(self, path: Path) -> bool:
        """Whether the file is as it was scanned: else its lines may name other fields, and the
        query that read only these must be made again with all of them."""
        return _seen(path) == self.seen


def _seen(path: Path) -> tuple[int, int, int] | None:
    """The file's size, change time and inode; None for anything but a regular file (a pipe's
    bytes, read here, would be gone for DuckDB's read)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def named_fields(path: Path) -> Named | None:
    """The fields whose quoted name appears anywhere in the file (every key its lines hold is among
    them, and maybe more), for a plain UTF-8 file of at most `SCANNED_BYTES`; None where that
    cannot be told so cheaply (a larger or compressed file, one that is not UTF-8, one that writes
    an ASCII character as an escape) or where it names none of them: the query reads them all."""
    seen = _seen(path)
    if seen is None or seen[0] > SCANNED_BYTES or path.suffix.lower() in (".gz", ".zst"):
        return None
    try:
        data = path.read_bytes()
        data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if data.startswith(_COMPRESSED) or _ASCII_ESCAPE.search(data) or _seen(path) != seen:
        return None
    fields = frozenset(f.name for f in FIELDS if b'"' + f.name.encode() + b'"' in data)
    return Named(fields, seen) if fields else None


def select(
    path: Path,
    run: str | None,
    *,
    object_size: int,
    refused: str | None = None,
    named: Named | None = None,
) -> str:
    """The staging query: every row's leaves checked (a row that fails makes the query fail, and
    the caller stage the file by the strict path), then converted to the model's types, and the
    maps' values checked once cast. `refused`: SQL over the typed row, true for a row that breaks
    a rule of the model beyond its types, which then fails the query too (the one-pass import's
    rules, checked as the rows are read rather than in a second pass over the stored ones).
    `named` (`named_fields`): only these fields are read; the others, named nowhere in the file,
    are null, as reading them would make them (the caller checks `named.still(path)` after)."""
    read = [f for f in FIELDS if named is None or f.name in named.fields]
    reading = {f.name for f in read}
    columns = "{" + ", ".join(f"{sql_literal(f.name)}: {sql_literal(_read_type(f))}"
                              for f in read) + "}"  # fmt: skip
    ok = " AND ".join(_field_ok(f) for f in read)
    values = ", ".join(
        f"{keyed(f.name, _field_value(f) if f.name in reading else f'NULL::{f.duckdb_type}', run)} "
        f"AS {sql_name(f.name)}"
        for f in FIELDS
    )
    bounds = " AND ".join(["true", *(_map_bounds(sql_name(f.name)) for f in read if _is_map(f))])
    if refused is not None:
        bounds += f" AND NOT ({refused})"
    refuse = f"error({sql_literal(_NOT_FAST)})"
    return (
        f"SELECT * FROM (SELECT {values} FROM read_json({sql_literal(str(path))}, "
        f"format='newline_delimited', columns={columns}, maximum_object_size={object_size}) "
        f"WHERE CASE WHEN {ok} THEN true ELSE {refuse} END) "
        f"WHERE CASE WHEN {bounds} THEN true ELSE {refuse} END"
    )


def stage(
    con: duckdb.DuckDBPyConnection, table: str, path: Path, run: str | None, *, object_size: int
) -> bool:
    """Stage `path` into the temporary table `table` by the fast path; False (and no table) when
    anything stops it: a value it leaves to the strict path, a line DuckDB cannot read or a line
    longer than `object_size` (the strict path has its own answer to each). Memory is as for the
    strict path: once more on one thread, then an error naming the limit."""
    named = named_fields(path)
    try:
        create_within_memory(
            con, table, select(path, run, object_size=object_size, named=named), path
        )
        if named is not None and not named.still(path):  # changed as it was read: read it all
            con.execute(f"DROP TABLE {table}")
            create_within_memory(con, table, select(path, run, object_size=object_size), path)
    except duckdb.InterruptException:
        raise
    except duckdb.Error:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        return False
    return True
