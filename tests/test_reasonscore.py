"""ReasonScore against values computed independently from the formulas of seed 003 / DESIGN.md:
Wilson from statsmodels, geometric mean from scipy."""

from __future__ import annotations

import math
from typing import Any

import pytest
from scipy.stats import gmean
from statsmodels.stats.proportion import proportion_confint

from calipers.errors import DataError, InputError
from calipers.schemes import get_scheme
from calipers.schemes.reasonscore.scoring import ReasonScoreResult


def wilson_ref(successes: float, trials: float, z: float = 1.96) -> tuple[float, float]:
    s = min(max(successes, 0.0), trials)
    alpha = 2 * (1 - __import__("scipy").stats.norm.cdf(z))
    low, high = proportion_confint(s, trials, alpha=alpha, method="wilson")
    return (low + high) / 2, (high - low) / 2


def point_rows(
    run: str,
    tier: str,
    task: str,
    point: str,
    *,
    n: int,
    correct: int,
    guess: float,
    truncated: int = 0,
    tokens: int | None = 100,
    missing: int = 0,
) -> list[dict[str, Any]]:
    rows = []
    for i in range(n + missing):
        known = i < n
        rows.append(
            {
                "run": run,
                "tier": tier,
                "task": task,
                "point": point,
                "sample_id": f"{tier}/{task}/{point}/{i}",
                "correct": (i < correct) if known else None,
                "guess_chance": guess,
                "truncated": known and i >= n - truncated,
                "tokens_out": tokens,
                "error": None if known else "pipeline failed",
            }
        )
    return rows


# (tier, task, point) → n, correct, guess_chance, truncated, tokens_out
SPEC = {
    ("easy", "boolean", "p1"): (40, 33, 0.5, 1, 120),
    ("easy", "boolean", "p2"): (24, 15, 0.5, 0, 180),
    ("easy", "sort", "p1"): (30, 27, 0.0, 2, 300),
    ("hard", "boolean", "p1"): (20, 8, 0.5, 3, 900),  # worse than guessing: adj_s < 0
    ("hard", "sort", "p1"): (25, 9, 0.0, 5, 1400),
    ("hard", "sort", "p2"): (15, 2, 0.0, 1, 2000),
}


@pytest.fixture
def result(make_samples: Any) -> ReasonScoreResult:
    rows = []
    for (tier, task, point), (n, c, g, t, tok) in SPEC.items():
        rows += point_rows("m", tier, task, point, n=n, correct=c, guess=g, truncated=t, tokens=tok)
    res = get_scheme("reasonscore").score(make_samples(rows))
    assert isinstance(res, ReasonScoreResult)
    return res


def test_points_match_the_formula(result: ReasonScoreResult) -> None:
    for (tier, task, point), (n, c, g, t, _) in SPEC.items():
        ps = next(p for p in result.runs["m"].tiers[tier].tasks[task].points if p.point == point)
        adj_s, adj_n = c - n * g, n - n * g
        center, margin = wilson_ref(adj_s, adj_n)
        assert ps.adjusted_successes == pytest.approx(adj_s)
        assert ps.adjusted_trials == pytest.approx(adj_n)
        assert ps.center == pytest.approx(center, abs=1e-12)
        assert ps.margin == pytest.approx(margin, abs=1e-12)
        assert ps.score == pytest.approx(center + margin - t / n, abs=1e-12)


def test_tasks_reaggregate_adjusted_counts_as_they_are(result: ReasonScoreResult) -> None:
    expected_tasks: dict[tuple[str, str], float] = {}
    for tier in ("easy", "hard"):
        for task in ("boolean", "sort"):
            pts = [v for k, v in SPEC.items() if k[0] == tier and k[1] == task]
            adj_s = sum(c - n * g for n, c, g, _, _ in pts)  # negative parts kept
            adj_n = sum(n - n * g for n, _, g, _, _ in pts)
            trunc = sum(t for _, _, _, t, _ in pts) / sum(n for n, *_ in pts)
            center, margin = wilson_ref(adj_s, adj_n)
            expected = max(0.01, center + margin - trunc)
            ts = result.runs["m"].tiers[tier].tasks[task]
            assert ts.adjusted_successes == pytest.approx(adj_s)
            assert ts.score == pytest.approx(expected, abs=1e-12)
            expected_tasks[(tier, task)] = expected
    # the hard/boolean point is below chance, so its adjusted successes are negative
    assert result.runs["m"].tiers["hard"].tasks["boolean"].adjusted_successes < 0
    for tier in ("easy", "hard"):
        tier_score = 1000 * gmean([expected_tasks[(tier, k)] for k in ("boolean", "sort")])
        assert result.runs["m"].tiers[tier].score == pytest.approx(tier_score, rel=1e-12)


def test_score_per_token_is_mean_score_over_mean_tokens(result: ReasonScoreResult) -> None:
    run = result.runs["m"]
    tier_tokens = {}
    for tier in ("easy", "hard"):
        pts = [(n, tok) for k, (n, _, _, _, tok) in SPEC.items() if k[0] == tier]
        tier_tokens[tier] = sum(n * tok for n, tok in pts) / sum(n for n, _ in pts)
        assert run.tiers[tier].avg_tokens == pytest.approx(tier_tokens[tier])
    mean_score = (run.tiers["easy"].score + run.tiers["hard"].score) / 2  # type: ignore[operator]
    mean_tokens = (tier_tokens["easy"] + tier_tokens["hard"]) / 2
    assert run.score_per_token == pytest.approx(mean_score / mean_tokens, rel=1e-12)


def test_floor_at_one_hundredth(make_samples: Any) -> None:
    rows = point_rows("m", "t", "all-truncated", "p", n=10, correct=0, guess=0.0, truncated=10)
    res = get_scheme("reasonscore").score(make_samples(rows))
    task = res.runs["m"].tiers["t"].tasks["all-truncated"]  # type: ignore[attr-defined]
    assert task.raw_score < 0.01
    assert task.score == 0.01
    assert res.runs["m"].tiers["t"].score == pytest.approx(10.0)  # type: ignore[attr-defined]


def test_perfect_model_scores_1000(make_samples: Any) -> None:
    rows = point_rows("m", "t", "a", "p", n=7, correct=7, guess=0.25)
    rows += point_rows("m", "t", "b", "p", n=100, correct=100, guess=0.0)
    res = get_scheme("reasonscore").score(make_samples(rows))
    assert res.runs["m"].tiers["t"].score == pytest.approx(1000.0)  # type: ignore[attr-defined]


def test_certain_guesses_leave_scores_undefined_not_zero(make_samples: Any) -> None:
    rows = point_rows("m", "t", "coin", "p", n=10, correct=6, guess=1.0)
    rows += point_rows("m", "t", "sort", "p", n=10, correct=6, guess=0.0)
    res = get_scheme("reasonscore").score(make_samples(rows))
    run = res.runs["m"]  # type: ignore[attr-defined]
    assert run.tiers["t"].tasks["coin"].score is None
    assert run.tiers["t"].tasks["sort"].score is not None
    assert run.tiers["t"].score is None
    assert run.score_per_token is None
    assert any("no trials above chance" in n for n in res.notes)
    assert res.to_dict()["runs"]["m"]["score_per_token"] is None


def test_missing_outcomes_are_counted_not_scored(make_samples: Any) -> None:
    rows = point_rows("m", "t", "a", "p", n=10, correct=5, guess=0.0, missing=3)
    res = get_scheme("reasonscore").score(make_samples(rows))
    run = res.runs["m"]  # type: ignore[attr-defined]
    assert run.missing == 3 and run.samples == 10
    center, margin = wilson_ref(5, 10)
    assert run.tiers["t"].tasks["a"].score == pytest.approx(center + margin)
    assert any("without `correct`" in n for n in res.notes)


def test_no_tokens_means_no_score_per_token(make_samples: Any) -> None:
    rows = point_rows("m", "t", "a", "p", n=10, correct=5, guess=0.0, tokens=None)
    res = get_scheme("reasonscore").score(make_samples(rows))
    assert res.runs["m"].score_per_token is None  # type: ignore[attr-defined]
    assert res.runs["m"].tiers["t"].score is not None  # type: ignore[attr-defined]


def test_z_is_used_and_recorded(make_samples: Any) -> None:
    rows = point_rows("m", "t", "a", "p", n=20, correct=12, guess=0.0)
    res = get_scheme("reasonscore").score(make_samples(rows), z=2.576)
    center, margin = wilson_ref(12, 20, z=2.576)
    assert res.runs["m"].tiers["t"].tasks["a"].score == pytest.approx(center + margin)  # type: ignore[attr-defined]
    assert res.parameters == {"z": 2.576}
    with pytest.raises(InputError):
        get_scheme("reasonscore").score(make_samples(rows), z=-1.0)


def test_nothing_to_score_is_a_data_error(make_samples: Any) -> None:
    rows = [{"run": "m", "task": "a", "sample_id": "1", "correct": None}]
    with pytest.raises(DataError, match="correct"):
        get_scheme("reasonscore").score(make_samples(rows))


def test_ranking_and_frames(make_samples: Any) -> None:
    rows = point_rows("good", "t", "a", "p", n=50, correct=45, guess=0.0, tokens=1000)
    rows += point_rows("cheap", "t", "a", "p", n=50, correct=40, guess=0.0, tokens=500)
    res = get_scheme("reasonscore").score(make_samples(rows))
    assert [r.run for r in res.ranked()] == ["cheap", "good"]  # type: ignore[attr-defined]
    assert set(res.to_frame("run")["run"]) == {"good", "cheap"}
    assert len(res.to_frame("point")) == 2
    assert math.isclose(
        res.to_frame("task").set_index("run").loc["good", "score"],
        res.runs["good"].tiers["t"].tasks["a"].score,  # type: ignore[attr-defined]
    )


@pytest.mark.parametrize("seed", range(5))
def test_pareto_frontier_is_the_non_dominated_runs(seed: int) -> None:
    """Against a sweep: by tokens (ties: higher score first), a run is on the frontier when its
    score beats every run with fewer tokens, or equals the best with exactly the same point."""
    import numpy as np

    from calipers.schemes.reasonscore.scoring import RunScore

    rng = np.random.default_rng(seed)
    result = ReasonScoreResult(scheme="reasonscore", parameters={}, origin="t")
    points = []
    for i in range(12):  # coarse values, so ties on either axis happen
        score, tokens = float(rng.integers(1, 6) * 100), float(rng.integers(1, 6) * 500)
        points.append((f"r{i}", score, tokens))
        result.runs[f"r{i}"] = RunScore(f"r{i}", 10, 0, score, tokens, score / tokens)
    result.runs["no-tokens"] = RunScore("no-tokens", 10, 0, 900.0, None, None)
    expected, best, best_point = [], -1.0, None
    for name, score, tokens in sorted(points, key=lambda p: (p[2], -p[1], p[0])):
        if score > best or (score, tokens) == best_point:
            expected.append(name)
            if score > best:
                best, best_point = score, (score, tokens)
    assert sorted(result.pareto_frontier()) == sorted(expected)
    assert "no-tokens" not in result.pareto_frontier()
