"""Opening samples wherever they are: a file read straight into memory (validated, not imported)
or the store. The top of the data layer: it uses the readers and the store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from calipers.data.readers import keep_runs, stage_file, stage_files
from calipers.data.sampleset import SampleSet
from calipers.data.store import Store
from calipers.errors import DataError, InputError, ValidationError
from calipers.workspace import DEFAULT_DB


def open_samples(
    source: str | Path | Sequence[str | Path] | None,
    *,
    db: str | Path | None = None,
    runs: Sequence[str] | None = None,
    rename: str | None = None,
    format: str = "auto",
    mapping: dict[str, str] | None = None,
) -> SampleSet:
    """A FILE is read and validated into an in-memory database, without importing it; several
    files are read together, as one import would store them (a sample key in two of them is an
    error); None means the store at `db` (default .calipers/calipers.duckdb), opened read-only.
    `runs` keeps only those runs (`--run`), everywhere; `rename` names the run of a FILE's
    samples (`--as`)."""
    if source is not None and not isinstance(source, str | Path):
        return _open_files([Path(s) for s in source], runs, rename, format, mapping)
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


def _open_files(
    paths: list[Path],
    runs: Sequence[str] | None,
    rename: str | None,
    format: str,
    mapping: dict[str, str] | None,
) -> SampleSet:
    """Several files staged side by side (every file's problems reported at once, as `import`
    does), checked for keys two of them share, then made one relation."""
    if len(paths) == 1:
        return open_samples(paths[0], runs=runs, rename=rename, format=format, mapping=mapping)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    origin = ", ".join(map(str, paths))
    staged, problems, shared = stage_files(
        con, paths, "file_samples_", run=rename, fmt=format, mapping=mapping, runs=runs
    )
    if shared and not problems:
        raise ValidationError(
            shared,
            hint="The files hold the same samples (two runs under one name, or one file twice): "
            "give the runs different names when you make the files (or import each with "
            "`calipers import FILE --as NAME` and compare in the store), or pass only one.",
        )
    if problems or shared:
        raise ValidationError(problems + shared)
    union = " UNION ALL BY NAME ".join(f"SELECT * FROM {s.table}" for s in staged)
    con.execute(f"CREATE TEMP TABLE file_samples AS {union}")
    for s in staged:
        con.execute(f"DROP TABLE {s.table}")
    return SampleSet(con, "file_samples", origin, [w for s in staged for w in s.warnings])
