"""Run many invocations of a pipeline side by side on a bounded thread pool, with a progress bar.

Each job has its own directory holding `input.md` and `output.json`, so inputs and outputs can be
inspected (and diffed) after the run. With a cache directory, a run killed at any point resumes
without repeating the invocations that had succeeded.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from calipers.running.invoke import Extract, InvocationResult, Pipeline, invoke, write_atomic


def default_workers() -> int:
    return min(8, 2 * (os.cpu_count() or 1))


@dataclass(frozen=True)
class Job:
    name: str  # e.g. "acme/reorder-01": for messages and the progress bar
    text: str  # the rendered input
    directory: Path

    @property
    def input_path(self) -> Path:
        return self.directory / "input.md"

    @property
    def output_path(self) -> Path:
        return self.directory / "output.json"


class JobPool:
    """A bounded pool of pipeline invocations whose work can grow while it runs (perturbations are
    submitted as their case's baseline finishes), with one progress bar over everything
    submitted. Use as a context manager; leaving it waits for, or on error cancels, the rest."""

    def __init__(
        self,
        *,
        extract: Extract,
        workers: int | None = None,
        seed: int = 0,
        progress: bool | None = None,
        label: str = "invocations",
    ) -> None:
        self.extract, self.seed = extract, seed
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers or default_workers()))
        show = sys.stderr.isatty() if progress is None else progress
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
            disable=not show,
        )
        self._task = self._bar.add_task(label, total=0)

    def __enter__(self) -> JobPool:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=exc[0] is not None)
        self._bar.__exit__(None, None, None)

    def submit(self, pipeline: Pipeline, job: Job) -> Future[InvocationResult]:
        self._bar.update(self._task, total=(self._bar.tasks[0].total or 0) + 1)

        def one() -> InvocationResult:
            write_atomic(job.input_path, job.text)
            # Jitter from (seed, job): the same run waits the same way, whatever the scheduling.
            rng = random.Random(f"{self.seed}\x00{job.name}")
            try:
                return invoke(pipeline, job.input_path, job.output_path, extract=self.extract,
                              rng=rng)  # fmt: skip
            finally:
                self._bar.advance(self._task)

        return self._pool.submit(one)


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
