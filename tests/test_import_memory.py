"""Reading a file that does not fit DuckDB's memory limit: the staging is retried on one thread,
and when that does not fit either, the error names the file, the limit and how to raise it;
nothing is left behind and the thread setting is restored."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from calipers.data.readers import stage_file
from calipers.errors import InputError


def _big_file(path: Path, n: int = 20_000) -> Path:
    rows = (
        {"run": "r", "task": f"t{i % 7}", "sample_id": f"s{i}", "output": "x" * 200,
         "assertions": [{"type": "contains", "passed": i % 2 == 0, "name": "a"}] * 3,
         "judgments": [{"judge": "j", "score": 1 + i % 5}] * 2}
        for i in range(n)
    )  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_out_of_memory_names_the_file_and_the_limit(tmp_path: Path) -> None:
    path = _big_file(tmp_path / "big.jsonl")
    con = duckdb.connect()
    con.execute("SET memory_limit = '8MB'")
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    with pytest.raises(InputError) as caught:
        stage_file(con, path, "staged")
    assert str(path) in str(caught.value) and "more memory than the limit" in str(caught.value)
    assert "CALIPERS_MEMORY_LIMIT" in (caught.value.hint or "")
    assert con.execute("SELECT current_setting('threads')").fetchall()[0][0] == threads
    assert not con.execute("SELECT * FROM duckdb_tables() WHERE table_name = 'staged'").fetchall()


def test_a_file_that_fits_only_on_one_thread_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _big_file(tmp_path / "big.jsonl", 2_000)
    con = duckdb.connect()
    con.execute("SET threads = 2")
    seen: list[int] = []
    real = duckdb.DuckDBPyConnection.execute

    class OnlyOneThread:  # the staging runs out of memory unless on one thread
        def __getattr__(self, name: str) -> object:
            return getattr(con, name)

        def execute(self, sql: str, *args: object) -> object:
            if sql.startswith("CREATE TEMP TABLE staged"):
                threads = real(con, "SELECT current_setting('threads')").fetchall()[0][0]
                seen.append(int(threads))
                if threads != 1:
                    raise duckdb.OutOfMemoryException("Out of Memory Error: simulated")
            return real(con, sql, *args)

    staged = stage_file(OnlyOneThread(), path, "staged")  # type: ignore[arg-type]
    assert staged.rows == 2_000 and seen == [2, 1]
    assert con.execute("SELECT current_setting('threads')").fetchall()[0][0] == 2  # restored


def test_a_line_longer_than_the_first_buffer_is_read_again_with_room_for_it(
    tmp_path: Path,
) -> None:
    # DuckDB's reader at its 16 MB object size takes lines up to ~32 MB; this one is 40 MB
    path = tmp_path / "long.jsonl"
    long = {"run": "r", "task": "t", "sample_id": "long", "output": "x" * (40 << 20)}
    path.write_text(json.dumps(long) + "\n" + json.dumps({**long, "sample_id": "s", "output": "y"}))
    con = duckdb.connect()
    staged = stage_file(con, path, "staged")
    lengths = con.execute("SELECT sample_id, length(output) FROM staged ORDER BY 1").fetchall()
    assert staged.rows == 2 and lengths == [("long", 40 << 20), ("s", 1)]
