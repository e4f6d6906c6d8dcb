"""The rubric scheme against seed 001's rules, computed here by hand in decimal arithmetic."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from calipers.errors import InputError
from calipers.schemes import get_scheme
from calipers.schemes.rubric.definition import DIMENSIONS, load_rubric
from calipers.schemes.rubric.scoring import GRADES, RubricResult, grade_for
from conftest import MakeSamples
from rubric_data import evaluation, judgments, rubric_row

# The seed's table, restated: (lowest score, grade, label).
TABLE = [
    ("9.50", "A+", "Exceptional"),
    ("9.00", "A", "Excellent"),
    ("8.50", "A-", "Very Good"),
    ("8.00", "B+", "Good"),
    ("7.50", "B", "Above Average"),
    ("7.00", "B-", "Satisfactory"),
    ("6.50", "C+", "Adequate"),
    ("6.00", "C", "Mediocre"),
    ("5.50", "C-", "Below Average"),
    ("5.00", "D+", "Poor"),
    ("4.00", "D", "Very Poor"),
    ("1.00", "F", "Failing"),
]


def score(samples, **options) -> RubricResult:  # type: ignore[no-untyped-def]
    result = get_scheme("rubric").score(samples, n_resamples=200, **options)
    assert isinstance(result, RubricResult)
    return result


def test_grade_table_is_the_seeds() -> None:
    assert [(str(lo), g, label) for lo, g, label in GRADES] == TABLE


@pytest.mark.parametrize(("lower", "grade", "label"), TABLE)
def test_both_sides_of_every_grade_boundary(lower: str, grade: str, label: str) -> None:
    """A score at the lower bound gets the grade; one cent below it gets the next one down."""
    at = evaluation(lower)  # all seven dimensions = lower, so the composite is lower exactly
    assert (at.final, at.grade, at.label) == (Decimal(lower), grade, label)
    below = Decimal(lower) - Decimal("0.01")
    if below >= 1:
        i = [row[1] for row in TABLE].index(grade)
        assert grade_for(below) == (TABLE[i + 1][1], TABLE[i + 1][2])


def test_top_grade_includes_ten_and_8_99_is_a_minus() -> None:
    assert evaluation("10").grade == "A+"
    assert evaluation("8.99").grade == "A-"
    assert evaluation("9.00").grade == "A"


def test_composite_8_995_rounds_half_up_to_9_00_in_decimal() -> None:
    dims = dict.fromkeys(DIMENSIONS, "9")
    dims["consistency"] = "8.9"  # 9 × 0.95 + 8.9 × 0.05 = 8.995 exactly
    e = evaluation(dims)
    assert e.composite == Decimal("9.00")
    assert e.grade == "A"
    assert round(8.995, 2) == 8.99  # what binary floats would have given


def test_weighted_composite_by_hand() -> None:
    dims = {
        "correctness": "8",
        "completeness": "7",
        "adherence": "9",
        "actionability": "6",
        "efficiency": "5",
        "safety": "10",
        "consistency": "4",
    }
    # 2.00 + 1.40 + 1.35 + 0.90 + 0.50 + 1.00 + 0.20
    assert evaluation(dims).composite == Decimal("7.35")


def test_five_red_flags_deduct_at_most_two_points() -> None:
    e = evaluation("8", red_flags=5)
    assert e.deduction_total == Decimal("2.0")
    assert [a.amount for a in e.red_flags] == [Decimal("0.5")] * 4 + [Decimal(0)]
    assert [a.capped for a in e.red_flags] == [False] * 4 + [True]
    assert e.final == Decimal("6.00")


def test_five_bonuses_add_at_most_one_point() -> None:
    e = evaluation("7", bonuses=5)
    assert e.bonus_total == Decimal("1.0")
    assert e.final == Decimal("8.00")


def test_floor_at_one_after_deductions_then_bonuses() -> None:
    e = evaluation("1.5", red_flags=4)
    assert e.final == Decimal("1.00")  # 1.5 − 2.0 floors at 1.0
    e = evaluation("1.5", red_flags=4, bonuses=1)
    assert e.final == Decimal("1.25")  # bonuses come after the floor


def test_ceiling_at_ten() -> None:
    assert evaluation("9.8", bonuses=4).final == Decimal("10.00")


def test_repeated_flag_counts_once(make_samples: MakeSamples) -> None:
    row = rubric_row("r", "s", 8.0, red_flags=["leak", "leak"], bonuses=["tests"])
    row["judgments"] += judgments(8.0, judge="other", red_flags=["leak"], bonuses=["tests"])
    (e,) = score(make_samples([row])).evaluations
    assert [a.id for a in e.red_flags] == ["leak"]
    assert [a.id for a in e.bonuses] == ["tests"]
    assert e.final == Decimal("8.00") - Decimal("0.5") + Decimal("0.25")


def test_dimensions_average_judges_and_repeats_and_rescale(make_samples: MakeSamples) -> None:
    rows = rubric_row("r", "s", 6.0)
    rows["judgments"] += [
        {"judge": "j", "dimension": "correctness", "score": 9.0, "repeat": 1},
        {"judge": "k", "dimension": "correctness", "score": 0.5, "scale_min": 0, "scale_max": 1},
        {"judge": "k", "dimension": "correctness", "score": None, "error": "timeout"},
        {"judge": "k", "dimension": "safety", "score": 2.0, "error": "unparseable"},
    ]
    (e,) = score(make_samples([rows])).evaluations
    # correctness: 6, 9 and 1 + 9 × 0.5 = 5.5 → 20.5 / 3; the failed judgments are ignored
    assert e.dimensions["correctness"] == Decimal("20.5") / 3
    assert e.dimensions["safety"] == Decimal(6)


def test_scores_field_is_used_when_no_judgment_gives_a_dimension(
    make_samples: MakeSamples,
) -> None:
    row = {"run": "r", "task": "t", "sample_id": "s", "scores": dict.fromkeys(DIMENSIONS, 7.5)}
    (e,) = score(make_samples([row])).evaluations
    assert e.composite == Decimal("7.50")


def test_missing_dimension_names_sample_and_dimension(make_samples: MakeSamples) -> None:
    row = rubric_row("r", "s9", 7.0)
    row["judgments"] = [j for j in row["judgments"] if j["dimension"] != "safety"]
    with pytest.raises(InputError, match=r"sample_id=s9.*no score for dimension 'safety'"):
        score(make_samples([row]))


@pytest.mark.parametrize("bad", [11.0, 0.5, float("nan")])
def test_out_of_range_dimension_names_sample_and_dimension(
    make_samples: MakeSamples, bad: float
) -> None:
    row = rubric_row("r", "s3", {**dict.fromkeys(DIMENSIONS, 7.0), "efficiency": bad})
    with pytest.raises(InputError, match=r"sample_id=s3.*dimension 'efficiency'"):
        score(make_samples([row]))


def test_custom_weights_that_do_not_sum_to_one(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    weights = {d: 0.15 for d in DIMENSIONS}  # 7 × 0.15 = 1.05
    path.write_text("weights:\n" + "".join(f"  {d}: {w}\n" for d, w in weights.items()))
    with pytest.raises(InputError) as err:
        load_rubric(path)
    message = err.value.message
    assert str(path) in message and "sum to 1.05" in message and "safety=0.15" in message


def test_custom_weights_within_1e_9_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    weights = dict.fromkeys(DIMENSIONS, 1 / 7)  # floats: the sum is 1 within rounding
    path.write_text('{"weights": ' + str(weights).replace("'", '"') + "}")
    rubric = load_rubric(path)
    assert sum(rubric.base.weights.values()) == pytest.approx(1, abs=1e-9)


def test_custom_weights_must_name_every_dimension(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("weights: {correctness: 1.0}\n")
    with pytest.raises(InputError, match="missing completeness, adherence"):
        load_rubric(path)


def test_rubric_file_errors_name_the_field_and_line(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("red_flags:\n  - {id: x, severity: high}\n")
    with pytest.raises(InputError, match=r"line 2, field 'red_flags\[0\]\.severity'"):
        load_rubric(path)
    path.write_text("name: x\nweights: [unclosed\n")
    with pytest.raises(InputError, match="line 2"):
        load_rubric(path)


def test_domains_apply_their_weights_and_listed_flags(
    make_samples: MakeSamples, tmp_path: Path
) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(
        "red_flags: [{id: leak, description: Leaks a secret}]\n"
        "domains:\n"
        "  code:\n"
        "    tasks: [review]\n"
        "    weights: {correctness: 1.0, completeness: 0, adherence: 0, actionability: 0,\n"
        "              efficiency: 0, safety: 0, consistency: 0}\n"
        "    red_flags: [{id: no_tests, description: Changes code without tests}]\n"
    )
    dims = {**dict.fromkeys(DIMENSIONS, 5.0), "correctness": 9.0}
    rows = [
        rubric_row("r", "a", dims, task="review", red_flags=["no_tests"]),
        rubric_row("r", "b", dims, task="other", red_flags=["leak"]),
    ]
    result = score(make_samples(rows), rubric=path)
    by_id = {e.sample_id: e for e in result.evaluations}
    review, other = by_id["a"], by_id["b"]
    assert review.domain == "code" and review.composite == Decimal("9.00")
    assert review.red_flags[0].explanation == "Changes code without tests"
    assert other.domain is None and other.composite == Decimal("6.00")  # 9 × .25 + 5 × .75
    assert other.red_flags[0].explanation == "Leaks a secret"
    bad = [rubric_row("r", "c", dims, task="other", red_flags=["no_tests"])]
    with pytest.raises(InputError, match="red_flags no_tests not in the rubric"):
        score(make_samples(bad), rubric=path)


def test_run_summary_and_report_fields(make_samples: MakeSamples) -> None:
    rows = [rubric_row("r", f"s{i}", 6.0 + i * 0.5) for i in range(4)]
    result = score(make_samples(rows))
    run = result.runs["r"]
    assert run.mean_final == pytest.approx((6.0 + 6.5 + 7.0 + 7.5) / 4)
    assert run.grades["C"] == 1 and run.grades["C+"] == 1 and run.grades["B-"] == 1
    assert run.interval is not None and run.interval[0] < run.mean_final < run.interval[1]
    body = result.to_dict()["evaluations"][0]
    assert set(body) >= {
        "composite", "deductions", "bonuses", "final", "grade", "label", "dimensions",
        "history_flags",
    }  # fmt: skip
    assert body["deductions"] == {"items": [], "total": 0.0}
