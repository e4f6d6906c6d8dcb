"""Where a comparison's parts run (calipers.verdicts.threads): side by side on threads over large
runs, one after another in the calling thread over small ones — and the same figures either way."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import calipers
from calipers.verdicts import threads
from calipers.verdicts.threads import InOrder, parts_runner
from conftest import MakeSamples
from layered_data import row


def test_in_order_runs_each_call_when_submitted_and_raises_at_result() -> None:
    ran: list[str] = []
    with InOrder() as pool:
        first = pool.submit(lambda: ran.append(threading.current_thread().name) or 1)
        assert ran == [threading.current_thread().name]  # already run, here
        failed = pool.submit(lambda: 1 / 0)  # kept for .result(), as a pool's future keeps it
        assert first.result() == 1
        with pytest.raises(ZeroDivisionError):
            failed.result()


def test_an_interrupt_is_not_kept_in_a_future() -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        InOrder().submit(interrupted)


def test_the_runner_is_a_pool_only_over_large_runs() -> None:
    assert isinstance(parts_runner(threads.THREADED_RUN_ROWS - 1, workers=4), InOrder)
    assert isinstance(parts_runner(threads.THREADED_RUN_ROWS, workers=1), InOrder)
    with parts_runner(threads.THREADED_RUN_ROWS, workers=2) as pool:
        assert not isinstance(pool, InOrder)


def _rows() -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    rows = []
    for run, lift in (("c", 0.0), ("t", 0.4), ("u", -0.2)):
        for i in range(40):
            for epoch in range(2):
                judge = float(np.clip(3.0 + lift + rng.normal(0, 0.8), 1, 5))
                fact = (int(rng.integers(2, 6)), 5)
                rows.append(row(run, i, fact=fact, judge=judge, epoch=epoch, task=f"k{i % 3}"))
    return rows


@pytest.mark.parametrize("interval", ["percentile", "auto"])
def test_a_comparison_is_the_same_on_threads_and_in_order(
    make_samples: MakeSamples, monkeypatch: pytest.MonkeyPatch, interval: str
) -> None:
    samples = make_samples(_rows())

    def report() -> str:
        result = calipers.compare(
            samples, "layered", baseline="c", candidates=["t", "u"], interval=interval,
            n_resamples=2000, seed=11,
        )  # fmt: skip
        return json.dumps(result.to_dict(), sort_keys=True, default=str)

    in_order = report()
    submitted: list[str] = []

    class Counted(ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            submitted.append(fn.__name__)
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(threads, "THREADED_RUN_ROWS", 0)  # every part on a thread
    monkeypatch.setattr(threads, "ThreadPoolExecutor", Counted)
    assert report() == in_order
    # the two pairs, the three runs' summaries and the two pairs' flips went to threads
    assert sorted(submitted) == sorted(["compare_pair"] * 2 + ["summarize_run"] * 3
                                       + ["pair_flips"] * 2)  # fmt: skip
