"""Fault injection on real processes: `calipers grade --judge` killed with SIGKILL at ten points
while judging (the re-run repeats at most the calls that were in flight, and ends equal to an
uninterrupted run), SIGINT and SIGTERM while judging and while the pipeline runs (exit 130 within
seconds, what finished is stored, no child left behind), and kill -9 of the driver during the
pipeline phase (its children die with it)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from calipers.grading.judge_cache import JudgeCache
from judge_server import JudgeServer, judge_server

CALIPERS = [sys.executable, "-m", "calipers"]
SAMPLES = 24
WORKERS = 4


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of SAMPLES unjudged samples, imported once by `calipers import`; each test judges
    its own copy of it (_store)."""
    tmp = tmp_path_factory.mktemp("imported")
    data = tmp / "samples.jsonl"
    data.write_text(
        "".join(
            json.dumps({"run": "r", "task": "t", "sample_id": f"s{i:02d}", "output": f"answer {i}"})
            + "\n"
            for i in range(SAMPLES)
        )
    )
    db = tmp / "store.duckdb"
    subprocess.run([*CALIPERS, "import", str(data), "--db", str(db), "-q"], check=True)
    assert not db.with_name(db.name + ".wal").exists()  # all in the one file that is copied
    return db


def _store(tmp_path: Path, imported: Path) -> Path:
    db = tmp_path / "store.duckdb"
    shutil.copyfile(imported, db)
    return db


def _score_of(body: dict[str, Any]) -> str:
    """A deterministic score from the prompt: the same sample always gets the same judgment."""
    prompt = json.dumps(body.get("messages"))
    score = 1 + int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 5
    return json.dumps({"score": score, "rationale": "r"})


def _prompt(request: dict[str, Any]) -> str:
    return json.dumps(request["body"].get("messages"))


def _grade(db: Path, server: JudgeServer, cwd: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CALIPERS, "grade", "--judge", f"openai:m@{server.url}", "--judge-key-env", "FAKE_KEY",
         "--db", str(db), "-j", str(WORKERS), "-q", *extra],
        cwd=cwd, env={**os.environ, "FAKE_KEY": "sk-test"}, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _judgments(db: Path) -> dict[str, list[Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT sample_id, judgments FROM samples ORDER BY sample_id").fetchall()
    finally:
        con.close()
    return {sid: [(j["judge"], j["score"]) for j in (js or [])] for sid, js in rows}


def _answer_then(server: JudgeServer, after: int, act: Any, delay: float = 0.02) -> None:
    """Answer every call (after `delay`), and call `act()` once `after` answers have been sent."""
    sent = [0]

    def script(body: dict[str, Any]) -> tuple[str, Any]:
        time.sleep(delay)
        with server.lock:
            sent[0] += 1
            n = sent[0]
        if n == after + 1:
            act()
        return ("answer", _score_of(body))

    server.script = script


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, imported: Path) -> dict[str, list[Any]]:
    """An uninterrupted judging of the store: what every interrupted one must end as."""
    tmp = tmp_path_factory.mktemp("reference")
    db = _store(tmp, imported)
    with judge_server() as server:
        server.script = lambda body: ("answer", _score_of(body))
        proc = _grade(db, server, tmp)
        assert proc.wait(120) == 0, proc.stderr.read() if proc.stderr else ""
    judged = _judgments(db)
    assert all(len(v) == 1 for v in judged.values())
    return judged


_EXTENDED_SIGTERM = pytest.param(signal.SIGTERM, marks=pytest.mark.extended)


@pytest.mark.parametrize(
    "kill_after",
    [0, *(pytest.param(k, marks=pytest.mark.extended) for k in (2, 5, 7, 10, 12, 15, 17, 20, 22))],
)  # the other moments: make test-all
def test_kill_9_while_judging_repeats_only_calls_in_flight(
    tmp_path: Path, imported: Path, reference: dict[str, list[Any]], kill_after: int
) -> None:
    db = _store(tmp_path, imported)
    with judge_server() as server:
        holder: dict[str, subprocess.Popen[str]] = {}
        # killed while answering call kill_after + 1: that call and the others in flight are lost
        _answer_then(server, kill_after, lambda: os.kill(holder["proc"].pid, signal.SIGKILL))
        holder["proc"] = _grade(db, server, tmp_path)
        assert holder["proc"].wait(60) == -signal.SIGKILL
        first = {_prompt(r) for r in server.requests}
        answered_before_kill = kill_after
        server.requests.clear()
        server.script = lambda body: ("answer", _score_of(body))
        rerun = _grade(db, server, tmp_path)
        assert rerun.wait(120) == 0, rerun.stderr.read() if rerun.stderr else ""
        second = [_prompt(r) for r in server.requests]
    repeated = first & set(second)
    # the calls of the killed run that were not answered and cached: the ones in flight
    assert len(repeated) <= WORKERS, (kill_after, len(repeated))
    assert len(second) <= SAMPLES - answered_before_kill + WORKERS
    assert len(second) == len(set(second))  # nothing asked twice in one run
    assert _judgments(db) == reference  # ends as an uninterrupted run


# SIGTERM: make test-all (the same path as SIGINT after the handler)
@pytest.mark.parametrize("sig", [signal.SIGINT, _EXTENDED_SIGTERM])
def test_interrupt_while_judging_exits_fast_and_keeps_finished(
    tmp_path: Path, imported: Path, sig: signal.Signals
) -> None:
    db = _store(tmp_path, imported)
    with judge_server() as server:
        holder: dict[str, subprocess.Popen[str]] = {}
        at: list[float] = []
        answered = 10

        def script(body: dict[str, Any]) -> tuple[str, Any]:
            with server.lock:
                n = len(server.requests)
            if n > answered:  # the rest hang: an endpoint that stopped answering
                if n == answered + WORKERS:
                    at.append(time.monotonic())
                    holder["proc"].send_signal(sig)
                return ("hang", 30.0)
            return ("answer", _score_of(body))

        server.script = script
        holder["proc"] = _grade(db, server, tmp_path)
        code = holder["proc"].wait(30)
        elapsed = time.monotonic() - at[0]
        err = holder["proc"].stderr.read() if holder["proc"].stderr else ""
    assert code == 130, err
    assert elapsed < 5.0
    assert "interrupted" in err and "Traceback" not in err
    judged = {sid: v for sid, v in _judgments(db).items() if v}
    assert len(judged) == answered  # every finished judgment stored, nothing else
    assert len(JudgeCache(tmp_path / ".calipers" / "judge-cache").keys()) >= answered


SLOW_PIPELINE = """
import os, sys, time
text = open(sys.argv[1]).read()
open(os.path.join(sys.argv[3], str(os.getpid())), "w").close()
if text not in ("one", "two"):
    time.sleep(120)
open(sys.argv[2], "w").write('{"output": "done"}')
"""


def _slow_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    (tmp_path / "suite.yaml").write_text(
        "tasks:\n" + "".join(f"  - {{id: t{i}, input: {w}}}\n" for i, w in
                             enumerate(["one", "two", "three", "four", "five", "six"]))
    )  # fmt: skip
    (tmp_path / "pipe.py").write_text(SLOW_PIPELINE)
    pids = tmp_path / "pids"
    pids.mkdir()
    command = f"{shlex.quote(sys.executable)} pipe.py {{input}} {{output}} {shlex.quote(str(pids))}"
    proc = subprocess.Popen(
        [*CALIPERS, "run", "suite.yaml", "--pipeline", command, "--run", "r", "--db", "s.duckdb",
         "-j", "3", "-q"],
        cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    return proc, pids


def _wait_for(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead: its parent (the reaper or init) has not collected it yet
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


# SIGTERM: make test-all (the same path as SIGINT after the handler)
@pytest.mark.parametrize("sig", [signal.SIGINT, _EXTENDED_SIGTERM])
def test_interrupt_in_the_pipeline_phase(tmp_path: Path, sig: signal.Signals) -> None:
    proc, pids = _slow_run(tmp_path)
    # two fast tasks finish; three slow ones run (-j 3), one waits in the queue
    _wait_for(lambda: len(list(pids.iterdir())) >= 5)
    time.sleep(0.3)
    started = time.monotonic()
    proc.send_signal(sig)
    code = proc.wait(30)
    elapsed = time.monotonic() - started
    err = proc.stderr.read() if proc.stderr else ""
    assert code == 130, err
    assert elapsed < 5.0
    assert "2 of 6 samples had finished" in err
    children = [int(p.name) for p in pids.iterdir()]
    _wait_for(lambda: not any(_alive(pid) for pid in children), timeout=5)
    con = duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True)
    stored = con.execute("SELECT task, output, error FROM samples ORDER BY task").fetchall()
    con.close()
    assert stored == [("t0", "done", None), ("t1", "done", None)]


def test_pipeline_children_die_with_a_killed_driver(tmp_path: Path) -> None:
    proc, pids = _slow_run(tmp_path)
    _wait_for(lambda: len(list(pids.iterdir())) >= 5)
    slow = [int(p.name) for p in pids.iterdir()]
    assert any(_alive(pid) for pid in slow)
    proc.kill()
    proc.wait(10)
    _wait_for(lambda: not any(_alive(pid) for pid in slow), timeout=5)


def test_a_command_judge_is_killed_on_interrupt(tmp_path: Path, imported: Path) -> None:
    """A command judge that hangs does not hold Ctrl-C for its timeout."""
    db = _store(tmp_path, imported)
    judge = tmp_path / "judge.py"
    marker = tmp_path / "started"
    judge.write_text(
        f"import time, pathlib\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [*CALIPERS, "grade", "--judge", f"command:{sys.executable} {judge}", "--db", str(db), "-q"],
        cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    _wait_for(marker.exists)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 130
    assert time.monotonic() - started < 5.0


def test_stopping_state_does_not_outlive_an_interrupt() -> None:
    """`processes` keeps no stopping state after a command returns (tests call main() in turn)."""
    from calipers import processes

    processes.stop_all()
    assert processes.stopping()
    processes.resume()
    code, out, _ = processes.run([sys.executable, "-c", "print('ok')"], timeout=10)
    assert (code, out.strip()) == (0, "ok")
    assert threading.active_count() >= 1


def test_interrupting_check_stops_its_pipelines(tmp_path: Path) -> None:
    cases = Path(__file__).parent / "fixtures" / "kelvin" / "cases"
    shutil.copytree(cases, tmp_path / "cases")
    (tmp_path / "slow.py").write_text(
        "import json, os, sys, time\n"
        f"open(os.path.join({str(tmp_path)!r}, 'pid-' + str(os.getpid())), 'w').close()\n"
        "time.sleep(60)\n"
    )
    (tmp_path / "kelvin.yaml").write_text(
        f'run: "{sys.executable} slow.py {{input}} {{output}}"\ncases: cases\n'
        "decision_field: stage_assessment\ngoverning_types: [gate_rule]\nseed: 0\ntimeout_s: 90\n"
    )
    proc = subprocess.Popen(
        [*CALIPERS, "check", "--config", "kelvin.yaml", "--db", "s.duckdb", "-q", "-j", "2"],
        cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    _wait_for(lambda: len(list(tmp_path.glob("pid-*"))) >= 2)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 130
    assert time.monotonic() - started < 5.0
    assert "check stopped" in (proc.stderr.read() if proc.stderr else "")
    pids = [int(p.name[4:]) for p in tmp_path.glob("pid-*")]
    _wait_for(lambda: not any(_alive(pid) for pid in pids), timeout=5)
