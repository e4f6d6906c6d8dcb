"""Opening samples wherever they are: a file read straight into memory (validated, not imported)
or the store. The top of the data layer: it uses the readers and the store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from calipers.data.readers import keep_runs, stage_file
from calipers.data.sampleset import SampleSet
from calipers.data.store import Store
from calipers.errors import DataError, InputError
from calipers.workspace import DEFAULT_DB


def open_samples(
    source: str | Path | None,
    *,
    db: str | Path | None = None,
    runs: Sequence[str] | None = None,
    rename: str | None = None,
    format: str = "auto",
    mapping: dict[str, str] | None = None,
) -> SampleSet:
    """A FILE is read and validated into an in-memory database, without importing it; None means
    the store at `db` (default .calipers/calipers.duckdb), opened read-only. `runs` keeps only
    those runs (`--run`), everywhere; `rename` names the run of a FILE's samples (`--as`)."""
    if source is not None:
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        staged = stage_file(
            con, Path(source), "file_samples", run=rename, fmt=format, mapping=mapping
        )
        if runs:
            keep_runs(con, [staged.table], list(runs), str(source))
        return SampleSet(con, staged.table, str(source), staged.warnings)
    if mapping:
        raise InputError("--map renames a FILE's columns; the store's are the model's")
    if rename is not None:
        raise InputError(
            "--as names the run of a FILE's samples; the store's runs keep their names",
            hint="Pick stored runs with --run NAME.",
        )
    store = Store(db or DEFAULT_DB, read_only=True)
    if runs:
        stored = {info.run for info in store.runs()}
        missing = [r for r in runs if r not in stored]
        if missing:
            store.close()
            raise InputError(
                f"--run {', '.join(missing)}: no such run in the store {store.path}",
                hint=f"Runs there: {', '.join(sorted(stored)) or '(none)'} (`calipers runs`).",
                parameters=["runs"],
            )
    samples = store.samples(list(runs) if runs else None)
    if samples.count() == 0:
        raise DataError(
            f"the store {store.path} holds no samples",
            hint="Import some with `calipers import FILE`.",
        )
    return samples
