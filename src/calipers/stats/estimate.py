"""Intervals for a mean and a paired difference that hold at small n, near 0 and 1, and with
clusters — chosen by the kind of data, with the method recorded in the result.

`auto` picks by what the values are (docs/statistics.md, measured in docs/calibration.md):

    one run, values all 0/1                → "score": Wilson, boundary-modified, on n_eff
    paired runs, both sides all 0/1        → "score": Newcombe's hybrid score interval, on n_eff
    anything else                          → "t": cluster-robust standard error, t with G − 1 df

Clusters (a sample's epochs, a group, a task) enter as a design effect for the score intervals —
n_eff = n · var_iid / var_clustered, kept within [G, n] — and as the cluster-robust (CR1) standard
error for t. `percentile` and `bca` resample clusters (`calipers.stats.bootstrap`) and are offered
as overrides only where the harness measured them to hold (MIN_BOOTSTRAP_UNITS clusters).

When the data cannot support an interval the functions raise `NoInterval` with the reason; the
caller reports the reason instead of a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats._t975 import T975
from calipers.stats.betting import betting_interval
from calipers.stats.bootstrap import BootstrapResult, check_weights, dense_codes, mean_bootstrap
from calipers.stats.intervals import z_from_confidence
from calipers.stats.shape import t_adequacy
from calipers.stats.studentized import studentized_interval

IntervalMethod = Literal["auto", "score", "t", "betting", "studentized", "percentile", "bca"]
INTERVAL_METHODS: tuple[str, ...] = (
    "auto", "score", "t", "betting", "studentized", "percentile", "bca",
)  # fmt: skip
Bounds = tuple[float, float]
FloatArray = npt.NDArray[np.float64]

# Below this many clusters a bootstrap interval undercovered (at 50: 0.92 and null false verdicts
# 6.4% on continuous data, docs/calibration.md): refused, as it is on 0/1 outcomes at any n.
MIN_BOOTSTRAP_UNITS = 200
# Below this many units a t interval on skewed or discrete scores covered 90–93%, and no exact
# test can reach α = 0.05 (the sign test needs 6): refused.
MIN_T_UNITS = 6
# The studentized bootstrap (unbounded metrics the t rule refuses) below this many units: refused.
MIN_STUDENTIZED_UNITS = 10
STUDENTIZED_RESAMPLES = 2_000


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
            return far + _normal_quantile(power) * self.standard_error
        if self.df is not None:
            from scipy.special import nctdtrinc

            ncp = float(nctdtrinc(self.df, 1.0 - power, self.critical_value()))
            return ncp * self.standard_error * sd_allowance(self.df)
        return (self.critical_value() + _normal_quantile(power)) * self.standard_error

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


def _normal_quantile(q: float) -> float:
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


def _codes(x: FloatArray, clusters: npt.ArrayLike | None) -> npt.NDArray[np.intp]:
    if clusters is None:
        return np.arange(x.size, dtype=np.intp)
    labels = np.asarray(clusters)
    if labels.shape != x.shape:
        raise InputError(f"clusters has {labels.size} labels for {x.size} observations")
    return dense_codes(labels)


def _sums_sizes(
    x: FloatArray, codes: npt.NDArray[np.intp], w: FloatArray | None
) -> tuple[FloatArray, FloatArray, float]:
    """Each cluster's weighted sum s_g and weight m_g, and the total weight (n unweighted)."""
    if w is None:
        sums = np.asarray(np.bincount(codes, weights=x), dtype=np.float64)
        return sums, np.bincount(codes).astype(np.float64), x.size
    sizes = np.asarray(np.bincount(codes, weights=w), dtype=np.float64)
    return np.asarray(np.bincount(codes, weights=w * x), dtype=np.float64), sizes, sizes.sum()


def _clustered_variance(
    x: FloatArray, codes: npt.NDArray[np.intp], w: FloatArray | None = None
) -> tuple[float, int]:
    """CR1 variance of the ratio mean Σwx/Σw over clusters, and the number of clusters G:
    G/(G−1) · Σ_g (s_g − θ·m_g)² / (Σw)², s_g and m_g the cluster's weighted sum and weight."""
    return _cr1(_sums_sizes(x, codes, w), weighted_mean(x, w))


def _cr1(found: tuple[FloatArray, FloatArray, float], theta: float) -> tuple[float, int]:
    """`_clustered_variance` from the clusters' sums and weights and the mean θ."""
    sums, sizes, total = found
    g = sums.size
    resid = sums - theta * sizes
    return float(g / (g - 1) * (resid @ resid) / (total**2)), g


def _effective_n(
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
    clustered, _ = _clustered_variance(x, codes, w)
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


def _check_method(method: str) -> None:
    if method not in INTERVAL_METHODS:
        raise InputError(
            f"unknown interval method '{method}'",
            hint="Methods: " + ", ".join(INTERVAL_METHODS) + ".",
            parameters=["interval"],
        )


def mean_interval(
    values: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
    method: str = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = None,
    bounds: Bounds | None = None,
) -> Interval:
    """Interval for the mean of `values` (whole clusters as the independent units); with
    `weights`, of the weighted mean Σwx/Σw (`sample_weights`: the mean of per-sample means).
    `bounds`: the values' declared bounds (None: unbounded) — what makes a distribution-free
    interval possible."""
    _check_method(method)
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise InputError("values must be a one-dimensional array of finite numbers")
    codes, g = _units_of(x, clusters)
    w = check_weights(weights, x)
    # 0/1 values are pass/fail only on a 0–1 scale: a run of 1s on a declared 1–5 scale is a
    # run at its bottom (Wilson's interval there covered 0.68 of a truth of 1.06)
    binary = is_binary(x) and _unit_scale(bounds)
    reason = None
    if method == "auto" and not binary:
        method, reason = _choose(x, codes, w, bounds, what="values")
    method = _resolve(method, binary, "0/1 outcomes")
    if method == "score":
        return _wilson(x, codes, g, confidence_level, w)
    if method == "t":
        made = _t_interval(x, codes, confidence_level, w, what="values", skew_corrected=True)
        return replace(made, reason=reason)
    if method in ("betting", "studentized"):
        return _distribution_free(
            x, codes, w, method, bounds, confidence_level, rng, reason, null_value=None
        )
    return _bootstrap(x, codes, g, w, method, confidence_level, n_resamples, rng, binary=binary)


def _choose(
    x: FloatArray,
    codes: npt.NDArray[np.intp],
    w: FloatArray | None,
    bounds: Bounds | None,
    *,
    what: str,
) -> tuple[str, str]:
    """`auto` on values that are not all 0/1: with declared bounds, t where the rule of
    `calipers.stats.shape` says it holds, else the betting interval; without bounds no interval
    (NoInterval, naming the bounds, or an interval asked for by name, as the way out)."""
    units = cluster_means(x, codes, w)
    if what == "differences" and np.ptp(units) == 0:
        # every unit moved by the same amount (0: unchanged): the exact sign test and the exact
        # bound span·(1 − α^(1/G)) speak for it (`calipers.verdicts.gates`), tighter than any
        # interval; the t interval refuses with that reason
        return "t", "every unit's difference is the same: no interval, the exact tests decide"
    rule = t_adequacy(units)
    if bounds is None:
        # Without bounds no interval holds for every distribution (Bahadur & Savage 1956): a
        # tail the sample has not shown can put the mean anywhere, and no rule read from the
        # sample can see it — on lognormal scores (log sd 1.2) the t intervals the t rule let
        # through covered 0.59 at 100 units and 0.91 at 1,000, the studentized bootstrap
        # 0.90–0.93 at 30–100 (docs/statistics.md). Refused by default, with the ways out.
        raise NoInterval(
            f"no bounds are declared for these {what}, and without bounds no interval holds for "
            "every distribution (a heavy tail the sample has not shown can move the mean "
            "anywhere): declare the metric's bounds (--bounds LOW,HIGH) for the "
            "distribution-free interval, or name an interval that assumes light tails "
            f"(--interval t or studentized; the t rule: {rule.reason})"
        )
    if rule.holds:
        return "t", rule.reason
    return "betting", (
        f"{rule.reason}; the {what} are bounded by [{bounds[0]:g}, {bounds[1]:g}]: the "
        "betting interval holds for every distribution"
    )


def _distribution_free(
    x: FloatArray,
    codes: npt.NDArray[np.intp],
    w: FloatArray | None,
    method: str,
    bounds: Bounds | None,
    confidence_level: float,
    rng: int | np.random.Generator | None,
    reason: str | None,
    *,
    null_value: float | None,
) -> Interval:
    """The betting interval (declared bounds) or the studentized bootstrap, over the units'
    (weighted) sums; the standard error reported is the CR1 one."""
    sums, sizes, _ = _sums_sizes(x, codes, w)
    g = sums.size
    means = sums / sizes
    variance = float(_clustered_variance(x, codes, w)[0]) if g > 1 else 0.0
    se = math.sqrt(max(variance, 0.0))
    if method == "betting":
        if bounds is None:
            raise InputError(
                "the betting interval needs the metric's declared bounds",
                hint="Declare them (--bounds LOW,HIGH), or use --interval auto.",
                parameters=["interval", "bounds"],
            )
        bet = betting_interval(
            means, bounds=bounds, weights=sizes, confidence_level=confidence_level,
            null_value=null_value,
        )  # fmt: skip
        return Interval(
            bet.estimate, bet.low, bet.high, "betting", "hedged-capital", confidence_level, se,
            None, g, int(x.size), float(x.size), None, reason, bet.p_value, bet.bounds,
        )  # fmt: skip
    if g < MIN_STUDENTIZED_UNITS:
        raise NoInterval(
            f"{_units(g)} of a metric without declared bounds"
            + (f" ({reason})" if reason else "")
            + f": the studentized bootstrap needs at least {MIN_STUDENTIZED_UNITS}; declare the "
            "metric's bounds (--bounds LOW,HIGH) for an interval that holds at any n"
        )
    if se <= 0:
        raise NoInterval(f"all {g} units have the same value: no spread to make an interval from")
    made = studentized_interval(
        sums, sizes, confidence_level=confidence_level, n_resamples=STUDENTIZED_RESAMPLES,
        rng=rng,
    )  # fmt: skip
    if not (math.isfinite(made.low) and math.isfinite(made.high)):
        raise NoInterval(
            f"the studentized bootstrap of {_units(g)} is unbounded (too many resamples without "
            "spread); declare the metric's bounds (--bounds LOW,HIGH) or collect more units"
        )
    return Interval(
        made.estimate, made.low, made.high, "studentized", "bootstrap-t", confidence_level, se,
        None, g, int(x.size), float(x.size), None, reason, made.p_value, None, made.seed,
    )  # fmt: skip


def _units_of(x: FloatArray, clusters: npt.ArrayLike | None) -> tuple[npt.NDArray[np.intp], int]:
    """Cluster codes and their number G; NoInterval below 2 units."""
    codes = _codes(x, clusters)
    g = int(codes.max()) + 1 if codes.size else 0
    if g < 2:
        raise NoInterval(f"{_units(g)}: an interval needs at least 2")
    return codes, g


def _resolve(method: str, binary: bool, what: str) -> str:
    """`auto` → score for 0/1 data, t otherwise; score asked for on other data is an error."""
    if method == "auto":
        return "score" if binary else "t"
    if method == "score" and not binary:
        raise InputError(
            f"the score interval is for {what}; these values are not all 0 or 1",
            hint="Use --interval t (or auto).",
            parameters=["interval"],
        )
    return method


def paired_interval(
    control: npt.ArrayLike,
    treatment: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
    method: str = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = None,
    bounds: Bounds | None = None,
) -> Interval:
    """Interval for mean(treatment − control) over pairs (clusters of pairs as units); with
    `weights`, of the weighted mean difference. `bounds`: the declared bounds of each side's
    values; a difference then lies in [low − high, high − low]."""
    _check_method(method)
    c = np.asarray(control, dtype=np.float64)
    t = np.asarray(treatment, dtype=np.float64)
    if c.shape != t.shape or c.ndim != 1:
        raise InputError(f"control and treatment differ in shape: {c.shape} vs {t.shape}")
    d = t - c
    if not np.all(np.isfinite(d)):
        raise InputError("paired values must be finite")
    codes, g = _units_of(d, clusters)
    w = check_weights(weights, d)
    binary = is_binary(c, t) and _unit_scale(bounds)
    reason = None
    spread = None if bounds is None else (bounds[0] - bounds[1], bounds[1] - bounds[0])
    if method == "auto" and not binary:
        method, reason = _choose(d, codes, w, spread, what="differences")
    method = _resolve(method, binary, "paired 0/1 outcomes")
    if method == "score":
        return _newcombe(c, t, codes, g, confidence_level, w)
    if method == "t":
        # `auto` corrects for skewness as on one run: a candidate that moves a few items a lot
        # skews the differences (a plain t covered 0.93 at 200 pairs where 5% moved by 0.5)
        made = _t_interval(
            d, codes, confidence_level, w, what="paired differences",
            skew_corrected=reason is not None,
        )  # fmt: skip
        return replace(made, reason=reason)
    if method in ("betting", "studentized"):
        return _distribution_free(
            d, codes, w, method, spread, confidence_level, rng, reason, null_value=0.0
        )
    return _bootstrap(d, codes, g, w, method, confidence_level, n_resamples, rng, binary=binary)


def _unit_scale(bounds: Bounds | None) -> bool:
    """Whether 0/1 values can be pass/fail outcomes on these declared bounds (none, or 0–1)."""
    return bounds is None or (float(bounds[0]), float(bounds[1])) == (0.0, 1.0)


def _units(g: int) -> str:
    return f"{g} independent unit" + ("" if g == 1 else "s")


def _wilson(
    x: FloatArray,
    codes: npt.NDArray[np.intp],
    g: int,
    confidence_level: float,
    w: FloatArray | None,
) -> Interval:
    p = weighted_mean(x, w)
    n_eff = _effective_n(x, codes, p * (1 - p) / x.size, confidence_level, w)
    z = z_from_confidence(confidence_level)
    low, high = wilson_bounds(p * n_eff, n_eff, z)
    return Interval(
        p, low, high, "score", "wilson-cc", confidence_level, (high - low) / (2 * z), None, g,
        int(x.size), n_eff,
    )  # fmt: skip


def _newcombe(
    c: FloatArray,
    t: FloatArray,
    codes: npt.NDArray[np.intp],
    g: int,
    confidence_level: float,
    w: FloatArray | None,
) -> Interval:
    """Newcombe (1998) method 11: continuity-corrected Wilson intervals of both margins, combined
    with the phi correlation of the paired 2×2 table; counts scaled to n_eff for clusters. Method
    10 (no correction) covers as little as 81% at n = 10 and 86% at n = 20 in an exact enumeration
    of paired tables (docs/statistics.md); method 11 never below 95.7% there. With weights the
    table holds weighted counts, scaled to n_eff."""
    n = float(c.size)
    d = t - c
    estimate = weighted_mean(d, w)
    iid_variance = float(np.var(d) if w is None else w @ (d - estimate) ** 2 / w.sum()) / n
    n_eff = _effective_n(d, codes, iid_variance, confidence_level, w)
    scale = n_eff / (float(c.size) if w is None else float(w.sum()))
    both = _weighted_count(w, (c == 1) & (t == 1)) * scale
    t_only = _weighted_count(w, (c == 0) & (t == 1)) * scale
    c_only = _weighted_count(w, (c == 1) & (t == 0)) * scale
    neither = n_eff - both - t_only - c_only
    z = z_from_confidence(confidence_level)
    delta, eps = newcombe_half_widths(both, t_only, c_only, neither, z)
    low, high = max(-1.0, estimate - delta), min(1.0, estimate + eps)
    return Interval(
        estimate, low, high, "score", "newcombe-cc", confidence_level, (high - low) / (2 * z),
        None, g, int(c.size), n_eff,
    )  # fmt: skip


def _weighted_count(w: FloatArray | None, rows: npt.NDArray[np.bool_]) -> float:
    """Σw over `rows`; without weights their count — what the dot product with ones gives to
    the bit (a sum of 0s and 1s is exact in any order), without its call into the threaded
    BLAS (a dot of 500,000: 7.5 ms against 0.2 ms single-threaded, 2 loaded cores)."""
    return float(np.count_nonzero(rows)) if w is None else float(w @ rows)


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


def _t_interval(
    x: FloatArray,
    codes: npt.NDArray[np.intp],
    confidence_level: float,
    w: FloatArray | None,
    *,
    what: str,
    skew_corrected: bool = False,
) -> Interval:
    # the clusters' sums and the mean once, for the variance and Hall's correction
    found, estimate = _sums_sizes(x, codes, w), weighted_mean(x, w)
    variance, g = _cr1(found, estimate)
    if g < MIN_T_UNITS:
        raise NoInterval(
            f"{_units(g)}: a t interval needs at least {MIN_T_UNITS} (below that it covered "
            "90–93% on skewed or discrete scores, docs/calibration.md)"
        )
    if variance <= 0:
        raise NoInterval(
            f"all {x.size} {what} are equal ({estimate:+.3f}): no spread to make an interval from"
        )
    se = math.sqrt(variance)
    df = float(g - 1)
    q = t_quantile(1 - (1 - confidence_level) / 2, df)
    low, high, formula = estimate - q * se, estimate + q * se, "t"
    if skew_corrected:
        low, high = _hall_bounds(found, estimate, se, q)
        formula = "hall-t"
    return Interval(
        estimate, low, high, "t", formula, confidence_level, se, df, g, int(x.size), float(x.size),
    )  # fmt: skip


def _hall_bounds(
    found: tuple[FloatArray, FloatArray, float],
    estimate: float,
    se: float,
    q: float,
) -> tuple[float, float]:
    """Hall's (1992) skewness-corrected t: the studentized mean is transformed by
    g(t) = t + γ̂t²/3 + γ̂²t³/27 + γ̂/6G, which removes its skewness to second order, and the interval
    is θ̂ − σ̂·g⁻¹(±q/√G). γ̂ is the skewness of the clusters' influence values u_g = G(s_g − θ̂m_g)/n
    (the values themselves without clusters), so the standard error is the CR1 one. The plain t
    interval of a mean near a bound — a layered composite near 5 at 10 samples — covered 0.88–0.92;
    this one 0.95–0.99 (docs/statistics.md). γ̂ = 0 gives the t interval back."""
    sums, sizes, total = found  # `_sums_sizes` of the values
    g = sums.size
    u = g * (sums - estimate * sizes) / total
    sigma = se * math.sqrt(g)  # Σu²/(G − 1) = G·SE²
    gamma = g / ((g - 1) * (g - 2)) * float(np.sum(u**3)) / sigma**3
    return hall_ends(estimate, sigma, gamma, g, q)


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


def _bootstrap(
    x: FloatArray,
    codes: npt.NDArray[np.intp],
    g: int,
    w: FloatArray | None,
    method: str,
    confidence_level: float,
    n_resamples: int,
    rng: int | np.random.Generator | None,
    *,
    binary: bool,
) -> Interval:
    if binary:
        raise NoInterval(
            f"a {method} bootstrap interval on 0/1 outcomes undercovers near 0 and 1 "
            "(docs/calibration.md): use --interval score (or auto)"
        )
    if g < MIN_BOOTSTRAP_UNITS:
        raise NoInterval(
            f"a {method} bootstrap interval needs at least {MIN_BOOTSTRAP_UNITS} independent "
            f"units (measured undercoverage below, docs/calibration.md); there are {g}: use "
            "--interval auto"
        )
    clustered = g < x.size
    result = mean_bootstrap(
        x,
        clusters=codes if clustered else None,
        weights=w,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        method=method,  # type: ignore[arg-type]
        rng=rng,
    )
    return Interval(
        result.estimate, result.low, result.high, method, method, confidence_level,
        result.standard_error, None, g, int(x.size), float(x.size), result,
    )  # fmt: skip
