"""Bradley–Terry strengths (ties as half a win each) equal to independent implementations —
`choix` (ILSR and scipy-based ML) and a direct scipy.optimize maximisation — to 1e-6, and the
bootstrap, rank intervals and refusals around them."""

from __future__ import annotations

import choix
import numpy as np
import pytest
from scipy import optimize

from calipers.stats.bradley_terry import (
    NotEstimable,
    bradley_terry,
    comparisons,
    fit_mm,
    log_likelihood,
)

RUNS = ["a", "b", "c", "d", "e"]
# (winner-or-first, other, score of the first, sample): wins, losses and ties on 12 samples
THETA = [0.9, 0.4, 0.0, -0.3, -1.0]


def fixture_outcomes() -> list[tuple[str, str, float, int]]:
    rng = np.random.default_rng(2004)
    rows = []
    for sample in range(12):
        for i in range(5):
            for j in range(i + 1, 5):
                p = 1 / (1 + np.exp(THETA[j] - THETA[i]))
                u = rng.random()
                score = 1.0 if u < 0.75 * p else 0.5 if u < 0.75 * p + 0.25 else 0.0
                rows.append((RUNS[i], RUNS[j], score, sample))
    return rows


def choix_data(total: np.ndarray) -> list[tuple[int, int]]:
    """Half-wins as choix's (winner, loser) pairs: every count doubled (the MLE is unchanged
    by scaling all counts), so a tie becomes one win each way."""
    data = []
    for i in range(total.shape[0]):
        for j in range(total.shape[0]):
            doubled = 2 * total[i, j]
            assert doubled == round(doubled)
            data += [(i, j)] * round(doubled)
    return data


def test_strengths_equal_choix_and_scipy_to_1e_6() -> None:
    data = comparisons(fixture_outcomes())
    assert data.runs == tuple(RUNS) and len(data.units) == 12
    total = data.total
    assert np.any(total * 2 % 2 == 1)  # the fixture has ties (half wins)
    ours = fit_mm(total)
    assert abs(ours.mean()) < 1e-12  # identified by mean log-strength 0

    pairs = choix_data(total)
    ilsr = choix.ilsr_pairwise(5, pairs, alpha=0.0, tol=1e-13)
    opt = choix.opt_pairwise(5, pairs, alpha=0.0, tol=1e-12)
    for reference in (ilsr, opt):
        assert np.max(np.abs(ours - (reference - reference.mean()))) < 1e-6

    # the likelihood maximised directly (first strength fixed at 0, then centred)
    def negative(free: np.ndarray) -> float:
        return -log_likelihood(np.concatenate([[0.0], free]), total)

    direct = optimize.minimize(negative, np.zeros(4), method="BFGS", options={"gtol": 1e-10}).x
    direct = np.concatenate([[0.0], direct])
    assert np.max(np.abs(ours - (direct - direct.mean()))) < 1e-6

    # the bootstrap's point estimate is the same fit, with prior 0
    fit = bradley_terry(data, prior=0, n_resamples=200, rng=1)
    got = np.array([fit.by_run()[r].theta for r in RUNS])
    assert np.max(np.abs(got - ours)) < 1e-9


def test_the_prior_is_virtual_ties_and_matches_choix_on_augmented_data() -> None:
    data = comparisons(fixture_outcomes())
    fit = bradley_terry(data, prior=2.0, n_resamples=100, rng=0)
    augmented = data.total + (2.0 / 2) * (1 - np.eye(5))  # every pair was compared
    reference = choix.ilsr_pairwise(5, choix_data(augmented), alpha=0.0, tol=1e-13)
    got = np.array([fit.by_run()[r].theta for r in RUNS])
    assert np.max(np.abs(got - (reference - reference.mean()))) < 1e-6
    plain = fit_mm(data.total)
    assert np.all(np.abs(got) < np.abs(plain))  # shrunk towards equality


def test_a_run_that_won_everything_needs_a_prior() -> None:
    rows = [("a", "b", 1.0, s) for s in range(5)] + [("b", "c", 1 - s % 2, s) for s in range(5)]
    with pytest.raises(NotEstimable, match="infinite"):
        bradley_terry(comparisons(rows), prior=0, n_resamples=50)
    fit = bradley_terry(comparisons(rows), n_resamples=500, rng=3)  # prior 1: finite
    assert [s.run for s in fit.strengths] == ["a", "b", "c"]
    assert fit.by_run()["a"].theta > fit.by_run()["b"].theta > fit.by_run()["c"].theta
    with pytest.raises(NotEstimable, match="never compared"):
        bradley_terry(comparisons([("a", "b", 1.0, 0), ("c", "d", 0.5, 1)]), n_resamples=10)


def test_bootstrap_is_seeded_and_intervals_hold_the_estimate() -> None:
    data = comparisons(fixture_outcomes())
    one = bradley_terry(data, n_resamples=400, rng=5)
    two = bradley_terry(data, n_resamples=400, rng=5)
    assert one.seed == 5 and np.array_equal(one.distribution, two.distribution)
    assert one.distribution.shape == (400, 5)
    for s in one.strengths:
        assert s.low < s.theta < s.high
    ranked = one.ranking.by_run()
    for r in ranked.values():
        assert r.low <= r.rank <= r.high
    assert [s.run for s in one.strengths] == RUNS  # the fixture's order
    report = one.to_dict()
    assert report["seed"] == 5 and report["n_units"] == 12
    assert sum(len(g) for g in report["groups"]) == 5
    assert 0.5 < one.win_probability("a", "e") < 1


def test_samples_are_resampled_as_units() -> None:
    """Every comparison repeated five times, within its sample or as five units of its own:
    resampling whole samples keeps a sample's (here identical) comparisons together, so the
    spread is √5 times that of resampling them as if they were independent."""
    rows = fixture_outcomes()
    per_sample = bradley_terry(comparisons(rows), prior=0, n_resamples=2000, rng=9)
    repeated = [(a, b, s, (u, k)) for a, b, s, u in rows for k in range(5)]
    clustered = bradley_terry(comparisons(rows * 5), prior=0, n_resamples=2000, rng=9)
    independent = bradley_terry(comparisons(repeated), prior=0, n_resamples=2000, rng=9)
    spread = {name: float(np.std(fit.distribution[:, 0]))
              for name, fit in (("sample", clustered), ("comparison", independent))}  # fmt: skip
    assert spread["sample"] > 1.8 * spread["comparison"]  # √5 expected
    # five copies of every comparison within the same samples: the same fit and the same spread
    assert np.allclose(per_sample.distribution, clustered.distribution, atol=1e-8)
