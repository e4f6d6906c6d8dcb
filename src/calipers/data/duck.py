"""Every DuckDB connection calipers opens, made here: DuckDB never installs or loads an extension
on its own (`autoinstall_known_extensions` and `autoload_known_extensions` off), so no command
reaches the network or loads code because of what a file looks like. What calipers reads (DuckDB
stores, JSON, CSV, Parquet) needs only the extensions built into the wheel; a file that would
need another (a SQLite file given as `--db`) is refused with a clear error instead
(`not_duckdb`, `extension_error`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb

from calipers.errors import InputError

NO_EXTENSIONS: dict[str, Any] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
_SQLITE_MAGIC = b"SQLite format 3\x00"
_DUCKDB_MAGIC = b"DUCK"  # at bytes 8–11 of every DuckDB database file


def connect(**config: Any) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB database with extensions never installed or loaded on demand."""
    return duckdb.connect(config={**NO_EXTENSIONS, **config})


def file_kind(path: Path) -> str | None:
    """What the file at `path` is by its first bytes: None when it is a DuckDB database or
    missing (DuckDB makes it); else a description for an error ("a SQLite database", "an empty
    file", "a file of another kind")."""
    try:
        with path.open("rb") as f:
            head = f.read(16)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError:
        return None  # unreadable: DuckDB's own error says why
    if not head:
        return "an empty file"
    if head.startswith(_SQLITE_MAGIC):
        return "a SQLite database"
    if head[8:12] == _DUCKDB_MAGIC:
        return None
    return "a file of another kind"


def not_duckdb(path: Path, kind: str) -> InputError:
    """The error for a `--db` file that is not a DuckDB database (exit 1)."""
    reading = (
        "DuckDB could read it only through its sqlite_scanner extension, and calipers never "
        "installs or loads DuckDB extensions"
        if "SQLite" in kind
        else "calipers reads and writes only DuckDB database files"
    )
    return InputError(
        f"the store {path} is {kind}, not a DuckDB database file: {reading}",
        hint="Give the path of a calipers store (made by `calipers import`), or a new path for "
        "a new one; to bring samples from another database, export them to JSON Lines, CSV or "
        "Parquet and `calipers import` that file.",
    )


_EXTENSION = re.compile(r'"(\w+)" is an existing extension|INSTALL (\w+)|[Ee]xtension "?(\w+)"?')


def extension_error(exc: BaseException, what: str) -> InputError | None:
    """For a DuckDB error that asks for an extension (one calipers will not load): an error that
    names `what` (a file) and the extension; None for any other error."""
    text = str(exc)
    if "xtension" not in text:
        return None
    found = _EXTENSION.search(text)
    name = next((g for g in found.groups() if g), "") if found else ""
    return InputError(
        f"{what} needs the DuckDB extension {name or '(unnamed)'}, and calipers never installs or "
        "loads DuckDB extensions",
        hint="Give calipers a DuckDB store, or samples as JSON Lines, CSV or Parquet files.",
    )
