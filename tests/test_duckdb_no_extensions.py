"""DuckDB never installs or loads an extension for calipers (issue 35, item 4): every connection
is made with autoinstall and autoload off, and a `--db` file DuckDB could read only through an
extension (SQLite) — or not at all — is refused with the path and the cause, exit 1, and no
download attempt."""

from __future__ import annotations

import ast
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from calipers.data.duck import NO_EXTENSIONS, connect
from calipers.data.source import open_samples
from calipers.data.store import Store

SRC = Path(__file__).parent.parent / "src" / "calipers"
SMALL = Path(__file__).parent / "fixtures" / "good" / "small.jsonl"
SETTINGS = "SELECT current_setting('autoinstall_known_extensions'), " \
    "current_setting('autoload_known_extensions')"  # fmt: skip


def test_every_duckdb_connection_is_made_by_the_one_helper() -> None:
    """No `duckdb.connect(...)` in calipers outside calipers/data/duck.py (which sets both)."""
    offenders = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "connect" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "duckdb"
            ):  # fmt: skip
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert [o.split(":")[0] for o in offenders] == ["data/duck.py"], offenders
    assert NO_EXTENSIONS == {
        "autoinstall_known_extensions": False, "autoload_known_extensions": False
    }  # fmt: skip


def test_the_store_files_and_helper_connections_have_both_settings_off(tmp_path: Path) -> None:
    assert connect().execute(SETTINGS).fetchone() == (False, False)
    with Store(tmp_path / "s.duckdb") as store:
        store.import_files([SMALL])
        assert store.con.execute(SETTINGS).fetchone() == (False, False)
        assert store.samples().con.execute(SETTINGS).fetchone() == (False, False)
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.con.execute(SETTINGS).fetchone() == (False, False)
    samples = open_samples(SMALL)
    assert samples.con.execute(SETTINGS).fetchone() == (False, False)


def _sqlite(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE samples (run TEXT)")
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize(
    "command",
    [["runs"], ["import", str(SMALL)], ["migrate"], ["report", "--json", "-"],
     ["score", "--scheme", "layered"], ["export", "-"]],
    ids=lambda c: c[0],
)  # fmt: skip
def test_a_sqlite_file_as_db_is_a_clear_error_and_nothing_is_fetched(
    tmp_path: Path, command: list[str]
) -> None:
    db = _sqlite(tmp_path / "evals.sqlite")
    before = db.read_bytes()
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "NO_COLOR": "1",
           # were a download tried, it would go here and fail
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "calipers", *command, "--db", str(db)],
        env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"{db} is a SQLite database, not a DuckDB database file" in done.stderr
    assert "never installs or loads DuckDB extensions" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (home / ".duckdb").exists()  # no extension directory: nothing installed
    assert db.read_bytes() == before


@pytest.mark.parametrize(
    ("content", "kind"), [(b"", "an empty file"), (b"hello\n" * 100, "a file of another kind")]
)
def test_a_file_that_is_not_a_duckdb_database_is_refused(
    tmp_path: Path, content: bytes, kind: str
) -> None:
    db = tmp_path / "store.duckdb"
    db.write_bytes(content)
    for command in (["runs"], ["import", str(SMALL)]):
        result = subprocess.run(
            [sys.executable, "-m", "calipers", *command, "--db", str(db)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 1
        assert f"{db} is {kind}, not a DuckDB database file" in result.stderr
    assert db.read_bytes() == content
