"""calipers computes on one BLAS thread (calipers/blas.py): a report's digits do not depend on
how many threads the environment gives BLAS, and the user's own processes keep what they had."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calipers import blas, processes

CALIPERS = [sys.executable, "-m", "calipers"]


def _samples(path: Path, n: int) -> Path:
    # Scores in (0, 1) with many digits and 30,000 items a run: past OpenBLAS's threshold for
    # splitting a dot product across threads, so two threads would move the last bits.
    rng = np.random.default_rng(20261127)
    with path.open("w") as out:
        for run, shift in (("control", 0.0), ("treatment", 0.01)):
            scores = np.clip(rng.beta(2, 5, size=n) + shift, 0.0, 1.0)
            for i, score in enumerate(scores):
                row = {"run": run, "task": f"t{i % 7}", "sample_id": f"s{i}",
                       "scores": {"accuracy": float(score)}}  # fmt: skip
                out.write(json.dumps(row) + "\n")
    return path


def _compare(data: Path, out: Path, threads: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in blas.VARIABLES}
    if threads is not None:
        env["OPENBLAS_NUM_THREADS"] = threads
    subprocess.run(
        [*CALIPERS, "compare", str(data), "--scheme", "metric", "--metric", "accuracy",
         "--control", "control", "--treatment", "treatment", "--json", str(out),
         "--gate", "none", "-q"],
        env=env, check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return out.read_text()


def test_the_report_has_the_same_digits_whatever_blas_threads_the_environment_asks(
    tmp_path: Path,
) -> None:
    data = _samples(tmp_path / "s.jsonl", 30_000)
    one = _compare(data, tmp_path / "one.json", "1")
    two = _compare(data, tmp_path / "two.json", "2")
    default = _compare(data, tmp_path / "default.json", None)
    assert one == two == default
    assert json.loads(one)["variants"]["treatment"]["composite"]["mean"] > 0


def test_one_thread_is_set_in_the_loaded_blas() -> None:
    from threadpoolctl import threadpool_info

    blas.use_one_blas_thread()  # the test process has numpy loaded: threadpoolctl's path
    threads = {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
    assert threads == {1}
    assert all(os.environ[name] == "1" for name in blas.VARIABLES)


@pytest.mark.parametrize("before", [None, "6"])
def test_the_users_processes_get_the_environment_as_it_was(
    monkeypatch: pytest.MonkeyPatch, before: str | None
) -> None:
    monkeypatch.setattr(blas, "_original", {})
    for name in blas.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    if before is not None:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", before)
    blas.use_one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    code, out, _ = processes.run(
        [sys.executable, "-c", "import os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"],
        timeout=60,
    )
    assert code == 0 and out.strip() == str(before)
