"""Small helpers shared by the readers, the diagnostic pass and the store."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO


def sql_literal(text: str) -> str:
    """A SQL string literal (paths and names go into DuckDB table functions this way)."""
    return "'" + text.replace("'", "''") + "'"


def open_bytes(path: Path) -> IO[bytes]:
    """The file's bytes, transparently gunzipped for a .gz name."""
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")
