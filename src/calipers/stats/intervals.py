"""The Wilson score interval, as (center, margin)."""

from __future__ import annotations

from statistics import NormalDist
from typing import overload

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError

ArrayLike = float | int | npt.ArrayLike


def z_from_confidence(level: float) -> float:
    """Two-sided normal quantile for a confidence level: 0.95 → 1.959963…"""
    if not 0.0 < level < 1.0:
        raise InputError(f"confidence level must be in (0, 1), got {level}")
    # The standard library's normal quantile: scipy.stats would cost two seconds of import.
    return NormalDist().inv_cdf(0.5 + level / 2.0)


@overload
def wilson_interval(successes: float, trials: float, *, z: float = ...) -> tuple[float, float]: ...
@overload
def wilson_interval(
    successes: npt.ArrayLike, trials: npt.ArrayLike, *, z: float = ...
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
def wilson_interval(
    successes: ArrayLike, trials: ArrayLike, *, z: float = 1.96
) -> tuple[float, float] | tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Wilson score interval without continuity correction, as (center, margin).

        p = s/n,  center = (p + z²/2n)/(1 + z²/n),  margin = z·sqrt(p(1−p)/n + z²/4n²)/(1 + z²/n)

    Successes may be fractional (guessing-corrected counts). Documented edge behaviour:
    - trials ≤ 0 (or NaN): no interval exists; center and margin are NaN.
    - successes outside [0, trials] are clipped into it (a count below chance becomes 0).
    Scalars in give floats out; arrays broadcast and give arrays out.
    """
    if not (np.isfinite(z) and z > 0):
        raise InputError(f"z must be a positive number, got {z}")
    scalar = np.ndim(successes) == 0 and np.ndim(trials) == 0
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    s, n = np.broadcast_arrays(s, n)
    valid = n > 0
    n_safe = np.where(valid, n, 1.0)
    p = np.clip(s, 0.0, n_safe) / n_safe
    z2 = z * z
    denom = 1.0 + z2 / n_safe
    center = (p + z2 / (2.0 * n_safe)) / denom
    margin = z * np.sqrt(p * (1.0 - p) / n_safe + z2 / (4.0 * n_safe * n_safe)) / denom
    center = np.where(valid, center, np.nan)
    margin = np.where(valid, margin, np.nan)
    if scalar:
        return float(center), float(margin)
    return center, margin
