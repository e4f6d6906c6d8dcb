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
from concurrent.futures import ThreadPoolExecutor, as_completed
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
    n_workers = max(1, workers or default_workers())
    show = sys.stderr.isatty() if progress is None else progress

    def one(job: Job) -> InvocationResult:
        write_atomic(job.input_path, job.text)
        # Jitter from (seed, job): the same run waits the same way, whatever the scheduling.
        rng = random.Random(f"{seed}\x00{job.name}")
        return invoke(pipeline, job.input_path, job.output_path, extract=extract, rng=rng)

    results: list[InvocationResult | None] = [None] * len(jobs)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=not show,
    )
    with bar, ThreadPoolExecutor(max_workers=n_workers) as pool:
        task = bar.add_task(label, total=len(jobs))
        futures = {pool.submit(one, job): i for i, job in enumerate(jobs)}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            bar.advance(task)
    return [r for r in results if r is not None]
