"""One block of a Parquet input of cases, as one task of `--executor ray-data` (`ray_data`): its
rows read from the input file, checked as a suite's tasks are, put through the pipeline (threads,
as the local executor does), graded and judged, and written as one Parquet shard of samples.

Everything here runs on a Ray worker and returns to the driver by value: the shard's bytes and
its counts, or the problem that stopped the block (a bad case, a sample that breaks the rules).
The driver writes the shard, so the output directory needs to be on the driver's machine only;
the input file must be readable at the same path on every node (as the pipeline's command must
run there), which a local Ray instance always satisfies.

The samples are made by the same code as the local executor's (`run_suite._sample`: outputs,
telemetry, assertions, errors), invoked with the same retry jitter (`job_rng(seed, "task/epoch")`)
and judged with the same prompts and draws, so that a case gives the same sample on either
executor; and they are typed and checked by the importer itself (`readers.stage_file`), so a
shard holds exactly the columns and types of the store's `samples` table.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from calipers import processes
from calipers.data import jsontext
from calipers.errors import CalipersError, DataError, InputError
from calipers.grading.judges import PromptTemplate
from calipers.running.invoke import InvocationResult, Pipeline
from calipers.running.jobs import Job, run_job
from calipers.running.judging import CallCounts, JudgeOptions, JudgeRequest, judge_requests
from calipers.running.run_suite import _sample, extract_output, safe_dir
from calipers.running.suite import Task

# The columns of a case; any other column of the input is left out (the driver says which).
CASE_COLUMNS = ("id", "input", "expected", "assertions", "epochs")
# A sample with every field an assertion reads, so that only a spec itself can fail on it: a
# value of the wrong type (a number for `contains`, a bad regex) is an input error before any
# pipeline runs, as `suite.load_suite` makes it for a suite.
_DRY_SAMPLE = {"output": "", "cost_usd": 0.0, "latency_s": 0.0, "steps": 0, "tool_calls": 0,
               "tools": [], "decision": None, "error": None}  # fmt: skip


@dataclass(frozen=True)
class Block:
    """Rows `start` to `start + rows` (0-based) of one input file; shard `part-<index>`."""

    index: int
    file: str  # absolute path, as the workers read it
    name: str  # the file as the manifest and messages name it (relative to --input)
    start: int
    rows: int


@dataclass(frozen=True)
class BlockSpec:
    """What every block needs, shipped to the workers once (picklable)."""

    run_name: str
    pipeline: Pipeline  # without a cache: a shard written is the unit of resumption
    seed: int
    workers: int  # invocations at once within a block (-j)
    epochs: int | None = None  # --epochs: overrides each case's `epochs`
    judging: JudgeOptions = field(default_factory=JudgeOptions)
    driver_cwd: str = ""  # the pipeline runs there when the node has that directory


@dataclass
class BlockResult:
    index: int
    shard: bytes = b""
    samples: int = 0
    failed: int = 0  # invocations that failed (samples with an error)
    judge_calls: dict[str, list[int]] = field(default_factory=dict)  # judge → [calls, failed]
    notes: list[str] = field(default_factory=list)
    problem: str | None = None  # what stopped the block; the shard is then empty
    hint: str | None = None
    exit_code: int = 0


def read_block(block: Block, columns: Sequence[str]) -> list[dict[str, Any]]:
    """The block's rows as dicts: only the row groups that hold them are read."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(block.file)
    groups, first, position = [], None, 0
    end = block.start + block.rows
    for i in range(parquet.num_row_groups):
        count = parquet.metadata.row_group(i).num_rows
        if position < end and position + count > block.start:
            groups.append(i)
            first = position if first is None else first
        position += count
    table = parquet.read_row_groups(groups, columns=list(columns))
    rows: list[dict[str, Any]] = table.slice(block.start - (first or 0), block.rows).to_pylist()
    return rows


def case_task(row: dict[str, Any], where: str) -> Task:
    """A case row as a suite's task, with the suite's checks; `where` names the file and row."""
    from pydantic import ValidationError

    data = {k: v for k, v in row.items() if v is not None}
    if "input" not in data:
        raise InputError(
            f"{where}, field 'input': a case needs its input text (got null)",
            hint="Give every row an `input`: the text the pipeline reads.",
        )
    assertions = data.get("assertions")
    if isinstance(assertions, str):  # a JSON array as text: values of any type, one column
        try:
            data["assertions"] = jsontext.loads(assertions)
        except jsontext.JSONError as exc:
            raise InputError(
                f"{where}, field 'assertions': {exc.message}",
                hint='Write the assertions as a JSON array: [{"type": "contains", "value": "x"}].',
            ) from None
    elif isinstance(assertions, list):  # a list of structs: a field absent from one is null
        data["assertions"] = [
            {k: v for k, v in a.items() if v is not None} if isinstance(a, dict) else a
            for a in assertions
        ]
    try:
        task = Task.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"]) or "(row)"
        raise InputError(
            f"{where}, field '{at}': {first['msg']}",
            hint="A case has `id` and `input` (text), and optionally `expected` (text), "
            "`assertions` (a JSON array of {type, value, name, weight}) and `epochs` (≥ 1); "
            "see docs/running.md.",
        ) from None
    from calipers.grading.assertions import evaluate

    for i, spec in enumerate(task.assertions):
        if spec.type not in ("semantic_similarity", "custom"):  # a model to load: not here
            evaluate(spec.model_dump(), _DRY_SAMPLE, where=f"{where}: assertions[{i}]")
    return task


def run_block(block: Block, spec: BlockSpec) -> BlockResult:
    """The block's samples as a shard, or the problem that stopped it (never raised: the
    driver reports it as the error it is)."""
    try:
        return _run_block(block, spec)
    except CalipersError as exc:
        return BlockResult(block.index, problem=exc.message, hint=exc.hint, exit_code=exc.exit_code)


def _run_block(block: Block, spec: BlockSpec) -> BlockResult:
    import pyarrow.parquet as pq

    present = set(pq.ParquetFile(block.file).schema_arrow.names)
    rows = read_block(block, [c for c in CASE_COLUMNS if c in present])
    tasks = [
        case_task(row, f"{block.name}, row {block.start + i + 1}") for i, row in enumerate(rows)
    ]
    notes: list[str] = []
    results = _invoke(tasks, spec)
    samples = [
        _sample(spec.run_name, task, task.input or "", epoch, result, notes)
        for task, epoch, result in results
    ]
    counts: dict[str, CallCounts] = {}
    if spec.judging.judges:
        _judge(samples, tasks, spec, counts)
    shard = shard_bytes(samples, f"{block.name}, rows {block.start + 1}–{block.start + block.rows}")
    return BlockResult(
        block.index, shard, len(samples), sum(1 for _, _, r in results if not r.ok),
        {name: [c.called + c.cached, c.failed] for name, c in counts.items()}, notes,
    )  # fmt: skip


def _invoke(tasks: list[Task], spec: BlockSpec) -> list[tuple[Task, int, InvocationResult]]:
    """Every case × epoch through the pipeline, `spec.workers` at once, in a private directory.
    An interrupt (Ray cancelling the task) stops the pipelines at once and leaves no shard."""
    cwd = Path(spec.driver_cwd) if os.path.isdir(spec.driver_cwd) else None
    pipeline = replace(spec.pipeline, cwd=spec.pipeline.cwd or cwd, cache_dir=None)
    with tempfile.TemporaryDirectory(prefix="calipers-block-") as tmp:
        pool = ThreadPoolExecutor(max_workers=max(1, spec.workers))
        jobs: list[tuple[Task, int, Future[InvocationResult]]] = []
        try:
            for task in tasks:
                for epoch in range(spec.epochs or task.epochs or 1):
                    # the local executor's job name: the same retry jitter from the same seed
                    job = Job(f"{task.id}/{epoch}", task.input or "",
                              Path(tmp) / safe_dir(task.id) / str(epoch))  # fmt: skip
                    future = pool.submit(run_job, pipeline, job, extract_output, spec.seed)
                    jobs.append((task, epoch, future))
            results = [(task, epoch, future.result()) for task, epoch, future in jobs]
        except BaseException:
            processes.stop_all()  # the running pipelines, at once
            pool.shutdown(wait=True, cancel_futures=True)
            processes.resume()  # this worker runs other blocks later
            raise
        pool.shutdown()
    if any(r.interrupted for _, _, r in results):
        raise KeyboardInterrupt  # stopped from outside: not a result to keep
    return results


def _judge(
    samples: list[dict[str, Any]], tasks: list[Task], spec: BlockSpec,
    counts: dict[str, CallCounts],
) -> None:  # fmt: skip
    """Judge every sample with an output, as `run_suite.judge_rows` does for a task without a
    rubric: the same prompt and draw, so the same judge gives the same judgment."""
    from calipers.running.executor import ThreadBackend

    judging = spec.judging
    template = PromptTemplate.load(judging.kind, debias_length=judging.debias_length)
    by_id = {t.id: t for t in tasks}
    todo = [s for s in samples if s.get("output") is not None]
    requests = []
    for sample in todo:
        task = by_id[sample["task"]]
        prompt = template.render(
            task=task.input or "", output=sample["output"], expected=task.expected, rules=None
        )
        draw = "\x00".join(str(sample[k]) for k in ("run", "task", "sample_id", "epoch"))
        requests.append(JudgeRequest(template, prompt, draw))
    backend = ThreadBackend(spec.workers)
    try:
        judged = judge_requests(requests, judging, backend, progress=False, counts=counts)
    finally:
        backend.close()
    for sample, judgments in zip(todo, judged, strict=True):
        sample["judgments"] = judgments


def shard_bytes(samples: list[dict[str, Any]], where: str) -> bytes:
    """The samples as a Parquet file of the store's columns, after the importer's own checks
    (`readers.stage_file`: every type rule of a sample file), in key order."""
    from calipers.data import duck
    from calipers.data.files import sql_literal
    from calipers.data.model import KEY
    from calipers.data.readers import stage_file
    from calipers.errors import ValidationError

    con = duck.connect()
    try:
        with tempfile.TemporaryDirectory(prefix="calipers-shard-") as tmp:
            lines = Path(tmp) / "samples.jsonl"
            lines.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
            try:
                stage_file(con, lines, "shard", fmt="jsonl")
            except ValidationError as exc:
                raise DataError(
                    f"{where}: the samples break the sample rules: "
                    + "; ".join(
                        p.render().replace(str(lines), "samples") for p in exc.problems[:3]
                    ),
                    hint="A pipeline's output that no sample file could hold; see "
                    "docs/running.md for the output contract.",
                ) from None
            out = Path(tmp) / "shard.parquet"
            con.execute(
                f"COPY (SELECT * FROM shard ORDER BY {', '.join(KEY)}) TO "
                f"{sql_literal(str(out))} (FORMAT parquet)"
            )
            return out.read_bytes()
    finally:
        con.close()


def map_blocks(batch: Any, spec: BlockSpec) -> dict[str, list[Any]]:
    """Ray Data's `map_batches` function: one row per block descriptor in, one row per block
    result out (the shard's bytes travel back through the object store)."""
    out: dict[str, list[Any]] = {
        "index": [], "shard": [], "samples": [], "failed": [], "judge_calls": [], "notes": [],
        "problem": [], "hint": [], "exit_code": [],
    }  # fmt: skip
    for row in batch.to_pylist():
        result = run_block(Block(**row), spec)
        out["index"].append(result.index)
        out["shard"].append(result.shard)
        out["samples"].append(result.samples)
        out["failed"].append(result.failed)
        out["judge_calls"].append(json.dumps(result.judge_calls))
        out["notes"].append(json.dumps(result.notes))
        out["problem"].append(result.problem)
        out["hint"].append(result.hint)
        out["exit_code"].append(result.exit_code)
    return out
