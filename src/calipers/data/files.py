"""Small helpers shared by the readers, the diagnostic pass, the store and every writer."""

from __future__ import annotations

import gzip
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

# C0 controls except tab and newline, DEL, and the C1 controls (ESC starts ANSI; 0x9b is a
# one-byte CSI in some terminals)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible_controls(text: str) -> str:
    """Control characters as `\\xNN` (tab and newline kept): a name or path shown anywhere."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def sql_literal(text: str) -> str:
    """A SQL string literal (paths and names go into DuckDB table functions this way)."""
    return "'" + text.replace("'", "''") + "'"


def sql_name(name: str) -> str:
    """A quoted SQL identifier: column names go into SQL this way (`group` is a keyword)."""
    return '"' + name.replace('"', '""') + '"'


def open_bytes(path: Path) -> IO[bytes]:
    """The file's bytes, transparently gunzipped for a .gz name."""
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def write_atomic(path: Path, text: str, *, shared: bool = False) -> None:
    """Write via a temp file in the same directory and a rename: readers (and a run killed midway)
    see the old file or the new one, never half of one. `shared`: readable by others as the
    umask allows (a report), instead of the temp file's private 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        if shared:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# The longest CSV cell (and line) calipers reads: as long as a JSON Lines line (1 GiB). Python's
# csv module refuses fields over 128 KiB unless told, and DuckDB lines over 2 MB.
CSV_FIELD_LIMIT = 1 << 30


def csv_rows(text: IO[str]) -> Any:
    """csv.reader over `text` with the field limit raised to `CSV_FIELD_LIMIT`."""
    import csv

    csv.field_size_limit(CSV_FIELD_LIMIT)
    return csv.reader(text)


@dataclass(frozen=True)
class BadByte:
    """Where a file stops being UTF-8: 1-based line and column, 0-based byte offset."""

    line: int
    column: int
    offset: int
    byte: int

    def describe(self) -> str:
        return f"byte 0x{self.byte:02x} at column {self.column} (byte offset {self.offset})"


def first_bad_utf8(path: Path) -> BadByte | None:
    """The first byte of `path` that is not UTF-8 (decompressed for .gz), or None."""
    offset = 0
    with open_bytes(path) as fh:
        for line, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return BadByte(line, exc.start + 1, offset + exc.start, raw[exc.start])
            offset += len(raw)
    return None


UTF8_HINT = (
    "Save the file as UTF-8 (in Excel: Save As → CSV UTF-8; elsewhere e.g. "
    "`iconv -f latin1 -t utf-8 FILE`)."
)
