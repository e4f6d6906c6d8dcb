"""Opening samples wherever they are: a file read straight into memory (validated, not imported)
or the store. The top of the data layer: it uses the readers and the store."""

from __future__ import annotations

from pathlib import Path

import duckdb

from calipers.data.readers import stage_file
from calipers.data.sampleset import SampleSet
from calipers.data.store import Store
from calipers.errors import DataError
from calipers.workspace import DEFAULT_DB


def open_samples(
    source: str | Path | None,
    *,
    db: str | Path | None = None,
    run: str | None = None,
    format: str = "auto",
) -> SampleSet:
    """A FILE is read and validated into an in-memory database, without importing it; None means
    the store at `db` (default .calipers/calipers.duckdb), opened read-only."""
    if source is not None:
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        staged = stage_file(con, Path(source), "file_samples", run=run, fmt=format)
        return SampleSet(con, staged.table, str(source), staged.warnings)
    store = Store(db or DEFAULT_DB, read_only=True)
    samples = store.samples([run] if run else None)
    if samples.count() == 0:
        what = f"run '{run}'" if run else "samples"
        raise DataError(
            f"the store {store.path} holds no {what}",
            hint="Import some with `calipers import FILE`.",
        )
    return samples
