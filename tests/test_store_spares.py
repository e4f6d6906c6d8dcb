"""A store's in-memory database is kept for the next store once its last user has gone
(`calipers.data.duck.spare_database`, `give_back`): the file detached and released as closing
the database released it, and nothing of the last store (its file, its settings) seen by the
next."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from calipers.data import duck
from calipers.data.store import Store


def _sample(i: int) -> str:
    return json.dumps({"run": "m", "task": "t", "sample_id": str(i), "correct": i % 2 == 0})


def _store_with_samples(path: Path, data: Path) -> None:
    data.write_text("".join(_sample(i) + "\n" for i in range(5)))
    with Store(path) as store:
        store.import_files([data])


@pytest.fixture(autouse=True)
def _no_spares(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(duck, "_SPARES", [])


def test_a_closed_store_releases_its_file_and_leaves_its_database_spare(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    _store_with_samples(db, tmp_path / "a.jsonl")
    assert len(duck._SPARES) == 1
    assert not db.with_name("a.duckdb.wal").exists()  # checkpointed as it was detached
    # the file is free: DuckDB opens it for writing in this process, and in another one
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*) FROM samples").fetchone() == (5,)
    con.close()
    code = "import duckdb, sys; duckdb.connect(sys.argv[1]).execute('CHECKPOINT')"
    assert subprocess.run([sys.executable, "-c", code, str(db)], timeout=120).returncode == 0


def test_the_next_store_sees_nothing_of_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "one" / "a.duckdb", tmp_path / "two" / "b.duckdb"
    monkeypatch.setenv("CALIPERS_MEMORY_LIMIT", "123MB")
    _store_with_samples(first, tmp_path / "a.jsonl")
    spare = duck._SPARES[-1][1]
    monkeypatch.delenv("CALIPERS_MEMORY_LIMIT")
    with Store(second) as store:
        assert not duck._SPARES  # the spare one, used again
        databases = store.con.execute(
            "SELECT database_name, path FROM duckdb_databases() WHERE NOT internal"
        ).fetchall()
        assert sorted(databases, key=str) == sorted(
            [("memory", None), ("store", str(second.resolve()))], key=str
        )
        assert store.con.execute("SELECT count(*) FROM samples").fetchone() == (0,)
        settings = dict(
            store.con.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN "
                "('temp_directory', 'memory_limit', 'threads', 'preserve_insertion_order')"
            ).fetchall()
        )
        fresh = duck.connect()
        threads = fresh.execute("SELECT current_setting('threads')").fetchone()
        fresh.close()
    assert settings["temp_directory"] == str(second.resolve()) + ".tmp"
    assert settings["memory_limit"] == "572.2 MiB"  # 600MB, the default; 123MB was the last's
    assert (int(settings["threads"]),) == threads
    assert settings["preserve_insertion_order"] == "true"
    assert duck._SPARES[-1][1] is spare  # and given back again


def test_a_database_that_cannot_be_detached_is_closed_not_kept() -> None:
    con = duck.connect()
    con.close()
    duck.give_back(con, "store")  # a closed one: DETACH fails
    assert duck._SPARES == []


def test_at_most_a_few_are_kept(tmp_path: Path) -> None:
    stores = [Store(tmp_path / f"{n}.duckdb") for n in range(duck.SPARE_DATABASES + 2)]
    for store in stores:
        store.close()
    del stores
    assert len(duck._SPARES) == duck.SPARE_DATABASES
