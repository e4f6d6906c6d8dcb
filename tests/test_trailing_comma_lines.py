"""The raw-line test of `strict_values` (a trailing comma, and after the strict staging numbers
that are not JSON) reads the lines with DuckDB's CSV reader, and with its JSON Lines reader where
the CSV reader does not split a file into the same lines: the answer is the JSON Lines reader's,
on every kind of line end and line."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from calipers.data import strict_values

FILES = {
    "clean": b'{"a": [1, 2], "b": {"c": "x"}}\n{"d": 1}\n',
    "a comma before ]": b'{"a": [1, 2,]}\n',
    "a comma and spaces before }": b'{"a": 1 , \t }\n',
    "a comma in a string only": b'{"a": ",]", "b": ", }"}\n',  # read again, then found clean
    "CRLF": b'{"a": 1}\r\n{"b": [1,]}\r\n',
    "CRLF, clean": b'{"a": 1}\r\n{"b": [1]}\r\n',
    "a lone carriage return before ]": b'{"a": [1,\r]}\n{"b": 1}\n',
    "a lone carriage return, clean": b'{"a": [1\r]}\n',
    "CRLF and LF mixed": b'{"a": 1}\r\n{"b": [1 ,]}\n',
    "blank lines": b'{"a": 1}\n\n   \n{"b": [1,]}\n',
    "no line end at the end": b'{"a": {"b": 1,}}',
    "a backslash-x01 in a string": b'{"a": "C:\\\\x01", "b": [1,]}\n',
    "NaN and 19 digits": b'{"a": NaN, "b": 1234567890123456789}\n',
    "a long line": b'{"a": "' + b"x" * (3 << 20) + b'"}\n{"b": [1,]}\n',
}


def _json_lines_answer(con: duckdb.DuckDBPyConnection, path: Path, *, numbers: bool) -> bool:
    """What the test answered before it read CSV: the lines of DuckDB's JSON Lines reader."""
    suspect = strict_values._trailing_comma("line")
    if numbers:
        suspect += f" OR {strict_values._NOT_JSON_NUMBER.format(v='line')}"
    source = f"read_ndjson_objects('{path}', maximum_object_size={64 << 20})"
    lines = f"(SELECT json::VARCHAR AS line FROM {source})"
    return strict_values._count(con, lines, suspect) > 0


@pytest.mark.parametrize("numbers", [False, True])
@pytest.mark.parametrize("case", sorted(FILES))
def test_the_csv_lines_answer_as_the_json_lines_did(
    tmp_path: Path, case: str, numbers: bool
) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(FILES[case])
    con = duckdb.connect()
    got = strict_values._has_trailing_commas(con, path, numbers=numbers)
    assert got == _json_lines_answer(con, path, numbers=numbers)


@pytest.mark.parametrize(
    "case",
    ["clean", "a comma before ]", "CRLF", "CRLF, clean", "blank lines", "a comma in a string only"],
)
def test_a_plain_file_is_read_as_csv(tmp_path: Path, case: str) -> None:
    """The CSV reader takes these (the JSON Lines reader is the fallback, not the rule)."""
    path = tmp_path / "f.jsonl"
    path.write_bytes(FILES[case])
    lines = strict_values._csv_lines(path)
    found = strict_values._count(duckdb.connect(), lines, strict_values._trailing_comma("line"))
    assert (found > 0) == ("clean" not in case)


@pytest.mark.parametrize(
    "case", ["a lone carriage return before ]", "CRLF and LF mixed", "a long line"]
)
def test_a_file_the_csv_reader_splits_otherwise_is_refused_by_it(tmp_path: Path, case: str) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(FILES[case])
    with pytest.raises(duckdb.Error):
        strict_values._count(
            duckdb.connect(), strict_values._csv_lines(path), strict_values._trailing_comma("line")
        )


def test_a_control_character_in_a_line_is_refused_by_both_readers(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"a": "x\x01y"}\n')
    with pytest.raises(duckdb.Error):
        strict_values._has_trailing_commas(duckdb.connect(), path)
