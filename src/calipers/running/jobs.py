"""One unit of pipeline work and the interface of the backends that run it, shared by the thread
pool (`executor`) and Ray (`ray_executor`) so that neither imports the other's module for them."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from calipers.running.invoke import Extract, InvocationResult, Pipeline, invoke, write_unless_same

T = TypeVar("T")


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


def job_rng(seed: int, name: str) -> random.Random:
    # Retry jitter from (seed, job): the same run waits the same way, whatever the scheduling.
    return random.Random(f"{seed}\x00{name}")


def run_job(pipeline: Pipeline, job: Job, extract: Extract, seed: int) -> InvocationResult:
    write_unless_same(job.input_path, job.text)
    return invoke(
        pipeline, job.input_path, job.output_path, extract=extract, rng=job_rng(seed, job.name)
    )


class Backend(Protocol):
    """Where invocations and judge calls run."""

    name: str

    def invoke(
        self, pipeline: Pipeline, job: Job, extract: Extract, seed: int
    ) -> Future[InvocationResult]: ...

    def call(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """`fn(*args)` somewhere; `fn` and its arguments must be picklable for remote backends."""
        ...

    def close(self, *, cancel: bool = False) -> None: ...
