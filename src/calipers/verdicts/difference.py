"""One quantity's paired difference: its interval over the units both runs have (chosen by the
kind of data, `calipers.stats.estimate`), the exact tests beside it, its p-value, whether it is
significant (the interval and, for 0/1 outcomes one per unit, the exact McNemar test; Holm across
a comparison's layers) and the minimum detectable effect. `calipers.verdicts.paired` makes one
per quantity of a comparison; the summaries' path (`summary_intervals`) reads the same rules."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.stats import holm
from calipers.stats.bootstrap import dense_codes
from calipers.stats.detectable import simulated_detectable
from calipers.stats.estimate import paired_interval
from calipers.stats.interval_parts import (
    Interval,
    NoInterval,
    cluster_means,
    sample_weights,
    sd_allowance,
    sign_test,
    t_quantile,
    weighted_mean,
)
from calipers.stats.paired_tests import clustered_standard_error, mcnemar_exact, paired_t
from calipers.stats.paired_tests import sign_test as exact_sign_test
from calipers.stats.power import sign_test_detectable

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass
class Difference:
    """treatment − control for one quantity over the pairs that have it on both sides, with its
    interval (or the reason there is none) and a two-sided p-value."""

    estimate: float | None
    n_pairs: int  # independent units (clusters) with the quantity on both sides
    interval: Interval | None
    refusal: str | None = None  # why there is no interval
    p_value: float | None = None  # of "no difference", from the interval's own method
    exact_p: float | None = None  # exact sign test over the units' differences
    control_mean: float | None = None  # both means over the same pairs as the difference
    treatment_mean: float | None = None
    n_observations: int = 0
    constant: bool = False  # every unit moved by the same nonzero amount (no interval)
    unchanged: bool = False  # every unit's difference is exactly 0 (no interval)
    significant: bool = False  # decided by `compare_pair` (exact agreement, multiplicity)

    @property
    def low(self) -> float | None:
        return self.interval.low if self.interval else None

    @property
    def high(self) -> float | None:
        return self.interval.high if self.interval else None

    @property
    def below_zero(self) -> bool:
        return self.significant and self.estimate is not None and self.estimate < 0

    @property
    def monte_carlo_uncertain(self) -> bool:
        return self.interval is not None and self.interval.within_monte_carlo_error(0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "significant": self.significant,
            "n_pairs": self.n_pairs,
            "n_observations": self.n_observations,
            "control_mean": self.control_mean,
            "treatment_mean": self.treatment_mean,
            "p_value": self.p_value,
            "exact_p": self.exact_p,
            "interval": self.interval.to_dict() if self.interval else None,
            "refusal": self.refusal,
            "monte_carlo_uncertain": self.monte_carlo_uncertain,
        }


def pair_weights(
    samples: IntArray | None, weight: FloatArray | None, rows: npt.NDArray[np.bool_]
) -> FloatArray | None:
    """The weights of `rows` in a mean of pairs: each sample weighs the same (its epochs
    averaged), times the pair's weight; None without samples (every row weighs 1)."""
    if samples is None:
        return None
    w = sample_weights(samples[rows])
    return w if weight is None else w * weight[rows]


def paired_tests(
    composite: Difference,
    c: FloatArray,
    t: FloatArray,
    units: IntArray,
    samples: IntArray,
    weight: FloatArray | None = None,
) -> dict[str, Any]:
    """The exact and analytic tests of the composite difference, each under its own name, and
    which of them (with the interval) decides significance."""
    both = np.isfinite(c) & np.isfinite(t)
    cb, tb = c[both], t[both]
    d = tb - cb
    codes = dense_codes(units[both])
    out: dict[str, Any] = {"decided_by": decided_by(composite)}
    if not d.size:
        return out
    w = pair_weights(samples, weight, both)
    unit_d = cluster_means(d, codes, w)
    binary = bool(np.all((cb == 0) | (cb == 1)) and np.all((tb == 0) | (tb == 1)))
    if binary and unit_d.size == d.size:
        test: Any = mcnemar_exact(int(np.sum(tb > cb)), int(np.sum(cb > tb)))
        out["mcnemar"] = test.to_dict()
    else:
        out["mcnemar"] = None
        out["mcnemar_refusal"] = mcnemar_refusal(binary)
    out["sign"] = exact_sign_test(unit_d).to_dict()
    test = paired_t(unit_d)
    out["paired_t"] = None if test is None else test.to_dict()
    test = clustered_standard_error(d, codes, w)
    out["clustered_se"] = None if test is None else test.to_dict()
    return out


def mcnemar_refusal(binary: bool) -> str:
    """Why McNemar's test is not given (the summaries' report says it in the same words)."""
    if not binary:
        return "the values are not all 0/1"
    return (
        "units have several observations (epochs or clusters): the sign test on the units' "
        "mean differences is the exact test"
    )


def decided_by(d: Difference) -> str:
    i = d.interval
    if i is None:
        return "the exact sign test (no interval: " + (d.refusal or "none") + ")"
    if i.formula == "newcombe-cc":
        if i.n_units == i.n_observations:
            return "Newcombe's interval, and the exact McNemar test must agree"
        return "Newcombe's interval on the effective sample size (clusters)"
    if i.formula in ("t", "hall-t"):
        return f"the paired t interval (cluster-robust standard error, {i.df:g} df)"
    if i.method == "betting":
        return "the betting interval (distribution-free on the declared bounds)"
    if i.method == "studentized":
        return "the studentized bootstrap interval (no bounds declared)"
    return f"the {i.formula} bootstrap interval"


def paired_difference(
    c: FloatArray,
    t: FloatArray,
    units: IntArray,
    *,
    samples: IntArray | None = None,
    weight: FloatArray | None = None,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    method: str,
    bounds: tuple[float, float] | None = None,
) -> Difference:
    """The difference over the rows present on both sides, its interval and p-values. With
    `samples` (each row's sample) every sample weighs the same: means and the interval are of
    per-sample epoch means (docs/statistics.md, the estimand). `bounds`: each side's declared
    bounds (the betting interval's; None: unbounded)."""
    both = np.isfinite(c) & np.isfinite(t)
    groups = units[both]
    n_pairs = int(np.count_nonzero(np.bincount(groups))) if groups.size else 0
    if n_pairs == 0:
        return Difference(None, 0, None, refusal="no pair has this quantity on both sides")
    cb, tb = c[both], t[both]
    d = tb - cb
    w = pair_weights(samples, weight, both)
    c_mean, t_mean = weighted_mean(cb, w), weighted_mean(tb, w)
    codes = dense_codes(groups)
    unit_d = cluster_means(d, codes, w)
    exact_p = sign_test(unit_d)
    try:
        interval = paired_interval(
            cb, tb, clusters=codes, weights=w, method=method,
            confidence_level=confidence_level, n_resamples=n_resamples, rng=seed, bounds=bounds,
        )  # fmt: skip
    except NoInterval as why:
        # Without spread the exact sign test is the only evidence: it stands in as the p-value.
        return Difference(
            weighted_mean(d, w), n_pairs, None, why.reason, exact_p, exact_p,
            control_mean=c_mean, treatment_mean=t_mean, n_observations=int(d.size),
            constant=n_pairs >= 2 and bool(np.ptp(unit_d) == 0) and bool(unit_d[0] != 0),
            unchanged=n_pairs >= 2 and not np.any(unit_d),
        )  # fmt: skip
    return Difference(
        interval.estimate, n_pairs, interval, None, interval_p_value(interval), exact_p,
        control_mean=c_mean, treatment_mean=t_mean, n_observations=int(d.size),
    )  # fmt: skip


def detectable_difference(
    d: Difference,
    c: FloatArray,
    t: FloatArray,
    units: IntArray,
    alpha: float,
    samples: IntArray | None = None,
    weight: FloatArray | None = None,
    bounds: tuple[float, float] | None = None,
) -> float | None:
    """The MDE at 80% power. On declared `bounds` where `auto` chose the interval, or for a
    betting interval, by simulating the procedure at the alternative (`simulated_detectable`:
    `auto` may choose another interval there, and the betting interval's width depends on the
    location and the path of the values); otherwise from the interval's standard error
    (noncentral t on its df); for paired 0/1 outcomes also from the exact McNemar test the verdict
    requires, whichever is larger — a handful of discordant pairs, not the standard error, limits
    what is detectable. inf when no difference is detectable; None without an interval."""
    if d.interval is None:
        return None
    chosen = d.interval.reason is not None and d.interval.method in ("t", "betting")
    if bounds is not None and (chosen or d.interval.method == "betting"):
        both = np.isfinite(c) & np.isfinite(t)
        w = pair_weights(samples, weight, both)
        codes = dense_codes(units[both])
        unit_w = np.bincount(codes, weights=w) if w is not None else np.bincount(codes)
        unit_c = cluster_means(c[both], codes, w)
        found = simulated_detectable(
            cluster_means(t[both], codes, w) - unit_c, control=unit_c, scale=bounds,
            weights=unit_w.astype(np.float64), auto=chosen,
            confidence_level=d.interval.confidence_level,
        )  # fmt: skip
        if found is not None:
            return found
    mde = d.interval.detectable_effect()
    if d.interval.formula != "newcombe-cc":
        return mde
    both = np.isfinite(c) & np.isfinite(t)
    mde = _binary_detectable(t[both] - c[both], d.interval)
    if d.interval.n_units < d.interval.n_observations:
        return mde  # with clusters the score interval alone decides (Korn–Graubard df)
    w = pair_weights(samples, weight, both)
    unit_d = cluster_means(t[both] - c[both], dense_codes(units[both]), w)
    moved = unit_d[unit_d != 0]
    step = float(np.mean(np.abs(moved))) if moved.size else 1.0
    exact = sign_test_detectable(unit_d.size, moved.size / unit_d.size, step, alpha=alpha)
    return mde if exact is None else max(mde, exact)


def _binary_detectable(diff: FloatArray, interval: Interval, power: float = 0.8) -> float:
    return binary_detectable(float(np.mean(diff != 0)), interval, power)


def binary_detectable(psi0: float, interval: Interval, power: float = 0.8) -> float:
    """δ = z₁₋α/₂·SE₀ + z_power·SE₁(δ): the null standard error from the interval, and under the
    alternative the variance of a paired 0/1 difference with the discordance it needs — an effect
    δ adds up to |δ| discordant pairs (ψ₁ = ψ₀ + δ), so its variance is ψ₁ − δ², not the null's.
    `psi0`: the share of discordant observation pairs (the summaries give it without the rows)."""
    z_crit = interval.critical_value()
    z_pow = NormalDist().inv_cdf(power)
    se0 = interval.standard_error
    n_alt = interval.n_effective
    clustered = interval.n_units < interval.n_observations
    if clustered:  # a clustered SE rests on G − 1 df
        se0 *= sd_allowance(interval.n_units - 1)
        z_pow = t_quantile(power, interval.n_units - 1)  # as the critical value is, via n_eff
        # The effect's own design effect is unknowable from the null data (near 0 or 1 they hardly
        # vary): plan on its worst case, every observation of a unit moving together (n_eff = G).
        g = interval.n_units
        n_alt = min(
            n_alt, g * (z_crit / t_quantile(1 - (1 - interval.confidence_level) / 2, g - 1)) ** 2
        )
    delta = (z_crit + z_pow) * se0
    for _ in range(60):
        psi1 = min(1.0, psi0 + delta)
        se1 = max(se0, math.sqrt(max(psi1 - delta * delta, 0.0) / n_alt))
        # A score interval's width is read from the data it is computed on: under the
        # alternative, from ψ₁ discordant pairs on about the same effective n (with rare
        # discordance at n = 10 × 3 epochs, the null's width promised 80% and delivered 60%).
        crit = max(se0, se0 * math.sqrt(psi1 / psi0)) if clustered and psi0 > 0 else se0
        nxt = min(1.0, z_crit * crit + z_pow * se1)
        if abs(nxt - delta) < 1e-12:
            break
        delta = nxt
    return delta


def interval_p_value(interval: Interval) -> float:
    """Two-sided p-value of 0 by the interval's own reference distribution."""
    if interval.p_value is not None:  # betting (1/capital at 0), studentized (its t* law)
        return interval.p_value
    if interval.bootstrap is not None:
        dist = interval.bootstrap.distribution
        below, above = float(np.mean(dist <= 0)), float(np.mean(dist >= 0))
        return min(1.0, 2.0 * min(below, above))
    if interval.standard_error <= 0:
        return 0.0 if interval.estimate != 0 else 1.0
    stat = abs(interval.estimate) / interval.standard_error
    if interval.df is not None:
        from scipy.special import stdtr

        return float(2 * stdtr(interval.df, -stat))
    return float(2 * NormalDist().cdf(-stat))


def significant(d: Difference, alpha: float) -> bool:
    """The interval excludes 0 — and, for paired 0/1 outcomes one per unit, the exact McNemar test
    agrees: a score interval on a handful of discordant pairs is an approximation the exact test
    checks (with clusters, Korn–Graubard's df allowance in the score interval does that work).
    Differences without spread (every unit moved by the same amount) have no interval: the exact
    sign test alone decides (3 pairs all +1: p = 0.25, not significant; 40: p ≈ 2e-12)."""
    if d.interval is None:
        return d.constant and d.exact_p is not None and d.exact_p <= alpha
    if d.interval.contains(0.0):
        return False
    if d.interval.formula == "newcombe-cc" and d.interval.n_units == d.interval.n_observations:
        return d.exact_p is not None and d.exact_p <= alpha
    return True


def holm_significance(components: dict[str, Difference], alpha: float) -> None:
    """Layers are tested together: a layer moved when its Holm-adjusted p-value is ≤ α."""
    tested = [n for n, d in components.items() if d.p_value is not None]
    if not tested:
        return
    adjusted = holm([components[n].p_value or 0.0 for n in tested])
    for name, p in zip(tested, adjusted, strict=True):
        d = components[name]
        d.significant = bool(p <= alpha) and significant(d, alpha)
