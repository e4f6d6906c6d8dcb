"""A large judging at a high -j spread over worker processes (calipers.running.judge_processes):
the same judgments as the in-process loop, every reply cached by the process that got it before
the driver hears of it, a dead process's calls failed (missing, with an error), an interrupt
stopping the processes at once, and `python -m calipers grade` taking this path end to end.
Against a real HTTP server on 127.0.0.1 (tests/judge_server.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from calipers.grading.judge_cache import JudgeCache
from calipers.grading.judges import OpenAIJudge
from calipers.running import judge_processes
from calipers.running.executor import ThreadBackend
from calipers.running.judge_processes import ProcessJudgeCalls, processes_for
from calipers.running.judging import JudgeOptions, judge_requests
from judge_server import judge_server, numbered_requests

KEY = "sk-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", KEY)


_requests = numbered_requests


def _echo(body: dict[str, Any]) -> tuple[str, str]:
    n = int(body["messages"][0]["content"].split("answer number ")[1].split()[0])
    return ("answer", json.dumps({"score": n / 10_000}))


def _judge(url: str) -> OpenAIJudge:
    return OpenAIJudge("j", "m", base_url=url, api_key_env="JUDGE_KEY", timeout_s=10.0)


def test_how_many_processes() -> None:
    cores = os.cpu_count() or 1
    assert processes_for(128, judge_processes.MIN_CALLS - 1) == 1  # too few calls to pay a start
    assert processes_for(4, 100_000) == 1  # -j 4: one loop keeps up
    assert processes_for(8, 100_000) == min(cores, 2)
    assert processes_for(128, 100_000) == min(cores, 32)


def test_the_processes_give_the_in_process_judgments_and_cache_every_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judge_processes, "MIN_CALLS", 10)
    monkeypatch.setattr(judge_processes, "CALLS_PER_PROCESS", 2)
    monkeypatch.setattr(judge_processes.os, "cpu_count", lambda: 2)
    assert processes_for(4, 60) == 2
    with judge_server() as server:
        server.script = _echo
        options = JudgeOptions(judges=[_judge(server.url)], cache_dir=tmp_path / "cache")
        backend = ThreadBackend(4)
        try:
            spread = judge_requests(_requests(60), options, backend, progress=False)
            again = judge_requests(_requests(60), options, backend, progress=False)
        finally:
            backend.close()
        assert len(server.requests) == 60  # the second judging came from the cache
    assert [r[0]["score"] for r in spread] == [n / 10_000 for n in range(60)]
    assert again == spread
    cache = tmp_path / "cache"
    assert len(JudgeCache(cache).keys()) == 60
    assert len(list(cache.glob("replies-*.jsonl"))) == 2  # one segment per process


def test_a_process_that_dies_fails_its_calls_and_an_interrupt_stops_them_at_once(
    tmp_path: Path,
) -> None:
    with judge_server() as server:
        server.script = lambda body: ("hang", 30.0)
        judge = _judge(server.url)
        prompts = [r.prompt for r in _requests(6)]
        calls = ProcessJudgeCalls(2, 2, tmp_path / "cache")
        futures = calls.start([(judge, p, None) for p in prompts])
        deadline = time.monotonic() + 20
        while len(server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(server.requests) == 2  # one call in flight in each process
        calls._children[0].kill()  # a worker killed from outside
        dead = [futures[n].result(timeout=10) for n in (0, 2, 4)]  # the first process's share
        assert all(reply is None and "stopped before answering" in (error or "")
                   for reply, error in dead)  # fmt: skip
        start = time.monotonic()
        calls.close(wait=False)  # an interrupt: the other process is stopped, not waited for
        assert time.monotonic() - start < 5
        assert not any(futures[n].done() for n in (1, 3, 5))


def test_python_m_calipers_grade_judges_through_the_processes(tmp_path: Path) -> None:
    # enough samples for processes at -j 32: the spawned workers import calipers.__main__ (as
    # __mp_main__) and must not run the command line again
    n = judge_processes.MIN_CALLS
    lines = (json.dumps({"run": "r", "task": "t", "sample_id": f"s{i:05d}",
                         "input": f"answer number {i} please", "output": str(i)})
             for i in range(n))  # fmt: skip
    (tmp_path / "samples.jsonl").write_text("\n".join(lines) + "\n")
    calipers = [sys.executable, "-m", "calipers"]
    subprocess.run([*calipers, "import", "samples.jsonl", "-q"], cwd=tmp_path, check=True)
    with judge_server() as server:
        server.script = _echo
        done = subprocess.run(
            [*calipers, "grade", "--judge", f"openai:m@{server.url}", "--judge-key-env",
             "JUDGE_KEY", "--judge-kind", "objective", "-j", "32", "-q"],
            cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "JUDGE_KEY": KEY},
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert len(server.requests) == n
    con = duckdb.connect(str(tmp_path / ".calipers" / "calipers.duckdb"), read_only=True)
    rows = con.execute("SELECT sample_id, judgments[1].score FROM samples ORDER BY 1").fetchall()
    con.close()
    assert [score for _, score in rows] == [i / 10_000 for i in range(n)]
    segments = list((tmp_path / ".calipers" / "judge-cache").glob("replies-*.jsonl"))
    assert len(segments) == min(os.cpu_count() or 1, 2)


def test_a_process_whose_driver_is_gone_makes_no_more_calls(tmp_path: Path) -> None:
    with judge_server() as server:
        server.script = lambda body: ("hang", 0.05)  # then answers
        judge = _judge(server.url)
        calls = ProcessJudgeCalls(1, 1, None)
        calls.start([(judge, r.prompt, None) for r in _requests(400)])
        deadline = time.monotonic() + 20
        while len(server.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        calls._pipes[0].close()  # as when the driver is killed: its end of the pipe closes
        calls._children[0].join(timeout=20)
        assert not calls._children[0].is_alive()  # it stopped on its own
        made = len(server.requests)
        time.sleep(0.5)
        assert len(server.requests) == made < 20  # no call after the first report that failed
