"""Reading another tool's CSV files (promptfoo, Phoenix, ragas, LangSmith downloads), with the
errors every adapter gives: the file named, the line where a record starts, the column, and a
hint that fits the tool. Columns are read by position, so a header that repeats a name (promptfoo
writes `Status` once per column) is read as written."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from calipers.data.files import csv_rows, first_bad_utf8, open_bytes
from calipers.errors import InputError


def header(path: Path) -> list[str]:
    """The header row (for detection: the caller catches OSError, UnicodeDecodeError and
    csv.Error); an Excel byte-order mark is not part of the first name."""
    with open_bytes(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8-sig", newline="")
        return next(csv_rows(text), [])


def is_csv(path: Path) -> bool:
    name = path.name.lower()
    return (name.endswith(".csv") or name.endswith(".csv.gz")) and path.is_file()


def records(path: Path, hint: str) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """(header, (line, cells) of each record): `line` is where the record starts (a quoted cell
    may span lines). A file that is not UTF-8 or not CSV is an error naming the line."""
    bad = first_bad_utf8(path)
    if bad is not None:
        raise InputError(
            f"{path}, line {bad.line}: not UTF-8 text ({bad.describe()})",
            hint="Save the file as UTF-8.",
        )
    import csv

    fh = io.TextIOWrapper(open_bytes(path), encoding="utf-8-sig", newline="")
    reader = csv_rows(fh)
    try:
        head: list[str] = next(reader, [])
    except csv.Error as exc:
        fh.close()
        raise InputError(f"{path}, line 1: not CSV ({exc})", hint=hint) from None
    if not head:
        fh.close()
        raise InputError(f"{path}: the file is empty (no header row)", hint=hint)

    def rows() -> Iterator[tuple[int, list[str]]]:
        try:
            start = reader.line_num + 1
            while True:
                try:
                    cells = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:
                    raise InputError(
                        f"{path}, line {start}: not CSV ({exc})",
                        hint="The file may be cut short (a partial download).",
                    ) from None
                if any(c.strip() for c in cells):
                    yield start, cells
                start = reader.line_num + 1
        finally:
            fh.close()

    return head, rows()


def cell(cells: list[str], index: int) -> str:
    """The cell at `index`, or "" where the record is short (the CSV writer left it out)."""
    return cells[index] if index < len(cells) else ""


def number(text: str) -> Any:
    """A cell meant to hold a number: the number as written, None when empty, else the text (the
    caller notes it and leaves it out: nothing is coerced)."""
    if not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        return text
