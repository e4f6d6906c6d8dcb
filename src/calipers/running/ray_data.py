"""`calipers run --executor ray-data`: cases from Parquet through the pipeline (and the judges) as
Ray Data `map_batches` tasks, each block of cases written as one Parquet shard of samples.

The input (`--input`: a Parquet file, or a directory of them, read recursively, hidden and
`_`-prefixed entries left out as pyarrow and Spark leave them out) is cut into blocks of
`--block-size` consecutive rows of one file, numbered in file order (sorted by path). Block i
becomes `part-<i>.parquet` in the output directory: one row per case × epoch with exactly the
columns and types of the store's `samples` table (`blocks.shard_bytes`), readable by
`calipers import DIR`, by DuckDB's `read_parquet('DIR/*.parquet')` and by Ray Data.

Resumable: a shard written is a shard done. The driver writes each one atomically (a hidden
temporary name, fsync, rename), so a run killed at any moment leaves whole shards only, and a
re-run sends only the blocks whose shard is missing. The manifest (`.calipers-manifest.json`,
hidden so that every reader of the directory passes it by) records which rows of which file each
shard holds and the hash of everything that decides a sample (the command and the files of its
program, the run, the seed, the epochs, the timeout and retries, the judges, the block size, and
each input file's size, rows and Parquet footer): a re-run with anything changed is refused
instead of mixing shards of two configurations.

There is no pipeline or judge cache on this path (the workers of a cluster share no disk with
the driver): a block interrupted midway is run again whole, so `--block-size` bounds the work an
interruption loses.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from calipers.data.files import write_atomic
from calipers.data.model import duckdb_columns
from calipers.errors import DataError, InputError, Interrupted
from calipers.running.blocks import CASE_COLUMNS, Block, BlockSpec, map_blocks
from calipers.running.executor import progress_bar
from calipers.running.identity import identify
from calipers.running.invoke import Pipeline, RetryPolicy
from calipers.running.judging import JudgeOptions
from calipers.running.run_suite import telemetry_ok
from calipers.running.template import parse_command

MANIFEST = ".calipers-manifest.json"
MANIFEST_VERSION = 1
DEFAULT_BLOCK_SIZE = 500
_SHARD = "part-{:06d}.parquet"
# An interrupted run ends its iteration, and Ray Data then force-cancels the blocks in flight:
# their worker processes are killed, and by default each kills its direct children as it goes —
# among them the reaper of calipers' pipelines (`calipers.processes`), whose pipelines (the
# grandchildren, below the shell) would then run on, orphaned. With that off, the reaper sees
# the worker's end of its pipe close and stops every pipeline the block had started.
_WORKER_ENV = {"RAY_kill_child_processes_on_worker_exit": "0"}
_INPUT_HINT = (
    "--input takes a Parquet file of cases, or a directory of them: one row per case, with "
    "`id` and `input` (text) and optionally `expected` (text), `assertions` (a JSON array as "
    "text) and `epochs` (a whole number); see docs/running.md."
)


@dataclass
class DatasetOptions:
    run_name: str
    input: Path
    output: Path
    block_size: int = DEFAULT_BLOCK_SIZE
    workers: int | None = None  # invocations at once within a block (-j)
    epochs: int | None = None  # overrides each case's `epochs` (default 1)
    stdio: bool = False
    timeout_s: float = 150.0
    attempts: int = 1
    transient_exit: tuple[int, ...] = ()
    seed: int = 0
    judging: JudgeOptions = field(default_factory=JudgeOptions)
    pipeline_version: str | None = None
    env: tuple[str, ...] = ()
    ray_address: str | None = None
    progress: bool | None = None


@dataclass
class DatasetRun:
    output: Path
    blocks: int  # in the plan
    written: int  # shards written by this run
    kept: int  # shards a previous run had written (not run again)
    samples: int  # in every shard of the directory
    failed: int  # invocations that failed, in the shards written now
    new_samples: int = 0  # in the shards written now
    judge_calls: dict[str, list[int]] = field(default_factory=dict)  # now: judge → [calls, failed]
    notes: list[str] = field(default_factory=list)
    config_hash: str = ""


@dataclass(frozen=True)
class InputFile:
    path: Path
    name: str  # relative to --input (the file's own name when --input is a file)
    bytes: int
    rows: int
    footer_sha256: str  # the Parquet footer: the schema, row groups and column statistics


def input_files(given: Path) -> list[InputFile]:
    """The Parquet files `given` stands for, in path order, with their fingerprints."""
    import pyarrow.parquet as pq

    if given.is_dir():
        found = sorted(
            p for p in given.rglob("*")
            if p.suffix.lower() in (".parquet", ".pq") and p.is_file()
            and not any(part.startswith((".", "_")) for part in p.relative_to(given).parts)
        )  # fmt: skip
        if not found:
            raise InputError(
                f"--input {given}: the directory holds no .parquet file", hint=_INPUT_HINT
            )
    elif given.is_file():
        found = [given]
    else:
        raise InputError(f"--input {given}: no such file or directory", hint=_INPUT_HINT)
    files = []
    for path in found:
        name = path.name if path == given else path.relative_to(given).as_posix()
        try:
            rows = pq.ParquetFile(path).metadata.num_rows
            footer = _footer(path)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise InputError(
                f"--input {name}: not a readable Parquet file ({exc})", hint=_INPUT_HINT
            ) from None
        files.append(InputFile(path.resolve(), name, path.stat().st_size, rows, footer))
    return files


def _footer(path: Path) -> str:
    """sha256 of the file's Parquet footer: it changes with the data (row groups, statistics)
    and costs one small read, where hashing the whole input would read every byte."""
    with path.open("rb") as fh:
        fh.seek(-8, os.SEEK_END)
        tail = fh.read(8)
        length = int.from_bytes(tail[:4], "little")
        fh.seek(-8 - length, os.SEEK_END)
        return hashlib.sha256(fh.read(length)).hexdigest()


def check_cases(files: list[InputFile]) -> list[str]:
    """The columns of every file, and the ids of every case (present, text, each once across
    the input), before anything runs; notes for the columns left out. Each row's other fields
    are checked by its block (`blocks.case_task`), which names the file and row."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    notes: list[str] = []
    columns = []
    for f in files:
        notes += _check_columns(f)
        ids = pq.read_table(f.path, columns=["id"]).column("id")
        if ids.null_count or (len(ids) and pc.any(pc.equal(pc.utf8_length(ids), 0)).as_py()):
            at = next(i for i, v in enumerate(ids.to_pylist()) if not v)
            raise InputError(
                f"{f.name}, row {at + 1}, field 'id': a case needs a non-empty id",
                hint="Each case's `id` names its samples (task and sample_id): give every row one.",
            )
        columns.append(ids.cast(pa.large_string()))
    every = pa.chunked_array([c for ids in columns for c in ids.chunks], pa.large_string())
    if pc.count_distinct(every).as_py() == len(every):
        return notes
    seen: dict[str, str] = {}  # a repeat: found again, row by row, to name both places
    for f, ids in zip(files, columns, strict=True):
        for i, case in enumerate(ids.to_pylist()):
            if case in seen:
                raise InputError(
                    f"{f.name}, row {i + 1}, field 'id': case id '{case}' appears twice (first "
                    f"at {seen[case]})",
                    hint="Each case's id is its samples' key: make the ids unique.",
                )
            seen[case] = f"{f.name}, row {i + 1}"
    return notes


def _check_columns(f: InputFile) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.ParquetFile(f.path).schema_arrow
    for name in ("id", "input"):
        if name not in schema.names:
            raise InputError(
                f"{f.name}: no column `{name}` (columns: {', '.join(schema.names)})",
                hint=_INPUT_HINT,
            )
    kinds = {
        "id": pa.types.is_string, "input": pa.types.is_string,
        "expected": pa.types.is_string, "epochs": pa.types.is_integer,
        "assertions": lambda t: pa.types.is_string(t) or pa.types.is_list(t),
    }  # fmt: skip
    for name, ok in kinds.items():
        if name in schema.names:
            kind = schema.field(name).type
            if not (ok(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind)):
                raise InputError(f"{f.name}: column `{name}` is {kind}", hint=_INPUT_HINT)
    other = [n for n in schema.names if n not in CASE_COLUMNS]
    return [f"{f.name}: column(s) not read: {', '.join(other)}"] if other else []


def plan_blocks(files: list[InputFile], size: int) -> list[Block]:
    """Blocks of `size` consecutive rows, never across files, numbered in file order."""
    blocks: list[Block] = []
    for f in files:
        for start in range(0, f.rows, size):
            blocks.append(Block(len(blocks), str(f.path), f.name, start, min(size, f.rows - start)))
    return blocks


def configuration(
    command: str, options: DatasetOptions, files: list[InputFile]
) -> tuple[dict[str, Any], list[str]]:
    """What decides the samples (the manifest's `config`; its hash guards the shards), and the
    notes of the program's identity. The command itself is kept as its hash only: a command
    line may carry a secret."""
    identity = identify(
        command, options.run_name, version=options.pipeline_version, env=options.env
    )
    judging = options.judging
    config = {
        "run": options.run_name,
        "command_sha256": hashlib.sha256(command.encode("utf-8")).hexdigest(),
        "program": identity.digest,
        "stdio": options.stdio,
        "seed": options.seed,
        "epochs": options.epochs,
        "timeout_s": options.timeout_s,
        "attempts": options.attempts,
        "transient_exit_codes": list(options.transient_exit),
        # a judge's identity holds its command or endpoint: hashed, as the command is
        "judges": [
            {"name": j.name, "sha256": hashlib.sha256(j.identity().encode("utf-8")).hexdigest()}
            for j in judging.judges
        ],
        "judge_kind": judging.kind,
        "judge_repeats": judging.repeats,
        "debias_length": judging.debias_length,
        "block_size": options.block_size,
        "sample_schema_sha256": hashlib.sha256(
            json.dumps(duckdb_columns()).encode("utf-8")
        ).hexdigest(),
        "input": [
            {"file": f.name, "bytes": f.bytes, "rows": f.rows, "footer_sha256": f.footer_sha256}
            for f in files
        ],
    }
    return config, list(identity.notes)


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode("utf-8")).hexdigest()


def prepare_output(output: Path, digest: str, config: dict[str, Any], blocks: list[Block]) -> None:
    """A new directory gets the manifest; one of ours must have been written with the same
    configuration. Anything else is refused: shards of two configurations never mix."""
    manifest = output / MANIFEST
    if output.exists() and not output.is_dir():
        raise InputError(f"--output {output} is a file", hint="Give a directory for the shards.")
    if manifest.exists():
        try:
            held = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(
                f"--output {output}: cannot read its manifest {MANIFEST} ({exc})",
                hint="Give a new --output directory, or remove this one to start over.",
            ) from None
        if held.get("config_hash") != digest:
            changed = sorted(
                k for k in set(config) | set(held.get("config", {}))
                if config.get(k) != held.get("config", {}).get(k)
            )  # fmt: skip
            raise InputError(
                f"--output {output} holds shards of another configuration (changed: "
                f"{', '.join(changed) or 'the manifest'})",
                hint="Shards of two configurations are never mixed: give a new --output "
                "directory, or remove this one to run everything again.",
            )
        for stale in output.glob(".part-*.tmp"):  # a write cut short by a kill
            stale.unlink(missing_ok=True)
        return
    if output.is_dir() and any(output.iterdir()):
        raise InputError(
            f"--output {output} is not empty and holds no {MANIFEST}",
            hint="Give a new or empty directory: the shards of a run go in a directory of "
            "their own.",
        )
    output.mkdir(parents=True, exist_ok=True)
    body = {
        "schema_version": MANIFEST_VERSION,
        "kind": "calipers-shards",
        "config_hash": digest,
        "config": config,
        "blocks": [
            {"block": b.index, "file": b.name, "start": b.start, "rows": b.rows,
             "shard": _SHARD.format(b.index)}
            for b in blocks
        ],
    }  # fmt: skip
    write_atomic(manifest, json.dumps(body, indent=1), shared=True)


def write_shard(path: Path, data: bytes) -> None:
    """Temp name, fsync, rename: after a kill (or a power cut) the shard is whole or absent."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run_dataset(command: str, options: DatasetOptions) -> DatasetRun:
    """Every block whose shard is missing, through the pipeline on Ray Data; the shards
    written as they come back. Ctrl-C / SIGTERM: the shards written are kept (`Interrupted`)."""
    if not options.stdio:
        parse_command(command, required=(), where="`pipeline`", parameters=["pipeline"])
    files = input_files(options.input)
    notes = check_cases(files)
    blocks = plan_blocks(files, options.block_size)
    config, identity_notes = configuration(command, options, files)
    notes += identity_notes
    digest = config_hash(config)
    prepare_output(options.output, digest, config, blocks)
    pending = [b for b in blocks if not (options.output / _SHARD.format(b.index)).exists()]
    run = DatasetRun(options.output, len(blocks), 0, len(blocks) - len(pending), 0, 0,
                     notes=notes, config_hash=digest)  # fmt: skip
    if pending:
        spec = BlockSpec(
            run_name=options.run_name,
            pipeline=Pipeline(
                command=command, mode="stdio" if options.stdio else "files",
                decision_field="output", timeout_s=options.timeout_s,
                retry=RetryPolicy(max_attempts=options.attempts,
                                  transient_exit_codes=frozenset(options.transient_exit)),
                cache_dir=None, cache_if=telemetry_ok,
            ),
            seed=options.seed, workers=options.workers or _default_threads(),
            epochs=options.epochs,
            judging=JudgeOptions(
                judges=options.judging.judges, kind=options.judging.kind,
                repeats=options.judging.repeats, debias_length=options.judging.debias_length,
                cache_dir=None,
            ),
            driver_cwd=os.getcwd(),
        )  # fmt: skip
        _execute(pending, spec, options, run)
    run.samples = _samples_in(options.output, blocks)
    return run


def _default_threads() -> int:
    from calipers.running.jobs import default_workers

    return default_workers()


def _execute(
    pending: list[Block], spec: BlockSpec, options: DatasetOptions, run: DatasetRun
) -> None:
    """Run the pending blocks on Ray Data and write each shard as its result arrives."""
    from calipers.data.ray_session import connect_ray, import_ray

    ray = import_ray("--executor ray-data")
    started = connect_ray(
        ray, options.ray_address or os.environ.get("RAY_ADDRESS") or None,
        num_cpus=os.cpu_count() or 1, flag="--executor ray-data",
    )  # fmt: skip
    try:
        with progress_bar(options.progress) as bar:
            task = bar.add_task("blocks", total=len(pending))
            for result in _results(pending, spec):
                if result["problem"] is not None:
                    _stop(result, run)
                write_shard(options.output / _SHARD.format(result["index"]), result["shard"])
                run.written += 1
                run.failed += result["failed"]
                run.new_samples += result["samples"]
                for judge, (calls, failed) in json.loads(result["judge_calls"]).items():
                    totals = run.judge_calls.setdefault(judge, [0, 0])
                    totals[0], totals[1] = totals[0] + calls, totals[1] + failed
                run.notes.extend(json.loads(result["notes"]))
                bar.advance(task)
    except KeyboardInterrupt:
        raise Interrupted(
            f"run '{options.run_name}' stopped: {run.kept + run.written} of {run.blocks} "
            f"shards are written in {options.output}",
            hint="Run the same command again to finish: it runs only the blocks whose shard "
            "is missing.",
        ) from None
    finally:
        if started:
            ray.shutdown()


def _results(pending: list[Block], spec: BlockSpec) -> Iterator[dict[str, Any]]:
    """Each block's result as it arrives: one Ray Data block (and task) per block of cases."""
    import logging

    import ray.data

    logging.getLogger("ray.data").setLevel(logging.ERROR)  # its per-dataset INFO lines
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # calipers' own bar counts the blocks
    items = [asdict(b) for b in pending]
    fn: Any = map_blocks  # a batch of block descriptors in, their results out
    dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        fn, batch_size=1, batch_format="pyarrow", fn_kwargs={"spec": spec}, num_cpus=1,
        runtime_env={"env_vars": _WORKER_ENV},
    )  # fmt: skip
    yield from dataset.iter_rows()


def _stop(result: dict[str, Any], run: DatasetRun) -> None:
    kept = f" ({run.kept + run.written} of {run.blocks} shards are written and kept)"
    error = InputError if result["exit_code"] == InputError.exit_code else DataError
    raise error(str(result["problem"]) + kept, hint=result["hint"])


def _samples_in(output: Path, blocks: list[Block]) -> int:
    import pyarrow.parquet as pq

    total = 0
    for b in blocks:
        path = output / _SHARD.format(b.index)
        if path.exists():
            total += pq.read_metadata(path).num_rows
    return total
