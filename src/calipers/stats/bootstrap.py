"""Bootstrap intervals for a mean and for paired differences, resampling whole clusters.

The statistic is always a ratio of sums over resampled units: Σ(unit sums)/Σ(unit sizes), where a
unit is one observation, or one cluster (a sample's epochs together). A resample is therefore fully
described by how many times each unit was drawn, and units with the same (sum, size) are
interchangeable. When there are few distinct (sum, size) pairs — pass/fail outcomes, 1–5 scores and
their differences — drawing the multinomial counts over the k distinct pairs gives exactly the same
distribution as drawing n indices, at O(k) instead of O(n) per resample (the "counting" algorithm).
The counts are drawn as k vectorised conditional binomials, each over all resamples at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats._rng import resolve_rng

Method = Literal["percentile", "bca"]
Algorithm = Literal["auto", "counting", "index"]
FloatArray = npt.NDArray[np.float64]

# Counting costs about k binomial draws per resample, indexing about n gathers; a binomial draw
# costs a few gathers, so counting wins while k is below n/3 (measured: benchmarks/README.md).
COUNTING_MAX_RATIO = 1 / 3
_INDEX_CHUNK_CELLS = 1 << 23  # bounds the index path's memory at ~64 MB of int64 per chunk


@dataclass(frozen=True)
class BootstrapResult:
    """A bootstrap interval with the resampled distribution it came from."""

    estimate: float
    low: float
    high: float
    distribution: FloatArray = field(repr=False)
    n_resamples: int
    seed: int
    confidence_level: float
    method: str
    n_units: int  # pairs, observations or clusters resampled
    n_observations: int
    algorithm: str  # "counting" or "index"
    levels: tuple[float, float] = (0.025, 0.975)  # quantile levels of low and high

    @property
    def standard_error(self) -> float:
        return float(np.std(self.distribution, ddof=1))

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def monte_carlo_band(self, which: Literal["low", "high"]) -> tuple[float, float]:
        """Where the bound could have landed with another seed: the resampled values at quantile
        levels q ± 2·√(q(1−q)/B), the binomial spread of an empirical quantile."""
        q = self.levels[0] if which == "low" else self.levels[1]
        spread = 2.0 * np.sqrt(q * (1.0 - q) / self.n_resamples)
        lo_q, hi_q = max(0.0, q - spread), min(1.0, q + spread)
        lo, hi = np.quantile(self.distribution, [lo_q, hi_q])
        return float(lo), float(hi)

    def within_monte_carlo_error(self, value: float = 0.0) -> bool:
        """True when `value` lies inside the Monte Carlo band of either bound, so whether the
        interval excludes it could flip with another seed (more resamples settle it)."""
        return any(
            lo <= value <= hi for lo, hi in (self.monte_carlo_band(w) for w in ("low", "high"))
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "standard_error": self.standard_error,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "confidence_level": self.confidence_level,
            "method": self.method,
            "n_units": self.n_units,
            "n_observations": self.n_observations,
            "algorithm": self.algorithm,
        }


def paired_bootstrap(
    control: npt.ArrayLike,
    treatment: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    method: Method = "percentile",
    algorithm: Algorithm = "auto",
    rng: int | np.random.Generator | None = None,
) -> BootstrapResult:
    """Interval for mean(treatment − control) over pairs (pair i is control[i], treatment[i]).

    With `clusters` (one label per pair, e.g. the sample_id when epochs repeat a sample), whole
    clusters are resampled and the statistic is the mean difference over the drawn observations.
    With `weights` (> 0, one per pair) the statistic is the weighted mean Σw·d/Σw: weights of
    1/(epochs of the pair's sample) make it the mean of per-sample means.
    """
    c = _as_1d(control, "control")
    t = _as_1d(treatment, "treatment")
    if c.shape != t.shape:
        raise InputError(f"control and treatment differ in length: {c.size} vs {t.size}")
    return _bootstrap(
        t - c, clusters, weights, n_resamples, confidence_level, method, algorithm, rng
    )


def mean_bootstrap(
    values: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    method: Method = "percentile",
    algorithm: Algorithm = "auto",
    rng: int | np.random.Generator | None = None,
) -> BootstrapResult:
    """Interval for the (weighted) mean of one sample of values (clusters resampled whole, as
    above)."""
    x = _as_1d(values, "values")
    return _bootstrap(x, clusters, weights, n_resamples, confidence_level, method, algorithm, rng)


def _as_1d(values: npt.ArrayLike, name: str) -> FloatArray:
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numbers: {exc}") from exc
    if x.ndim != 1:
        raise InputError(f"{name} must be one-dimensional, got shape {x.shape}")
    return x


def _validate(
    x: FloatArray,
    clusters: npt.ArrayLike | None,
    n_resamples: int,
    confidence_level: float,
    method: str,
    algorithm: str,
) -> npt.NDArray[np.intp] | None:
    """Check every option once; return cluster codes (0..k−1) or None."""
    bad = ~np.isfinite(x)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"values must be finite: element {i} is {x[i]}")
    if x.size < 2:
        raise InputError(f"need at least 2 observations, got {x.size}")
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise InputError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0.0 < confidence_level < 1.0:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level}")
    if method not in ("percentile", "bca"):
        raise InputError(f"method must be 'percentile' or 'bca', got {method!r}")
    if algorithm not in ("auto", "counting", "index"):
        raise InputError(f"algorithm must be 'auto', 'counting' or 'index', got {algorithm!r}")
    if clusters is None:
        return None
    labels = np.asarray(clusters)
    if labels.shape != x.shape:
        raise InputError(f"clusters has {labels.size} labels for {x.size} observations")
    codes = dense_codes(labels)
    if codes.max() < 1:
        raise InputError("need at least 2 clusters to resample")
    return codes


def dense_codes(labels: npt.NDArray[Any]) -> npt.NDArray[np.intp]:
    """Labels as codes 0..k−1 in sorted label order. Small non-negative integer labels (what the
    comparison engine hands in) are renumbered by counting in O(n); others are sorted."""
    if labels.dtype.kind in "iu" and labels.size and labels.min() >= 0:
        top = int(labels.max())
        if top < max(4 * labels.size, 1 << 20):  # a count array of ≤ 8 MiB beats sorting
            present = np.bincount(labels, minlength=top + 1) > 0
            if present.all():
                return labels.astype(np.intp, copy=False)
            return np.asarray((np.cumsum(present) - 1)[labels], dtype=np.intp)
    return np.unique(labels, return_inverse=True)[1].ravel()


def check_weights(weights: npt.ArrayLike | None, x: FloatArray) -> FloatArray | None:
    """Weights as floats (one per value, finite, > 0), or None when there are none or all are
    equal: equal weights are the plain mean, computed the plain way."""
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != x.shape:
        raise InputError(f"weights has {w.size} values for {x.size} observations")
    if not np.all(np.isfinite(w) & (w > 0)):
        raise InputError("weights must be finite and > 0")
    return None if w.size == 0 or np.all(w == w[0]) else w


def _units(
    x: FloatArray, codes: npt.NDArray[np.intp] | None, w: FloatArray | None
) -> tuple[FloatArray, FloatArray]:
    """Each resampled unit's weighted sum and total weight (its size, unweighted)."""
    if codes is None:
        return (x, np.ones_like(x)) if w is None else (w * x, w)
    if w is None:
        return np.bincount(codes, weights=x).astype(np.float64), np.bincount(codes).astype(
            np.float64
        )
    sums = np.asarray(np.bincount(codes, weights=w * x), dtype=np.float64)
    return sums, np.asarray(np.bincount(codes, weights=w), dtype=np.float64)


def _distinct(sums: FloatArray, sizes: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Distinct (sum, size) pairs and their multiplicities, in order of first occurrence.

    First-occurrence order does not depend on the values themselves, so negating the data
    (swapping control and treatment) gives the mirror-image distribution for the same seed.
    """
    if np.all(sizes == 1.0) and np.all(sums == np.round(sums)):
        lo, hi = sums.min(), sums.max()
        if hi - lo < 1_000_000:  # small integer range: counting sort in O(n)
            codes = (sums - lo).astype(np.int64)
            counts = np.bincount(codes)
            values = np.flatnonzero(counts)
            if values.size <= 64:  # a few linear scans beat a sort
                first = np.array([np.argmax(codes == v) for v in values])
            else:
                first = np.unique(codes, return_index=True)[1]
            order = np.argsort(first, kind="stable")
            mult = counts[values].astype(np.float64)
            return (values[order] + lo).astype(np.float64), np.ones(values.size), mult[order]
    # Sums that differ only by floating-point rounding (the same scores added in another order)
    # are one value: keys round them to 2⁻⁴⁰ of the largest magnitude, a change to the mean far
    # below any reported digit that turns thousands of spurious categories into the few hundred
    # real ones. Each category keeps the exact sum of its first unit.
    scale = float(np.max(np.abs(sums)))
    keys = np.rint(sums * (2.0**40 / scale)) if scale > 0 and np.isfinite(scale) else sums
    # Sort by (key, size) and cut at changes: much faster than np.unique(axis=0) on row pairs.
    order = np.lexsort((sizes, keys)) if np.ptp(sizes) > 0 else np.argsort(keys, kind="stable")
    k, z = keys[order], sizes[order]
    starts = np.flatnonzero(np.r_[True, (k[1:] != k[:-1]) | (z[1:] != z[:-1])])
    first = np.minimum.reduceat(order, starts)
    mult = np.diff(np.r_[starts, k.size]).astype(np.float64)
    by_first = np.argsort(first, kind="stable")
    return sums[first][by_first], z[starts][by_first], mult[by_first]


def _counting_draws(
    rng: np.random.Generator, mult: FloatArray, n_resamples: int
) -> npt.NDArray[np.int64]:
    """Multinomial(n, mult/n) counts, shape (k, n_resamples), as conditional binomials."""
    n = int(mult.sum())
    k = mult.size
    counts = np.empty((k, n_resamples), dtype=np.int64)
    remaining = np.full(n_resamples, n, dtype=np.int64)
    left = float(n)
    for j in range(k - 1):
        q = min(1.0, mult[j] / left) if left > 0 else 0.0
        counts[j] = rng.binomial(remaining, q)
        remaining -= counts[j]
        left -= mult[j]
    counts[k - 1] = remaining
    return counts


def _index_draws(
    rng: np.random.Generator, sums: FloatArray, sizes: FloatArray, n_resamples: int
) -> FloatArray:
    n = sums.size
    out = np.empty(n_resamples)
    chunk = max(1, _INDEX_CHUNK_CELLS // n)
    unit_sizes = bool(np.all(sizes == 1.0))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        total = sums[idx].sum(axis=1)
        out[start:stop] = total / n if unit_sizes else total / sizes[idx].sum(axis=1)
    return out


def _bootstrap(
    x: FloatArray,
    clusters: npt.ArrayLike | None,
    weights: npt.ArrayLike | None,
    n_resamples: int,
    confidence_level: float,
    method: str,
    algorithm: str,
    rng: int | np.random.Generator | None,
) -> BootstrapResult:
    codes = _validate(x, clusters, n_resamples, confidence_level, method, algorithm)
    w = check_weights(weights, x)
    generator, seed = resolve_rng(rng)
    sums, sizes = _units(x, codes, w)
    d_sums, d_sizes, mult = _distinct(sums, sizes)
    use_counting = algorithm == "counting" or (
        algorithm == "auto" and d_sums.size <= COUNTING_MAX_RATIO * sums.size
    )
    if use_counting:
        counts = _counting_draws(generator, mult, int(n_resamples))
        dist = (d_sums @ counts) / (d_sizes @ counts)
    else:
        dist = _index_draws(generator, sums, sizes, int(n_resamples))
    estimate = float(sums.sum() / sizes.sum())
    alpha = 1.0 - confidence_level
    if method == "bca":
        lo_q, hi_q = _bca_quantiles(dist, estimate, d_sums, d_sizes, mult, alpha)
    else:
        lo_q, hi_q = alpha / 2, 1 - alpha / 2
    low, high = np.quantile(dist, [lo_q, hi_q])
    return BootstrapResult(
        estimate=estimate,
        low=float(low),
        high=float(high),
        distribution=dist,
        n_resamples=int(n_resamples),
        seed=seed,
        confidence_level=confidence_level,
        method=method,
        n_units=int(sums.size),
        n_observations=int(x.size),
        algorithm="counting" if use_counting else "index",
        levels=(float(lo_q), float(hi_q)),
    )


def _bca_quantiles(
    dist: FloatArray,
    estimate: float,
    d_sums: FloatArray,
    d_sizes: FloatArray,
    mult: FloatArray,
    alpha: float,
) -> tuple[float, float]:
    """Bias-corrected and accelerated quantile levels (Efron 1987), with the jackknife over units
    computed in O(k) from the distinct units and their multiplicities."""
    from scipy.stats import norm  # lazily: scipy.stats costs a second to import

    if np.ptp(dist) == 0:
        return alpha / 2, 1 - alpha / 2
    # Resamples equal to the estimate count half (scipy's `_percentile_of_score`): on discrete
    # data many resamples tie with it, and counting them as above biases z0.
    z0 = norm.ppf((np.count_nonzero(dist < estimate) + np.count_nonzero(dist <= estimate))
                  / (2.0 * dist.size))  # fmt: skip
    total_sum = float(d_sums @ mult)
    total_size = float(d_sizes @ mult)
    with np.errstate(invalid="ignore", divide="ignore"):
        jack = (total_sum - d_sums) / (total_size - d_sizes)  # leave one unit of each kind out
    valid = np.isfinite(jack)
    jack, w = jack[valid], mult[valid]
    jack_mean = float(jack @ w / w.sum())
    dev = jack_mean - jack
    num = float((dev**3) @ w)
    den = 6.0 * float((dev**2) @ w) ** 1.5
    accel = num / den if den > 0 else 0.0
    levels = []
    for z_a in (norm.ppf(alpha / 2), norm.ppf(1 - alpha / 2)):
        levels.append(float(norm.cdf(z0 + (z0 + z_a) / (1 - accel * (z0 + z_a)))))
    if not all(np.isfinite(levels)):
        return alpha / 2, 1 - alpha / 2
    return levels[0], levels[1]
