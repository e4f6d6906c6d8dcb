"""Where a comparison's parts (the pairs, the runs' summaries, the flips) run side by side on
threads, and where one after another in the calling thread.

numpy lets go of the interpreter inside a long call only: over small runs its calls are too short
for threads to overlap, and a pool costs more than it gives — its threads started, and each part
passed between them. Over the calibration grid's comparisons (50–200 units) a pool per comparison
was 5–6% of the time in starting threads alone (py-spy, 2026-11-28). Every part draws from its own
seeded generator, so the figures do not depend on which way they ran (tests/test_threads.py)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# the mean rows per run from which a comparison or a set of summaries runs its parts on threads
# (100 runs × 10,000 samples on 2 cores, 2026-11-27: a leaderboard 0.67–0.88 s one after
# another, 1.17–1.40 s of CPU on 4 threads)
THREADED_RUN_ROWS = 100_000


class InOrder(Executor):
    """An executor that runs each call when it is submitted, in the calling thread."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # raised by .result(), as a pool's would be
            future.set_exception(exc)
        return future


def parts_runner(mean_rows: float, *, workers: int) -> Executor:
    """A pool of `workers` threads over large runs (`THREADED_RUN_ROWS`), else `InOrder`."""
    if mean_rows >= THREADED_RUN_ROWS and workers > 1:
        return ThreadPoolExecutor(max_workers=workers)
    return InOrder()
