"""`calipers run`: a suite's tasks through the user's pipeline, then assertions, then judges; one
sample per (task, epoch), ready for the store.

The pipeline contract: it reads the task's input (a file, `{input}`, or stdin) and writes one JSON
object (a file, `{output}`, or stdout):

    {"output": "the answer text",            required (a non-string is stored as its JSON)
     "tokens_in": 812, "tokens_out": 95,      optional telemetry: non-negative integers
     "cost_usd": 0.0021, "latency_s": 1.8,    non-negative numbers
     "tool_calls": 2, "steps": 3,             non-negative integers
     "truncated": false,                      boolean
     "tools": [{"name": "search", "input": {...}, "output": "..."}],
     "decision": ...}                         any JSON (for decision-based assertions)

A telemetry value of the wrong type is dropped with a note, never guessed. A failed invocation
(non-zero exit, timeout, no JSON, no `output`) is a sample with its `error`; its assertions are
recorded as failed (a pipeline that crashed did not pass its checks) and it is not judged.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calipers import processes
from calipers.errors import DataError, InputError
from calipers.grading.async_judges import prefetch_client
from calipers.grading.grade import grade_record
from calipers.grading.judges import PromptTemplate
from calipers.running.executor import Backend, ExecutorName, Job, JobPool, open_backend
from calipers.running.identity import PipelineIdentity, identify
from calipers.running.invoke import InvocationResult, Pipeline, RetryPolicy
from calipers.running.judging import (
    CallCounts,
    JudgeOptions,
    JudgeRequest,
    JudgingInterrupted,
    judge_requests,
)
from calipers.running.pairwise import NothingShared, PairJudging, judge_pairs
from calipers.running.suite import Suite, Task
from calipers.running.template import parse_command
from calipers.schemes.rubric.definition import load_rubric
from calipers.workspace import PIPELINE_CACHE, RUNS_DIR

if TYPE_CHECKING:
    from calipers.running.stopping import Stopper

INTEGER_FIELDS = ("tokens_in", "tokens_out", "tool_calls", "steps")
NUMBER_FIELDS = ("cost_usd", "latency_s")


@dataclass
class RunOptions:
    run_name: str
    workers: int | None = None
    epochs: int | None = None  # overrides the suite's and the tasks'
    use_cache: bool = True
    out: Path | None = None  # where inputs and outputs go; default .calipers/runs/<run>
    cache_dir: Path = PIPELINE_CACHE
    stdio: bool = False
    timeout_s: float = 150.0
    attempts: int = 1  # > 1: retry the pipeline's transient exit codes
    transient_exit: tuple[int, ...] = ()
    seed: int = 0
    progress: bool | None = None
    judging: JudgeOptions = field(default_factory=JudgeOptions)
    executor: ExecutorName = "local"
    ray_address: str | None = None
    # the cache: a run reuses only its own outputs of this version (docs/running.md)
    pipeline_version: str | None = None  # the suite's pipeline.version, or --pipeline-version
    env: tuple[str, ...] = ()  # the suite's pipeline.env: variables part of the key
    reuse_from: str | None = None  # --reuse-from RUN: that run's cached outputs too
    # --stop: tasks in the stopper's order, counted as they finish, and the run stops once
    # the comparison with the baseline is decided (calipers.running.stopping)
    stopper: Stopper | None = None


@dataclass
class SuiteRun:
    rows: list[dict[str, Any]]
    invocations: int
    cached: int
    failed: int
    judged: int
    notes: list[str] = field(default_factory=list)
    judge_calls: dict[str, CallCounts] = field(default_factory=dict)  # per judge
    reused: int = 0  # of `cached`: outputs another run made (--reuse-from)
    identity: PipelineIdentity | None = None  # what the cache key held


def extract_output(parsed: dict[str, Any]) -> Any:
    if "output" not in parsed:
        raise LookupError(f"pipeline output has no 'output' field. Actual keys: {sorted(parsed)}.")
    return parsed["output"]


def safe_dir(name: str) -> str:
    """A directory name for a task id: kept when harmless, else cleaned and suffixed with a hash
    so that two ids never share a directory."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,80}", name) and ".." not in name:
        return name
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:60] or "task"
    return f"{cleaned}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _telemetry(parsed: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in (*INTEGER_FIELDS, *NUMBER_FIELDS, "truncated", "tools", "decision"):
        if name not in parsed or parsed[name] is None:
            continue
        value = parsed[name]
        ok = {
            **{f: isinstance(value, int) and not isinstance(value, bool) and value >= 0
               for f in INTEGER_FIELDS},
            **{f: isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
               and value == value and value != float("inf") for f in NUMBER_FIELDS},
            "truncated": isinstance(value, bool),
            "tools": isinstance(value, list)
            and all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in value),
            "decision": True,
        }[name]  # fmt: skip
        if not ok:
            notes.append(f"{where}: telemetry '{name}' = {value!r} has the wrong type; dropped")
            continue
        if name == "tools":
            value = [
                {"name": t["name"], "input": t.get("input"),
                 "output": None if t.get("output") is None else str(t.get("output"))}
                for t in value
            ]  # fmt: skip
        out[name] = value
    return out


def telemetry_ok(parsed: dict[str, Any]) -> bool:
    """Every telemetry field present is well-typed: only such outputs are cached (a mistyped one
    fails assertions, and a fixed pipeline must not be served the bad output again)."""
    notes: list[str] = []
    _telemetry(parsed, "", notes)
    return not notes


def _sample(
    run: str, task: Task, text: str, epoch: int, res: InvocationResult, notes: list[str]
) -> dict[str, Any]:
    row: dict[str, Any] = {"run": run, "task": task.id, "sample_id": task.id, "epoch": epoch,
                           "input": text, "expected": task.expected}  # fmt: skip
    specs = [spec.model_dump(exclude_none=True) for spec in task.assertions]
    if res.ok and res.parsed_output is not None:
        output = res.decision_value
        row["output"] = output if isinstance(output, str) else json.dumps(output)
        row.update(_telemetry(res.parsed_output, f"task {task.id}, epoch {epoch}", notes))
        row["assertions"] = specs
        grade_record(row, f"task {task.id}, epoch {epoch}", missing_fails=True)
    else:
        row["error"] = res.error or "pipeline failed"
        if res.stderr_tail:  # kept with the sample: store, run report, HTML
            row["error"] += f"; stderr: {res.stderr_tail}"
        row["assertions"] = [
            {**s, "passed": False, "detail": f"not evaluated: {row['error']}"} for s in specs
        ]
    return row


def run_suite(suite: Suite, command: str, options: RunOptions) -> SuiteRun:
    """Every task × epoch through the pipeline (bounded pool, cached, resumable), assertions
    graded, judges called; samples in suite order. Ctrl-C / SIGTERM raise RunInterrupted with the
    samples that had finished (pipeline and judges)."""
    if not options.stdio:  # a brace the template cannot fill: refused before anything runs
        parse_command(command, required=(), where="`pipeline`", parameters=["pipeline"])
    out = options.out or RUNS_DIR / safe_dir(options.run_name)
    pipeline = Pipeline(
        command=command,
        mode="stdio" if options.stdio else "files",
        decision_field="output",
        timeout_s=options.timeout_s,
        retry=RetryPolicy(
            max_attempts=options.attempts, transient_exit_codes=frozenset(options.transient_exit)
        ),
        cache_dir=options.cache_dir if options.use_cache else None,
        cwd=None,
        cache_if=telemetry_ok,
    )
    # the run, the program's files and directories, the version and the environment are part
    # of the key: a fixed pipeline is a new pipeline, and another run's outputs are not this
    # run's (unless --reuse-from)
    identity = identify(
        command, options.run_name, version=options.pipeline_version, env=options.env
    )
    jobs: list[tuple[Task, int, Future[InvocationResult]]] = []
    backend = open_backend(
        options.executor, workers=options.workers, ray_address=options.ray_address
    )
    notes: list[str] = list(identity.notes)
    rows: list[dict[str, Any]] = []
    prefetch_client(options.judging.judges, backend.name)  # while the pipelines run
    try:
        with JobPool(extract=extract_output, seed=options.seed, progress=options.progress,
                     label="tasks", backend=backend) as pool:  # fmt: skip
            tasks = suite.tasks
            if options.stopper is not None:  # the order fixed before the run, from its seed
                by_id = {t.id: t for t in suite.tasks}
                tasks = [by_id[i] for i in options.stopper.sequence]
            for task in tasks:
                for epoch in range(suite.epochs_of(task, options.epochs)):
                    job = Job(f"{task.id}/{epoch}", suite.inputs[task.id],
                              out / safe_dir(task.id) / str(epoch))  # fmt: skip
                    salted = replace(
                        pipeline,
                        cache_salt=identity.salt(epoch),
                        reuse_salt=None
                        if options.reuse_from is None
                        else identity.salt(epoch, options.reuse_from),
                    )
                    jobs.append((task, epoch, pool.submit(salted, job)))
            judge_calls: dict[str, CallCounts] = {}
            if options.stopper is not None:
                results, rows, judged = _until_decided(
                    suite, options, jobs, notes, backend, judge_calls
                )
        if options.stopper is None:
            results = [(task, epoch, future.result()) for task, epoch, future in jobs]
            rows = [
                _sample(options.run_name, t, suite.inputs[t.id], e, r, notes) for t, e, r in results
            ]
            judged = (
                judge_rows(suite, rows, options, backend, judge_calls)
                if options.judging.judges
                else 0
            )
    except KeyboardInterrupt as stop:
        backend.close(cancel=True)
        raise RunInterrupted(*_kept(suite, options, jobs, rows, stop, notes)) from None
    finally:
        backend.close()
    if options.reuse_from is not None and not any(r.reused for *_, r in results):
        notes.append(
            f"--reuse-from {options.reuse_from}: the cache holds no output of that run for this "
            "command, these inputs, files, version and environment; nothing was reused"
        )
    return SuiteRun(
        rows,
        invocations=sum(1 for *_, r in results if not r.cached),
        cached=sum(1 for *_, r in results if r.cached),
        failed=sum(1 for *_, r in results if not r.ok),
        judged=judged,
        notes=notes,
        judge_calls=judge_calls,
        reused=sum(1 for *_, r in results if r.reused),
        identity=identity,
    )


def _until_decided(
    suite: Suite,
    options: RunOptions,
    jobs: list[tuple[Task, int, Future[InvocationResult]]],
    notes: list[str],
    backend: Backend,
    judge_calls: dict[str, CallCounts],
) -> tuple[list[tuple[Task, int, InvocationResult]], list[dict[str, Any]], int]:
    """Hand each task to the stopper as soon as all its epochs are in (and judged), and stop
    the run once it is decided: the tasks not started are cancelled, the running ones finish
    (their outputs are cached and stored, but were not counted)."""
    stopper = options.stopper
    assert stopper is not None
    left: dict[str, int] = {}
    for task, _, _ in jobs:
        left[task.id] = left.get(task.id, 0) + 1
    entry = {id(f): (task, epoch) for task, epoch, f in jobs}
    order = {id(f): i for i, (*_, f) in enumerate(jobs)}
    finished: dict[str, list[tuple[Task, int, InvocationResult]]] = {}
    results: list[tuple[Task, int, InvocationResult]] = []
    rows: list[dict[str, Any]] = []
    judged = 0

    def complete(task_id: str) -> list[dict[str, Any]]:
        nonlocal judged
        done = sorted(finished.pop(task_id), key=lambda x: x[1])
        results.extend(done)
        task_rows = [_sample(options.run_name, t, suite.inputs[t.id], e, r, notes)
                     for t, e, r in done]  # fmt: skip
        if options.judging.judges:
            judged += judge_rows(suite, task_rows, options, backend, judge_calls)
        rows.extend(task_rows)
        return task_rows

    decided = False
    pending = {f for *_, f in jobs}
    while pending:
        # everything that has finished since the last pass: one scoring for the batch
        done, pending = wait(pending, return_when=FIRST_COMPLETED)
        ready = []
        for future in sorted(done, key=lambda f: order[id(f)]):
            if future.cancelled():
                continue
            task, epoch = entry[id(future)]
            finished.setdefault(task.id, []).append((task, epoch, future.result()))
            left[task.id] -= 1
            if left[task.id] == 0:
                ready.append((task.id, complete(task.id)))
        if ready and not decided and stopper.finish(ready):
            decided = True
            for *_, waiting in jobs:
                waiting.cancel()
    for task_id in [t for t, n in left.items() if n == 0 and t in finished]:
        complete(task_id)
    # stored in the order the tasks were counted: `calipers watch` (arrival order) replays the
    # stored run to the same stop
    rows.sort(key=lambda row: (stopper.position[row["task"]], row["epoch"]))
    cancelled = sum(1 for *_, f in jobs if f.cancelled())
    if decided:
        notes.append(
            f"stopped early: the comparison with '{stopper.plan.baseline}' was decided after "
            f"{stopper.counted} task(s); {cancelled} invocation(s) not run"
        )
    return results, rows, judged


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a run: `partial` holds the samples that had finished."""

    def __init__(self, partial: SuiteRun, planned: int) -> None:
        super().__init__()
        self.partial, self.planned = partial, planned


def _kept(
    suite: Suite,
    options: RunOptions,
    jobs: list[tuple[Task, int, Future[InvocationResult]]],
    rows: list[dict[str, Any]],
    stop: KeyboardInterrupt,
    notes: list[str],
) -> tuple[SuiteRun, int]:
    """The samples that finished before the interrupt: every invocation that completed (the
    running ones were killed by the interrupt handler and are not results), and, once judging
    had begun, only the samples whose judge calls had all returned."""
    processes.stop_all()  # a library caller without the CLI's handler: stop the children too
    for *_, future in jobs:
        future.cancel()
    # (a cancelled future that no worker will pick up never counts as done for `wait`)
    running = [f for *_, f in jobs if not f.cancelled()]
    wait(running, timeout=processes.KILL_GRACE_S + 5)
    if isinstance(stop, JudgingInterrupted):
        todo = [row for row in rows if row.get("output") is not None]
        unfinished = {id(row) for row, new in zip(todo, stop.finished, strict=True) if new is None}
        for row, new in zip(todo, stop.finished, strict=True):
            if new is not None:
                row["judgments"] = new
        kept = [row for row in rows if id(row) not in unfinished]
        judged = len(todo) - len(unfinished)
    else:
        done = [
            (task, epoch, f.result())
            for task, epoch, f in jobs
            if f.done() and not f.cancelled() and f.exception() is None
            and not f.result().interrupted
        ]  # fmt: skip
        # without judges, a finished invocation is a finished sample; with judges it is not
        # judged yet, so it waits (cached) for the re-run
        kept = [] if options.judging.judges else [
            _sample(options.run_name, t, suite.inputs[t.id], e, r, notes) for t, e, r in done
        ]  # fmt: skip
        judged = 0
    results = [f.result() for *_, f in jobs if f.done() and not f.cancelled()
               and f.exception() is None and not f.result().interrupted]  # fmt: skip
    partial = SuiteRun(
        kept,
        invocations=sum(1 for r in results if not r.cached),
        cached=sum(1 for r in results if r.cached),
        failed=sum(1 for r in kept if r.get("error")),
        judged=judged,
        notes=notes,
        reused=sum(1 for r in results if r.reused),
    )
    return partial, len(jobs)


def judge_rows(
    suite: Suite,
    rows: list[dict[str, Any]],
    options: RunOptions,
    backend: Backend,
    counts: dict[str, CallCounts] | None = None,
) -> int:
    """Judge every sample that has an output; the judgments are added to its row."""
    judging = options.judging
    tasks = {t.id: t for t in suite.tasks}
    templates = {
        kind: PromptTemplate.load(kind, debias_length=judging.debias_length)
        for kind in {judging.kind, "rubric"}
    }
    rubrics = {
        t.id: load_rubric(suite.path.parent / t.rubric).rules_for(t.id)
        for t in suite.tasks
        if t.rubric
    }
    todo = [row for row in rows if row.get("output") is not None]
    requests = []
    for row in todo:
        task = tasks[row["task"]]
        rules = rubrics.get(task.id)
        template = templates["rubric" if rules is not None else judging.kind]
        prompt = template.render(
            task=suite.inputs[task.id], output=row["output"], expected=task.expected, rules=rules
        )
        draw = "\x00".join(str(row[k]) for k in ("run", "task", "sample_id", "epoch"))
        requests.append(JudgeRequest(template, prompt, draw))
    judged = judge_requests(requests, judging, backend, progress=options.progress, counts=counts)
    for row, judgments in zip(todo, judged, strict=True):
        row["judgments"] = judgments
    return len(todo)


# --------------------------------------------------------------------------- pairwise judging


@dataclass(frozen=True)
class PairwisePlan:
    """The runs of the store a new run is judged against, pairwise, and where they were named
    (for error messages: the suite's field or the option)."""

    against: tuple[str, ...]
    source: str


def pairwise_plan(
    suite: Suite, run_name: str, override: Sequence[str] = (), *, off: bool = False
) -> tuple[PairwisePlan | None, list[str]]:
    """The pairwise judging asked for (None: none), and notes. `override` (--pairwise-against)
    replaces the suite's `judge.pairwise.against`. The suite naming the run being made is
    dropped with a note — the run that makes the baseline uses the same suite — while the option
    naming it is an error."""
    if off:
        return None, []
    if override:
        if run_name in override:
            raise InputError(
                f"--pairwise-against {run_name}: that is the run being made (--run)",
                hint="Name runs already in the store to compare the new run with.",
            )
        return PairwisePlan(tuple(dict.fromkeys(override)), "--pairwise-against"), []
    settings = suite.judge.pairwise
    if settings is None:
        return None, []
    source = f"{suite.path}: field 'judge.pairwise.against'"
    against = tuple(r for r in settings.against if r != run_name)
    notes = (
        [f"{source} names run '{run_name}' itself, the run being made: not compared with itself"]
        if len(against) < len(settings.against)
        else []
    )
    return (PairwisePlan(against, source) if against else None), notes


def check_pairwise(plan: PairwisePlan, db: Path, suite: Suite, judging: JudgeOptions) -> None:
    """Before the pipeline runs: a judge is given, and every named run is in the store with
    outputs for some of the suite's tasks — so that a typo costs nothing."""
    from calipers.data.store import Store

    if not judging.judges:
        raise InputError(
            f"{plan.source}: pairwise judging needs a judge",
            hint="Add --judge SPEC (the same judges judge the run and its pairs), or "
            "--no-pairwise to skip it.",
        )
    if not db.is_file():
        raise InputError(
            f"{plan.source}: no store at {db}, so no run {', '.join(plan.against)} to compare with",
            hint="Give the store that holds them (--db), or run the baseline first.",
        )
    with Store(db) as store:
        found = dict(store.con.execute(
            "SELECT run, list(DISTINCT task ORDER BY task) FROM samples "
            "WHERE output IS NOT NULL GROUP BY run ORDER BY run"
        ).fetchall())  # fmt: skip
    missing = [r for r in plan.against if r not in found]
    if missing:
        listed = ", ".join(sorted(found)[:20]) or "(none with an output)"
        raise InputError(
            f"{plan.source}: no run {', '.join(missing)} in {db}",
            hint=f"Runs there: {listed} (`calipers runs`). Fix the name, or run it first.",
        )
    tasks = {t.id for t in suite.tasks}
    for run in plan.against:
        if not tasks & set(found[run]):
            theirs = ", ".join(found[run][:5]) + (" …" if len(found[run]) > 5 else "")
            raise InputError(
                f"{plan.source}: run '{run}' shares no task with {suite.path} (its tasks: "
                f"{theirs})",
                hint="Pairs are judged on the samples (task, sample_id, epoch) both runs have: "
                "compare runs of the same suite.",
            )


def judge_against(
    db: Path, run_name: str, plan: PairwisePlan, judging: JudgeOptions, *,
    workers: int | None = None, executor: ExecutorName = "local", ray_address: str | None = None,
    progress: bool | None = None,
) -> PairJudging:  # fmt: skip
    """After the run is stored: its outputs against each run of the plan on the samples they
    share, in both orders, by `judge_pairs` (same cache, retries, failures kept as missing),
    into the store's `pairwise` table. The other runs are not judged among themselves."""
    backend = open_backend(executor, workers=workers, ray_address=ray_address)
    try:
        return judge_pairs(
            db, judging, backend, runs=[run_name, *plan.against], progress=progress,
            only_with=run_name,
        )  # fmt: skip
    except NothingShared as exc:
        backend.close(cancel=True)
        raise DataError(
            f"run '{run_name}' is stored, but shares no sample with an output with "
            f"{', '.join(plan.against)} ({plan.source}): no pair judged",
            hint="Pairs are judged on the samples (task, sample_id, epoch) both runs have an "
            "output for: check that the run's invocations succeeded and its epochs overlap.",
        ) from exc
    except BaseException:
        backend.close(cancel=True)
        raise
    finally:
        backend.close()
