"""An interval and the parts every interval is made of: the result (`Interval`, or `NoInterval`
with the reason), quantiles, the units' weights, sums and CR1 variance, the design effect's
effective n, and the closed-form ends the row path (`calipers.stats.estimate`) and the summary
path (`calipers.stats.summary_stats`) share — Wilson's, Newcombe's and Hall's — so that the two
agree."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats._t975 import T975
from calipers.stats.bootstrap import BootstrapResult, dense_codes
from calipers.stats.intervals import z_from_confidence

Bounds = tuple[float, float]
FloatArray = npt.NDArray[np.float64]


class NoInterval(Exception):
    """The data cannot support an interval; `reason` says why, in words for the user."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Interval:
    """An interval for a mean or a mean difference, and how it was made."""

    estimate: float
    low: float
    high: float
    method: str  # "score" (wilson / newcombe), "t", "percentile", "bca"
    formula: str  # "wilson-cc", "newcombe-cc", "t", "hall-t", "percentile", "bca"
    confidence_level: float
    standard_error: float  # on the estimate's scale (for score intervals: width / 2z)
    df: float | None  # degrees of freedom of t (None otherwise)
    n_units: int  # independent units: clusters (or observations when unclustered)
    n_observations: int
    n_effective: float  # observations after the design effect (= n_observations when none)
    bootstrap: BootstrapResult | None = None
    reason: str | None = None  # why `auto` chose this method (None: asked for by name)
    p_value: float | None = None  # the method's own p-value of 0 (betting, studentized)
    bounds: Bounds | None = None  # the declared bounds a betting interval used
    seed: int | None = None  # of the random draws (studentized; betting's orders)

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def within_monte_carlo_error(self, value: float = 0.0) -> bool:
        """Only a bootstrap bound has Monte Carlo error."""
        return self.bootstrap is not None and self.bootstrap.within_monte_carlo_error(value)

    def critical_value(self) -> float:
        """The two-sided quantile the interval used (t or normal; for betting and studentized
        intervals, the wider side's distance from the estimate in standard errors)."""
        if self.method in ("betting", "studentized") and self.standard_error > 0:
            far = max(self.estimate - self.low, self.high - self.estimate)
            return far / self.standard_error
        alpha = 1.0 - self.confidence_level
        if self.df is not None:
            return t_quantile(1.0 - alpha / 2.0, self.df)
        return z_from_confidence(self.confidence_level)

    def detectable_effect(self, power: float = 0.8) -> float:
        """The true difference this design detects with probability `power`: ncp · SE, with ncp
        the noncentrality at which a t test on the interval's df rejects with that power (exact
        for normal data; (z₁₋α/₂ + z_power) without df)."""
        if self.method in ("betting", "studentized"):
            # the estimate must clear the wider side's half-width with the power asked
            far = max(self.estimate - self.low, self.high - self.estimate)
            return far + normal_quantile(power) * self.standard_error
        if self.df is not None:
            from scipy.special import nctdtrinc

            ncp = float(nctdtrinc(self.df, 1.0 - power, self.critical_value()))
            return ncp * self.standard_error * sd_allowance(self.df)
        return (self.critical_value() + normal_quantile(power)) * self.standard_error

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "method": self.method,
            "formula": self.formula,
            "confidence_level": self.confidence_level,
            "standard_error": self.standard_error,
            "df": self.df,
            "n_units": self.n_units,
            "n_observations": self.n_observations,
            "n_effective": self.n_effective,
        }
        if self.reason is not None:
            body["reason"] = self.reason
        if self.bounds is not None:
            body["bounds"] = list(self.bounds)
        if self.seed is not None and self.bootstrap is None:
            body["seed"] = self.seed
        if self.bootstrap is not None:
            body.update(
                n_resamples=self.bootstrap.n_resamples,
                seed=self.bootstrap.seed,
                algorithm=self.bootstrap.algorithm,
            )
        return body


def sd_allowance(df: float) -> float:
    """√(df/χ²₀.₄(df)): the standard error's 60% upper confidence bound over the standard error
    (Browne 1995: plan on an upper bound of the SD, not the estimate). A sample SD is below the
    true one more often than not (median 0.94σ on 4 df), so an MDE from the estimate alone is
    detected less than 80% of the time at small n; 1.21 on 4 df, 1.01 on 199."""
    from scipy.special import chdtri

    return math.sqrt(df / float(chdtri(df, 0.6)))


def t_quantile(q: float, df: float) -> float:
    if q == 0.975 and 1 <= df <= len(T975) and float(df).is_integer():
        return T975[int(df) - 1]
    from scipy.special import stdtrit  # scipy.special imports in 0.2 s; scipy.stats in 2

    return float(stdtrit(df, q))


def normal_quantile(q: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(q)


def is_binary(*arrays: FloatArray) -> bool:
    return all(bool(np.all((a == 0.0) | (a == 1.0))) for a in arrays)


def sign_test(differences: npt.ArrayLike) -> float:
    """Two-sided exact sign test of a zero median: 2·P(Bin(m, ½) ≤ min(k₊, k₋)) over the m
    nonzero differences (the exact McNemar test when they are paired 0/1 outcomes); 1.0 when
    every difference is 0. The full result (statistic, one-sided p) is `paired_tests.sign_test`."""
    from calipers.stats import paired_tests

    return paired_tests.sign_test(differences).p_value


def cluster_means(
    x: FloatArray, codes: npt.NDArray[np.intp], w: FloatArray | None = None
) -> FloatArray:
    """Each cluster's (weighted) mean."""
    if w is None or w.size == 0 or np.all(w == w[0]):
        return np.asarray(np.bincount(codes, weights=x) / np.bincount(codes), dtype=np.float64)
    return np.asarray(np.bincount(codes, weights=w * x) / np.bincount(codes, weights=w))


def sample_weights(samples: npt.ArrayLike) -> FloatArray:
    """1/(rows of the row's sample): with these weights every sample weighs the same however many
    epochs it was scored in, and a weighted mean is the mean of per-sample epoch means — the
    estimand of every scheme (docs/statistics.md), and inspect_ai's headline."""
    codes = dense_codes(np.asarray(samples))
    if codes.size == 0:
        return np.ones(0)
    return np.asarray((1.0 / np.bincount(codes))[codes], dtype=np.float64)


def weighted_mean(x: FloatArray, w: FloatArray | None) -> float:
    """Σwx/Σw; the plain mean (to the last bit) when there are no weights or all are equal."""
    if w is None or w.size == 0 or np.all(w == w[0]):
        return float(x.mean())
    return float((w @ x) / w.sum())


def cluster_codes(x: FloatArray, clusters: npt.ArrayLike | None) -> npt.NDArray[np.intp]:
    if clusters is None:
        return np.arange(x.size, dtype=np.intp)
    labels = np.asarray(clusters)
    if labels.shape != x.shape:
        raise InputError(f"clusters has {labels.size} labels for {x.size} observations")
    return dense_codes(labels)


def cluster_sums(
    x: FloatArray, codes: npt.NDArray[np.intp], w: FloatArray | None
) -> tuple[FloatArray, FloatArray, float]:
    """Each cluster's weighted sum s_g and weight m_g, and the total weight (n unweighted)."""
    if w is None:
        sums = np.asarray(np.bincount(codes, weights=x), dtype=np.float64)
        return sums, np.bincount(codes).astype(np.float64), x.size
    sizes = np.asarray(np.bincount(codes, weights=w), dtype=np.float64)
    return np.asarray(np.bincount(codes, weights=w * x), dtype=np.float64), sizes, sizes.sum()


def clustered_variance(
    x: FloatArray, codes: npt.NDArray[np.intp], w: FloatArray | None = None
) -> tuple[float, int]:
    """CR1 variance of the ratio mean Σwx/Σw over clusters, and the number of clusters G:
    G/(G−1) · Σ_g (s_g − θ·m_g)² / (Σw)², s_g and m_g the cluster's weighted sum and weight."""
    return cr1_from_sums(cluster_sums(x, codes, w), weighted_mean(x, w))


def cr1_from_sums(found: tuple[FloatArray, FloatArray, float], theta: float) -> tuple[float, int]:
    """`clustered_variance` from the clusters' sums and weights and the mean θ."""
    sums, sizes, total = found
    g = sums.size
    resid = sums - theta * sizes
    return float(g / (g - 1) * (resid @ resid) / (total**2)), g


def effective_n(
    x: FloatArray,
    codes: npt.NDArray[np.intp],
    iid_variance: float,
    confidence_level: float,
    w: FloatArray | None = None,
) -> float:
    """n / design effect, within [G, n] — G when the data do not vary (the design effect of
    constant data is unknowable, and G is its worst case) — times (z/t_{G−1})², Korn & Graubard's
    (1998) allowance for a variance estimated from only G clusters. Unequal weights are part of
    the design effect."""
    g = int(codes.max()) + 1
    if g == x.size and w is None:
        return float(x.size)
    clustered, _ = clustered_variance(x, codes, w)
    if iid_variance <= 0 or clustered <= 0:
        n_eff = float(g)
    else:
        n_eff = float(min(x.size, max(g, x.size * iid_variance / clustered)))
    alpha = 1.0 - confidence_level
    z = z_from_confidence(confidence_level)
    return n_eff * (z / t_quantile(1.0 - alpha / 2.0, g - 1)) ** 2


def wilson_bounds(successes: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score interval with continuity correction (Newcombe 1998, method 4): the p with
    |x − np| − ½ ≤ z·√(np(1 − p)). Plain Wilson covers as little as 91–93% for n up to ~100 at
    some p (an exact computation over p, docs/statistics.md); this one never below 95% for n 3–400.
    Counts may be fractional (effective sample sizes)."""
    x = min(max(successes, 0.0), n)
    p, z2 = x / n, z * z
    low = high = p
    if x > 0:
        root = z * math.sqrt(max(0.0, z2 - 2 - 1 / n + 4 * p * (n * (1 - p) + 1)))
        low = max(0.0, (2 * n * p + z2 - 1 - root) / (2 * (n + z2)))
    else:
        low = 0.0
    if x < n:
        root = z * math.sqrt(max(0.0, z2 + 2 - 1 / n + 4 * p * (n * (1 - p) - 1)))
        high = min(1.0, (2 * n * p + z2 + 1 + root) / (2 * (n + z2)))
    else:
        high = 1.0
    return min(low, p), max(high, p)


def newcombe_half_widths(
    both: float, t_only: float, c_only: float, neither: float, z: float
) -> tuple[float, float]:
    """Method 11's distances from the estimate to the lower and upper bound, for a paired 2×2
    table of (possibly fractional, design-effect-scaled) counts. The planner uses it on
    expected counts to know the interval the engine will give."""
    n_eff = both + t_only + c_only + neither
    p1, p2 = (both + t_only) / n_eff, (both + c_only) / n_eff
    l1, u1 = wilson_bounds(both + t_only, n_eff, z)
    l2, u2 = wilson_bounds(both + c_only, n_eff, z)
    margins = (both + t_only) * (c_only + neither) * (both + c_only) * (t_only + neither)
    agree = both * neither - t_only * c_only
    if agree > 0:  # method 11's continuity correction: a positive correlation only counts beyond ½n
        agree = max(0.0, agree - n_eff / 2)
    phi = agree / math.sqrt(margins) if margins > 0 else 0.0
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    eps = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return delta, eps


def hall_ends(theta: float, sigma: float, gamma: float, g: int, q: float) -> tuple[float, float]:
    """The ends of Hall's (1992) skewness-corrected interval around θ: the inverse of
    y + γ̂/(6G) + γ̂y²/3 (+ γ̂²y³/27) at ±q/√G, scaled by σ̂ (γ̂ = 0: the t interval). One copy for
    the rows (`_hall_bounds`) and the summaries (`summary_stats`), so the two agree."""

    def inverse(y: float) -> float:
        y -= gamma / (6 * g)
        if abs(gamma) < 1e-9:
            return y
        return 3.0 / gamma * (float(np.cbrt(1.0 + gamma * y)) - 1.0)

    step = q / math.sqrt(g)
    return theta - sigma * inverse(step), theta - sigma * inverse(-step)
