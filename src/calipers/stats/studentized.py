"""The studentized (bootstrap-t) interval for a mean over clusters: for metrics without declared
bounds, where no distribution-free interval exists and the t interval cannot be shown to hold.

Each resample draws G units with replacement and studentizes its ratio mean Σs/Σm by its own CR1
standard error; the interval is θ̂ − q₁₋α/₂·σ̂, θ̂ − q_α/₂·σ̂ with q the quantiles of those t*. Its
coverage error is O(1/n) where the percentile bootstrap's is O(1/√n) (Hall 1992): it is the one
bootstrap that corrects for skewness, which is why it, and not the percentile interval, serves
heavy-tailed scores. Measured in docs/calibration.md (the heavy-tail families).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calipers.stats._rng import resolve_rng

FloatArray = npt.NDArray[np.float64]
CHUNK = 2_000_000  # index draws held at once


@dataclass(frozen=True)
class StudentizedInterval:
    estimate: float
    low: float
    high: float
    standard_error: float
    p_value: float  # of a mean of 0, from the same t* distribution
    n_resamples: int
    seed: int


def _ratio_and_se(sums: FloatArray, sizes: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Per resample (rows): Σs/Σm and its CR1 standard error."""
    g = sums.shape[1]
    total = sizes.sum(axis=1)
    theta = sums.sum(axis=1) / total
    resid = sums - theta[:, None] * sizes
    var = g / (g - 1) * np.sum(resid * resid, axis=1) / total**2
    return theta, np.sqrt(var)


def studentized_interval(
    sums: npt.ArrayLike,
    sizes: npt.ArrayLike,
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 2_000,
    rng: int | np.random.Generator | None = None,
) -> StudentizedInterval:
    """The bootstrap-t interval of Σs/Σm over units with sums `s` and weights `m`."""
    s = np.asarray(sums, dtype=np.float64)
    m = np.asarray(sizes, dtype=np.float64)
    g = s.size
    gen, seed = resolve_rng(rng)
    theta_hat, se_hat = _ratio_and_se(s[None, :], m[None, :])
    theta, se = float(theta_hat[0]), float(se_hat[0])
    t_star = np.empty(n_resamples)
    per_chunk = max(1, CHUNK // g)
    for start in range(0, n_resamples, per_chunk):
        stop = min(n_resamples, start + per_chunk)
        idx = gen.integers(0, g, size=(stop - start, g))
        th, sd = _ratio_and_se(s[idx], m[idx])
        flat = sd == 0
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (th - theta) / sd
        # a resample of one repeated unit has no spread: its t* is ±∞ (0 when it hits θ̂)
        t[flat] = np.where(th[flat] > theta, np.inf, np.where(th[flat] < theta, -np.inf, 0.0))
        t_star[start:stop] = t
    alpha = 1.0 - confidence_level
    # no interpolation: a quantile between two infinite t* is infinite, not NaN
    q_low = np.quantile(t_star, alpha / 2, method="lower")
    q_high = np.quantile(t_star, 1 - alpha / 2, method="higher")
    low, high = theta - float(q_high) * se, theta - float(q_low) * se
    p = 1.0
    if se > 0:
        t_obs = theta / se  # the t* that would put 0 on a bound
        p = min(1.0, 2.0 * min(float(np.mean(t_star >= t_obs)), float(np.mean(t_star <= t_obs))))
    if not math.isfinite(low) or not math.isfinite(high):
        low, high = -math.inf, math.inf
    return StudentizedInterval(theta, low, high, se, p, n_resamples, seed)
