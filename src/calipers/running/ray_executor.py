"""`--executor ray`: the same pipeline invocations and judge calls as Ray tasks (the `ray`
extra: `pip install '/path/to/calipers[ray]'` from a checkout, or `pip install ray`).

Without an address (and no RAY_ADDRESS in the environment) a private local Ray instance is
started with as many CPUs as `-j` asks for, and stopped at the end; it starts on the first job the
caches cannot answer, so a fully cached re-run never starts Ray. With `--ray-address` (or
RAY_ADDRESS) the work goes to that cluster; each task asks for one CPU, so the cluster's size
bounds the concurrency.

The driver keeps everything on disk: it checks the cache before sending a job, and writes the
job's `input.md`, `output.json` and cache entry when the result comes back. A worker runs the
pipeline in a private temporary directory, so the nodes of a cluster need no shared filesystem;
they do need the pipeline's command (and calipers) installed, and the pipeline runs in the
driver's working directory when that path exists on the node. A judge's API key is read from the
worker's environment and is never shipped with the task.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from calipers.data.files import write_atomic
from calipers.data.ray_session import connect_ray, import_ray
from calipers.running.invoke import (
    Extract,
    InvocationResult,
    Pipeline,
    cache_store,
    cached_result,
    invoke,
)
from calipers.running.jobs import Job, default_workers, job_rng

T = TypeVar("T")


def invoke_remote(
    pipeline: Pipeline, name: str, rendered: str, extract: Extract, seed: int, driver_cwd: str
) -> tuple[InvocationResult, str | None]:
    """On a worker: one invocation in a private directory; the result and the output file's text
    (None when the pipeline wrote none) go back to the driver."""
    cwd = pipeline.cwd or (Path(driver_cwd) if os.path.isdir(driver_cwd) else None)
    with tempfile.TemporaryDirectory(prefix="calipers-job-") as tmp:
        input_path, output_path = Path(tmp) / "input.md", Path(tmp) / "output.json"
        input_path.write_bytes(rendered.encode("utf-8"))
        result = invoke(
            replace(pipeline, cwd=cwd, cache_dir=None), input_path, output_path,
            extract=extract, rng=job_rng(seed, name),
        )  # fmt: skip
        text = output_path.read_text("utf-8", errors="replace") if output_path.exists() else None
    return result, text


class RayBackend:
    name = "ray"

    def __init__(self, *, workers: int | None = None, address: str | None = None) -> None:
        self._ray = import_ray("--executor ray")
        self._workers = workers
        self._address = address or os.environ.get("RAY_ADDRESS") or None
        self._started = False
        self._remote: dict[str, Any] = {}
        self._refs: list[Any] = []

    def _task(self, name: str) -> Any:
        """The remote function `name`, connecting to (or starting) Ray on first use: a run that
        the caches answer entirely never pays Ray's start-up."""
        if not self._remote:
            self._connect()
            remote = self._ray.remote(num_cpus=1, max_retries=0)
            self._remote = {"invoke": remote(invoke_remote), "call": remote(_call)}
        return self._remote[name]

    def _connect(self) -> None:
        self._started = connect_ray(
            self._ray, self._address, num_cpus=self._workers or default_workers(),
            flag="--executor ray",
        )  # fmt: skip

    def invoke(
        self, pipeline: Pipeline, job: Job, extract: Extract, seed: int
    ) -> Future[InvocationResult]:
        write_atomic(job.input_path, job.text)
        # The key from the text as read back, exactly as the local backend computes it.
        rendered = job.input_path.read_text(encoding="utf-8")
        outer: Future[InvocationResult] = Future()
        hit = cached_result(pipeline, rendered, job.input_path, job.output_path, extract)
        if hit is not None:
            outer.set_result(hit)
            return outer
        ref = self._task("invoke").remote(
            replace(pipeline, cache_dir=None), job.name, rendered, extract, seed, os.getcwd()
        )
        self._refs.append(ref)

        def finish(inner: Future[tuple[InvocationResult, str | None]]) -> None:
            try:
                result, text = inner.result()
                if text is not None:
                    write_atomic(job.output_path, text)
                result.input_path, result.output_path = job.input_path, job.output_path
                if (
                    result.ok
                    and pipeline.cache_dir is not None
                    and pipeline.cacheable(result.parsed_output)
                ):
                    cache_store(pipeline.cache_dir, pipeline.cache_key(rendered), result)
                outer.set_result(result)
            except BaseException as exc:  # a lost worker, a task that could not be unpickled
                outer.set_exception(exc)

        ref.future().add_done_callback(finish)
        return outer

    def call(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        ref = self._task("call").remote(fn, *args)
        self._refs.append(ref)
        future: Future[T] = ref.future()
        return future

    def close(self, *, cancel: bool = False) -> None:
        if cancel:
            for ref in self._refs:
                self._ray.cancel(ref, force=True)
        if self._started:
            self._ray.shutdown()


def _call(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)
