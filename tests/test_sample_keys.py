"""The store's integer key per sample (migration 0012, `calipers.data.sample_keys`): written by
every import path and backfilled on old stores, stable across re-imports and runs, in string order
whatever the strings, and read by the staging and the flips with every report the same to the
byte as the staging on strings makes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from starlette.testclient import TestClient

import calipers
from calipers.cli.main import main
from calipers.data.sampleset import SampleSet
from calipers.data.source import open_samples
from calipers.data.store import Store
from calipers.schemes import get_scheme
from calipers.verdicts import flips
from calipers.verdicts.persample import stage_rows, staged_rows
from calipers.view import create_app

V0001 = Path(__file__).parent / "fixtures" / "store" / "v0001.duckdb"

# keys that sort in surprising ways, or break naive SQL, HTML or terminals
TASKS = ["t", "T", "tâche", "ta\u0301che", "任务", "a b", " ", "z" * 300, "emoji😀", "x\ty"]
IDS = ["0", "00", "1", "10", "9", "ß", "ss", "é", "e\u0301", " ", "  ", "\u200b", "s" * 5000,
       "a/b", "a\\b", "'; DROP TABLE samples; --", "<script>x</script>", "NULL", "Ω"]  # fmt: skip


def _rows(run: str, keep: float, seed: int) -> list[dict[str, Any]]:
    """Samples of `run` over the hostile keys (each kept with chance `keep`, so that runs have
    other sample sets), 1–3 epochs, text on some, an output shared by the runs on others."""
    rng = np.random.default_rng(seed)
    out = []
    for task in TASKS:
        for sid in IDS:
            if rng.random() > keep:
                continue
            for epoch in range(int(rng.integers(1, 4))):
                score = float(rng.random())
                out.append({
                    "run": run, "task": task, "sample_id": sid, "epoch": epoch,
                    "correct": score > 0.5, "scores": {"accuracy": round(score, 3)},
                    "output": "same" if rng.random() < 0.3 else f"{run} {score:.3f}",
                    "input": "q" * int(rng.integers(0, 40)),
                    "assertions": [{"name": "a", "type": "contains", "passed": score > 0.4}],
                    "judgments": [{"judge": "j", "score": 1 + 4 * score, "rationale": "r"}],
                })  # fmt: skip
    return out


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _keys(db: Path) -> dict[tuple[str, str], int]:
    with Store(db, read_only=True) as store:  # this process may hold the file already
        rows = store.con.execute("SELECT key, task, sample_id FROM sample_keys").fetchall()
    return {(t, s): k for k, t, s in rows}


def _check_keys(db: Path) -> None:
    """Every row keyed by its own (task, sample_id); the ranks are the strings' order."""
    with Store(db, read_only=True) as store:
        con = store.con
        assert con.execute("SELECT count(*) FROM samples WHERE sample_key IS NULL").fetchone() == (
            0,)  # fmt: skip
        wrong = con.execute(
            "SELECT count(*) FROM samples s JOIN sample_keys k ON s.sample_key = k.key "
            "WHERE s.task <> k.task OR s.sample_id <> k.sample_id"
        ).fetchone()
        assert wrong == (0,)
        ranked = con.execute(
            "SELECT key_order, task_order, (row_number() OVER (ORDER BY task, sample_id) - 1), "
            "(dense_rank() OVER (ORDER BY task) - 1) FROM sample_keys"
        ).fetchall()
        assert all(a == c and b == d for a, b, c, d in ranked)
        keys = con.execute(
            "SELECT count(*), count(DISTINCT key), count(DISTINCT (task, sample_id)) "
            "FROM sample_keys"
        ).fetchone()
        assert keys is not None and keys[0] == keys[1] == keys[2]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of three runs over the hostile keys, each with its own sample set."""
    tmp = tmp_path_factory.mktemp("keys")
    rows = _rows("base", 0.9, 1) + _rows("cand", 0.85, 2) + _rows("third", 0.7, 3)
    db = tmp / "store.duckdb"
    with Store(db) as store:
        store.import_files([_write(tmp / "runs.jsonl", rows)])
    return db


def _unkeyed(db: Path, tmp_path: Path) -> Path:
    """A copy of the store whose rows lost their keys, as rows written by other SQL have none:
    read, it is staged on the strings."""
    copy = tmp_path / "unkeyed" / "store.duckdb"
    copy.parent.mkdir()
    shutil.copyfile(db, copy)
    con = duckdb.connect(str(copy))
    con.execute("UPDATE samples SET sample_key = NULL")
    con.close()
    return copy


# ----------------------------------------------------------------------------- the keys


def test_an_old_store_gets_its_keys_from_the_migration(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    shutil.copyfile(V0001, db)
    with Store(db) as store:
        assert store.migrated[-1] == "0012_sample_keys+readable"
    _check_keys(db)
    assert len(_keys(db)) == 2


def test_every_import_path_writes_the_keys(tmp_path: Path, hostile: Path) -> None:
    _check_keys(hostile)  # the one-pass import (direct_import)
    rows = _rows("base", 0.9, 1)
    staged = tmp_path / "staged.duckdb"  # --run takes the staged import (Store._write)
    assert main(["import", str(_write(tmp_path / "b.jsonl", rows)), "--db", str(staged),
                 "--run", "base", "-q"]) == 0  # fmt: skip
    _check_keys(staged)
    ran = tmp_path / "rows.duckdb"  # `calipers run` and `check` write through import_rows
    with Store(ran) as store:
        store.import_rows(rows[:50])
    _check_keys(ran)


def test_keys_are_stable_across_reimports_and_runs(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    first = _rows("a", 0.5, 4)
    with Store(db) as store:
        store.import_files([_write(tmp_path / "a.jsonl", first)])
    before = _keys(db)
    with Store(db) as store:  # the same file again, a run with other samples, a replace by task
        store.import_files([_write(tmp_path / "a.jsonl", first)])
        store.import_files([_write(tmp_path / "b.jsonl", _rows("b", 0.8, 5))])
        store.import_files([_write(tmp_path / "c.jsonl", _rows("a", 0.9, 6))], replace_tasks=True)
    after = _keys(db)
    assert {k: after[k] for k in before} == before  # no key changed
    assert len(after) > len(before)  # and the new samples were numbered after them
    assert min(v for k, v in after.items() if k not in before) > max(before.values())
    _check_keys(db)


def test_rows_other_sql_wrote_are_keyed_by_the_next_write(tmp_path: Path, hostile: Path) -> None:
    db = _unkeyed(hostile, tmp_path)
    with Store(db, read_only=True) as store:
        staged = stage_rows(store.samples(), ["base", "cand"], {"v": "scores['accuracy']"})
        assert staged.store_keys is None
    with Store(db) as store:
        store.refresh_layer_inputs()
    _check_keys(db)
    assert _keys(db) == _keys(hostile)


def test_a_row_copied_with_its_key_is_never_read_by_it(tmp_path: Path, hostile: Path) -> None:
    """A row other SQL copied carries its original's key: the run's row count is no longer the
    one calipers wrote, so the staging reads the strings, and the next write keys the run again."""
    db = tmp_path / "copied.duckdb"
    shutil.copyfile(hostile, db)
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO samples SELECT * REPLACE ('copied' AS sample_id) FROM samples "
                "WHERE run = 'base' LIMIT 1")  # fmt: skip
    con.close()
    expressions = {"c": "correct::DOUBLE"}
    with Store(db, read_only=True) as store:
        samples = store.samples()
        staged = stage_rows(samples, ["base", "cand"], expressions)
        assert staged.store_keys is None  # the strings: the copy is a sample of its own
        strings = stage_rows(SampleSet(samples.con, samples.relation, samples.origin),
                             ["base", "cand"], expressions)  # fmt: skip
        assert np.array_equal(staged.columns["sid"], strings.columns["sid"])
    with Store(db) as store:
        store.import_rows([{"run": "other", "task": "t", "sample_id": "x", "correct": True}])
    _check_keys(db)
    with Store(db, read_only=True) as store:
        samples = store.samples()
        keyed = stage_rows(samples, ["base", "cand"], expressions)
        assert keyed.store_keys is not None
        assert np.array_equal(keyed.columns["sid"], strings.columns["sid"])


# ----------------------------------------------------------------------------- the same reports


@pytest.mark.parametrize("runs", [["base", "cand"], ["base", "cand", "third"], ["third", "base"]])
def test_staging_on_keys_is_the_staging_on_strings(hostile: Path, runs: list[str]) -> None:
    store = Store(hostile, read_only=True)
    samples = store.samples()
    expressions = {"v": "scores['accuracy']", "c": "correct::DOUBLE"}
    keyed = stage_rows(samples, runs, expressions)
    strings = stage_rows(SampleSet(samples.con, samples.relation, samples.origin), runs,
                         expressions)  # fmt: skip
    assert keyed.store_keys is not None and strings.store_keys is None
    assert list(keyed.columns) == list(strings.columns)
    for name, column in keyed.columns.items():
        other = strings.columns[name]
        same = np.array_equal(np.ma.filled(column, -1), np.ma.filled(other, -1), equal_nan=True)
        assert column.dtype == other.dtype and same, name
    assert keyed.spans == strings.spans and keyed.tasks == strings.tasks
    found, expected = keyed.load_keys(), strings.load_keys()
    assert found is not None and expected is not None
    assert all(np.array_equal(a, b) for a, b in zip(found, expected, strict=True))
    codes = [0, 3, 7, int(keyed.columns["sid"].max()), 10**9]
    assert keyed.sample_names(codes) == strings.sample_names(codes)
    store.close()


@pytest.mark.parametrize("runs", [["base", "cand"], ["third", "base", "cand"]])
def test_the_layered_stagings_names_by_key_are_its_names_by_string(
    hostile: Path, runs: list[str]
) -> None:
    """The layered scheme stages from its summaries' ranks, not `stage_rows`; its codes' store
    keys (`codes_keys`) must name each code as the strings do — hostile keys, other sample sets."""
    store = Store(hostile, read_only=True)
    scheme = get_scheme("layered")
    rows = staged_rows(scheme.stage(store.samples(), runs, scheme.options()))
    assert rows is not None and rows.store_keys is not None
    by_key = rows.load_keys()
    rows.store_keys, rows._keys = None, None  # the same rows, named by their strings
    by_string = rows.load_keys()
    assert by_key is not None and by_string is not None
    assert all(np.array_equal(a, b) for a, b in zip(by_key, by_string, strict=True))
    store.close()


def test_names_of_a_few_runs_in_a_store_of_many_keys(hostile: Path, tmp_path: Path) -> None:
    """The names read by key for runs that hold few of the store's keys (not the whole table)."""
    db = tmp_path / "many.duckdb"
    shutil.copyfile(hostile, db)
    many = [{"run": "many", "task": "t", "sample_id": f"m{i}", "epoch": 0, "correct": True}
            for i in range(5000)]  # fmt: skip
    with Store(db) as store:
        store.import_files([_write(tmp_path / "many.jsonl", many)])
    with Store(db, read_only=True) as store:
        samples = store.samples()
        n_keys = samples.con.execute("SELECT count(*) FROM sample_keys").fetchall()[0][0]
        n_rows = samples.con.execute(
            "SELECT count(*) FROM samples WHERE run IN ('base', 'cand')"
        ).fetchall()[0][0]
        assert n_keys > 4 * n_rows  # the ranks of the runs' keys alone (`sample_codes._ranks`)
        layered = get_scheme("layered")
        rows = staged_rows(layered.stage(samples, ["base", "cand"], layered.options()))
        assert rows is not None and rows.store_keys is not None
        by_key = rows.load_keys()
        rows.store_keys, rows._keys = None, None
        by_string = rows.load_keys()
        assert by_key is not None and by_string is not None
        assert all(np.array_equal(a, b) for a, b in zip(by_key, by_string, strict=True))
        keyed = stage_rows(samples, ["base", "cand"], {"c": "correct::DOUBLE"})
        strings = stage_rows(SampleSet(samples.con, samples.relation, samples.origin),
                             ["base", "cand"], {"c": "correct::DOUBLE"})  # fmt: skip
        assert keyed.store_keys is not None
        found, expected = keyed.load_keys(), strings.load_keys()
        assert found is not None and expected is not None
        assert all(np.array_equal(a, b) for a, b in zip(found, expected, strict=True))
        assert np.array_equal(keyed.columns["sid"], strings.columns["sid"])


def _reports(db: Path, tmp_path: Path, name: str) -> dict[str, str]:
    out = {}
    for scheme, extra in (("metric", ["--metric", "accuracy"]), ("layered", [])):
        for candidates in (["cand"], ["cand", "third"]):
            tag = f"{scheme}-{len(candidates)}"
            json_path, md = tmp_path / f"{name}-{tag}.json", tmp_path / f"{name}-{tag}.md"
            chosen = [a for c in candidates for a in ("--candidate", c)]
            outputs = ["--json", str(json_path), "--markdown", str(md), "-q", "--flips", "40"]
            args = ["compare", "--db", str(db), "--scheme", scheme, *extra, "--baseline", "base",
                    *chosen, "--gate", "none", *outputs]  # fmt: skip
            assert main(args) == 0
            out[f"{tag}.json"] = json_path.read_text()
            out[f"{tag}.md"] = md.read_text()
    return out


def test_compare_reports_are_the_same_to_the_byte(
    hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unkeyed = _unkeyed(hostile, tmp_path)
    keyed_reports = _reports(hostile, tmp_path, "keyed")
    string_reports = _reports(unkeyed, tmp_path, "strings")
    for name, text in keyed_reports.items():
        assert text.replace(str(hostile), "DB") == string_reports[name].replace(
            str(unkeyed), "DB"), name  # fmt: skip
    capsys.readouterr()


def test_flips_and_their_frames_are_the_same(
    hostile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unkeyed = _unkeyed(hostile, tmp_path)
    joined: list[bool] = []
    keyed_facts = flips._keyed_facts

    def spy(*args: Any) -> Any:
        joined.append(True)
        return keyed_facts(*args)

    monkeypatch.setattr(flips, "_keyed_facts", spy)
    found = []
    for db in (hostile, unkeyed):
        result = calipers.compare(open_samples(None, db=db), "metric", baseline="base",
                                  candidates=["cand"], metric="accuracy", flips=100)  # fmt: skip
        frame = result.to_frame("sample")
        found.append((json.dumps(result.to_dict()["flips"], sort_keys=True),
                      frame.to_json(orient="records")))  # fmt: skip
    assert found[0] == found[1]
    assert joined == [True]  # the facts joined on the keys once: the keyed store's


def test_the_viewers_pages_and_twins_are_the_same(hostile: Path, tmp_path: Path) -> None:
    unkeyed = _unkeyed(hostile, tmp_path)
    pair = {"baseline": "base", "candidate": "cand"}
    asks = [
        ("/compare.json", {**pair, "scheme": "metric", "metric": "accuracy"}),
        ("/compare.json", pair),
        ("/flips.json", {**pair, "scheme": "metric", "metric": "accuracy"}),
        ("/flips.json", {**pair, "kind": "regressions"}),
        ("/flips.json", {**pair, "kind": "improvements", "task": "任务"}),
        ("/flips", {**pair, "scheme": "metric", "metric": "accuracy", "page": "2"}),
        ("/sample.json", {"run": "base", "other": "cand", "task": " ", "id": "\u200b"}),
    ]
    bodies = []
    for db in (hostile, unkeyed):
        with TestClient(create_app(db), base_url="http://127.0.0.1") as client:
            responses = [client.get(path, params=params) for path, params in asks]
            assert [r.status_code for r in responses] == [200] * len(asks)
            bodies.append([r.text.replace(str(db), "DB") for r in responses])
    for (path, _), a, b in zip(asks, *bodies, strict=True):
        assert a == b, path
