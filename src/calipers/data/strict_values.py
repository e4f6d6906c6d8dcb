"""What DuckDB's readers accept and strict JSON (`jsontext`) does not, found after the fast path.

DuckDB reads JSON leniently: a trailing comma is dropped, `NaN` kept, a key given twice inside a
JSON value kept twice, an integer of 400 digits kept as its digits, nesting of any depth kept. The
typed fields refuse most of these by their type rules (`guards`); what is left is found here,
cheaply, without a second parse of every line in Python:

- a trailing comma, in the raw lines (DuckDB's `read_ndjson_objects` gives each line as written):
  a line with `,]` or `,}` (spaces between allowed) is read again in Python; so is a line with
  `NaN`, `Infinity`, a number of 19 digits or a 3-digit exponent, but only after the strict
  staging. After the fast one (`fast_jsonl`) that test finds nothing the diagnostic pass would
  refuse: every leaf of a known field was seen with its JSON text (such a number there sends the
  file to the strict staging), the free values are checked below, and a number in an unknown field
  is not refused (tests/test_import_raw_numbers.py). Its regular expression was most of this
  check's cost (about 0.45 s of CPU per 100,000 lines of 0.7 s);
- the free JSON values (`decision`, an assertion's `value`, a tool call's `input`), whose text
  DuckDB keeps as written but for whitespace: those that could hold a repeated key (two `:`),
  `NaN`/`Infinity`, a 19-digit number or deep nesting (1,000 characters or more) are parsed by
  `jsontext`.

Either finding sends the file to the diagnostic pass, which names the line and field; a line read
again and found clean (the characters were inside a string) changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from calipers.data import diagnose, jsontext
from calipers.data.files import sql_literal
from calipers.errors import ValidationError

# DuckDB's JSON reader needs room for the longest line (see readers._OBJECT_SIZES)
_OBJECT_SIZES = (16 << 20, 64 << 20, 256 << 20, 1 << 30)
_SUSPECT_VALUE = (
    "(length({v}) - length(replace({v}, ':', '')) >= 2 OR length({v}) >= {long} "
    "OR regexp_matches({v}, 'NaN|Infinity|[0-9]{{19}}|[eE][+]?[0-9]{{3}}'))"
)


# a value position holding what is not a JSON number, or one no field holds: NaN, Infinity, an
# integer of 19 digits or more, an exponent of 3 digits. DuckDB reads these into a string field
# (`run: NaN` became the run "NaN"); strict JSON refuses them everywhere. Inside a string these
# characters only send the line to be read again, which then finds it clean.
_NOT_JSON_NUMBER = (
    "regexp_matches({v}, '[:\\[,]\\s*-?(NaN|Infinity|[0-9]{{19}}|[0-9.]+[eE][+-]?[0-9]{{3}})')"
)


def _trailing_comma(line: str) -> str:
    """SQL: `line` has a comma, then spaces, tabs or carriage returns, then `]` or `}`. One RE2
    scan of the line: eight `contains` tests and a regular expression for the spaced forms cost
    0.25 s of CPU per 100,000 lines against 0.18 s (0.13 s of it reading the lines)."""
    return f"regexp_matches({line}, ',[ \\t\\r]*[\\]}}]')"


def _has_trailing_commas(
    con: duckdb.DuckDBPyConnection, path: Path, *, numbers: bool = True
) -> bool:
    """Whether a line has a trailing comma or (`numbers`) a value that is not a JSON number (then
    the file is read again in Python, which names the line and field)."""
    suspect = _trailing_comma("line")
    if numbers:
        suspect += f" OR {_NOT_JSON_NUMBER.format(v='line')}"
    try:
        return _count(con, _csv_lines(path), suspect) > 0
    except duckdb.InterruptException:
        raise
    except duckdb.Error:  # a line DuckDB's CSV reader does not split as JSON Lines: as before
        pass
    for size in _OBJECT_SIZES:
        source = f"read_ndjson_objects({sql_literal(str(path))}, maximum_object_size={size})"
        try:
            return _count(con, f"(SELECT json::VARCHAR AS line FROM {source})", suspect) > 0
        except duckdb.InvalidInputException as exc:
            if "maximum_object_size" not in str(exc) or size == _OBJECT_SIZES[-1]:
                raise
    return False


def _count(con: duckdb.DuckDBPyConnection, lines: str, suspect: str) -> int:
    row = con.execute(f"SELECT count(*) FROM {lines} WHERE {suspect}").fetchone()
    return int(row[0]) if row else 0


def _csv_lines(path: Path) -> str:
    """SQL: the file's lines as written, read as a CSV file of one column: no quote, no escape,
    and a delimiter, the control character U+0001, that JSON text never holds unescaped (a file
    that does is refused by the CSV reader). DuckDB's JSON Lines reader parses every line to give
    it (1M lines: 2.0 s of CPU against 1.2 s). The CSV reader refuses (an error, and the caller
    reads the lines as before) a line with a lone carriage return, a file that mixes CRLF and LF
    line ends, a line longer than its `max_line_size` (2 MB) and anything else it cannot split into
    the same lines, so it never tests other lines than those."""
    return (
        f"read_csv({sql_literal(str(path))}, columns = {{'line': 'VARCHAR'}}, delim = chr(1), "
        "quote = '', escape = '', header = false, auto_detect = false)"
    )


def _free_values(table: str) -> str:
    """SQL: the text of every free JSON value of the staged table that could break strict JSON."""
    flag = _SUSPECT_VALUE.format(v="t", long=2 * jsontext.MAX_DEPTH)
    return (
        f"SELECT t FROM (SELECT decision::VARCHAR AS t FROM {table} "
        f"UNION ALL SELECT unnest(list_transform(assertions, lambda a: a.value::VARCHAR)) "
        f"FROM {table} "
        f"UNION ALL SELECT unnest(list_transform(tools, lambda x: x.input::VARCHAR)) FROM {table}"
        f") WHERE t IS NOT NULL AND {flag}"
    )


def _bad_free_value(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    result = con.execute(_free_values(table))
    while batch := result.fetchmany(1000):
        for (text,) in batch:
            try:
                value = jsontext.parse(text)
            except jsontext.JSONError:
                return True
            if next(jsontext.problems(value), None) is not None:
                return True
    return False


def check(
    con: duckdb.DuckDBPyConnection,
    table: str,
    path: Path,
    kind: str,
    run: str | None,
    *,
    fast: bool = False,
) -> None:
    """Raise `ValidationError` (every problem, by line and field) when the staged file breaks
    strict JSON in a way its SQL reading could not see; the caller drops the table. `fast`: the
    file was staged by `fast_jsonl`, whose checks of every known leaf make the raw lines' number
    test needless."""
    if kind == "jsonl" and _has_trailing_commas(con, path, numbers=not fast):
        found = diagnose.problems_of(path, kind, run)
        if found:
            raise ValidationError(found)
    if _bad_free_value(con, table):
        diagnose.raise_diagnosis(
            path, kind, run, fallback="a JSON value breaks strict JSON (see docs/data-model.md)"
        )
