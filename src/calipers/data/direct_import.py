"""The one-pass import of JSON Lines files: each file read by DuckDB straight into the store's
`samples`, inside the import's transaction, and checked there (issue 39).

The staged import (`readers.stage_files`, then `Store._write`) reads a file into a temporary table,
checks it, then copies it into `samples`. At 1,000,000 samples that table outgrew the memory limit
and was spilled to disk, and the copy cost as much again: 28 s of CPU for the read and the copy,
against 22 s for the read straight into the store. Here the same fast read (`fast_jsonl.select`)
inserts into `samples` marked with the import's own timestamp, and the same checks run on the rows
so marked: keys given twice (`readers.repeated_keys`), strict JSON (`strict_values.check`) and
keys shared between files (`readers.cross_file_duplicates`). The rules beyond the types
(`readers.rule_violation`: an empty key, NaN, a score outside its scale…) are checked as the rows
are read, a row breaking one failing the insert, rather than by a pass over the stored rows after
it (0.87 s of a 19 s import of 1,000,000 samples).

Anything else is left to the staged import, which then answers exactly as before: a file it does
not take (another format, another tool's file, a manifest, `--map`, `--run`, `--replace-tasks`, a
file given twice), a value the fast read leaves to the strict one, or any problem a check finds.
The transaction is rolled back first, so a try that gives way leaves the store as it was.
"""

from __future__ import annotations

import contextlib
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from calipers import writes
from calipers.data import fast_jsonl, layer_inputs, readers, sample_keys, strict_values
from calipers.data.files import sql_literal, sql_name
from calipers.data.model import FIELD_NAMES, KEY
from calipers.data.readers import StagedFile
from calipers.data.sampleset import scalar
from calipers.errors import CalipersError, Interrupted


class _GiveWay(Exception):
    """The files need the staged import."""


@dataclass
class Written:
    staged: list[StagedFile]  # one per file, `table` the view of its rows in `samples`
    replaced: int
    written: int
    runs: list[str]


def _takes(paths: Sequence[Path], fmt: str) -> bool:
    """Whether every path is a plain, non-empty JSON Lines file of calipers' own, each given once
    (what the staged import would read by `fast_jsonl` without an adapter or a mapping)."""
    from calipers.data.adapters import adapter_for, manifests

    if fmt not in ("auto", "jsonl") or len({p.resolve() for p in paths}) != len(paths):
        return False
    for path in paths:
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode) or info.st_size == 0 or path.suffix.lower() == ".gz":
                return False
            if readers.detect_format(path, fmt) != "jsonl" or adapter_for(path, fmt) is not None:
                return False
            manifests.refuse(path)  # a manifest or a single JSON document: the staged import says
        except (OSError, CalipersError, ValueError):
            return False
    return True


def _marker(con: duckdb.DuckDBPyConnection) -> datetime:
    """The import's timestamp, one that no stored sample has: the rows it marks are this
    import's."""
    now = datetime.now(UTC).replace(tzinfo=None)
    while scalar(con, "SELECT count(*) FROM samples WHERE imported_at = ?", [now]):
        now += timedelta(microseconds=1)
    return now


def write(
    con: duckdb.DuckDBPyConnection,
    store: Path,
    paths: Sequence[Path],
    names: Sequence[str | None],
    *,
    run: str | None,
    fmt: str,
) -> Written | None:
    """Import `paths` in one pass and one transaction; None (and the store as it was) when they
    need the staged import. `names` (one per path; None: `run`, else the tool's) name each file's
    run; `run` is `--as`."""
    if not _takes(paths, fmt):
        return None
    now = _marker(con)
    stamp = f"TIMESTAMP {sql_literal(now.isoformat(sep=' '))}"
    staged: list[StagedFile] = []
    files = f"{len(paths)} file(s) into {store}"
    try:
        with writes.transaction(con, f"the import of {files}") as record:
            try:
                _read_and_check(con, paths, names, run, stamp, staged)
            except _GiveWay:
                # rolled back; said so only if Ctrl-C stops the staged import that follows
                record.what = (
                    f"a one-pass try at the import of {files} (given up for the staged one)"
                )
                raise
            rows = sum(s.rows for s in staged)
            record.what = f"the import of {rows:,} sample(s) from {files}"  # as the staged one says
            replaced = _replace(con, staged, stamp, now, run)
            written = f"SELECT DISTINCT run FROM samples WHERE imported_at = {stamp}"
            runs = sorted(r[0] for r in con.execute(written).fetchall())
            stale = layer_inputs.stale_runs(con)
            sample_keys.forget(con, stale)  # keyed again after the import, with its rows
            # the written runs' layered inputs, and any run's that are missing or out of date
            layer_inputs.refresh(con, sorted(set(runs) | set(stale)))
    except _GiveWay:
        return None
    finally:
        with contextlib.suppress(duckdb.Error):  # after an interrupt too
            for s in staged:
                con.execute(f"DROP VIEW IF EXISTS {s.table}")
    sample_keys.assign_apart(con, store)  # the written rows' integer keys
    for s in staged:
        s.warnings = readers._jsonl_unknown_fields(s.path)
    return Written(staged, replaced, sum(s.rows for s in staged), runs)


def _read_and_check(
    con: duckdb.DuckDBPyConnection,
    paths: Sequence[Path],
    names: Sequence[str | None],
    run: str | None,
    stamp: str,
    staged: list[StagedFile],
) -> None:
    """Each file into `samples` (appended to `staged`), and every check the staged import makes;
    `_GiveWay` when the fast read or a check does not take them."""
    try:
        for i, path in enumerate(paths):
            named = run if names[i] is None else names[i]
            staged.append(_insert(con, path, f"direct_{i}", named, stamp))
            # a row breaking a rule failed the insert (`fast_jsonl.select`'s `refused`)
            if staged[-1].rows == 0 or readers.repeated_keys(con, staged[-1].table):
                raise _GiveWay
            strict_values.check(con, staged[-1].table, path, "jsonl", named, fast=True)
        if readers.cross_file_duplicates(con, staged):
            raise _GiveWay
    except (duckdb.InterruptException, Interrupted):
        raise
    except (duckdb.Error, CalipersError):  # refused, or unsure: the staged import says
        raise _GiveWay from None


def _insert(
    con: duckdb.DuckDBPyConnection, path: Path, view: str, named: str | None, stamp: str
) -> StagedFile:
    """The file's rows into `samples`, marked by `stamp`, and `view` of them."""
    cols = ", ".join(map(sql_name, FIELD_NAMES))
    source = sql_literal(str(path))
    fields = fast_jsonl.named_fields(path)
    select = fast_jsonl.select(
        path,
        named,
        object_size=readers._OBJECT_SIZES[0],
        refused=readers.rule_violation(),
        named=fields,
    )
    con.execute(
        f"INSERT INTO samples ({cols}, source, imported_at) "
        f"SELECT {cols}, {source}, {stamp} FROM ({select})"
    )
    if fields is not None and not fields.still(path):  # changed as it was read
        raise _GiveWay
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM samples "
        f"WHERE imported_at = {stamp} AND source = {source}"
    )
    return StagedFile(path, "jsonl", view, scalar(con, f"SELECT count(*) FROM {view}"))


def _replace(
    con: duckdb.DuckDBPyConnection,
    staged: list[StagedFile],
    stamp: str,
    now: datetime,
    run: str | None,
) -> int:
    """Delete the stored samples with the keys of each file's rows (counted per file, as the
    staged import logs them), and log each file in `imports`."""
    match = " AND ".join(f"s.{k} = t.{k}" for k in KEY)
    older = f"s.imported_at IS DISTINCT FROM {stamp}"
    replaced = 0
    for s in staged:
        n = scalar(con, f"SELECT count(*) FROM samples s SEMI JOIN {s.table} t ON {match} "
                        f"WHERE {older}")  # fmt: skip
        if n:
            con.execute(f"DELETE FROM samples s USING {s.table} t WHERE {match} AND {older}")
        con.execute(
            "INSERT INTO imports SELECT coalesce(max(id), 0) + 1, ?, ?, ?, ?, ?, ? FROM imports",
            [now, str(s.path), s.format, run, s.rows, n],
        )
        replaced += n
    return replaced
