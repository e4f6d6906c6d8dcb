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
from dataclasses import replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats.betting import betting_interval
from calipers.stats.bootstrap import check_weights, mean_bootstrap
from calipers.stats.interval_parts import (
    Interval,
    NoInterval,
    cluster_codes,
    cluster_means,
    cluster_sums,
    clustered_variance,
    cr1_from_sums,
    effective_n,
    hall_ends,
    is_binary,
    newcombe_half_widths,
    t_quantile,
    weighted_mean,
    wilson_bounds,
)
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
    sums, sizes, _ = cluster_sums(x, codes, w)
    g = sums.size
    means = sums / sizes
    variance = float(clustered_variance(x, codes, w)[0]) if g > 1 else 0.0
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
    codes = cluster_codes(x, clusters)
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
    n_eff = effective_n(x, codes, p * (1 - p) / x.size, confidence_level, w)
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
    n_eff = effective_n(d, codes, iid_variance, confidence_level, w)
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
    found, estimate = cluster_sums(x, codes, w), weighted_mean(x, w)
    variance, g = cr1_from_sums(found, estimate)
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
    sums, sizes, total = found  # `cluster_sums` of the values
    g = sums.size
    u = g * (sums - estimate * sizes) / total
    sigma = se * math.sqrt(g)  # Σu²/(G − 1) = G·SE²
    # u·u·u, not u**3: pow() per element was most of this function (shape.t_adequacy)
    gamma = g / ((g - 1) * (g - 2)) * float(np.sum(u * u * u)) / sigma**3
    return hall_ends(estimate, sigma, gamma, g, q)


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
