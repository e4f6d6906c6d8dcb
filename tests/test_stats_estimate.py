"""The intervals `auto` chooses, against independent references: the continuity-corrected score
test inverted numerically (brentq) for Wilson's interval, statsmodels' plain Wilson to show the
correction only widens, scipy's t (one-sample and paired), Newcombe's paired formula assembled from
the inverted score bounds, exact enumeration of coverage, scipy's binomial test, and scipy's own BCa
levels computed on the very resamples calipers drew."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.stats import _resampling
from statsmodels.stats.proportion import proportion_confint

from calipers.stats import mean_bootstrap
from calipers.stats.estimate import mean_interval
from calipers.stats.interval_parts import sign_test, wilson_bounds
from calipers.stats.intervals import z_from_confidence
from interval_refs import cc_score_bounds, hall_bounds

Z = z_from_confidence(0.95)


def test_ten_of_ten_correct_has_wilsons_lower_bound() -> None:
    interval = mean_interval(np.ones(10))
    low, _ = cc_score_bounds(10, 10)
    assert interval.formula == "wilson-cc" and interval.method == "score"
    assert interval.low == pytest.approx(low) and interval.high == pytest.approx(1.0)
    plain, _ = proportion_confint(10, 10, alpha=0.05, method="wilson")
    assert 0.6 < interval.low < plain  # not collapsed to [1, 1]; the correction only widens


@pytest.mark.parametrize(
    ("x", "n"), [(0, 5), (1, 10), (5, 10), (7, 20), (30, 50), (3, 200), (17, 200), (199, 200)]
)
def test_wilson_is_the_inverted_continuity_corrected_score_test(x: int, n: int) -> None:
    values = np.r_[np.ones(x), np.zeros(n - x)]
    interval = mean_interval(values)
    assert (interval.low, interval.high) == pytest.approx(cc_score_bounds(x, n), abs=1e-9)
    plain = proportion_confint(x, n, alpha=0.05, method="wilson")
    assert interval.low <= plain[0] + 1e-12 and interval.high >= plain[1] - 1e-12


@pytest.mark.parametrize("n", [3, 5, 10, 15, 20, 30, 50, 100, 200])
def test_score_interval_covers_at_every_p_by_exact_enumeration(n: int) -> None:
    # Plain Wilson dips to 0.914–0.928 at some p for every n here up to 100; the corrected one
    # is the documented claim: never below 0.95 on a grid of 991 values of p.
    p = np.linspace(0.005, 0.995, 991)
    x = np.arange(n + 1)
    bounds = np.array([wilson_bounds(k, n, Z) for k in x])
    inside = (bounds[None, :, 0] <= p[:, None]) & (p[:, None] <= bounds[None, :, 1])
    coverage = (stats.binom.pmf(x[None, :], n, p[:, None]) * inside).sum(axis=1)
    assert coverage.min() >= 0.949, (n, coverage.min(), p[coverage.argmin()])


def test_symmetric_values_get_scipys_one_sample_t() -> None:
    x = np.r_[np.arange(1.0, 7.0), np.arange(1.0, 7.0)[::-1] + 0.5]  # skewness exactly 0
    interval = mean_interval(x, method="t")  # auto: 12 units are too few to trust t
    ref = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    assert interval.formula == "hall-t" and interval.method == "t" and interval.df == 11
    assert (interval.low, interval.high) == pytest.approx((ref.low, ref.high))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_skewed_values_get_halls_skewness_corrected_t(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.gamma(2.0, 1.0, 12)
    interval = mean_interval(x, method="t")
    assert interval.formula == "hall-t" and interval.df == 11
    assert (interval.low, interval.high) == pytest.approx(hall_bounds(x), abs=1e-9)
    plain = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    # right-skewed: the interval moves up, toward the long tail
    assert interval.high > plain.high and interval.low > plain.low


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
    ref = cc_score_bounds(0.6 * n_eff, n_eff)
    assert (clustered.low, clustered.high) == pytest.approx(ref, abs=1e-9)
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


def test_the_t_quantile_table_is_scipys_bit_for_bit() -> None:
    from scipy.special import stdtrit

    from calipers.stats._t975 import T975 as _T975
    from calipers.stats.interval_parts import t_quantile

    q = 1.0 - (1.0 - 0.95) / 2.0  # as the intervals compute it
    assert q == 0.975 and len(_T975) == 300
    for df in range(1, 301):
        assert t_quantile(q, df) == float(stdtrit(df, q)), df
        assert t_quantile(q, float(df)) == float(stdtrit(float(df), q))
    # off the table: scipy itself
    assert t_quantile(q, 301) == float(stdtrit(301, q))
    assert t_quantile(q, 7.5) == float(stdtrit(7.5, q))
    assert t_quantile(0.995, 10) == float(stdtrit(10, 0.995))
