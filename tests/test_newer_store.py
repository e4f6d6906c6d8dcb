"""A store from a newer calipers (issue 35, item 6): its `schema_migrations` has rows this calipers
does not know. It was written silently (`import` exit 0, `migrate` "already up to date"); now
every write is refused (exit 1: the store needs a newer calipers, which migration), and a read
only where the newer calipers declared its migrations readable by older ones."""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from calipers.cli.main import main
from calipers.data.migrations import MIGRATIONS, READABLE_SUFFIX
from calipers.data.store import Store, pending_migrations
from calipers.data.store_versions import NewerStoreError

SMALL = Path(__file__).parent / "fixtures" / "good" / "small.jsonl"
LAST = MIGRATIONS[-1][0]


def _newer_store(tmp_path: Path, migration: str) -> Path:
    db = tmp_path / "store.duckdb"
    assert main(["import", str(SMALL), "--db", str(db), "-q"]) == 0
    con = duckdb.connect(str(db))
    try:
        con.execute("INSERT INTO schema_migrations VALUES (?, ?)", [migration, datetime.now()])
    finally:
        con.close()
    return db


def _state(db: Path) -> tuple[str, list[tuple[str]]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT name FROM schema_migrations ORDER BY name").fetchall()
        samples = con.execute("SELECT run, task, sample_id, epoch FROM samples ORDER BY ALL")
        digest = hashlib.sha256(repr(samples.fetchall()).encode()).hexdigest()
    finally:
        con.close()
    return digest, rows


@pytest.mark.parametrize(
    "command",
    [["import", str(SMALL)], ["migrate"], ["migrate", "--check"],
     ["grade", "--judge", "command:true"]],
    ids=["import", "migrate", "migrate-check", "grade"],
)  # fmt: skip
@pytest.mark.parametrize("migration", ["0012_future", f"0012_future{READABLE_SUFFIX}"])
def test_a_newer_store_is_never_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], migration: str
) -> None:
    db = _newer_store(tmp_path, migration)
    before = _state(db)
    capsys.readouterr()
    assert main([*command, "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert f"the store {db} needs a newer calipers" in err
    assert "needs a newer calipers" in err and migration in err and LAST in err
    assert "Upgrade calipers" in err and "Traceback" not in err
    assert _state(db) == before


@pytest.mark.parametrize("command", [["runs"], ["score", "--scheme", "layered"], ["export", "-"]])
def test_a_newer_store_is_not_read_unless_its_migrations_say_it_can_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    db = _newer_store(tmp_path, "0012_future")
    capsys.readouterr()
    assert main([*command, "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "needs a newer calipers" in err and "0012_future" in err and "does not read it" in err


@pytest.mark.parametrize("command", [["runs"], ["score", "--scheme", "layered"], ["export", "-"]])
def test_a_store_whose_newer_migrations_are_readable_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    db = _newer_store(tmp_path, f"0012_future{READABLE_SUFFIX}")
    before = _state(db)
    quiet = [] if command[0] == "runs" else ["-q"]  # `runs` has no --quiet
    assert main([*command, "--db", str(db), *quiet]) == 0
    assert _state(db) == before


def test_the_library_says_which_migrations_and_whether_it_was_a_write(tmp_path: Path) -> None:
    db = _newer_store(tmp_path, "0013_b")
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO schema_migrations VALUES ('0012_a', now())")
    con.close()
    with pytest.raises(NewerStoreError) as raised:
        Store(db)
    assert raised.value.unknown == ["0012_a", "0013_b"] and raised.value.exit_code == 1
    assert "2 schema migrations" in raised.value.message
    with pytest.raises(NewerStoreError, match="does not know"):
        Store(db, read_only=True)
    with pytest.raises(NewerStoreError):
        pending_migrations(db)
