"""Judge many samples: every judge of the ensemble, `repeats` times each, on a backend (threads or
Ray), with a progress bar and a cache of readable replies kept by the driver; then a summary per
judge (mean, the spread between repeats, failures) and the agreement between judges.

A call that fails after its retries, or a reply that cannot be read, is a judgment with `score`
null and its `error` — never a 0 — and is not cached, so a re-run asks again.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from calipers.errors import Interrupted
from calipers.grading.async_judges import AsyncJudgeCalls, Call, prefetch_client, thaw
from calipers.grading.judge_cache import JudgeCache
from calipers.grading.judges import (
    Judge,
    OpenAIJudge,
    PromptTemplate,
    call_judge,
    judgments_from,
    keeper,
)
from calipers.running.executor import Backend, NoBar, progress_bar
from calipers.running.judge_processes import ProcessJudgeCalls, Work, processes_for
from calipers.stats.agreement_intervals import pearson_interval


@dataclass
class JudgeOptions:
    judges: Sequence[Judge] = ()
    kind: str = "overall"  # overall (1–5), objective (0–1); a task with a rubric uses "rubric"
    repeats: int = 1
    debias_length: bool = True
    cache_dir: Path | None = None
    refresh: bool = False  # ask every judge again (replies are still cached for the next run)


@dataclass(frozen=True)
class JudgeRequest:
    template: PromptTemplate
    prompt: str
    # which draw of the pipeline this judges (run, task, sample, epoch): two epochs with the same
    # output are two independent judge calls, each cached under its own key
    draw: str = ""


@dataclass
class CallCounts:
    """One judge's calls in one judging: answered from the cache, made, and failed (of made)."""

    cached: int = 0
    called: int = 0
    failed: int = 0


def judge_requests(
    requests: Sequence[JudgeRequest],
    options: JudgeOptions,
    backend: Backend,
    *,
    progress: bool | None = None,
    counts: dict[str, CallCounts] | None = None,
) -> list[list[dict[str, Any]]]:
    """The judgments of each request (in order): judges × repeats calls, cache hits first
    (`options.refresh`: none). `counts`, when given, is filled per judge name."""
    cache = JudgeCache(options.cache_dir) if options.cache_dir else None
    use_hits = cache is not None and not options.refresh
    calls: list[
        tuple[int, Judge, int, str | None, str | None]
    ] = []  # (request, judge, repeat, key, hit)
    for i, request in enumerate(requests):
        for judge in options.judges:
            for repeat in range(options.repeats):
                key = (
                    cache.key(
                        judge, request.template.sha256, request.prompt, repeat, draw=request.draw
                    )
                    if cache
                    else None
                )
                hit = cache.get(key) if cache and key and use_hits else None
                calls.append((i, judge, repeat, key, hit))
    futures: dict[int, Future[tuple[str | None, str | None]]] = {}
    # a call's judgments as its keeper read them from the reply, to decide whether to cache it:
    # `_finished` takes them instead of reading every reply a second time
    made: dict[int, list[dict[str, Any]]] = {}
    kept: list[threading.Event] = []  # remote backends: set when a reply is on disk
    # OpenAI-compatible judges on the local backend: coroutines on an event loop, as many in
    # flight as the backend has workers — in this process, or for a large judging at a high -j
    # spread over a process per core (running/judge_processes.py); command judges (and every
    # judge on Ray) on the backend
    workers = getattr(backend, "workers", None) if backend.name == "local" else None
    misses = [c for c in calls if c[4] is None]
    to_loop = sum(isinstance(c[1], OpenAIJudge) for c in misses) if workers else 0
    processes = processes_for(workers, to_loop) if workers and to_loop else 0
    loop_calls: AsyncJudgeCalls | ProcessJudgeCalls | None = None
    if workers and processes > 1:
        loop_calls = ProcessJudgeCalls(workers, processes, options.cache_dir)
    elif workers and processes == 1:
        loop_calls = AsyncJudgeCalls(workers)
    with progress_bar(progress) as bar:
        shown = not isinstance(bar, NoBar)
        task = bar.add_task("judging", total=len(calls))
        bar.advance(task, len(calls) - len(misses))
        try:
            on_loop: list[tuple[int, Call, Work]] = []
            for n, (i, judge, repeat, key, hit) in enumerate(calls):
                if hit is not None:
                    continue
                # A call's reply is cached before its future completes — on the worker, or on
                # the event loop while the call still holds its place — so at most -j calls are
                # ever in flight and not on disk: a run killed while judging repeats only those,
                # and an interrupt stores nothing the cache does not hold.
                keep = keeper(cache, key, judge, requests[i].template, repeat, made=made, slot=n)
                prompt = requests[i].prompt
                if loop_calls is not None and isinstance(judge, OpenAIJudge):
                    keeps = (key, requests[i].template, repeat) if cache and key else None
                    on_loop.append(
                        (n, (judge, prompt, keep if cache else None), (judge, prompt, keeps))
                    )
                elif backend.name == "local":
                    futures[n] = backend.call(_call_and_keep, judge, prompt, keep)
                else:  # remote workers: the driver keeps the cache, as each reply comes back
                    futures[n] = backend.call(call_judge, judge, prompt)
                    kept.append(threading.Event())
                    futures[n].add_done_callback(_keep_on_driver(keep, kept[-1]))
            if isinstance(loop_calls, ProcessJudgeCalls) and on_loop:
                started = loop_calls.start([work for _, _, work in on_loop])
                futures.update(zip((n for n, _, _ in on_loop), started, strict=True))
            elif isinstance(loop_calls, AsyncJudgeCalls) and on_loop:
                started = loop_calls.start([call for _, call, _ in on_loop])
                futures.update(zip((n for n, _, _ in on_loop), started, strict=True))
            _wait_all(
                list(futures.values()),
                lambda done: bar.update(task, completed=done),
                poll_s=0.1 if shown else 1.0,
                before=len(calls) - len(misses),
            )
            for event in kept:  # a future's waiters wake before its callbacks have run
                event.wait()
        except KeyboardInterrupt:
            # Ctrl-C: calls not yet started are dropped (command judges are killed by the
            # interrupt handler); every reply received is already cached. Calls in flight are
            # not waited for.
            for future in futures.values():
                future.cancel()
            if loop_calls is not None:
                loop_calls.close(wait=False)
            raise JudgingInterrupted(_finished(requests, calls, futures, counts, made)) from None
        finally:
            if loop_calls is not None:
                loop_calls.close()
            if cache is not None:
                cache.close()  # a call still running after an interrupt reopens a segment
            thaw()
    out = _finished(requests, calls, futures, counts, made)
    return [judgments for judgments in out if judgments is not None]


def _wait_all(
    futures: Sequence[Future[Reply]],
    show: Callable[[int], None],
    *,
    poll_s: float,
    before: int,
) -> None:
    """Wait until every future is done, showing the count every `poll_s` seconds. One wake-up
    per poll, not one per call (`as_completed` woke this thread, and took the GIL from the
    event loop's, a few thousand times a second)."""
    left = [len(futures)]
    lock = threading.Lock()
    all_done = threading.Event()

    def one_done(_: Future[Reply]) -> None:
        with lock:
            left[0] -= 1
            if left[0] == 0:
                all_done.set()

    if not futures:
        return
    for future in futures:
        future.add_done_callback(one_done)
    while not all_done.wait(poll_s):  # a timed wait: Ctrl-C is seen within poll_s
        show(before + len(futures) - left[0])
    show(before + len(futures))


class JudgingInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during judging. `finished[i]` holds request i's judgments when every
    call of it had finished, else None."""

    def __init__(self, finished: list[list[dict[str, Any]] | None]) -> None:
        super().__init__()
        self.finished = finished


def _finished(
    requests: Sequence[JudgeRequest],
    calls: Sequence[tuple[int, Judge, int, str | None, str | None]],
    futures: dict[int, Future[tuple[str | None, str | None]]],
    counts: dict[str, CallCounts] | None,
    made: dict[int, list[dict[str, Any]]] | None = None,
) -> list[list[dict[str, Any]] | None]:
    out: list[list[dict[str, Any]] | None] = [[] for _ in requests]
    tally = counts if counts is not None else {}
    for n, (i, judge, repeat, _, hit) in enumerate(calls):
        count = tally.setdefault(judge.name, CallCounts())
        reply: str | None
        error: str | None
        if hit is not None:
            reply, error = hit, None
            count.cached += 1
        elif futures[n].done() and not futures[n].cancelled():
            reply, error = futures[n].result()
            count.called += 1
        else:
            out[i] = None
            continue
        rows = made.pop(n, None) if made and hit is None else None
        if rows is None:
            rows = judgments_from(judge, requests[i].template, reply, error, repeat=repeat)
        if hit is None and any(j["score"] is None for j in rows):
            count.failed += 1
        judgments = out[i]
        if judgments is not None:
            judgments.extend(rows)
    return out


Reply = tuple[str | None, str | None]


def _call_and_keep(judge: Judge, prompt: str, keep: Callable[[Reply], None]) -> Reply:
    result = call_judge(judge, prompt)
    keep(result)
    return result


def _keep_on_driver(
    keep: Callable[[Reply], None], done: threading.Event
) -> Callable[[Future[Reply]], None]:
    def callback(future: Future[Reply]) -> None:
        try:
            if not future.cancelled() and future.exception() is None:
                keep(future.result())
        finally:
            done.set()

    return callback


@dataclass(frozen=True)
class JudgeSummary:
    judge: str
    scale: tuple[float, float]
    samples: int  # samples with at least one readable judgment
    calls: int
    failed: int  # calls that ended as a missing judgment, with their error
    mean: float | None  # of the per-sample means (a rubric judgment: mean of its dimensions)
    repeat_sd: float | None  # mean over samples of the SD between repeats (None with one repeat)
    first_error: str | None = None  # the first failed call's error, as recorded

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge, "scale_min": self.scale[0], "scale_max": self.scale[1],
            "samples": self.samples, "calls": self.calls, "failed": self.failed,
            "mean": self.mean, "repeat_sd": self.repeat_sd, "first_error": self.first_error,
        }  # fmt: skip


def judge_failures(summaries: Sequence[JudgeSummary], max_fraction: float | None) -> str | None:
    """Why the judging failed as a whole, or None: a judge whose every call failed, or (with
    `max_fraction`) one whose failed share exceeds it."""
    for s in summaries:
        if s.calls == 0 or s.failed == 0:
            continue
        share = s.failed / s.calls
        if s.failed >= s.calls or (max_fraction is not None and share > max_fraction):
            limit = "all" if s.failed >= s.calls else f"more than {max_fraction:.0%}"
            return (
                f"judge {s.judge}: {s.failed} of {s.calls} calls failed ({limit}); first error: "
                f"{s.first_error or 'unknown'}"
            )
    return None


def summarize(rows: Sequence[dict[str, Any]]) -> tuple[list[JudgeSummary], list[dict[str, Any]]]:
    """Per judge: mean score and the spread between repeats; per pair of judges: Pearson r of
    their per-sample means on the samples both judged (null when either is constant), with its
    interval over the samples (`stats.agreement_intervals.pearson_interval`; a refusal says why
    there is none)."""
    per: dict[str, dict[tuple[Any, ...], dict[int, list[float]]]] = defaultdict(dict)
    calls: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    failed: dict[str, int] = defaultdict(int)
    first_error: dict[str, str] = {}
    scale: dict[str, tuple[float, float]] = {}
    for row in rows:
        key = (row["task"], row["sample_id"], row["epoch"])
        for j in row.get("judgments") or []:
            name = j["judge"]
            calls[name].add((*key, j.get("repeat")))
            scale[name] = (j["scale_min"], j["scale_max"])
            if j.get("score") is None:
                failed[name] += 1
                first_error.setdefault(name, str(j.get("error") or "no score"))
                continue
            per[name].setdefault(key, {}).setdefault(j.get("repeat") or 0, []).append(j["score"])
    summaries = []
    means: dict[str, dict[tuple[Any, ...], float]] = {}
    for name in sorted(calls):
        by_sample = {
            key: [float(np.mean(s)) for s in repeats.values()] for key, repeats in per[name].items()
        }
        means[name] = {key: float(np.mean(v)) for key, v in by_sample.items()}
        sds = [float(np.std(v, ddof=1)) for v in by_sample.values() if len(v) > 1]
        summaries.append(JudgeSummary(
            name, scale[name], len(by_sample), len(calls[name]), failed[name],
            float(np.mean(list(means[name].values()))) if means[name] else None,
            float(np.mean(sds)) if sds else None, first_error.get(name),
        ))  # fmt: skip
    pairs = []
    names = sorted(means)
    for a_i, a in enumerate(names):
        for b in names[a_i + 1 :]:
            shared = sorted(set(means[a]) & set(means[b]))
            found = pearson_interval([means[a][k] for k in shared], [means[b][k] for k in shared])
            r = found.estimate if len(shared) >= 3 else None
            pairs.append({"judges": [a, b], "samples": len(shared), "pearson": r,
                          "low": found.low if r is not None else None,
                          "high": found.high if r is not None else None,
                          "method": found.method if r is not None else None,
                          "refusal": found.refusal if r is not None else None})  # fmt: skip
    return summaries, pairs


@dataclass(frozen=True)
class StoreJudging:
    samples: int  # samples judged
    replaced: int  # earlier judgments by the same judges, replaced
    rows: list[dict[str, Any]]  # the judged samples with their new judgments (for the summary)
    without_input: int  # samples whose input was not recorded: judged on the task name
    calls: dict[str, CallCounts] = field(default_factory=dict)  # per judge


def judge_store(
    db: Path,
    options: JudgeOptions,
    backend: Backend,
    *,
    runs: Sequence[str] | None = None,
    rubric: Path | None = None,
    progress: bool | None = None,
) -> StoreJudging:
    """Judge (again) every sample of the store that has an output. Each sample's judgments by
    judges of the same names are replaced; other judges' judgments stay. One transaction."""
    from calipers.data.store import Store

    if rubric:
        from calipers.schemes.rubric.definition import load_rubric

    rules_file = load_rubric(rubric) if rubric else None
    templates = {
        kind: PromptTemplate.load(kind, debias_length=options.debias_length)
        for kind in {options.kind, "rubric"}
    }
    names = {j.name for j in options.judges}
    with Store(db) as store:
        query = (
            "SELECT run, task, sample_id, epoch, input, expected, output, judgments FROM samples "
            "WHERE output IS NOT NULL" + (" AND list_contains(?, run)" if runs else "")
            + " ORDER BY run, task, sample_id, epoch"
        )  # fmt: skip
        cursor = store.con.execute(query, [list(runs)] if runs else [])
        columns = [d[0] for d in cursor.description]
        rows = [dict(zip(columns, r, strict=True)) for r in cursor.fetchall()]
        calls = len(rows) * len(options.judges) * options.repeats
        if processes_for(getattr(backend, "workers", 1), calls) == 1:  # else the processes do
            prefetch_client(options.judges, backend.name)
        requests = []
        for row in rows:
            rules = rules_file.rules_for(row["task"]) if rules_file else None
            template = templates["rubric" if rules is not None else options.kind]
            prompt = template.render(
                task=row["input"] if row["input"] is not None else f"(task: {row['task']})",
                output=row["output"], expected=row["expected"], rules=rules,
            )  # fmt: skip
            draw = "\x00".join(str(row[k]) for k in ("run", "task", "sample_id", "epoch"))
            requests.append(JudgeRequest(template, prompt, draw))
        interrupted = False
        counts: dict[str, CallCounts] = {}
        try:
            judged: list[list[dict[str, Any]] | None] = list(
                judge_requests(requests, options, backend, progress=progress, counts=counts)
            )
        except JudgingInterrupted as stop:
            judged, interrupted = stop.finished, True
        replaced = 0
        updates = []
        done = []
        for row, new in zip(rows, judged, strict=True):
            if new is None:  # interrupted before all its calls finished: keeps its judgments
                continue
            kept = [j for j in row["judgments"] or [] if j["judge"] not in names]
            replaced += len(row["judgments"] or []) - len(kept)
            row["judgments"] = new
            done.append(row)
            updates.append([row["run"], row["task"], row["sample_id"], row["epoch"], kept + new])
        if updates:
            store.update_column("judgments", updates)
    if interrupted:
        raise Interrupted(
            f"judging stopped: {len(done)} of {len(rows)} samples judged and stored; the others "
            "keep their earlier judgments",
            hint="Run the same command again: replies already received are cached and not asked "
            "again.",
        )
    return StoreJudging(
        len(rows), replaced, done, sum(1 for r in rows if r["input"] is None), counts
    )
