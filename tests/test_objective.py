"""The objective scheme (seed 002) and its comparator: composites computed by hand from the
formulas, each kind of hard regression, thresholds at their exact values, the cost ratios'
edge cases, and the fail-closed promotion decision."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from calipers.errors import DataError, InputError
from calipers.schemes import get_scheme
from calipers.schemes.objective.scoring import ObjectiveResult, TaskScore, cost_adjustment
from calipers.schemes.objective.verdict import (
    ObjectiveVerdict,
    Settings,
    compare_objective,
    decide,
)
from conftest import MakeSamples


def row(
    run: str,
    task: str,
    *,
    passed: int = 0,
    checks: int = 0,
    judge: float | None = None,
    scale: tuple[float, float] | None = None,
    epoch: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    """A sample with `passed` of `checks` assertions passing and an optional overall judgment."""
    out: dict[str, Any] = {
        "run": run,
        "task": task,
        "sample_id": task,
        "epoch": epoch,
        "assertions": [
            {"name": f"c{i}", "type": "custom", "passed": i < passed} for i in range(checks)
        ],
        **extra,
    }
    if judge is not None:
        j: dict[str, Any] = {"judge": "j", "score": judge}
        if scale:
            j.update(scale_min=scale[0], scale_max=scale[1])
        out["judgments"] = [j]
    return out


def task_score(task: str, composite: float, objective: float = 1.0) -> TaskScore:
    return TaskScore("r", task, 1, objective, None, 0, composite, {}, [], 0.0, composite)


# --- the composite ------------------------------------------------------------------------------


def test_composite_from_the_formula(make_samples: MakeSamples) -> None:
    samples = make_samples([row("a", "t", passed=3, checks=4, judge=0.5)])
    result = get_scheme("objective").score(samples)
    assert isinstance(result, ObjectiveResult)
    t = result.tasks["a"]["t"]
    assert t.objective == 0.75 and t.judge == 0.5
    assert t.composite == pytest.approx((0.6 * 0.75 + 0.4 * 0.5) / 1.0)


def test_judge_on_another_scale_is_rescaled(make_samples: MakeSamples) -> None:
    samples = make_samples([row("a", "t", passed=1, checks=1, judge=4, scale=(1, 5))])
    t = get_scheme("objective").score(samples).tasks["a"]["t"]  # type: ignore[attr-defined]
    assert t.judge == pytest.approx(0.75)
    assert t.composite == pytest.approx(0.6 * 1 + 0.4 * 0.75)


def test_no_judge_reweights_to_the_objective_alone(make_samples: MakeSamples) -> None:
    samples = make_samples([row("a", "t", passed=2, checks=5)])
    t = get_scheme("objective").score(samples).tasks["a"]["t"]  # type: ignore[attr-defined]
    assert t.judge is None and t.judged == 0
    assert t.composite == pytest.approx(0.6 * 0.4 / 0.6)


def test_no_checks_scores_a_neutral_one(make_samples: MakeSamples) -> None:
    samples = make_samples([row("a", "t", judge=0.25)])
    t = get_scheme("objective").score(samples).tasks["a"]["t"]  # type: ignore[attr-defined]
    assert t.objective == 1.0
    assert t.composite == pytest.approx(0.6 + 0.4 * 0.25)


def test_a_failed_judgment_is_absent_not_zero(make_samples: MakeSamples) -> None:
    r = row("a", "t", passed=1, checks=2)
    r["judgments"] = [{"judge": "j", "score": None, "error": "HTTP 500 after 3 attempts"}]
    result = get_scheme("objective").score(make_samples([r]))
    assert result.tasks["a"]["t"].composite == pytest.approx(0.5)  # type: ignore[attr-defined]
    assert any("failed" in n for n in result.notes)


def test_task_is_the_mean_over_epochs_and_weights_are_options(make_samples: MakeSamples) -> None:
    rows = [
        row("a", "t", passed=1, checks=2, judge=1.0, epoch=0),
        row("a", "t", passed=2, checks=2, epoch=1),
    ]
    result = get_scheme("objective").score(make_samples(rows), w_obj=0.5, w_judge=0.5)
    t = result.tasks["a"]["t"]  # type: ignore[attr-defined]
    per_epoch = [(0.5 * 0.5 + 0.5 * 1.0) / 1.0, 1.0]  # epoch 1 has no judge: objective alone
    assert t.objective == pytest.approx(0.75)
    assert t.composite == pytest.approx(np.mean(per_epoch))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"judge": 1.5}, "outside its scale 0–1"),
        ({"judge": 3, "scale": (2, 2)}, "is empty"),
    ],
)
def test_bad_judge_scores_are_input_errors(
    make_samples: MakeSamples, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        get_scheme("objective").score(make_samples([row("a", "t", checks=1, **changes)]))


def test_ungraded_assertions_point_to_grade(make_samples: MakeSamples) -> None:
    r = row("a", "t", checks=1)
    r["assertions"][0]["passed"] = None
    with pytest.raises(InputError) as info:
        get_scheme("objective").score(make_samples([r]))
    assert "calipers grade" in (info.value.hint or "")


# --- the cost adjustment ------------------------------------------------------------------------


def one(x: float) -> np.ndarray:
    return np.array([x])


def test_cost_adjustment_is_the_mean_ratio_over_shared_metrics() -> None:
    adj = cost_adjustment(
        {"cost_usd": one(0.03), "tool_calls": one(4)},
        {"cost_usd": one(0.04), "tool_calls": one(6), "steps": one(3)},  # steps: reference only
        0.1,
    )
    assert adj[0] == pytest.approx(0.1 * (1 - (0.75 + 4 / 6) / 2))


@pytest.mark.parametrize(
    ("actual", "reference", "ratio"),
    [(5.0, 0.0, 2.0), (0.0, 0.0, 1.0), (3.0, -1.0, 2.0), (0.0, -2.0, 1.0)],
)
def test_a_reference_at_or_below_zero(actual: float, reference: float, ratio: float) -> None:
    adj = cost_adjustment({"steps": one(actual)}, {"steps": one(reference)}, 0.1)
    assert adj[0] == pytest.approx(0.1 * (1 - ratio))


def test_the_adjustment_is_capped_at_the_cost_weight() -> None:
    pricier = cost_adjustment({"cost_usd": one(100.0)}, {"cost_usd": one(1.0)}, 0.1)
    free = cost_adjustment({"cost_usd": one(0.0)}, {"cost_usd": one(1.0)}, 0.1)
    assert pricier[0] == pytest.approx(-0.1) and free[0] == pytest.approx(0.1)


def test_tokens_are_in_plus_out_and_the_baseline_is_neutral(make_samples: MakeSamples) -> None:
    rows = [
        row("base", "t", passed=1, checks=1, tokens_in=100, tokens_out=100),
        row("cand", "t", passed=1, checks=1, tokens_in=150, tokens_out=50, latency_s=2.0),
    ]
    result = get_scheme("objective").score(make_samples(rows), baseline="base")
    base, cand = result.tasks["base"]["t"], result.tasks["cand"]["t"]  # type: ignore[attr-defined]
    assert base.cost_adjustment == 0.0 and base.composite == 1.0
    assert cand.cost_metrics == ["tokens"]  # latency: the baseline does not report it
    assert cand.cost_adjustment == pytest.approx(0.0)


def test_composite_is_clamped_to_one(make_samples: MakeSamples) -> None:
    rows = [
        row("base", "t", passed=1, checks=1, cost_usd=1.0),
        row("cand", "t", passed=1, checks=1, cost_usd=0.5),
    ]
    result = get_scheme("objective").score(make_samples(rows), baseline="base")
    cand = result.tasks["cand"]["t"]  # type: ignore[attr-defined]
    assert cand.cost_adjustment == pytest.approx(0.05) and cand.composite == 1.0


# --- the verdict --------------------------------------------------------------------------------


def judged_runs(baseline: list[float], candidate: list[float]) -> list[dict[str, Any]]:
    """One task per entry, every check passing, judges setting the composite to 0.6 + 0.4·j."""
    rows = []
    for i, (b, c) in enumerate(zip(baseline, candidate, strict=True)):
        rows.append(row("base", f"t{i}", passed=1, checks=1, judge=b))
        rows.append(row("cand", f"t{i}", passed=1, checks=1, judge=c))
    return rows


def compare(make_samples: MakeSamples, rows: list[dict[str, Any]], **settings: Any) -> Any:
    return compare_objective(
        make_samples(rows), baseline="base", candidate="cand", settings=Settings(**settings)
    )


def test_net_gain_exactly_at_the_threshold_is_neutral(make_samples: MakeSamples) -> None:
    # composites 0.8 → 0.81: the float difference is 0.010000000000000009, written as 0.01
    result = compare(make_samples, judged_runs([0.5], [0.525]))
    assert 0.81 - 0.8 > 0.01  # the binary-float trap the tolerance exists for
    assert result.net_gain == pytest.approx(0.01)
    assert result.verdict is ObjectiveVerdict.NEUTRAL and not result.promote


def test_net_gain_above_the_threshold_is_improved_and_promoted(make_samples: MakeSamples) -> None:
    result = compare(make_samples, judged_runs([0.5, 0.5], [0.55, 0.5]))
    assert result.net_gain == pytest.approx(0.02)
    assert result.verdict is ObjectiveVerdict.IMPROVED and result.promote
    assert result.regressions == []


def test_a_net_loss_beyond_the_threshold_regresses(make_samples: MakeSamples) -> None:
    # three small drops, none a hard regression on its own, sum to −0.048
    result = compare(make_samples, judged_runs([0.5, 0.5, 0.5], [0.46, 0.46, 0.46]))
    assert result.regressions == []
    assert result.net_gain == pytest.approx(-0.048)
    assert result.verdict is ObjectiveVerdict.REGRESSED and not result.promote


def test_a_net_loss_of_exactly_the_threshold_regresses(make_samples: MakeSamples) -> None:
    result = compare(make_samples, judged_runs([0.525], [0.5]))
    assert result.verdict is ObjectiveVerdict.REGRESSED and result.regressions == []


def test_objective_drop_is_a_hard_regression_despite_a_net_gain(make_samples: MakeSamples) -> None:
    rows = [
        row("base", "t0", passed=4, checks=4, judge=0.2),
        row("cand", "t0", passed=3, checks=4, judge=1.0),
        row("base", "t1", passed=1, checks=4),
        row("cand", "t1", passed=4, checks=4),
    ]
    result = compare(make_samples, rows)
    assert result.net_gain > 0.5
    assert [(r.task, r.kind) for r in result.regressions] == [("t0", "objective_drop")]
    assert result.verdict is ObjectiveVerdict.REGRESSED and not result.promote
    relaxed = compare(make_samples, rows, objective_drop_is_regression=False)
    assert relaxed.verdict is ObjectiveVerdict.IMPROVED and relaxed.promote


def test_composite_drop_beyond_the_threshold_only(make_samples: MakeSamples) -> None:
    # composite 0.6 + 0.4·j: judge 0.5 → 0.375 drops it by exactly 0.05, 0.5 → 0.3 by 0.08
    rows = judged_runs([0.5, 0.5, 0.0], [0.375, 0.3, 1.0])
    result = compare(make_samples, rows)
    assert [(r.task, r.kind) for r in result.regressions] == [("t1", "composite_drop")]
    assert "0.08" in result.regressions[0].detail
    assert result.verdict is ObjectiveVerdict.REGRESSED and not result.promote
    assert compare(make_samples, rows, regression_composite_drop=0.1).promote


def test_a_task_missing_from_the_candidate(make_samples: MakeSamples) -> None:
    rows = judged_runs([0.5, 0.5], [1.0, 1.0])[:-1]  # the candidate lacks t1
    result = compare(make_samples, rows)
    assert [(r.task, r.kind) for r in result.regressions] == [("t1", "dropped_task")]
    dropped = next(t for t in result.tasks if t.task == "t1")
    assert dropped.candidate is None and dropped.delta is None
    assert result.net_gain == pytest.approx(0.2)  # t0 only
    assert result.verdict is ObjectiveVerdict.REGRESSED and not result.promote


def test_a_task_only_in_the_candidate_is_noted_not_counted(make_samples: MakeSamples) -> None:
    rows = [*judged_runs([0.5], [0.6]), row("cand", "extra", passed=0, checks=1)]
    result = compare(make_samples, rows)
    assert result.net_gain == pytest.approx(0.04) and result.promote
    assert any("only in the candidate" in n and "extra" in n for n in result.notes)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_a_non_finite_score_is_a_hard_regression(bad: float, side: str) -> None:
    good = {"t0": task_score("t0", 0.5), "t1": task_score("t1", 0.5)}
    broken = {"t0": task_score("t0", 0.5), "t1": task_score("t1", bad)}
    before, after = (broken, good) if side == "baseline" else (good, broken)
    deltas, regressions, net, verdict, _ = decide(before, after, Settings())
    assert [(r.task, r.kind) for r in regressions] == [("t1", "non_finite")]
    assert side in regressions[0].detail
    assert math.isfinite(net) and next(d for d in deltas if d.task == "t1").delta is None
    assert verdict is ObjectiveVerdict.REGRESSED


def test_a_non_finite_judge_score_reaches_the_verdict(make_samples: MakeSamples) -> None:
    rows = judged_runs([0.5, 0.5], [0.9, 0.9])
    rows[-1]["judgments"][0]["score"] = math.nan  # the file readers refuse NaN; the store may not
    result = compare(make_samples, rows)
    assert [(r.task, r.kind) for r in result.regressions] == [("t1", "non_finite")]
    assert not result.promote


def test_promote_only_on_a_clean_improvement(make_samples: MakeSamples) -> None:
    improved = compare(make_samples, judged_runs([0.5], [0.9]))
    neutral = compare(make_samples, judged_runs([0.5], [0.5]))
    regressed = compare(make_samples, judged_runs([0.9], [0.5]))
    assert [r.promote for r in (improved, neutral, regressed)] == [True, False, False]
    assert neutral.verdict is ObjectiveVerdict.NEUTRAL


def test_unknown_runs_and_no_shared_task(make_samples: MakeSamples) -> None:
    samples = make_samples([row("base", "t0", checks=1), row("cand", "t1", checks=1)])
    with pytest.raises(InputError, match="'nope' is not in"):
        compare_objective(samples, baseline="nope", candidate="cand")
    with pytest.raises(DataError, match="share no task"):
        compare_objective(samples, baseline="base", candidate="cand")


# --- the bootstrap interval beyond the seed -----------------------------------------------------


def epochs(run: str, judges: list[float]) -> list[dict[str, Any]]:
    return [row(run, "t", passed=1, checks=1, judge=j, epoch=e) for e, j in enumerate(judges)]


def test_no_interval_without_epochs(make_samples: MakeSamples) -> None:
    assert compare(make_samples, judged_runs([0.5], [0.9])).interval is None


def test_interval_matches_scipy_percentile_bootstrap(make_samples: MakeSamples) -> None:
    rng = np.random.default_rng(3)
    judges = rng.uniform(0.3, 0.9, size=12).round(3).tolist()
    rows = [*epochs("base", [0.5]), *epochs("cand", judges)]  # the baseline: one fixed sample
    result = compare_objective(
        make_samples(rows), baseline="base", candidate="cand", n_resamples=20_000, seed=11
    )
    composites = 0.6 + 0.4 * np.array(judges)
    reference = stats.bootstrap(
        (composites,), np.mean, method="percentile", n_resamples=20_000, rng=5
    ).confidence_interval
    assert result.interval is not None
    assert result.net_gain == pytest.approx(composites.mean() - 0.8)
    assert result.interval.low == pytest.approx(reference.low - 0.8, abs=0.004)
    assert result.interval.high == pytest.approx(reference.high - 0.8, abs=0.004)


def test_interval_is_seeded_and_does_not_change_the_verdict(make_samples: MakeSamples) -> None:
    rows = [*epochs("base", [0.5, 0.5, 0.5]), *epochs("cand", [0.3, 0.9, 0.6])]
    first = compare_objective(make_samples(rows), baseline="base", candidate="cand", seed=4)
    again = compare_objective(make_samples(rows), baseline="base", candidate="cand", seed=4)
    assert first.interval is not None and again.interval is not None
    assert (first.interval.low, first.interval.high) == (again.interval.low, again.interval.high)
    assert first.interval.low < first.settings.min_composite_gain < first.interval.high
    assert first.verdict is ObjectiveVerdict.IMPROVED  # the threshold rule, as the seed says
    assert any("may be run-to-run noise" in n for n in first.notes)
    assert first.to_dict()["net_gain_interval"]["seed"] == 4
