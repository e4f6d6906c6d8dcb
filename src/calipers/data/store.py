"""The store: one embedded DuckDB file holding every sample, versioned by named migrations.

A writable open applies the migrations the file lacks; a read-only open never writes, and refuses a
store made by an older calipers (`OutdatedStoreError`) instead. Every open of one file in a process
shares one DuckDB database (see `_Shared`), so read-only and writable opens can be mixed freely.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import duckdb

from calipers import writes
from calipers.data import direct_import, layer_inputs, migrations, sample_keys
from calipers.data.directories import expand_named
from calipers.data.duck import extension_error, file_kind, give_back, not_duckdb, spare_database
from calipers.data.files import sql_literal, sql_name, visible_controls
from calipers.data.model import FIELD_BY_NAME, FIELD_NAMES, FIELDS, KEY
from calipers.data.readers import StagedFile, stage_files
from calipers.data.sampleset import SampleSet, scalar
from calipers.data.store_versions import OutdatedStoreError, refuse_newer
from calipers.errors import DataError, InputError, ValidationError

# DuckDB spills to disk beyond this; it keeps a 1M-sample import under 1 GB of RSS
# (benchmarks/README.md). Override with the CALIPERS_MEMORY_LIMIT environment variable.
DEFAULT_MEMORY_LIMIT = "600MB"
EXPORT_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
}


@dataclass
class ImportSummary:
    files: int
    samples: int  # observations (rows: a sample once per epoch) written
    replaced: int  # of those, rows that replaced an observation with the same key
    runs: list[str]
    warnings: list[str] = field(default_factory=list)
    # what the files held that was not imported, and why (`adapters.unimported`)
    not_imported: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunInfo:
    run: str
    samples: int  # distinct (task, sample_id)
    observations: int  # rows: a sample once per epoch
    tasks: int
    epochs: int
    last_import: datetime | None


def _not_a_store(path: Path, tables: Sequence[str]) -> InputError:
    if not tables:
        return InputError(
            f"{path} is an empty DuckDB file, not a calipers store yet (it has no "
            "schema_migrations table)",
            hint=f"Run `calipers migrate --db {path}` (or `calipers import`) to make it one.",
        )
    shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
    return InputError(
        f"{path} is not a calipers store: it has no schema_migrations table, and holds other "
        f"tables ({shown})",
        hint="Give the path of a calipers store (one made by `calipers import`).",
    )


DEFAULT_LOCK_WAIT = 60.0  # seconds a command waits for another process's write to finish


def lock_wait_seconds() -> float:
    """How long to wait for a store another process writes: CALIPERS_LOCK_WAIT, else 60 s."""
    raw = os.environ.get("CALIPERS_LOCK_WAIT")
    try:
        return max(0.0, float(raw)) if raw is not None else DEFAULT_LOCK_WAIT
    except ValueError:
        raise InputError(
            f"CALIPERS_LOCK_WAIT={raw!r} is not a number of seconds",
            hint="Set it to e.g. 30, or unset it for the default (60).",
        ) from None


def _stderr_notice(message: str) -> None:
    sys.stderr.write(visible_controls(message) + "\n")
    sys.stderr.flush()


lock_notice = _stderr_notice  # the CLI and tests may replace it


class _Shared:
    """This process's one DuckDB database for one store file.

    DuckDB refuses a second database on a file a process already has open (in another mode, or at
    all when either is writable), so every `Store` on the file, and every `SampleSet` it hands
    out, is a cursor of one in-memory database with the file ATTACHed as `store` and made each
    cursor's default (`USE store`): `SELECT ... FROM samples` reads the store. The file is attached
    read-only while only read-only opens have used it (other processes can read it at the same
    time), and re-attached read-write in place by the first writable open; the read-only cursors'
    temporary views and settings survive that. It stays read-write until the last cursor is closed
    or dropped: then the file is detached (closed and released) and the database kept for the
    next store this process opens (`duck.spare_database`).
    """

    def __init__(self, path: Path, *, writable: bool, lock_wait: float | None = None) -> None:
        self.path = path
        self.writable = False
        self.attached = False
        kind = file_kind(path)  # a SQLite file would make DuckDB ask for an extension
        if kind is not None:
            raise not_duckdb(path, kind)
        self.root = spare_database()
        try:
            # As a file database would: spill next to the store, not into ./.tmp.
            self.root.execute(f"SET temp_directory = {sql_literal(str(path) + '.tmp')}")
            self._attach(writable=writable, lock_wait=lock_wait)
        except BaseException:
            self.root.close()
            raise
        # When the last cursor has gone: the file detached (closed, its lock released) and the
        # database kept for the next store (`duck.give_back`), rather than closed.
        weakref.finalize(self, give_back, self.root, "store")

    def _attach(self, *, writable: bool, lock_wait: float | None = None) -> None:
        """ATTACH the file, waiting up to `lock_wait` seconds (None: `lock_wait_seconds()`) for
        another process's write to end."""
        # TYPE DUCKDB: never another database's scanner, whatever the file looks like
        mode = "TYPE DUCKDB" if writable else "TYPE DUCKDB, READ_ONLY"
        statement = f"ATTACH {sql_literal(str(self.path))} AS store ({mode})"
        wait = lock_wait_seconds() if lock_wait is None else max(0.0, lock_wait)
        deadline = time.monotonic() + wait
        delay, told = 0.05, False
        while True:
            try:
                self.root.execute(statement)
                break
            except duckdb.IOException as exc:
                # Another process writes the file (DuckDB allows one writer, and no reader beside
                # it, across processes): wait for it, bounded, and say so once.
                if "lock" not in str(exc).lower() or time.monotonic() + delay > deadline:
                    raise
                if not told:
                    lock_notice(
                        f"waiting for the store {self.path}: another process has it open for "
                        f"writing (up to {wait:g} s; CALIPERS_LOCK_WAIT sets it)"
                    )
                    told = True
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        self.writable, self.attached = writable, True

    def ensure(self, *, writable: bool, lock_wait: float | None = None) -> None:
        """Attached, and read-write if `writable` (re-attaching a read-only file in place)."""
        if self.attached and (self.writable or not writable):
            return
        if self.attached:
            self.root.execute("DETACH store")
            self.attached = False
        try:
            self._attach(writable=writable, lock_wait=lock_wait)
        except duckdb.Error:
            if writable:  # e.g. another process reads it: stay read-only for this one's readers
                with contextlib.suppress(duckdb.Error):
                    self._attach(writable=False)
            raise


# Re-attaching a read-only file read-write is safe only where DuckDB refuses to attach a file a
# second time while a reader in the middle of a query still holds it (1.5 on; 1.3 allows it).
_REATTACH_SAFE = tuple(int(n) for n in duckdb.__version__.split(".")[:2]) >= (1, 5)

_SHARED: weakref.WeakValueDictionary[str, _Shared] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()  # guards _SHARED, attaching, and migrating


def _release(shared: _Shared) -> None:
    """Nothing to do: the finalizer that passes `shared` here holds it while the cursor lives,
    and lets go when the cursor is dropped (or when its store is closed and detaches it)."""


def _open(
    path: Path, *, writable: bool, lock_wait: float | None = None
) -> tuple[_Shared, duckdb.DuckDBPyConnection]:
    """A new cursor on this process's database for the file at `path`, reading it by default;
    `lock_wait`: seconds to wait for another process's write (None: `lock_wait_seconds()`)."""
    key = str(path.resolve())
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        upgrading = shared is not None and writable and not shared.writable
        if upgrading and not _REATTACH_SAFE:
            shared = None  # the error's traceback must not keep the database open
            raise InputError(
                f"cannot open the store {path} for writing while it is open read-only in this "
                f"process (DuckDB {duckdb.__version__} cannot switch it safely)",
                hint="Close the read-only store (or its samples' connection) first, or use "
                "DuckDB 1.5 or later.",
            )
        try:
            if shared is None:
                shared = _Shared(Path(key), writable=writable, lock_wait=lock_wait)
                _SHARED[key] = shared
            else:
                shared.ensure(writable=writable, lock_wait=lock_wait)
        except duckdb.Error as exc:
            shared = None
            raise _cannot_open(path, exc, writable=writable, upgrading=upgrading) from exc
        con = shared.root.cursor()
    con.execute("USE store")
    return shared, con


def _holds_no_samples(con: duckdb.DuckDBPyConnection) -> bool:
    """No sample in the store: none written, or its migrations cut short before the table was
    made (an interrupt as a new store was being created)."""
    try:
        if "samples" not in migrations.tables(con):
            return True
        return con.execute("SELECT count(*) FROM samples").fetchone() == (0,)
    except duckdb.Error:
        return False  # cannot tell: keep it


def _remove_store_files(path: Path) -> None:
    """A store this command made and filled with nothing: the file and its write-ahead log."""
    for leftover in (path, path.with_name(path.name + ".wal")):
        with contextlib.suppress(OSError):
            leftover.unlink()


def is_locked(exc: BaseException) -> bool:
    """Whether `exc` (a `Store` open's error, or DuckDB's own) says that another process holds
    the file's lock (it is writing): worth trying again shortly, unlike any other failure."""
    for found in (exc, exc.__cause__):
        if isinstance(found, duckdb.IOException) and "lock" in str(found).lower():
            return True
    return False


def _cannot_open(path: Path, exc: duckdb.Error, *, writable: bool, upgrading: bool) -> InputError:
    how = " for writing" if writable else ""
    if "not a valid DuckDB database" in str(exc):
        return not_duckdb(path, file_kind(path) or "a file of another kind")
    needs = extension_error(exc, f"the store {path}")
    if needs is not None:
        return needs
    if "Unique file handle conflict" in str(exc) or "already attached" in str(exc):
        if upgrading:
            return InputError(
                f"cannot open the store {path}{how}: a read-only use of it in this process is "
                "in the middle of a query (an unfetched result), so it cannot be made writable",
                hint="Fetch or close that result (or close the read-only store) first.",
            )
        return InputError(
            f"cannot open the store {path}{how}: this process already has the file open "
            "through a DuckDB connection that calipers did not make",
            hint="Close that connection first, or open the store only through calipers.",
        )
    return InputError(
        f"cannot open the store {path}{how}: {exc}",
        hint="Is it a DuckDB file? If another process is writing it, wait for that process (or "
        "raise CALIPERS_LOCK_WAIT, the seconds calipers waits for it).",
    )


class Store:
    """A DuckDB file of samples. Use as a context manager, or call `close()`.

    `Store(path)` opens it for writing and applies any migration it lacks (`migrated` names
    them). `Store(path, read_only=True)` never writes: it raises `OutdatedStoreError` for a
    store that lacks migrations, and `InputError` for a DuckDB file that is not a calipers store.
    While another process writes the file, the open waits up to `lock_wait` seconds (None:
    CALIPERS_LOCK_WAIT, else 60), then raises `InputError` (`is_locked` tells it apart).
    Read-only and writable stores on one file can be open at the same time in a process (see
    `_Shared`); `store.con` is a DuckDB cursor on which `samples`, `imports` and `rubric_history`
    name the store's tables.
    """

    def __init__(
        self, path: str | Path, *, read_only: bool = False, lock_wait: float | None = None
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.migrated: list[str] = []  # the migrations this open applied, in order
        if self.path.is_dir():
            raise InputError(f"--db {self.path}: is a directory", hint="Give a file path.")
        if read_only:
            if not self.path.exists():
                raise DataError(
                    f"no store at {self.path}",
                    hint="Run `calipers import FILE` first, or pass a FILE to read it directly.",
                )
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # made by this open: a command that then fails leaves no empty store behind
        self._created = not read_only and not self.path.exists()
        self._shared: _Shared | None
        self._shared, self.con = _open(self.path, writable=not read_only, lock_wait=lock_wait)
        # The shared database lives while any cursor of it does: a SampleSet outliving its Store
        # (`open_samples`) keeps it open through its cursor.
        self._keep = weakref.finalize(self.con, _release, self._shared)
        try:
            # DuckDB's own progress bar would draw over calipers' output.
            self.con.execute("SET enable_progress_bar = false")
            limit = os.environ.get("CALIPERS_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT)
            try:
                self.con.execute(f"SET memory_limit = {sql_literal(limit)}")
            except duckdb.Error as exc:
                raise InputError(
                    f"CALIPERS_MEMORY_LIMIT={limit!r} is not a memory size",
                    hint="Use e.g. 600MB or 4GB.",
                ) from exc
            with _SHARED_LOCK:
                tables = migrations.tables(self.con)
                if "schema_migrations" not in tables and (read_only or tables):
                    raise _not_a_store(self.path, tables)
                refuse_newer(self.path, self.con, writing=not read_only)  # no write yet
                if read_only:
                    pending = migrations.pending(self.con)
                    if pending:
                        raise OutdatedStoreError(self.path, pending)
                else:
                    self.migrated = migrations.migrate(self.con)
        except BaseException:  # an interrupt while a new store's migrations ran, too
            self.close()
            if self._created:  # made by this open, and nothing but its schema written yet
                _remove_store_files(self.path)
            raise

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        empty = exc_type is not None and self._created and _holds_no_samples(self.con)
        self.close()
        if empty:
            _remove_store_files(self.path)

    def close(self) -> None:
        self.con.close()
        # Drop this store's hold on the shared database: closed once nothing else uses it.
        self._keep.detach()
        self._shared = None

    # ------------------------------------------------------------------------------- import

    def import_files(
        self,
        paths: Sequence[str | Path],
        *,
        rename: str | None = None,
        runs: Sequence[str] | None = None,
        format: str = "auto",
        mapping: dict[str, str] | None = None,
        replace_tasks: bool = False,
        name_by: str = "tool",
    ) -> ImportSummary:
        """Validate every file, then write all of them in one transaction: any problem in any
        file leaves the store exactly as it was (the rows' integer keys follow in a second one:
        `sample_keys.assign_apart`). `rename` names the run of every sample (`--as`);
        `runs` imports only those runs (`--run`, after renaming). Samples whose key already
        exists replace it; with `replace_tasks`, every earlier sample of a (run, task) the files
        hold is replaced, whatever its epoch (a re-run with fewer epochs leaves no stale ones).
        A directory stands for the harness files in it (`directories.expand`); `name_by`
        (`directory`, `file`) names each path's runs after it instead of the tool's names."""
        run = rename
        if self.read_only:
            raise InputError("the store is open read-only")
        if not paths:
            raise InputError("no file to import")
        con = self.con
        staged: list[StagedFile] = []
        skipped: list[str] = []  # a directory's manifests left out (directories.expand)
        # Row order inside the store carries no meaning; not preserving it saves memory.
        con.execute("SET preserve_insertion_order = false")
        try:
            files, names = expand_named(paths, format, "tool" if run else name_by, skipped)
            # JSON Lines files read straight into the store, checked there (one pass); when they
            # need more, the staged import below answers (the store left as it was).
            if not (mapping or runs or replace_tasks):
                one = direct_import.write(con, self.path, files, names, run=run, fmt=format)
                if one is not None:
                    said = skipped + [w for s in one.staged for w in s.warnings]
                    return ImportSummary(len(one.staged), one.written, one.replaced, one.runs, said)
            # Stage into connection-local temp tables first: they never touch the store file,
            # and a failed read there cannot abort the transaction that writes.
            staged, problems, shared = stage_files(
                con, files, "stage_", run=run, fmt=format, mapping=mapping, runs=runs,
                names=names,
            )  # fmt: skip
            if shared and not problems:
                raise ValidationError(
                    shared,
                    hint="The files hold the same samples (two runs of one model, or one file "
                    "twice): import each with --as NAME, or pass only one of them.",
                )
            problems += shared
            if problems:
                raise ValidationError(problems)
            replaced, written, runs = self._write(staged, run, replace_tasks=replace_tasks)
        finally:
            for s in staged:
                con.execute(f"DROP TABLE IF EXISTS {s.table}")
            con.execute("RESET preserve_insertion_order")
        warnings = skipped + [w for s in staged for w in s.warnings]
        left_out = [dict(e) for s in staged for e in s.not_imported]
        return ImportSummary(len(staged), written, replaced, runs, warnings, left_out)

    def import_rows(
        self, rows: Sequence[dict[str, Any]], *, replace_tasks: bool = False
    ) -> ImportSummary:
        """Import samples made in this process (`calipers check`, `calipers run`) through the
        same validation as a file: written as JSON Lines to a temporary file, then imported.
        The rows carry their run's name; it is never part of a path."""
        import json
        import tempfile

        with tempfile.TemporaryDirectory(prefix="calipers-rows-") as tmp:
            path = Path(tmp) / "samples.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            return self.import_files([path], replace_tasks=replace_tasks)

    def _write(
        self, staged: list[StagedFile], run: str | None, *, replace_tasks: bool = False
    ) -> tuple[int, int, list[str]]:
        """Replace samples with the staged keys (or runs' tasks) and insert the staged rows:
        one transaction."""
        con = self.con
        replaced = written = 0
        now = datetime.now(UTC).replace(tzinfo=None)
        cols = ", ".join(map(sql_name, FIELD_NAMES))
        rows = sum(s.rows for s in staged)
        what = f"the import of {rows:,} sample(s) from {len(staged)} file(s) into {self.path}"
        with writes.transaction(con, what):  # Ctrl-C: committed or rolled back, and said which
            for s in staged:
                n_replaced = self._delete_existing(s.table, by_task=replace_tasks)
                con.execute(
                    f"INSERT INTO samples ({cols}, source, imported_at) "
                    f"SELECT {cols}, {sql_literal(str(s.path))}, ? FROM {s.table}",
                    [now],
                )
                con.execute(
                    "INSERT INTO imports SELECT coalesce(max(id), 0) + 1, ?, ?, ?, ?, ?, ? "
                    "FROM imports",
                    [now, str(s.path), s.format, run, s.rows, n_replaced],
                )
                replaced += n_replaced
                written += s.rows
            runs = sorted(
                {
                    r[0]
                    for s in staged
                    for r in con.execute(f"SELECT DISTINCT run FROM {s.table}").fetchall()
                }
            )
            stale = layer_inputs.stale_runs(con)
            sample_keys.forget(con, stale)  # keyed again below, with the written rows
            # the written runs' layered inputs, and any run's that are missing or out of date
            layer_inputs.refresh(con, sorted(set(runs) | set(stale)))
        sample_keys.assign_apart(con, self.path)  # the written rows' integer keys
        return replaced, written, runs

    def _delete_existing(self, table: str, *, by_task: bool = False) -> int:
        keys = ("run", "task") if by_task else KEY
        match = " AND ".join(f"s.{k} = t.{k}" for k in keys)
        n = scalar(self.con, f"SELECT count(*) FROM samples s SEMI JOIN {table} t ON {match}")
        if n:
            self.con.execute(f"DELETE FROM samples s USING {table} t WHERE {match}")
        return n

    # ------------------------------------------------------------------------------- read

    def update_column(self, column: str, updates: Sequence[Sequence[Any]]) -> int:
        """Set one nested column (e.g. `assertions`, `judgments`) of the samples keyed by each
        update's (run, task, sample_id, epoch) to its fifth item, in one transaction: every
        sample is updated or none is."""
        if self.read_only:
            raise InputError("the store is open read-only")
        if not updates:
            return 0
        kind = FIELD_BY_NAME[column].duckdb_type
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE updated (run VARCHAR, task VARCHAR, sample_id VARCHAR, "
            f"epoch INTEGER, value {kind})"
        )
        self._stage_updates(kind, updates)
        what = f"the {column} of {len(updates):,} sample(s) in {self.path}"
        try:
            with writes.transaction(self.con, what):
                self.con.execute(
                    f"UPDATE samples SET {sql_name(column)} = u.value FROM updated u WHERE "
                    "samples.run = u.run AND samples.task = u.task AND "
                    "samples.sample_id = u.sample_id AND samples.epoch = u.epoch"
                )
                touched = {str(u[0]) for u in updates}
                stale = layer_inputs.stale_runs(self.con)
                layer_inputs.refresh(self.con, sorted(touched | set(stale)))
        finally:
            self.con.execute("DROP TABLE IF EXISTS updated")
        return len(updates)

    def _stage_updates(self, kind: str, updates: Sequence[Sequence[Any]]) -> None:
        """The updates into temp table `updated`: five lists as five parameters, unnested
        together, the nested values as JSON cast to the column's type. `executemany` converts a
        nested value row by row (1.3 s for 1,000 judgment lists, against 0.05 s here)."""
        try:
            values = [json.dumps(u[4], allow_nan=False) for u in updates]
        except (TypeError, ValueError):  # not JSON (NaN, a date): the slow path keeps them
            self.con.executemany("INSERT INTO updated VALUES (?, ?, ?, ?, ?)", updates)
            return
        self.con.execute(
            "INSERT INTO updated SELECT unnest($1), unnest($2), unnest($3), unnest($4), "
            f"CAST(unnest($5)::JSON AS {kind})",
            [[u[0] for u in updates], [u[1] for u in updates], [u[2] for u in updates],
             [u[3] for u in updates], values],
        )  # fmt: skip

    def refresh_layer_inputs(self) -> list[str]:
        """Summarise the layered inputs of every run whose summaries are missing or out of date
        (a store from before migration 0010, or rows written by SQL of its own), and give rows
        without a sample key theirs (`sample_keys.assign`), in one transaction; the runs
        refreshed. Every write through the store does this itself."""
        if self.read_only:
            raise InputError("the store is open read-only")
        with writes.transaction(self.con, f"the layered inputs of {self.path}"):
            stale = layer_inputs.stale_runs(self.con)
            sample_keys.forget(self.con, stale)  # and key the rows other SQL wrote
            sample_keys.assign(self.con)
            layer_inputs.refresh(self.con, stale)
        return stale

    def samples(self, runs: Sequence[str] | None = None) -> SampleSet:
        cols = ", ".join(map(sql_name, FIELD_NAMES))
        where = ""
        if runs:
            where = " WHERE run IN (" + ", ".join(sql_literal(r) for r in runs) + ")"
        self.con.execute(
            f"CREATE OR REPLACE TEMP VIEW store_samples AS SELECT {cols} FROM samples{where}"
        )
        return SampleSet(self.con, "store_samples", str(self.path), whole_runs=True)

    def runs(self) -> list[RunInfo]:
        rows = self.con.execute(  # the keys counted apart: a third cheaper than DISTINCT (a, b)
            "SELECT run, k.n, count(*), count(DISTINCT task), count(DISTINCT epoch), "
            "max(imported_at) FROM samples JOIN (SELECT run, count(*) AS n FROM (SELECT DISTINCT "
            "run, task, sample_id FROM samples) GROUP BY run) k USING (run) GROUP BY ALL ORDER BY 1"
        ).fetchall()
        return [RunInfo(r[0], int(r[1]), int(r[2]), int(r[3]), int(r[4]), r[5]) for r in rows]

    def count(self) -> int:
        return scalar(self.con, "SELECT count(*) FROM samples")

    # ------------------------------------------------------------------------------- export

    def export(
        self, out: str | Path, *, format: str | None = None, runs: Sequence[str] | None = None
    ) -> int:
        """Write samples to `out` (temp file, then rename); return the number written.

        CSV carries the flat fields and one `scores.NAME` column per metric; the nested lists
        (assertions, judgments, human) need JSON Lines or Parquet and are left out of CSV.
        """
        target = Path(out)
        fmt = format or EXPORT_FORMATS.get(target.suffix.lower())
        if fmt not in ("parquet", "csv", "jsonl"):
            raise InputError(
                f"cannot tell the export format of {target}",
                hint="Use a .parquet, .csv or .jsonl name, or --format.",
            )
        if target.is_dir():
            raise InputError(f"{target} is a directory", hint="Give a file name.")
        view = self.samples(runs)
        n = view.count()
        if runs and n == 0:
            raise DataError(f"no samples for run(s) {', '.join(runs)} in {self.path}")
        select = self._export_select(view.relation, fmt)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(fd)
        options = {
            "parquet": "FORMAT parquet",
            "csv": "FORMAT csv, HEADER true",
            "jsonl": "FORMAT json",
        }[fmt]
        try:
            self.con.execute(f"COPY ({select}) TO {sql_literal(tmp)} ({options})")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return n

    def _export_select(self, relation: str, fmt: str) -> str:
        order = f"ORDER BY {', '.join(KEY)}"
        if fmt != "csv":
            return f"SELECT * FROM {relation} {order}"
        names = [
            r[0]
            for r in self.con.execute(
                f"SELECT DISTINCT unnest(map_keys(scores)) AS k FROM {relation} ORDER BY k"
            ).fetchall()
        ]
        flat = [sql_name(f.name) for f in FIELDS if f.flat]
        score_cols = [f'scores[{sql_literal(n)}] AS "scores.{n}"' for n in names]
        return f"SELECT {', '.join(flat + score_cols)} FROM {relation} {order}"


def upgrade_store(path: str | Path) -> list[str]:
    """Apply the migrations the store at `path` lacks (`calipers migrate`); return their names,
    in order ([] when it is current). Opens it writable; a missing file is a DataError, not a new
    store."""
    target = Path(path)
    if not target.exists():
        raise DataError(f"no store at {target}", hint="Check the path given to `--db`.")
    with Store(target) as store:
        return store.migrated


def pending_migrations(path: str | Path) -> list[str]:
    """The migrations the store at `path` lacks, in order ([] when it is current), read without
    writing: the file is opened read-only. All of them for an empty DuckDB file; InputError for a
    DuckDB file holding other tables."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"--db {target}: is a directory", hint="Give a file path.")
    if not target.exists():
        raise DataError(f"no store at {target}", hint="Check the path given to `--db`.")
    shared, con = _open(target, writable=False)
    try:
        with _SHARED_LOCK:
            tables = migrations.tables(con)
            if tables and "schema_migrations" not in tables:
                raise _not_a_store(target, tables)
            refuse_newer(target, con, writing=True)  # to migrate is to write
            return migrations.pending(con)
    finally:
        con.close()
        del shared


def describe_runs(infos: list[RunInfo]) -> list[dict[str, Any]]:
    return [
        {
            "run": i.run,
            "samples": i.samples,
            "observations": i.observations,
            "tasks": i.tasks,
            "epochs": i.epochs,
            "last_import": i.last_import.isoformat() if i.last_import else None,
        }
        for i in infos
    ]
