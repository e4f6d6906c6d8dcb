"""The intervals `auto` chooses, against independent references: statsmodels' Wilson, scipy's t
(one-sample and paired), statsmodels' Newcombe for independent margins (the paired formula with
φ = 0), exact enumeration of coverage, scipy's binomial test, and scipy's own BCa levels computed
on the very resamples calipers drew."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.stats import _resampling
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from calipers.errors import InputError
from calipers.stats import mean_bootstrap
from calipers.stats.estimate import (
    NoInterval,
    mean_interval,
    paired_interval,
    sign_test,
    wilson_bounds,
)
from calipers.stats.intervals import z_from_confidence

Z = z_from_confidence(0.95)


def test_ten_of_ten_correct_has_wilsons_lower_bound() -> None:
    interval = mean_interval(np.ones(10))
    low, _ = proportion_confint(10, 10, alpha=0.05, method="wilson")
    assert interval.formula == "wilson" and interval.method == "score"
    assert interval.low == pytest.approx(low) and interval.high == pytest.approx(1.0)
    assert interval.low > 0.69  # not collapsed to [1, 1]


@pytest.mark.parametrize(("x", "n"), [(5, 10), (7, 20), (30, 50), (17, 200), (150, 200)])
def test_wilson_away_from_the_edges_is_statsmodels_wilson(x: int, n: int) -> None:
    values = np.r_[np.ones(x), np.zeros(n - x)]
    interval = mean_interval(values)
    ref = proportion_confint(x, n, alpha=0.05, method="wilson")
    assert (interval.low, interval.high) == pytest.approx(ref)


@pytest.mark.parametrize("x", [1, 2, 3, 4])
def test_near_zero_the_lower_bound_is_the_one_sided_poisson_bound(x: int) -> None:
    n = 30
    low, _ = wilson_bounds(x, n, Z, 0.05)
    assert low == pytest.approx(stats.chi2.ppf(0.025, 2 * x) / (2 * n))
    _, high = wilson_bounds(n - x, n, Z, 0.05)  # mirrored near 1
    assert high == pytest.approx(1 - stats.chi2.ppf(0.025, 2 * x) / (2 * n))


@pytest.mark.parametrize("n", [10, 20, 30, 50, 100, 200])
@pytest.mark.parametrize("p", [0.02, 0.0325, 0.5, 0.675, 0.98])
def test_score_interval_covers_by_exact_enumeration(n: int, p: float) -> None:
    covered = 0.0
    for x in range(n + 1):
        low, high = wilson_bounds(x, n, Z, 0.05)
        if low <= p <= high:
            covered += stats.binom.pmf(x, n, p)
    assert covered >= 0.93, covered


def test_t_interval_is_scipys_one_sample_t() -> None:
    rng = np.random.default_rng(1)
    x = rng.gamma(2.0, 1.0, 12)
    interval = mean_interval(x)
    ref = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    assert interval.formula == "t" and interval.df == 11
    assert (interval.low, interval.high) == pytest.approx((ref.low, ref.high))


def test_clustered_t_is_the_t_interval_of_cluster_means_for_equal_clusters() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(15, 3))
    clusters = np.repeat(np.arange(15), 3)
    interval = mean_interval(x.ravel(), clusters=clusters)
    ref = stats.ttest_1samp(x.mean(axis=1), 0.0).confidence_interval(0.95)
    assert interval.df == 14 and interval.n_units == 15 and interval.n_observations == 45
    assert (interval.low, interval.high) == pytest.approx((ref.low, ref.high))


def test_paired_t_is_scipys_paired_t() -> None:
    rng = np.random.default_rng(3)
    c = rng.integers(1, 6, 25).astype(float)
    t = np.clip(c + rng.integers(-1, 3, 25), 1, 5).astype(float)
    interval = paired_interval(c, t)
    ref = stats.ttest_rel(t, c).confidence_interval(0.95)
    assert (interval.low, interval.high) == pytest.approx((ref.low, ref.high))


def test_newcombe_with_uncorrelated_margins_is_statsmodels_newcombe() -> None:
    # a·d = b·c makes φ = 0: the paired formula reduces to the independent one.
    both, t_only, c_only, neither = 8, 4, 6, 3  # 8·3 = 4·6
    c = np.r_[np.ones(both), np.zeros(t_only), np.ones(c_only), np.zeros(neither)]
    t = np.r_[np.ones(both), np.ones(t_only), np.zeros(c_only), np.zeros(neither)]
    interval = paired_interval(c, t)
    n = c.size
    ref = confint_proportions_2indep(
        both + t_only, n, both + c_only, n, method="newcomb", compare="diff"
    )
    assert interval.formula == "newcombe"
    assert (interval.low, interval.high) == pytest.approx(ref)


def test_newcombe_without_discordance_still_has_width() -> None:
    c = np.r_[np.ones(9), np.zeros(1)]
    interval = paired_interval(c, c.copy())
    assert interval.estimate == 0.0 and interval.low < -0.1 and interval.high > 0.1


def test_newcombe_coverage_by_exact_enumeration_with_rare_discordance() -> None:
    # 0.95 vs 0.97 on highly correlated pairs: cells (both, t only, c only, neither).
    probs = np.array([0.945, 0.025, 0.005, 0.025])
    truth = probs[1] - probs[2]
    for n in (10, 20, 50):
        covered = 0.0
        for a in range(n + 1):
            for b in range(n + 1 - a):
                for k in range(n + 1 - a - b):
                    d = n - a - b - k
                    pmf = stats.multinomial.pmf([a, b, k, d], n, probs)
                    if pmf < 1e-12:
                        continue
                    c = np.r_[np.ones(a), np.zeros(b), np.ones(k), np.zeros(d)]
                    t = np.r_[np.ones(a), np.ones(b), np.zeros(k), np.zeros(d)]
                    i = paired_interval(c, t)
                    covered += pmf * (i.low <= truth <= i.high)
        assert covered >= 0.93, (n, covered)


def test_no_interval_without_spread_or_units() -> None:
    with pytest.raises(NoInterval, match="all 8 paired differences are equal"):
        paired_interval(np.arange(8.0), np.arange(8.0) + 1)
    with pytest.raises(NoInterval, match="3 independent units: a t interval needs at least 6"):
        paired_interval([1.0, 2.0, 3.0], [2.0, 3.5, 4.0])
    with pytest.raises(NoInterval, match="1 independent unit"):
        mean_interval([0.2, 0.4], clusters=[7, 7])


def test_a_bootstrap_needs_fifty_units_and_score_needs_zero_one() -> None:
    with pytest.raises(NoInterval, match="at least 200 independent units"):
        mean_interval(np.arange(20.0), method="percentile")
    with pytest.raises(NoInterval, match="0/1 outcomes undercovers"):
        mean_interval(np.r_[np.ones(300), np.zeros(300)], method="bca")
    with pytest.raises(InputError, match="0/1 outcomes"):
        mean_interval([0.5, 1.0, 0.0], method="score")
    with pytest.raises(InputError, match="unknown interval method"):
        mean_interval([0.0, 1.0], method="wald")


def test_design_effect_widens_the_score_interval_for_clustered_outcomes() -> None:
    # 20 samples × 3 epochs, each sample all-pass or all-fail: 60 observations worth 20.
    per_sample = np.r_[np.ones(12), np.zeros(8)]
    x = np.repeat(per_sample, 3)
    clusters = np.repeat(np.arange(20), 3)
    clustered = mean_interval(x, clusters=clusters)
    naive = mean_interval(x)
    # 20 independent units, and Korn & Graubard's allowance for a variance from 20 clusters.
    n_eff = 20 * (stats.norm.ppf(0.975) / stats.t.ppf(0.975, 19)) ** 2
    assert clustered.n_effective == pytest.approx(n_eff)
    ref = proportion_confint(0.6 * n_eff, n_eff, alpha=0.05, method="wilson")
    assert (clustered.low, clustered.high) == pytest.approx(ref)
    assert naive.high - naive.low < clustered.high - clustered.low


@pytest.mark.parametrize(("pos", "neg"), [(3, 0), (9, 1), (12, 4), (0, 0)])
def test_sign_test_is_the_exact_binomial_test(pos: int, neg: int) -> None:
    d = np.r_[np.ones(pos), -np.ones(neg), np.zeros(5)]
    expected = stats.binomtest(pos, pos + neg).pvalue if pos + neg else 1.0
    assert sign_test(d) == pytest.approx(expected)


@pytest.mark.parametrize("kind", ["binary", "likert"])
def test_bca_levels_are_scipys_on_the_same_resamples(kind: str) -> None:
    rng = np.random.default_rng(4)
    n = 80
    if kind == "binary":
        x = (rng.random(n) < 0.7).astype(float)
    else:
        x = rng.integers(1, 6, n).astype(float)
    boot = mean_bootstrap(x, method="bca", n_resamples=4000, rng=9)
    # Discrete data: many resamples tie with the estimate, which is where z0 used to differ.
    assert np.any(boot.distribution == x.mean())
    alpha_1, alpha_2, _ = _resampling._bca_interval(
        (x,), lambda a, axis=-1: np.mean(a, axis=axis), axis=-1, alpha=0.025,
        theta_hat_b=boot.distribution[np.newaxis, :], batch=None, xp=np,
    )  # fmt: skip
    levels = (float(np.squeeze(alpha_1)), float(np.squeeze(alpha_2)))
    assert boot.levels == pytest.approx(levels, abs=1e-12)


def test_sign_test_detectable_difference_has_the_power_it_claims() -> None:
    # Monte Carlo of the model it assumes: each unit moves with probability ψ₀ + δ, up with
    # probability ½ + δ/(2ψ); the exact sign test must reject 80% of the time at the reported δ.
    from calipers.stats.power import sign_test_detectable

    rng = np.random.default_rng(6)
    for units, share in ((20, 0.3), (60, 0.1), (200, 0.05)):
        delta = sign_test_detectable(units, share, 1.0, alpha=0.05)
        assert delta is not None and 0 < delta < 1
        psi = min(1.0, share + delta)
        moved = rng.binomial(units, psi, 4000)
        up = rng.binomial(moved, 0.5 + delta / (2 * psi))
        rejected = [stats.binomtest(int(u), int(m)).pvalue <= 0.05 if m else False
                    for u, m in zip(up, moved, strict=True)]  # fmt: skip
        assert np.mean(rejected) == pytest.approx(0.8, abs=0.025)
    assert sign_test_detectable(5, 0.5, 1.0, alpha=0.05) == float("inf")  # 5 units: p ≥ 0.0625
