"""Every DuckDB connection calipers opens, made here: DuckDB never installs or loads an extension
on its own (`autoinstall_known_extensions` and `autoload_known_extensions` off), so no command
reaches the network or loads code because of what a file looks like. What calipers reads (DuckDB
stores, JSON, CSV, Parquet) needs only the extensions built into the wheel; a file that would
need another (a SQLite file given as `--db`) is refused with a clear error instead
(`not_duckdb`, `extension_error`).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from calipers.data.files import sql_literal
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


# In-memory databases that a store's last user gave back, its file detached, kept for the next
# store this process opens: making one registers every built-in function again (28-34 ms, most of
# a store's reopen, and of a viewer page that reads the store), detaching a file takes 0.1 ms.
SPARE_DATABASES = 2
_SPARES: list[tuple[int, duckdb.DuckDBPyConnection]] = []
_SPARES_LOCK = threading.Lock()
# what a store's use sets on its database (every open sets the first three again)
_RESET = ("temp_directory", "memory_limit", "enable_progress_bar", "threads",
          "preserve_insertion_order")  # fmt: skip


def spare_database() -> duckdb.DuckDBPyConnection:
    """An in-memory database with nothing attached, as `connect()` makes: one given back
    (`give_back`) in this process, else a new one."""
    with _SPARES_LOCK:
        while _SPARES:
            pid, con = _SPARES.pop()
            if pid == os.getpid():  # a forked child never uses its parent's
                return con
    return connect()


def give_back(con: duckdb.DuckDBPyConnection, attached: str) -> None:
    """Detach the database `attached` from `con` (its file closed and released, as closing `con`
    would) and keep `con` for `spare_database`; close it where that fails or enough are kept."""
    try:
        con.execute(f"DETACH DATABASE IF EXISTS {attached}")
        for name in _RESET:
            con.execute(f"RESET {name}")
        others = con.execute(
            "SELECT count(*) FROM duckdb_databases() WHERE NOT internal "
            "AND database_name <> 'memory'"
        ).fetchone()
        kept = others == (0,)
    except duckdb.Error:
        kept = False
    if kept:
        with _SPARES_LOCK:
            if len(_SPARES) < SPARE_DATABASES:
                _SPARES.append((os.getpid(), con))
                return
    with contextlib.suppress(duckdb.Error):
        con.close()


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


def position_in(column: str, names: Sequence[str]) -> str:
    """SQL: the place of `column`'s value among `names`, counted from 0 (NULL for another). One
    list search per row: a CASE with a branch per name costs a comparison per branch (over a
    million rows of 100 runs, 0.06 s against 0.2 s)."""
    return f"(list_position([{', '.join(sql_literal(n) for n in names)}], {column}) - 1)"


def ordered(columns: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """Fetched `columns` (fetchnumpy) with their rows sorted by the integer columns `keys`, the
    first key first, when they are not already. Sorting here rather than in the query's ORDER BY
    costs a third as much over the rows of a join (2M rows: 0.2 s against 0.6 s), and keys
    that are unique give the order ORDER BY would."""
    arrays = [np.asarray(columns[k], dtype=np.int64) for k in keys]
    if arrays[0].size < 2:
        return columns
    tied = np.ones(arrays[0].size - 1, dtype=bool)
    for key in arrays:  # already in order? (often: a scan in the order the rows were written)
        step = np.diff(key)
        if (step[tied] < 0).any():
            break
        tied &= step == 0
    else:
        return columns
    n = arrays[0].size
    low = [int(a.min()) for a in arrays]
    widths = [int(a.max()) - lo + 1 for a, lo in zip(arrays, low, strict=True)]
    space = float(np.prod(widths, dtype=np.float64))
    step_order = None
    if space < 2.0**62:
        combined = np.zeros(n, dtype=np.int64)  # one key: one sort, not three
        for key, lo, width in zip(arrays, low, widths, strict=True):
            combined = combined * width + (key - lo)
        if space <= 4 * n:  # dense keys (samples × epochs): each row put in its slot, O(n)
            slot = np.full(int(space), -1, dtype=np.int64)
            slot[combined] = np.arange(n)
            step_order = slot[slot >= 0]
            if step_order.size != n:  # a key twice: sorted instead, ties kept in order
                step_order = None
        if step_order is None:
            step_order = np.argsort(combined, kind="stable")
    else:
        step_order = np.lexsort(arrays[::-1])
    return {name: values[step_order] for name, values in columns.items()}  # masks kept
