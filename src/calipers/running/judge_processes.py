"""Many OpenAI-compatible judge calls over several processes, each with its own event loop.

One event loop runs a judge call's client work (the official client's request building and
response handling, about 0.6–0.8 ms of CPU per call) on one core. Against an endpoint whose
answers come back together, the calls queue for that core: at `-j 32` against a 50 ms loopback
endpoint one loop reached 86–90% of the ideal rate, two processes of 16 calls each 93–94%
(benchmarks/README.md, "Judge calls"). So a judging of at least `MIN_CALLS` calls spreads them
over a process per `CALLS_PER_PROCESS` of `-j`, up to one per core, `-j` split between them; a
smaller one stays on the in-process loop, which starts at once (a process costs about a second of
CPU to start: Python, calipers, the client), as does `-j` under 8.

Each process writes the replies it gets to its own segment of the judge cache before it reports
them, so what this process has received is always on disk: a run killed while judging repeats only
the calls in flight. The processes ignore SIGINT (Ctrl-C reaches the whole process group): the
driver stops them; a driver that dies closes their pipe, and they stop.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from calipers.grading.async_judges import AsyncJudgeCalls
from calipers.grading.judge_cache import JudgeCache
from calipers.grading.judges import OpenAIJudge, PromptTemplate, keeper

Reply = tuple[str | None, str | None]
# judge, prompt, and what caches its reply: (cache key, template, repeat), or None
Work = tuple[OpenAIJudge, str, tuple[str, PromptTemplate, int] | None]

CALLS_PER_PROCESS = 4  # a process's share of -j, at least
MIN_CALLS = 2000  # fewer calls are over about as soon as the processes have started


def processes_for(workers: int, calls: int) -> int:
    """How many processes a judging of `calls` at `-j workers` uses: 1 means the in-process
    loop."""
    if calls < MIN_CALLS:
        return 1
    return max(1, min(os.cpu_count() or 1, workers // CALLS_PER_PROCESS))


class ProcessJudgeCalls:
    """`processes` worker processes, `workers` calls at once between them. Use as a context
    manager (or `close()`)."""

    def __init__(self, workers: int, processes: int, cache_dir: Path | None) -> None:
        self.processes = processes
        self._shares = [workers // processes + (i < workers % processes) for i in range(processes)]
        self._cache_dir = cache_dir
        context = multiprocessing.get_context("spawn")  # no fork of a process with threads
        self._pipes: list[Any] = []
        self._children: list[Any] = []
        for share in self._shares:
            ours, theirs = context.Pipe()
            child = context.Process(
                target=_serve, args=(theirs, share, str(cache_dir) if cache_dir else None),
                name="calipers-judge-calls", daemon=True,
            )  # fmt: skip
            child.start()
            theirs.close()
            self._pipes.append(ours)
            self._children.append(child)
        self._readers: list[threading.Thread] = []
        self._stopping = False

    def __enter__(self) -> ProcessJudgeCalls:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(wait=exc[0] is None)

    def start(self, calls: Sequence[Work]) -> list[Future[Reply]]:
        """Start every call; a future per call, completed with (reply, None) or (None, error) once
        its reply is cached. `cancel()` works until the reply arrives (its call may still have
        been made, and its reply cached)."""
        futures: list[Future[Reply]] = [Future() for _ in calls]
        for pipe in self._pipes:  # every process ready (its client imported): they start together
            with contextlib.suppress(EOFError, OSError):
                pipe.recv()
        # calls dealt in turn, so that each process gets a share of every judge and request
        for i, pipe in enumerate(self._pipes):
            mine = list(range(i, len(calls), self.processes))
            pipe.send([(n, *calls[n]) for n in mine])
            reader = threading.Thread(
                target=self._read, args=(pipe, {n: futures[n] for n in mine}),
                name="calipers-judge-replies", daemon=True,
            )  # fmt: skip
            reader.start()
            self._readers.append(reader)
        return futures

    def _read(self, pipe: Any, futures: dict[int, Future[Reply]]) -> None:
        while futures:
            try:
                n, reply, error, failure = pipe.recv()
            except Exception:  # the process ended, or close() closed the pipe under this read
                break
            future = futures.pop(n)
            with contextlib.suppress(Exception):  # cancelled meanwhile (an interrupt)
                if failure is not None:
                    future.set_exception(OSError(failure))
                else:
                    future.set_result((reply, error))
        if futures and not self._stopping:  # the process died: its calls are failed calls
            for future in futures.values():
                with contextlib.suppress(Exception):
                    future.set_result((None, "the judging process stopped before answering"))

    def close(self, *, wait: bool = True) -> None:
        """`wait=False` (an interrupt): stop the processes at once; their calls in flight are
        abandoned (every reply they had received is cached)."""
        self._stopping = self._stopping or not wait
        for pipe in self._pipes:
            with contextlib.suppress(OSError):
                pipe.close()
        for child in self._children:
            if not wait:
                child.terminate()
            child.join(timeout=10)
            if child.is_alive():
                child.kill()
                child.join()
        self._children.clear()
        self._pipes.clear()


def _serve(pipe: Any, workers: int, cache_dir: str | None) -> None:
    """A worker process: take a list of calls, run them `workers` at a time on an event loop,
    cache each readable reply, then report it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides when to stop
    with contextlib.suppress(ImportError):  # else the loop's first call raises it, as in-process
        import openai  # noqa: F401
    try:
        pipe.send("ready")
        calls = pipe.recv()
    except (EOFError, OSError):
        return
    cache = JudgeCache(Path(cache_dir)) if cache_dir else None
    lock = threading.Lock()
    futures: list[Future[Reply]] = []

    def report(message: tuple[int, str | None, str | None, str | None]) -> None:
        try:
            with lock:
                pipe.send(message)
        except OSError:  # the driver is gone (killed): make no more calls for nobody
            for future in futures:
                future.cancel()

    with AsyncJudgeCalls(workers) as loop:
        futures[:] = loop.start(
            [
                (
                    judge,
                    prompt,
                    keeper(cache, keep[0], judge, keep[1], keep[2]) if cache and keep else None,
                )
                for _, judge, prompt, keep in calls
            ]
        )
        done = threading.Semaphore(0)
        for (n, *_), future in zip(calls, futures, strict=True):
            future.add_done_callback(_reporter(n, report, done))
        for _ in futures:
            done.acquire()
    if cache is not None:
        cache.close()
    pipe.close()


def _reporter(
    n: int, report: Callable[[tuple[int, str | None, str | None, str | None]], None],
    done: threading.Semaphore,
) -> Callable[[Future[Reply]], None]:  # fmt: skip
    def callback(future: Future[Reply]) -> None:
        try:
            if future.cancelled():
                return
            exc = future.exception()
            if exc is not None:
                report((n, None, None, f"{type(exc).__name__}: {exc}"))
            else:
                reply, error = future.result()
                report((n, reply, error, None))
        finally:
            done.release()

    return callback
