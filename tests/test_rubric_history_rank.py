"""Rubric history in the store (rolling 10, 2 SD flags, computed here by hand) and ranking with the
seed's nine tie-break levels."""

from __future__ import annotations

import statistics
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from calipers.schemes.rubric.definition import DIMENSIONS
from calipers.schemes.rubric.history import record_history
from calipers.schemes.rubric.rank import TIE_BREAKS, rank, rank_task
from rubric_data import evaluation


def scored(correctness: str, sample_id: str, task: str = "skill"):  # type: ignore[no-untyped-def]
    dims = {**dict.fromkeys(DIMENSIONS, "7"), "correctness": correctness}
    return evaluation(dims, key=("r", task, sample_id, 0))


def test_history_flags_a_dimension_beyond_two_sd(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    earlier = ["7", "8", "9"]  # mean 8, sample SD 1
    for i, value in enumerate(earlier):
        record_history(db, [scored(value, f"s{i}")], rubric_sha256="x")
    far, near = scored("10.5", "s_far"), scored("9.9", "s_near")
    record_history(db, [far], rubric_sha256="x")
    (flag,) = far.history_flags
    sd = statistics.stdev([7.0, 8.0, 9.0])
    assert (flag.dimension, flag.mean, flag.sd, flag.n_history) == ("correctness", 8.0, sd, 3)
    assert flag.deviation_sd == pytest.approx(2.5 / sd)
    # s_far is now history too: [7, 8, 9, 10.5] → mean 8.625, SD 1.4930; 9.9 is within 2 SD.
    record_history(db, [near], rubric_sha256="x")
    assert near.history_flags == []


def test_history_needs_two_earlier_evaluations_and_uses_the_last_ten(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    first = scored("7", "s00")
    record_history(db, [first], rubric_sha256="x")
    second = scored("10", "s01")
    record_history(db, [second], rubric_sha256="x")
    assert first.history_flags == [] and second.history_flags == []  # 0 and 1 earlier
    # Two far-off evaluations, then ten at 5 and 6: the window no longer sees the first ones.
    batch = [scored("1", "s02"), scored("1", "s03")]
    batch += [scored("5" if i % 2 else "6", f"s{i + 10:02d}") for i in range(10)]
    current = scored("6.7", "s99")
    record_history(db, [*batch, current], rubric_sha256="x")  # recorded in key order
    window = [6.0 if i % 2 else 5.0 for i in range(10)]  # s10…s19 in key order
    (flag,) = current.history_flags
    assert flag.n_history == 10
    assert flag.mean == pytest.approx(statistics.mean(window))
    assert flag.sd == pytest.approx(statistics.stdev(window))  # 0.527: 6.7 is 2.28 SD away
    everything = [7.0, 10.0, 1.0, 1.0, *window]  # over all history it would be within 2 SD
    assert abs(6.7 - statistics.mean(everything)) < 2 * statistics.stdev(everything)


def test_rescoring_keeps_the_place_in_history(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    evaluations = [scored(v, f"s{i}") for i, v in enumerate(["7", "8", "9"])]
    assert record_history(db, evaluations, rubric_sha256="x") == 3
    assert record_history(db, evaluations, rubric_sha256="x") == 0
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT sample_id, seq FROM rubric_history ORDER BY seq").fetchall()
    con.close()
    assert rows == [("s0", 1), ("s1", 2), ("s2", 3)]


def test_history_is_per_task(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    record_history(db, [scored("2", "a", "x"), scored("2", "b", "x")], rubric_sha256="x")
    current = scored("9", "c", "y")
    record_history(db, [current], rubric_sha256="x")
    assert current.history_flags == []


def _pair_tied_at(level: str):  # type: ignore[no-untyped-def]
    """Two evaluations with the same final score that first differ at `level`."""
    if level in DIMENSIONS:
        better = {**dict.fromkeys(DIMENSIONS, "8"), level: "8.01"}  # + ≤ 0.0025: same composite
        return evaluation(better, key=("a", "t", "s", 0)), evaluation("8", key=("b", "t", "s", 0))
    if level == "red_flags":  # both floor at 1.00
        return (
            evaluation("1.5", red_flags=1, key=("a", "t", "s", 0)),
            evaluation("1.5", red_flags=2, key=("b", "t", "s", 0)),
        )
    return (  # bonuses: both reach the 10.00 ceiling
        evaluation("9.8", bonuses=2, key=("a", "t", "s", 0)),
        evaluation("9.8", bonuses=1, key=("b", "t", "s", 0)),
    )


@pytest.mark.parametrize("level", [level for level, _ in TIE_BREAKS])
def test_a_tie_is_broken_at_each_of_the_nine_levels(level: str) -> None:
    better, worse = _pair_tied_at(level)
    assert better.final == worse.final
    entries = rank_task([worse, better])
    assert [e.evaluation.run for e in entries] == ["a", "b"]
    assert [e.position for e in entries] == [1, 2]
    assert entries[1].tie_break == level


def test_the_tie_break_order_is_the_seeds() -> None:
    assert [level for level, _ in TIE_BREAKS] == [
        "correctness", "safety", "completeness", "actionability", "adherence", "efficiency",
        "consistency", "red_flags", "bonuses",
    ]  # fmt: skip


def test_an_earlier_level_wins_over_a_later_one() -> None:
    a = evaluation({**dict.fromkeys(DIMENSIONS, "8"), "safety": "8.01"}, key=("a", "t", "s", 0))
    b = evaluation(
        {**dict.fromkeys(DIMENSIONS, "8"), "completeness": "8.02"}, key=("b", "t", "s", 0)
    )
    entries = rank_task([b, a])
    assert [e.evaluation.run for e in entries] == ["a", "b"]
    assert entries[1].tie_break == "safety"


def test_full_equivalence_is_declared() -> None:
    evaluations = [evaluation("7.5", red_flags=1, key=(run, "t", "s", 0)) for run in "cab"]
    result = rank(evaluations, origin="<test>", parameters={})
    (ranking,) = result.rankings
    assert ranking.all_equivalent
    assert [e.position for e in ranking.entries] == [1, 1, 1]
    assert [e.evaluation.run for e in ranking.entries] == ["a", "b", "c"]
    assert [e.equivalent_to_previous for e in ranking.entries] == [False, True, True]


def test_final_score_orders_first_and_tasks_rank_separately() -> None:
    evaluations = [
        evaluation("6", key=("a", "t1", "s", 0)),
        evaluation("9", key=("b", "t1", "s", 0)),
        evaluation("3", key=("c", "t2", "s", 0)),
    ]
    result = rank(evaluations, origin="<test>", parameters={})
    assert [r.task for r in result.rankings] == ["t1", "t2"]
    first = result.rankings[0].entries
    assert [(e.evaluation.run, e.position, e.tie_break) for e in first] == [
        ("b", 1, None),
        ("a", 2, None),
    ]
    assert first[0].evaluation.final == Decimal("9.00")


def test_the_reported_band_is_the_one_the_flags_use(tmp_path: Path) -> None:
    """history_series' band per evaluation (what the HTML page draws) flags exactly the
    dimensions record_history flagged, and equals mean and SD of the 10 before, by hand."""
    from calipers.schemes.rubric.history import history_series

    db = tmp_path / "h.duckdb"
    values = ["7", "8", "9", "7.5", "8.5", "6", "9.5", "8", "7", "8", "7.5", "8.5", "3", "8"]
    evaluations = []
    for i, value in enumerate(values):
        e = scored(value, f"s{i:02d}")
        record_history(db, [e], rubric_sha256="x")
        evaluations.append(e)
    (entries,) = history_series(db, ["skill"]).values()
    assert [e["sample_id"] for e in entries] == [f"s{i:02d}" for i in range(len(values))]
    for i, (entry, e) in enumerate(zip(entries, evaluations, strict=True)):
        band = entry["band"]["correctness"]
        earlier = [float(v) for v in values[max(0, i - 10) : i]]
        if len(earlier) < 2:
            assert band == {"mean": None, "sd": None}
            continue
        assert band["mean"] == pytest.approx(statistics.mean(earlier))
        assert band["sd"] == pytest.approx(statistics.stdev(earlier))
        outside = {
            d for d in DIMENSIONS
            if entry["band"][d]["mean"] is not None
            and abs(entry["dimensions"][d] - entry["band"][d]["mean"])
            > 2 * entry["band"][d]["sd"] + 1e-12
        }  # fmt: skip
        assert outside == {f.dimension for f in e.history_flags}
    assert {f.dimension for f in evaluations[12].history_flags} == {"correctness"}  # the 3
    assert len(history_series(db, ["skill"], limit=5)["skill"]) == 5
