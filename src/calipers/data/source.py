"""Opening samples wherever they are: a file read straight into memory (validated, not imported)
or the store. The top of the data layer: it uses the readers and the store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from calipers.data.directories import expand_all
from calipers.data.duck import connect
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
    samples (`--as`). A directory stands for the harness files in it (`directories.expand`)."""
    if source is not None:
        given = [source] if isinstance(source, str | Path) else list(source)
        files = expand_all(given, format)
        if len(files) != 1 or len(given) != 1:
            return _open_files(files, runs, rename, format, mapping)
        source = files[0]
    if source is not None:
        con = connect()
        con.execute("SET enable_progress_bar = false")
        staged = stage_file(
            con, Path(source), "file_samples", run=rename, fmt=format, mapping=mapping
        )
        if runs:
            keep_runs(con, [staged.table], list(runs), str(source))
        return SampleSet(con, staged.table, str(source), staged.warnings)
    if mapping:
        raise InputError(
            "--map renames a FILE's columns; the store's are the model's"
            if len(mapping)
            else "--task names the task of what is read from a FILE; the store's samples have "
            "their tasks"
        )
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
    if not paths:
        raise InputError("no file to read")
    con = connect()
    con.execute("SET enable_progress_bar = false")
    origin = ", ".join(map(str, paths))
    staged, problems, shared = stage_files(
        con, paths, "file_samples_", run=rename, fmt=format, mapping=mapping, runs=runs
    )
    if shared and not problems:
        raise ValidationError(
            shared,
            hint="The files hold the same samples (two runs under one name, or one file twice): "
            "give the runs different names when you make the files, or compare them as two runs "
            "with `calipers compare BASE... --vs CANDIDATE...` (each side one run, named by "
            "--baseline/--candidate or what tells them apart), or import each with `calipers "
            "import FILE --as NAME` and compare in the store, or pass only one.",
        )
    if problems or shared:
        raise ValidationError(problems + shared)
    union = " UNION ALL BY NAME ".join(f"SELECT * FROM {s.table}" for s in staged)
    con.execute(f"CREATE TEMP TABLE file_samples AS {union}")
    for s in staged:
        con.execute(f"DROP TABLE {s.table}")
    return SampleSet(con, "file_samples", origin, [w for s in staged for w in s.warnings])
