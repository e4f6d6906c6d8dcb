"""The store under concurrency: any number of readers at once, and a command that finds the store
held by another process's write waits for it (bounded by CALIPERS_LOCK_WAIT, with a message)
instead of failing at once."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from calipers.cli.main import main

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
CALIPERS = [str(Path(sys.executable).parent / "calipers")]  # the installed command


@pytest.fixture
def store(tmp_path: Path) -> Path:
    db = tmp_path / "s.duckdb"
    assert main(["import", str(EXAMPLES / "layered.jsonl"), "--db", str(db), "-q"]) == 0
    return db


def _hold_for_writing(db: Path, seconds: float) -> subprocess.Popen[bytes]:
    """Another process with the store open read-write for `seconds` (as an import is)."""
    code = (
        "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
        "c.execute('SELECT count(*) FROM samples').fetchall(); print('held', flush=True); "
        "time.sleep(float(sys.argv[2]))"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(db), str(seconds)],
                            stdout=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
    return proc


def test_ten_readers_at_once_all_succeed(store: Path) -> None:
    procs = [
        subprocess.Popen(
            [*CALIPERS, "runs", "--db", str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(10)
    ]
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    assert [code for code, _, _ in results] == [0] * 10, [err for _, _, err in results]
    assert all(b"prompt-v1" in out for _, out, _ in results)


def test_a_reader_waits_for_a_writer_in_another_process(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = _hold_for_writing(store, 1.5)
    start = time.monotonic()
    assert main(["runs", "--db", str(store)]) == 0
    waited = time.monotonic() - start
    holder.wait(timeout=30)
    out = capsys.readouterr()
    assert "waiting for the store" in out.err and "prompt-v1" in out.out
    assert waited > 0.5  # it waited rather than failing at once


def test_the_wait_is_bounded_and_the_error_says_why(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALIPERS_LOCK_WAIT", "0.3")
    holder = _hold_for_writing(store, 3.0)
    try:
        assert main(["runs", "--db", str(store)]) == 1
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert "lock" in err.lower() and "CALIPERS_LOCK_WAIT" in err and "Traceback" not in err
    monkeypatch.setenv("CALIPERS_LOCK_WAIT", "soon")
    assert main(["runs", "--db", str(store)]) == 1
    assert "CALIPERS_LOCK_WAIT='soon' is not a number" in capsys.readouterr().err
