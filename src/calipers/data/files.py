"""Small helpers shared by the readers, the diagnostic pass, the store and every writer."""

from __future__ import annotations

import gzip
import os
import re
import tempfile
from pathlib import Path
from typing import IO

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
