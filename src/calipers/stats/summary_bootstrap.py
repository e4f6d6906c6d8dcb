"""The cluster bootstrap of a paired difference from its summary table
(`calipers.stats.summary_stats`): multinomial counts over the distinct units, which is resampling
the units themselves, in O(distinct units) per resample — 10,000 resamples of a pass/fail
histogram of 10M items in a fraction of a second (benchmarks/README.md)."""

from __future__ import annotations

import numpy as np

from calipers.errors import InputError
from calipers.stats._rng import resolve_rng
from calipers.stats.bootstrap import BootstrapResult, _bca_quantiles, _counting_draws, _index_draws
from calipers.stats.estimate import MIN_BOOTSTRAP_UNITS
from calipers.stats.interval_parts import Interval, NoInterval
from calipers.stats.summary_stats import FloatArray, Units


def rounding_key(x: FloatArray) -> FloatArray:
    """`x` rounded at 2⁻⁴⁰ of its largest magnitude: sums equal but for the order an engine added
    them in get one key, so that sorting by it gives every engine's table the same order."""
    scale = float(np.max(np.abs(x))) if x.size else 0.0
    return np.rint(x * (2.0**40 / scale)) if scale > 0 else x


def distinct_units(units: Units) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The units' distinct (D, m) with multiplicities, in a canonical order (sorted), so that any
    engine's table — whatever its row order — gives the same draws for the same seed. Sums equal
    but for rounding (a cluster's item means added in another order) are one value, keyed at 2⁻⁴⁰
    of the largest magnitude as `bootstrap._distinct` keys them (the smallest stands for them)."""
    d, m, mult = units.d, units.m, units.mult
    if d.size == 0:
        return d, m, mult
    keys = rounding_key(d)
    order = np.lexsort((m, keys))
    k, z = keys[order], m[order]
    starts = np.flatnonzero(np.r_[True, (k[1:] != k[:-1]) | (z[1:] != z[:-1])])
    counts = np.add.reduceat(mult[order], starts)
    # a value's smallest sum stands for it: the same whatever order the rows came in
    return np.minimum.reduceat(d[order], starts), z[starts], counts


def cluster_bootstrap(
    units: Units,
    *,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    method: str = "percentile",
    rng: int | np.random.Generator | None = None,
) -> BootstrapResult:
    """The cluster bootstrap of the paired difference from the summaries: each resample draws G
    units with replacement, as multinomial counts over the distinct units with probabilities
    (multiplicity)/G — the same distribution as drawing G unit indices — and takes
    Σ count·D / Σ count·m. O(distinct units) per resample (`bootstrap._counting_draws`); where
    units are mostly distinct, indices are drawn instead (`bootstrap._index_draws`)."""
    if method not in ("percentile", "bca"):
        raise InputError(f"unknown bootstrap method '{method}'", hint="percentile or bca.")
    generator, seed = resolve_rng(rng)
    d, m, mult = distinct_units(units)
    g = units.g
    if g < 2:
        raise NoInterval(f"{g} independent unit(s): a bootstrap needs at least 2")
    counting = d.size <= g / 3
    if counting:
        counts = _counting_draws(generator, mult, int(n_resamples))
        dist = (d @ counts) / (m @ counts)
    else:
        reps = mult.astype(np.int64)
        dist = _index_draws(generator, np.repeat(d, reps), np.repeat(m, reps), int(n_resamples))
    estimate = float(mult @ d) / float(mult @ m)
    alpha = 1.0 - confidence_level
    lo_q, hi_q = alpha / 2, 1 - alpha / 2
    if method == "bca":
        lo_q, hi_q = _bca_quantiles(dist, estimate, d, m, mult, alpha)
    low, high = np.quantile(dist, [lo_q, hi_q])
    return BootstrapResult(
        estimate, float(low), float(high), dist, int(n_resamples), seed, confidence_level,
        method, g, units.observations, "counting" if counting else "index",
        (float(lo_q), float(hi_q)),
    )  # fmt: skip


def bootstrap_interval(
    units: Units,
    *,
    method: str,
    confidence_level: float,
    n_resamples: int,
    rng: int | np.random.Generator | None,
    binary: bool,
) -> Interval:
    """The percentile or BCa interval from the summaries, refused where the engine refuses it
    (0/1 outcomes; fewer than MIN_BOOTSTRAP_UNITS units)."""
    if binary:
        raise NoInterval(
            f"a {method} bootstrap interval on 0/1 outcomes undercovers near 0 and 1 "
            "(docs/calibration.md): use --interval score (or auto)"
        )
    if units.g < MIN_BOOTSTRAP_UNITS:
        raise NoInterval(
            f"a {method} bootstrap interval needs at least {MIN_BOOTSTRAP_UNITS} independent "
            f"units (measured undercoverage below, docs/calibration.md); there are {units.g}: use "
            "--interval auto"
        )
    result = cluster_bootstrap(
        units, n_resamples=n_resamples, confidence_level=confidence_level, method=method, rng=rng
    )
    return Interval(
        result.estimate, result.low, result.high, method, method, confidence_level,
        result.standard_error, None, units.g, units.observations, float(units.observations),
        result,
    )  # fmt: skip
