"""Run many invocations of a pipeline (and judge calls) side by side, with a progress bar.

Two backends do the work: a bounded local thread pool (the default) and Ray (`--executor ray`,
the `ray` extra), which runs the same invocations and judge calls as Ray tasks on a local instance
or a cluster. Either way the driver keeps the files: each job has its own directory holding
`input.md` and `output.json`, so inputs and outputs can be inspected (and diffed) after the run,
and with a cache directory a run killed at any point resumes without repeating the invocations
that had succeeded.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from calipers.running.invoke import Extract, InvocationResult, Pipeline
from calipers.running.jobs import Backend, Job, default_workers, run_job

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["Backend", "ExecutorName", "Job", "JobPool", "default_workers", "open_backend"]

T = TypeVar("T")
ExecutorName = Literal["local", "ray"]


class ThreadBackend:
    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or default_workers())
        self._pool = ThreadPoolExecutor(max_workers=self.workers)
        self._closed = False

    def invoke(
        self, pipeline: Pipeline, job: Job, extract: Extract, seed: int
    ) -> Future[InvocationResult]:
        return self._pool.submit(run_job, pipeline, job, extract, seed)

    def call(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        return self._pool.submit(fn, *args)

    def close(self, *, cancel: bool = False) -> None:
        """Finish the work (or, with `cancel`, drop what has not started and return without
        waiting for what runs: an interrupt must not wait out a judge call). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=not cancel, cancel_futures=cancel)


def open_backend(
    executor: ExecutorName = "local", *, workers: int | None = None, ray_address: str | None = None
) -> Backend:
    if executor == "ray":
        from calipers.running.ray_executor import RayBackend

        return RayBackend(workers=workers, address=ray_address)
    return ThreadBackend(workers)


class NoBar:
    """What `progress_bar` gives when no bar is shown: the calls a bar takes, doing nothing.
    (rich.progress costs ~8 ms of CPU to import: a quiet, piped or CI run never pays it.)"""

    def __enter__(self) -> NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, *, total: float | None = None) -> TaskID:
        return cast("TaskID", 0)

    def update(
        self, task: TaskID, *, total: float | None = None, completed: float | None = None
    ) -> None:
        return None

    def advance(self, task: TaskID, advance: float = 1) -> None:
        return None


def progress_bar(show: bool | None) -> Progress | NoBar:
    """A bar on stderr, shown on an interactive terminal unless `show` says otherwise."""
    if not (sys.stderr.isatty() if show is None else show):
        return NoBar()
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True, emoji=False),
        transient=True,
    )


class JobPool:
    """Pipeline invocations on a backend, whose work can grow while it runs (perturbations are
    submitted as their case's baseline finishes), with one progress bar over everything
    submitted. Use as a context manager; leaving it waits for, or on error cancels, the rest.
    A backend passed in is left open for its owner (e.g. to run judge calls next)."""

    def __init__(
        self,
        *,
        extract: Extract,
        workers: int | None = None,
        seed: int = 0,
        progress: bool | None = None,
        label: str = "invocations",
        backend: Backend | None = None,
    ) -> None:
        self.extract, self.seed = extract, seed
        self._owned = backend is None
        self.backend: Backend = backend or ThreadBackend(workers)
        self._pending: list[Future[InvocationResult]] = []
        self._bar = progress_bar(progress)
        self._task = self._bar.add_task(label, total=0)
        self._total = 0

    def __enter__(self) -> JobPool:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        failed = exc[0] is not None
        try:
            if self._owned:
                self.backend.close(cancel=failed)
            elif failed:
                for future in self._pending:
                    future.cancel()
            else:
                for future in self._pending:
                    if not future.cancelled():  # (a run that stopped early cancels the rest)
                        future.exception()  # wait, as a pool's shutdown would
        finally:
            self._bar.__exit__(None, None, None)

    def submit(self, pipeline: Pipeline, job: Job) -> Future[InvocationResult]:
        self._total += 1
        self._bar.update(self._task, total=self._total)
        future = self.backend.invoke(pipeline, job, self.extract, self.seed)
        future.add_done_callback(lambda _: self._bar.advance(self._task))
        self._pending.append(future)
        return future


def run_jobs(
    pipeline: Pipeline,
    jobs: Sequence[Job],
    *,
    extract: Extract,
    workers: int | None = None,
    seed: int = 0,
    progress: bool | None = None,
    label: str = "invocations",
) -> list[InvocationResult]:
    """Results in the order of `jobs`. `progress` None: a bar only on an interactive stderr."""
    with JobPool(
        extract=extract, workers=workers, seed=seed, progress=progress, label=label
    ) as pool:
        futures = [pool.submit(pipeline, job) for job in jobs]
        return [f.result() for f in futures]
