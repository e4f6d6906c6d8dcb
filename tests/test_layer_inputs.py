"""The layered inputs summarised when samples are written (calipers.data.layer_inputs, migration
0010): a compare that reads them gives the same report, to the last bit, as one that computes
them from the nested lists; every write keeps them current; a store whose summaries are missing,
stale or of another version is computed from the nested lists, and its next write refreshes it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from calipers.api import compare
from calipers.api import open as open_samples
from calipers.data import layer_inputs
from calipers.data.store import Store
from calipers.errors import InputError
from calipers.running.judging import JudgeOptions, judge_store
from layered_data import assertions

RUNS = ("control", "treatment")


def _samples(seed: int = 0) -> list[dict[str, Any]]:
    """Every shape the layered inputs take: fact/behavior counts, weights ≠ 1 on some samples of
    one run, several judges with repeats (one of them missing from a run), an unnamed judge,
    scores on their own scales, failed judgments, rubric dimensions (not overall), human labels,
    epochs, groups and samples with nothing."""
    rng = np.random.default_rng(seed)
    rows = []
    for run in RUNS:
        for i in range(40):
            for epoch in range(1 + i % 2):
                items = assertions("fact", int(rng.integers(0, 4)), 3)
                items += assertions("behavior", int(rng.integers(0, 3)), 2)
                judged: list[dict[str, Any]] = [
                    {"judge": "judge-a", "score": float(rng.integers(1, 6)), "repeat": r}
                    for r in range(1 + i % 3)
                ]
                if run == "treatment" or i % 4:
                    judged.append({"judge": "judge-b", "score": float(rng.integers(0, 11)),
                                   "scale_min": 0.0, "scale_max": 10.0})  # fmt: skip
                if i % 5 == 0:
                    judged.append({"judge": None, "score": 3.0})
                if i % 7 == 0:
                    judged.append({"judge": "judge-a", "score": None, "error": "HTTP 500"})
                if i % 6 == 0:
                    judged.append({"judge": "judge-a", "dimension": "safety", "score": 1.0})
                rows.append({
                    "run": run, "task": f"t{i % 3}", "sample_id": f"s{i:02d}", "epoch": epoch,
                    "group": f"g{i // 5}", "output": f"answer {i}",
                    "assertions": None if i == 39 else items,
                    "judgments": None if i == 38 else judged,
                    "human": [{"dimension": None, "score": float(rng.integers(1, 6))}]
                    if i % 3 == 0 else None,
                })  # fmt: skip
    return rows


def _store(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    db = tmp_path / "store.duckdb"
    with Store(db) as store:
        store.import_rows(rows)
    return db


def _report(db: Path, **options: Any) -> dict[str, Any]:
    with open_samples(db=db) as samples:
        assert samples.whole_runs  # the store's samples: the summaries may be read
        result = compare(samples, "layered", baseline="control", candidates=["treatment"],
                         seed=7, n_resamples=2000, **options)  # fmt: skip
        return json.loads(json.dumps(result.to_dict(), default=str))


def _drop_summaries(db: Path) -> None:
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM layer_input_runs")
    con.close()


@pytest.mark.parametrize("standardize", [False, True])
def test_summaries_give_the_nested_lists_report_to_the_last_bit(
    tmp_path: Path, standardize: bool
) -> None:
    db = _store(tmp_path, _samples())
    with Store(db, read_only=True) as store:
        assert layer_inputs.current(store.con, list(RUNS)) is not None
    from_summaries = _report(db, standardize=standardize)
    _drop_summaries(db)
    with Store(db, read_only=True) as store:
        assert layer_inputs.current(store.con, list(RUNS)) is None
    from_lists = _report(db, standardize=standardize)
    assert from_summaries == from_lists
    assert set(from_lists["pairs"][0]["layers"]) == {"fact", "behavior", "judge"}
    # two named judges: their agreement is computed from the per-judge columns on both paths
    assert from_lists["variants"]["control"]["judge_krippendorff_alpha"] is not None


def test_weighted_assertions_take_the_weighted_path_on_both(tmp_path: Path) -> None:
    rows = _samples(1)
    for row in rows[:10]:
        row["assertions"] = assertions("fact", 1, 3, weight=2.5)
    db = _store(tmp_path, rows)
    from_summaries = _report(db)
    _drop_summaries(db)
    assert from_summaries == _report(db)


def test_rejudging_refreshes_the_summaries(tmp_path: Path) -> None:
    db = _store(tmp_path, _samples())
    before = _report(db)
    judge_file = tmp_path / "judge.py"
    judge_file.write_text("import sys\nsys.stdin.read()\nprint('{\"score\": 1}')\n")
    from calipers.grading.judges import CommandJudge
    from calipers.running.executor import ThreadBackend

    backend = ThreadBackend(4)
    judge = CommandJudge("judge-a", f"{sys.executable} {judge_file}")
    judge_store(db, JudgeOptions(judges=[judge]), backend, runs=["treatment"], progress=False)
    backend.close()
    after = _report(db)
    _drop_summaries(db)
    assert after == _report(db)  # current: the same as from the lists
    judge_mean = after["variants"]["treatment"]["components"]["judge"]["mean"]
    assert judge_mean != before["variants"]["treatment"]["components"]["judge"]["mean"]


def test_a_store_written_around_calipers_is_read_from_the_lists_and_refreshed_by_a_write(
    tmp_path: Path,
) -> None:
    db = _store(tmp_path, _samples())
    truth = _report(db)
    con = duckdb.connect(str(db))  # a row written by SQL of its own: the counts no longer match
    con.execute("INSERT INTO samples SELECT * REPLACE ('zz' AS sample_id) FROM samples LIMIT 1")
    con.close()
    with Store(db, read_only=True) as store:
        assert layer_inputs.stale_runs(store.con) == ["control"]
        assert layer_inputs.current(store.con, list(RUNS)) is None
    stale = _report(db)
    assert stale != truth  # the extra sample counts, read from the lists
    with Store(db) as store:  # any write refreshes every stale run
        store.import_rows([{"run": "other", "task": "t", "sample_id": "x", "scores": {"a": 1}}])
        assert layer_inputs.stale_runs(store.con) == []
    assert _report(db) == stale


def test_summaries_of_another_version_are_stale(tmp_path: Path) -> None:
    db = _store(tmp_path, _samples())
    con = duckdb.connect(str(db))
    con.execute("UPDATE layer_input_runs SET version = 'older'")
    con.close()
    with Store(db, read_only=True) as store:
        assert layer_inputs.stale_runs(store.con) == list(RUNS)
        assert layer_inputs.current(store.con, list(RUNS)) is None


def test_a_bad_input_is_reported_from_the_samples_on_the_summary_path(tmp_path: Path) -> None:
    rows = _samples()
    rows[3]["judgments"] = [{"judge": "judge-a", "score": 9.0}]
    db = _store(tmp_path, rows)
    with pytest.raises(InputError, match=r"judge score 9.0 is outside the default 1–5 scale"):
        _report(db)


def test_a_file_has_no_summaries_and_reads_the_lists(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _samples()))
    from_file = compare(path, "layered", baseline="control", candidates=["treatment"],
                        seed=7, n_resamples=2000)  # fmt: skip
    from_store = _report(_store(tmp_path, _samples()))
    body = json.loads(json.dumps(from_file.to_dict(), default=str))
    assert body["pairs"] == from_store["pairs"]
    assert body["variants"] == from_store["variants"]


def _path_taken(db: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from calipers.schemes.layered import scoring

    taken: list[str] = []
    same_keys, stage_rows = scoring._same_keys, scoring.stage_rows
    monkeypatch.setattr(scoring, "_same_keys",
                        lambda *a: taken.append("same keys") or same_keys(*a))  # fmt: skip
    monkeypatch.setattr(scoring, "stage_rows",
                        lambda *a, **k: taken.append("join") or stage_rows(*a, **k))  # fmt: skip
    _report(db)
    return taken


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (None, "same keys"),
        ("treatment lacks samples", "join"),
        ("groups", "join"),
    ],
)
def test_runs_with_other_keys_or_groups_join_and_agree_with_the_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str | None, path: str
) -> None:
    rows = _samples(2)
    if change == "treatment lacks samples":
        rows = [r for r in rows if not (r["run"] == "treatment" and r["sample_id"] < "s05")]
    if change != "groups":
        for row in rows:
            row.pop("group")
    db = _store(tmp_path, rows)
    assert _path_taken(db, monkeypatch) == [path]
    from_summaries = _report(db, cluster="group" if change == "groups" else "sample_id")
    _drop_summaries(db)
    assert from_summaries == _report(db, cluster="group" if change == "groups" else "sample_id")


def test_rows_out_of_order_are_sorted_on_the_same_keys_path(tmp_path: Path) -> None:
    rows = _samples(3)
    for row in rows:
        row.pop("group")
    db = _store(tmp_path, rows)
    truth = _report(db)
    con = duckdb.connect(str(db))  # the table rewritten in another order
    con.execute("CREATE TABLE shuffled AS SELECT * FROM layer_inputs ORDER BY random()")
    con.execute("DELETE FROM layer_inputs")
    con.execute("INSERT INTO layer_inputs SELECT * FROM shuffled")
    con.execute("DROP TABLE shuffled")
    con.close()
    assert _report(db) == truth
