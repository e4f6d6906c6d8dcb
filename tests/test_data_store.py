"""The store and readers on good input: round trips, idempotent import, migrations, load()."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

import calipers
from calipers.cli.main import main
from calipers.data import migrations
from calipers.data.model import json_schema
from calipers.data.source import open_samples
from calipers.data.store import Store
from calipers.errors import DataError
from conftest import validate_schema

GOOD = Path(__file__).parent / "fixtures" / "good"


def rows(table: object) -> list[dict[str, object]]:
    out = sorted(table.to_pylist(), key=lambda r: (r["run"], r["task"], r["sample_id"], r["epoch"]))  # type: ignore[attr-defined]
    for r in out:
        r.pop("source", None)
        r.pop("imported_at", None)
        if isinstance(r.get("scores"), list):
            r["scores"] = dict(r["scores"])
        if r.get("decision") is not None:
            r["decision"] = json.loads(r["decision"])
        for a in r.get("assertions") or []:
            a["value"] = json.loads(a["value"]) if a["value"] is not None else None
    return out


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_round_trip_through_every_full_format(tmp_path: Path, fmt: str) -> None:
    with Store(tmp_path / "a.duckdb") as store:
        store.import_files([GOOD / "small.jsonl"])
        original = rows(store.samples().to_arrow())
        out = tmp_path / f"out.{fmt}"
        assert store.export(out) == 5
    with Store(tmp_path / "b.duckdb") as again:
        again.import_files([out])
        assert rows(again.samples().to_arrow()) == original
    assert original[0]["decision"] == {"label": "a", "n": 0}
    assert original[0]["judgments"][0]["red_flags"] == ["x"]


def test_csv_round_trip_keeps_flat_fields_and_scores(tmp_path: Path) -> None:
    with Store(tmp_path / "a.duckdb") as store:
        store.import_files([GOOD / "small.csv"])
        original = rows(store.samples().to_arrow())
        store.export(tmp_path / "out.csv")
    with Store(tmp_path / "b.duckdb") as again:
        again.import_files([tmp_path / "out.csv"])
        assert rows(again.samples().to_arrow()) == original
    assert original[0]["scores"] == {"acc": 1.0} and original[2]["scores"] == {}
    assert original[2]["epoch"] == 1 and original[2]["guess_chance"] is None


def test_reimport_replaces_instead_of_duplicating(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        first = store.import_files([GOOD / "small.jsonl"])
        second = store.import_files([GOOD / "small.jsonl"])
        assert (first.samples, first.replaced) == (5, 0)
        assert (second.samples, second.replaced) == (5, 5)
        assert store.count() == 5
        store.import_files([GOOD / "small.jsonl"], rename="other")
        assert [(r.run, r.samples) for r in store.runs()] == [("m", 5), ("other", 5)]


def test_migrations_are_recorded_once(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    Store(path).close()
    Store(path).close()
    con = duckdb.connect(str(path))
    names = [r[0] for r in con.execute("SELECT name FROM schema_migrations").fetchall()]
    assert names == [name for name, _ in migrations.MIGRATIONS]
    assert migrations.pending(con) == []
    con.close()


# A store made by an older calipers, upgrading, and read-only opens: tests/test_store_schema.py.


def test_load_gives_arrow_pandas_and_polars(tmp_path: Path) -> None:
    table = calipers.load(GOOD / "small.jsonl")
    assert table.num_rows == 5
    assert table.to_pandas()["sample_id"].tolist() == [f"s{i}" for i in range(5)]
    assert pl.from_arrow(table).height == 5  # type: ignore[union-attr]
    with Store(tmp_path / "s.duckdb") as store:
        store.import_files([GOOD / "small.csv"])
        assert calipers.load(store).num_rows == 3
    assert calipers.load(tmp_path / "s.duckdb").num_rows == 3


def test_unknown_fields_warn_and_never_crash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["import", str(GOOD / "unknown_field.jsonl"), "--db", str(tmp_path / "s.duckdb")])
    err = capsys.readouterr().err
    assert code == 0 and "unknown field" in err and "'mood' (line 1)" in err
    assert open_samples(GOOD / "unknown_field.jsonl").warnings


def test_run_override_fills_and_replaces(tmp_path: Path) -> None:
    no_run = tmp_path / "norun.jsonl"
    no_run.write_text('{"task": "t", "sample_id": 1, "correct": true}\n')
    assert open_samples(no_run, rename="given").runs() == ["given"]
    assert calipers.load(no_run, rename="given").column("sample_id").to_pylist() == ["1"]


def test_reading_an_empty_or_missing_store_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no store"):
        open_samples(None, db=tmp_path / "none.duckdb")
    Store(tmp_path / "empty.duckdb").close()
    with pytest.raises(DataError, match="holds no samples"):
        open_samples(None, db=tmp_path / "empty.duckdb")


def test_shipped_schema_is_generated_from_the_model(capsys: pytest.CaptureFixture[str]) -> None:
    shipped = Path(calipers.__file__).parent / "data" / "sample.schema.json"
    assert json.loads(shipped.read_text()) == json_schema()
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json_schema()


def test_schema_accepts_the_good_fixtures() -> None:
    pytest.importorskip("jsonschema")
    for line in (GOOD / "small.jsonl").read_text().splitlines():
        validate_schema(json.loads(line), json_schema())


def test_cli_runs_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(GOOD / "small.jsonl"), "--db", db]) == 0
    capsys.readouterr()
    assert main(["runs", "--json", "--db", db]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["run"] == "m" and listed[0]["samples"] == 5
    assert main(["export", str(tmp_path / "o.parquet"), "--db", db, "--run", "m"]) == 0
    assert main(["export", str(tmp_path / "o.parquet"), "--db", db, "--run", "zz"]) == 2
    assert not list(tmp_path.glob(".o.parquet.*"))  # no temp file left behind


def test_gzipped_json_lines(tmp_path: Path) -> None:
    import gzip

    packed = tmp_path / "small.jsonl.gz"
    packed.write_bytes(gzip.compress((GOOD / "small.jsonl").read_bytes()))
    assert calipers.load(packed).num_rows == 5


# ----------------------------------------------------------------------------- group

GROUPS = ["passage-1", "passage-1", 'passage "2", é', "7", None, None]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "csv"])
def test_group_round_trips_import_store_export(
    tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db, again, out = tmp_path / "a.duckdb", tmp_path / "b.duckdb", tmp_path / f"out.{fmt}"
    assert main(["import", str(GOOD / "grouped.jsonl"), "--db", str(db)]) == 0
    with Store(db, read_only=True) as store:
        assert store.samples().to_arrow().column("group").to_pylist() == GROUPS
        stored = store.con.execute('SELECT "group" FROM samples ORDER BY sample_id').fetchall()
        assert [g for (g,) in stored] == GROUPS
    assert main(["export", str(out), "--db", str(db)]) == 0
    if fmt == "jsonl":
        exported = [json.loads(line)["group"] for line in out.read_text().splitlines()]
        assert exported == GROUPS  # a string stays a string: "7", not 7
    assert main(["import", str(out), "--db", str(again)]) == 0
    capsys.readouterr()
    with Store(again, read_only=True) as store:
        assert rows(store.samples().to_arrow()) == rows(calipers.load(db))
    assert calipers.load(out).column("group").to_pylist() == GROUPS


def test_group_reads_from_a_file_a_frame_and_a_list() -> None:
    assert calipers.load(GOOD / "grouped.jsonl").column("group").to_pylist() == GROUPS
    frame = calipers.load(GOOD / "grouped.jsonl").to_pandas()
    with calipers.open(frame) as from_frame:
        assert from_frame.to_arrow().column("group").to_pylist() == GROUPS
    listed = [
        {"run": "m", "task": "t", "sample_id": f"s{i}", "group": g} for i, g in enumerate("aab")
    ]
    with calipers.open(listed) as from_list:
        assert from_list.to_arrow().column("group").to_pylist() == ["a", "a", "b"]


def test_the_schema_takes_group_as_a_string_or_null_only() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for line in (GOOD / "grouped.jsonl").read_text().splitlines():
        validate_schema(json.loads(line), json_schema())
    for bad in (7, 1.5, True, {"passage": 1}, ["a"]):
        with pytest.raises(jsonschema.ValidationError):
            validate_schema({"task": "t", "sample_id": "s", "group": bad}, json_schema())
