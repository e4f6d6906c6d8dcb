"""The store's schema is frozen: literal migrations, checked against the model (drift), against a
store made by the first migration alone (upgrade), and never written by a read-only open."""

from __future__ import annotations

import ast
import gc
import hashlib
import importlib.util
import inspect
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import duckdb
import pytest

from calipers.cli.main import main
from calipers.data import migrations
from calipers.data import store as store_module
from calipers.data.model import FIELDS
from calipers.data.source import open_samples
from calipers.data.store import (
    OutdatedStoreError,
    Store,
    pending_migrations,
    upgrade_store,
)
from calipers.errors import DataError, InputError

FIXTURES = Path(__file__).parent / "fixtures"
STORE_FIXTURES = FIXTURES / "store"
V0001 = STORE_FIXTURES / "v0001.duckdb"
GOOD = FIXTURES / "good"
# columns of `samples` that are not sample fields: where a row came from, and its integer key
# (migration 0012, calipers.data.sample_keys)
BOOKKEEPING = {"source": "VARCHAR", "imported_at": "TIMESTAMP", "sample_key": "BIGINT"}
NAMES = [name for name, _ in migrations.MIGRATIONS]
AFTER_0001 = NAMES[1:]

# sha256 of each shipped migration's statements joined by "\n;\n". A shipped migration is never
# edited: a store that already ran it would not run it again. Add a migration (and a line here).
SHIPPED = {
    "0001_samples": "d7036cdfb0fc1e884e90fc6f88b421c6514db85c47d2a0a376b84902b350232b",
    "0002_imports_log": "1535e26c4c67ea0ec8d603998f40a14010ffd955938124ffa4584a50d00ab4cc",
    "0003_tools": "ab0293af0d9128a74ed239e02654a58e517af76fd4e4ad64c15e574affae4170",
    "0004_rubric_history": "23e55ba79d0f2b7cc951bbd575cb28d25a68bb4aeb159704107630367e2a0361",
    "0005_input_expected": "c19a454a60b204f63583746dfb1e38b424faa77f46ac8c4f699d9f699259c23f",
    "0006_group": "fb64f8780dc9b4989202ee7f5adcccc7a85c90f75225fcbfb22bf78459226c18",
    "0009_pairwise": "22d69ead3b24acd5ae8f31d3e53b095103b8b381208ea1a633001063096595de",
    "0010_layer_inputs": "d3a1dc2a0bfb1c7d05071441c52a7b5784450061f1f1e68e66cc395d738fdbc0",
    "0011_layer_input_keys": "513a265c5ec273ef77898f0b0578aab9a44b4e0e68afa1de442b8a478bee5cca",
    "0012_sample_keys+readable": "a3b3e723b7c7fe9a0b61172993914cc5779eb66687a3a929c239a43c2aa7a9da",
}


def columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    rows = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_catalog = current_database() AND table_schema = 'main' AND table_name = ? "
        "ORDER BY ordinal_position",
        [table],
    ).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def duckdb_spelling(types: dict[str, str]) -> dict[str, str]:
    """Each type as DuckDB writes it back (it quotes some struct field names, e.g. "name")."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (" + ", ".join(f'"{n}" {t}' for n, t in types.items()) + ")")
    spelled = dict(columns(con, "t"))
    con.close()
    return spelled


def schema(path: Path) -> dict[str, Any]:
    """Every table of the store file: its columns (name, type, nullable, default, in order), its
    constraints and DuckDB's own CREATE statement for it."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        out: dict[str, Any] = {}
        for (table,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "ORDER BY table_name"
        ).fetchall():
            out[table] = {
                "columns": con.execute(
                    "SELECT column_name, data_type, is_nullable, column_default "
                    "FROM information_schema.columns WHERE table_catalog = current_database() "
                    "AND table_name = ? ORDER BY ordinal_position",
                    [table],
                ).fetchall(),
                "constraints": sorted(
                    (str(r[0]), str(r[1]))
                    for r in con.execute(
                        "SELECT constraint_type, constraint_text FROM duckdb_constraints() "
                        "WHERE database_name = current_database() AND table_name = ?",
                        [table],
                    ).fetchall()
                ),
                "sql": con.execute(
                    "SELECT sql FROM duckdb_tables() WHERE database_name = current_database() "
                    "AND table_name = ?",
                    [table],
                ).fetchall(),
            }
        return out
    finally:
        con.close()


def fresh_store(tmp_path: Path) -> Path:
    path = tmp_path / "fresh" / "calipers.duckdb"
    Store(path).close()
    return path


def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "old" / "calipers.duckdb"
    path.parent.mkdir()
    shutil.copyfile(V0001, path)
    return path


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


# ----------------------------------------------------------------------------- frozen schema


def test_a_fresh_stores_samples_table_is_what_the_model_says(tmp_path: Path) -> None:
    con = duckdb.connect(str(fresh_store(tmp_path)), read_only=True)
    store = dict(columns(con, "samples"))
    con.close()
    model = duckdb_spelling({f.name: f.duckdb_type for f in FIELDS} | BOOKKEEPING)
    missing = sorted(set(model) - set(store))
    extra = sorted(set(store) - set(model))
    both = model.keys() & store.keys()
    retyped = [
        f"{n}: {store[n]} in the store, {model[n]} in the model"
        for n in sorted(both)
        if store[n] != model[n]
    ]
    assert store == model, (
        "the store's `samples` table and calipers.data.model.FIELDS disagree "
        f"(in the model, not the store: {missing}; in the store, not the model: {extra}; "
        f"different types: {retyped}). Changing the model needs a new migration in "
        "src/calipers/data/migrations.py (never edit a shipped one) and the field's `since`; "
        "see docs/store.md"
    )


def test_every_field_says_which_migration_added_it() -> None:
    con = duckdb.connect(str(V0001), read_only=True)
    in_first = sorted(n for n, _ in columns(con, "samples") if n not in BOOKKEEPING)
    con.close()
    assert in_first == sorted(f.name for f in FIELDS if f.since is None), (
        "the fields without `since` must be exactly the columns of the first migration; a field "
        "added later names its migration in `since`"
    )
    unknown = [f"{f.name}: {f.since}" for f in FIELDS if f.since not in (None, *NAMES)]
    assert not unknown, f"`since` names no migration: {unknown}"
    for f in FIELDS:
        if f.since is not None:
            sql = " ".join(dict(migrations.MIGRATIONS)[f.since])
            added = (f"ADD COLUMN {f.name} ", f'ADD COLUMN "{f.name}" ')  # `group`: a keyword
            assert any(a in sql for a in added), f"{f.since} does not add {f.name}"


def test_shipped_migrations_are_literal_and_unchanged() -> None:
    assert sorted(NAMES) == NAMES and len(set(NAMES)) == len(NAMES)
    changed = [
        name
        for name, statements in migrations.MIGRATIONS
        if name in SHIPPED
        and hashlib.sha256("\n;\n".join(statements).encode()).hexdigest() != SHIPPED[name]
    ]
    assert not changed, f"shipped migrations edited: {changed}; add a new migration instead"
    tree = ast.parse(inspect.getsource(migrations))
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not any(m and m.startswith("calipers") for m in imported), imported
    assert not any(isinstance(n, ast.JoinedStr) for n in ast.walk(tree)), (
        "no f-strings: literal SQL"
    )


def test_the_fixture_was_made_by_the_shipped_first_migration() -> None:
    spec = importlib.util.spec_from_file_location("make_v0001", STORE_FIXTURES / "make_v0001.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert dict(migrations.MIGRATIONS)["0001_samples"] == (script.SQL_0001,)
    con = duckdb.connect(str(V0001), read_only=True)
    assert migrations.applied(con) == ["0001_samples"]
    assert migrations.tables(con) == ["samples", "schema_migrations"]
    con.close()


def test_a_store_made_by_the_first_migration_upgrades_to_exactly_a_fresh_one(
    tmp_path: Path,
) -> None:
    old, fresh = old_store(tmp_path), fresh_store(tmp_path)
    before = duckdb.connect(str(old), read_only=True)
    rows_before = before.execute("SELECT * FROM samples ORDER BY sample_id").fetchall()
    before.close()
    assert pending_migrations(old) == AFTER_0001
    assert upgrade_store(old) == AFTER_0001
    assert schema(old) == schema(fresh)
    assert pending_migrations(old) == [] and upgrade_store(old) == []
    con = duckdb.connect(str(old), read_only=True)
    first = [n for n, _ in columns(con, "samples")][: len(rows_before[0])]
    kept = con.execute(f"SELECT {', '.join(first)} FROM samples ORDER BY sample_id").fetchall()
    added = con.execute(
        'SELECT count(tools), count(input), count(expected), count("group") FROM samples'
    )
    assert kept == rows_before and len(kept) == 2
    assert added.fetchall() == [(0, 0, 0, 0)]
    assert migrations.applied(con) == NAMES
    con.close()
    with Store(old) as store:  # and it is a working store
        store.import_files([GOOD / "small.jsonl"])
        assert store.count() == 7
        assert {r.run for r in store.runs()} == {"model-a", "m"}
        store.import_files([GOOD / "grouped.jsonl"])  # with the columns added since 0001
        groups = store.con.execute('SELECT count("group"), count(DISTINCT "group") FROM samples')
        assert groups.fetchall() == [(4, 3)]


# ----------------------------------------------------------------------------- read-only


def test_a_read_only_open_of_an_old_store_refuses_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = old_store(tmp_path)
    before = snapshot(old.parent)
    with pytest.raises(OutdatedStoreError) as raised:
        Store(old, read_only=True)
    error = raised.value
    assert isinstance(error, InputError) and error.pending == AFTER_0001
    assert "made by an older calipers" in error.message
    assert all(name in error.message for name in AFTER_0001)
    assert error.hint is not None
    assert f"`calipers migrate --db {old}`" in error.hint and "`calipers import`" in error.hint
    with pytest.raises(OutdatedStoreError):
        open_samples(None, db=old)
    assert pending_migrations(old) == AFTER_0001
    assert main(["runs", "--db", str(old)]) == 1
    assert "calipers migrate --db" in capsys.readouterr().err
    gc.collect()
    assert snapshot(old.parent) == before  # same files, same bytes, same mtimes: nothing written


def test_a_read_only_open_of_a_current_store_writes_nothing(tmp_path: Path) -> None:
    path = fresh_store(tmp_path)
    with Store(path) as store:
        store.import_files([GOOD / "small.jsonl"])
    before = snapshot(path.parent)
    with Store(path, read_only=True) as store:
        assert store.count() == 5 and [r.run for r in store.runs()] == ["m"]
        assert store.samples().count() == 5
        assert store.con.execute("SELECT DISTINCT task FROM rubric_history").fetchall() == []
        store.export(tmp_path / "out.jsonl")
    assert open_samples(None, db=path).count() == 5
    gc.collect()
    assert snapshot(path.parent) == before


def test_a_duckdb_file_that_is_not_a_store_is_a_clear_error(tmp_path: Path) -> None:
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE trades (id INTEGER)")
    con.close()
    before = snapshot(tmp_path)
    for opening in (
        lambda: Store(other, read_only=True),
        lambda: Store(other),
        lambda: pending_migrations(other),
        lambda: upgrade_store(other),
    ):
        with pytest.raises(InputError, match="not a calipers store: it has no schema_migrations"):
            opening()
    gc.collect()
    assert snapshot(tmp_path) == before  # nothing added to someone else's database

    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    with pytest.raises(InputError, match="empty DuckDB file, not a calipers store yet") as raised:
        Store(empty, read_only=True)
    assert raised.value.hint is not None and "calipers migrate --db" in raised.value.hint
    assert pending_migrations(empty) == NAMES
    assert upgrade_store(empty) == NAMES
    with Store(empty, read_only=True) as store:
        assert store.count() == 0


def test_upgrade_and_pending_need_a_store(tmp_path: Path) -> None:
    for call in (upgrade_store, pending_migrations):
        with pytest.raises(DataError, match="no store at"):
            call(tmp_path / "none.duckdb")
    assert not (tmp_path / "none.duckdb").exists()
    with pytest.raises(InputError, match="is a directory"):
        pending_migrations(tmp_path)


# ----------------------------------------------------------------------------- same process

# DuckDB < 1.5 neither guards a file against a second attach in one process nor lets calipers
# switch a read-only store to writable safely (a clear error there instead, tested below).
needs_guard = pytest.mark.skipif(
    not store_module._REATTACH_SAFE, reason="DuckDB < 1.5: no switching to writable in place"
)


@needs_guard
def test_a_writable_open_while_a_read_only_one_is_open(tmp_path: Path) -> None:
    path = fresh_store(tmp_path)
    with Store(path) as store:
        store.import_files([GOOD / "small.jsonl"])
    samples = open_samples(None, db=path)  # keeps its read-only store open
    assert samples.runs() == ["m"]
    with Store(path) as store:
        store.import_files([GOOD / "small.jsonl"], rename="other")
        assert store.count() == 10
    assert samples.runs() == ["m", "other"] and samples.count() == 10
    with Store(path) as store:  # and again, once the first writer is closed
        assert store.count() == 10
    assert samples.count() == 10
    del samples
    gc.collect()
    duckdb.connect(str(path)).close()  # every user gone: the file is released


def test_a_read_only_open_while_a_writable_one_is_open(tmp_path: Path) -> None:
    path = fresh_store(tmp_path)
    writer = Store(path)
    writer.import_files([GOOD / "small.jsonl"])
    reader = Store(path, read_only=True)
    assert reader.count() == 5
    with pytest.raises(InputError, match="read-only"):
        reader.import_files([GOOD / "small.jsonl"])
    with pytest.raises(InputError, match="read-only"):
        reader.update_column("human", [("m", "t", "s0", 0, None)])
    writer.import_files([GOOD / "small.jsonl"], rename="other")
    assert [r.run for r in reader.runs()] == ["m", "other"]
    writer.close()
    assert reader.count() == 10
    reader.close()
    duckdb.connect(str(path)).close()
    with Store(path, read_only=True) as reader, Store(path, read_only=True) as again:
        assert reader.count() == again.count() == 10
    duckdb.connect(str(path)).close()


@needs_guard
def test_an_unfinished_read_blocks_a_writer_with_a_clear_error(tmp_path: Path) -> None:
    path = fresh_store(tmp_path)
    with Store(path) as store:
        store.import_files([GOOD / "small.jsonl"])
    reader = Store(path, read_only=True)
    result = reader.con.execute("SELECT * FROM samples, range(10000)")  # not fetched yet
    with pytest.raises(InputError, match="in the middle of a query") as raised:
        Store(path)
    assert raised.value.hint is not None and "Fetch or close that result" in raised.value.hint
    assert len(result.fetchall()) == 50_000
    assert reader.count() == 5  # the reader is unharmed
    with Store(path) as store:  # and once its result is fetched, a writer opens
        store.import_files([GOOD / "small.jsonl"], rename="other")
    assert reader.count() == 10
    reader.close()


@needs_guard
def test_a_connection_calipers_did_not_make_is_a_clear_error(tmp_path: Path) -> None:
    path = fresh_store(tmp_path)
    outside = duckdb.connect(str(path))
    for read_only in (True, False):
        with pytest.raises(InputError, match="a DuckDB connection that calipers did not make"):
            Store(path, read_only=read_only)
    outside.close()
    Store(path, read_only=True).close()


def test_before_duckdb_1_5_a_writer_waits_for_the_readers_of_its_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fresh_store(tmp_path)
    monkeypatch.setattr(store_module, "_REATTACH_SAFE", False)
    reader = Store(path, read_only=True)
    with pytest.raises(InputError, match="while it is open read-only in this process") as raised:
        Store(path)
    assert raised.value.hint is not None and "DuckDB 1.5 or later" in raised.value.hint
    assert reader.count() == 0
    reader.close()
    with Store(path) as writer, Store(path, read_only=True) as reader:  # the other order works
        assert writer.count() == reader.count() == 0


# ----------------------------------------------------------------------------- two processes

HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from calipers.data.store import Store
    store = Store(sys.argv[1], read_only=True)
    print(store.count(), flush=True)
    flag = Path(sys.argv[2])
    deadline = time.monotonic() + 180
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    print(store.count(), flush=True)
    store.close()
    """
)


def test_two_processes_read_one_store_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writer below must give up while the readers still hold the store: a short wait, well
    # inside the readers' hold (under load the default 60 s outlasted it and the writer got in).
    monkeypatch.setenv("CALIPERS_LOCK_WAIT", "2")
    path = fresh_store(tmp_path)
    with Store(path) as store:
        store.import_files([GOOD / "small.jsonl"])
    flag = tmp_path / "done"
    holders = [
        subprocess.Popen(
            [sys.executable, "-c", HOLD, str(path), str(flag)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for holder in holders:  # each has the store open (read-only) once it printed the count
            assert holder.stdout is not None and holder.stdout.readline().strip() == "5"
        with Store(path, read_only=True) as store:  # and a third reader, in this process
            assert store.count() == 5
        with pytest.raises(InputError, match=r"cannot open the store .* for writing") as raised:
            Store(path)  # a writer waits for the readers: a clear error, not a raw DuckDB one
        assert raised.value.hint is not None and "another process" in raised.value.hint
    finally:
        flag.touch()
        ended = [holder.communicate(timeout=60) for holder in holders]
    for holder, (out, err) in zip(holders, ended, strict=True):
        assert holder.returncode == 0, err
        assert out.split() == ["5"]
    with Store(path) as store:  # the readers gone, it opens for writing
        assert store.count() == 5
