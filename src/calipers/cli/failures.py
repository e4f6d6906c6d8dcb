"""Storage failures as errors: what the command line's one error boundary (`main`) makes of a
DuckDB error on a damaged store and of an operating-system error on a full disk, a file without
permission or a read-only file system. Each becomes a `StorageError` (exit 1) naming the path,
the cause and what to do; any other exception is not one of these, and keeps its traceback.
"""

from __future__ import annotations

import errno
import linecache
import os
import re
import sys
from pathlib import Path

from calipers.errors import StorageError

STORE_KEY = "calipers.store"  # ctx.meta: the --db of the running command (set by `db_option`)

_FULL = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}
_DENIED = {errno.EACCES, errno.EPERM}
_READ_ONLY = {errno.EROFS}
_IO = {errno.EIO}
_HANDLED = _FULL | _DENIED | _READ_ONLY | _IO

_FULL_WORDS = ("no space left", "file too large", "disk quota")
_DENIED_WORDS = ("permission denied", "operation not permitted")
_DAMAGE_WORDS = ("corrupt", "checksum", "could not read enough bytes", "database file")
# DuckDB names the file in quotes: `file "PATH"`, `"PATH": No space left`, `'PATH'`
_QUOTED = re.compile(
    r"""(?:file|directory|database)\s+\\?["']([^"'\\]+)\\?["']|["']([^"']*[/\\][^"']*)["']\s*:"""
)
# the temporary name a file is written under before its rename (`write_atomic`, `export`)
_TEMP = re.compile(r"^(?:tmp_)?\.(?P<name>.+)\.[A-Za-z0-9_]{6,12}\.tmp$")

_HINT_FULL = (
    "Free space on that disk (or give a path on another one) and run the command again. Nothing "
    "was half-written: the store's writes are transactions, and other files are written under a "
    "temporary name and renamed."
)
_HINT_DENIED = (
    "Check the permissions and owner of the file and its directory (`ls -l`), or give a path "
    "you can use."
)
_HINT_READ_ONLY = "Give a path on a writable file system (--db, or the output's path)."
_HINT_IO = "The disk or file system reported an error: check it, then run the command again."
_HINT_DAMAGED = (
    "The file is not a whole DuckDB database (a copy cut short, a disk error, bytes overwritten). "
    "Restore it from a backup, or move it aside and import the data again; a command that only "
    "reads never changes it."
)


def storage_failure(exc: BaseException, store: Path | None) -> StorageError | None:
    """The `StorageError` for `exc` (`store`: the --db of the command), or None when `exc` is
    no storage failure."""
    if isinstance(exc, StorageError):
        return None
    if isinstance(exc, OSError) and not _is_duckdb(exc):
        return _os_failure(exc, store)
    if _is_duckdb(exc):
        return _duckdb_failure(exc, store)
    return None


def _is_duckdb(exc: BaseException) -> bool:
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(exc, duckdb.Error)


def _shown(path: str | Path) -> str:
    """The path as the user knows it: a temporary file by the name it was to become."""
    target = Path(path)
    match = _TEMP.match(target.name)
    return str(target.with_name(match["name"])) if match else str(target)


def _what(path: str, store: Path | None) -> str:
    """`the store PATH` for the --db file (and its write-ahead log), else the path."""
    if store is not None:
        if Path(path).resolve() == store.resolve():
            return f"the store {path}"
        if path.endswith(".wal") and Path(path[:-4]).resolve() == store.resolve():
            return f"the store {store} (its log {path})"
    return path


def _os_failure(exc: OSError, store: Path | None) -> StorageError | None:
    if exc.errno not in _HANDLED:
        return None
    reason = exc.strerror or str(exc)
    if exc.filename is not None:
        where = _what(_shown(exc.filename), store)
    elif _from_stdout(exc):
        where = "the standard output"
    else:
        where = "a file it was writing (the output, or a temporary file)"
    if exc.errno in _FULL:
        return StorageError(f"cannot write {where}: out of space ({reason})", hint=_HINT_FULL)
    if exc.errno in _DENIED:
        return StorageError(f"cannot use {where}: {reason}", hint=_HINT_DENIED)
    if exc.errno in _READ_ONLY:
        return StorageError(f"cannot write {where}: {reason}", hint=_HINT_READ_ONLY)
    return StorageError(f"cannot use {where}: {reason}", hint=_HINT_IO)


def _duckdb_failure(exc: BaseException, store: Path | None) -> StorageError | None:
    import duckdb

    text = str(exc)
    low = text.lower()
    storage_kinds = (
        duckdb.IOException,
        duckdb.PermissionException,
        duckdb.SerializationException,
        duckdb.FatalException,
    )
    damaged = any(word in low for word in _DAMAGE_WORDS)
    # a commit that failed on a full disk is a TransactionException: its words say so
    words = damaged or any(
        word in low
        for word in (*_FULL_WORDS, *_DENIED_WORDS, "read-only file system", "could not write")
    )
    if not (type(exc) is duckdb.Error or isinstance(exc, storage_kinds) or words):
        return None
    match = _QUOTED.search(text)
    path = match.group(1) or match.group(2) if match else None
    if path is None and store is None:
        where = "the store"
    else:
        where = _what(_shown(path) if path else str(store), store)
    reason = _first_line(text)
    if any(word in low for word in _FULL_WORDS):
        return StorageError(f"cannot write {where}: out of space ({reason})", hint=_HINT_FULL)
    if any(word in low for word in _DENIED_WORDS):
        return StorageError(f"cannot use {where}: permission denied ({reason})", hint=_HINT_DENIED)
    if "read-only file system" in low:
        return StorageError(f"cannot write {where}: {reason}", hint=_HINT_READ_ONLY)
    if not damaged and "read" not in low:
        return StorageError(f"cannot use {where}: {reason}", hint=_HINT_IO)
    return StorageError(
        f"cannot read {where}: it is damaged or cut short ({reason})", hint=_HINT_DAMAGED
    )


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "no detail"
    return line if len(line) <= 300 else line[:297] + "…"


def _from_stdout(exc: BaseException) -> bool:
    """Whether a write to the standard output raised `exc` (an OSError names no file then): a
    frame of its traceback writes `sys.stdout`, or holds it (a rich Console on it). Then stdout
    is pointed at /dev/null, so that Python's own flush at exit is quiet."""
    streams = {id(sys.stdout), id(getattr(sys.stdout, "buffer", sys.stdout))}
    tb = exc.__traceback__
    found = False
    while tb is not None and not found:
        frame = tb.tb_frame
        code = frame.f_code
        line = linecache.getline(code.co_filename, tb.tb_lineno)
        found = "sys.stdout" in line or any(
            id(value) in streams or id(getattr(value, "file", None)) in streams
            for value in frame.f_locals.values()
        )
        tb = tb.tb_next
    if found:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass
    return found
