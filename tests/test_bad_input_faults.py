"""Inputs that used to end in a traceback, a hang or "aborted": each is now exit 1 with the file
and what is wrong with it (or, for deep JSON that DuckDB reads, simply works)."""

from __future__ import annotations

import gzip
import os
import shlex
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calipers.cli.main import main

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error:"), err
    return err


def test_a_gz_that_is_not_gzip_or_is_cut_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "fake.jsonl.gz"
    fake.write_text('{"run": "a"}\n')
    assert main(["score", str(fake), "--scheme", "layered"]) == 1
    assert "fake.jsonl.gz: is named .gz but is not a whole gzip file" in _error(capsys)
    whole = gzip.compress((EXAMPLES / "layered.jsonl").read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    assert main(["import", str(cut), "--db", str(tmp_path / "s.duckdb")]) == 1  # not 130
    assert "cut short" in _error(capsys)
    store = tmp_path / "s.duckdb"
    if store.exists():  # nothing of the file was written
        assert main(["runs", "--db", str(store), "--json"]) == 0
        assert capsys.readouterr().out.strip() == "[]"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_not_waited_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    assert main(["score", str(fifo), "--scheme", "layered"]) == 1
    assert "pipe.jsonl: is not a regular file" in _error(capsys)


def test_a_parquet_epoch_beyond_32_bits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.parquet"
    epoch = pa.array([2**33], pa.int64())
    pq.write_table(pa.table({"run": ["a"], "task": ["t"], "sample_id": ["s"], "epoch": epoch,
                             "correct": [True]}), path)  # fmt: skip
    for argv in (["score", str(path), "--scheme", "metric", "--metric", "correct"],
                 ["import", str(path), "--db", str(tmp_path / "s.duckdb")]):  # fmt: skip
        assert main(argv) == 1
        assert "field 'epoch'" in _error(capsys)


def test_json_nested_a_thousand_deep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"run": "a", "task": "t", "sample_id": "s", "correct": true, "metadata": '
                    + "[" * 1000 + "]" * 1000 + "}\n")  # fmt: skip
    assert main(["import", str(path), "--db", str(tmp_path / "s.duckdb")]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_suite_files_that_are_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.txt").write_bytes(b"caf\xe9\n")
    (tmp_path / "more.jsonl").write_bytes(b'{"id": "x", "input": "caf\xe9"}\n')
    (tmp_path / "a.yaml").write_text("name: s\ntasks:\n  - id: t1\n    input_file: in.txt\n")
    (tmp_path / "b.yaml").write_text("name: s\ncases_file: more.jsonl\n")
    pipeline = f"{shlex.quote(sys.executable)} -c pass"
    assert main(["run", "a.yaml", "--pipeline", pipeline, "--run", "r"]) == 1
    assert "in.txt is not UTF-8 text (byte 0xe9" in _error(capsys)
    assert main(["run", "b.yaml", "--pipeline", pipeline, "--run", "r"]) == 1
    assert "the cases file is not UTF-8 text" in _error(capsys)


def test_a_db_that_is_not_duckdb_or_is_truncated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "not.duckdb").write_text("not a database")
    db = tmp_path / "s.duckdb"
    assert main(["import", str(EXAMPLES / "layered.jsonl"), "--db", str(db), "-q"]) == 0
    (tmp_path / "cut.duckdb").write_bytes(db.read_bytes()[:20000])
    for name in ("not.duckdb", "cut.duckdb"):
        for argv in (
            ["runs"],
            ["score", "--scheme", "layered"],
            ["export", str(tmp_path / "o.jsonl")],
        ):
            assert main([*argv, "--db", str(tmp_path / name)]) == 1
            assert name in _error(capsys)
