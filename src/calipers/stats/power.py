"""Power of a paired comparison: the smallest effect a design can detect, and the n it needs."""

from __future__ import annotations

import math
from statistics import NormalDist

from calipers.errors import InputError


def _z_sum(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise InputError(f"need 0 < alpha < 1 and 0 < power < 1, got {alpha}, {power}")
    norm = NormalDist()  # the standard library's: scipy.stats costs seconds to import
    return norm.inv_cdf(1 - alpha / 2) + norm.inv_cdf(power)


def minimum_detectable_effect(
    sd: float, n: int, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """MDE = (z₁₋α/₂ + z_power)·sd/√n for the mean of n paired differences with SD `sd`."""
    if n < 1 or not math.isfinite(sd) or sd < 0:
        raise InputError(f"need n ≥ 1 and a finite sd ≥ 0, got n={n}, sd={sd}")
    return _z_sum(alpha, power) * sd / math.sqrt(n)


def required_sample_size(
    effect: float, sd: float, *, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Smallest n with MDE ≤ effect: ceil(((z₁₋α/₂ + z_power)·sd/effect)²)."""
    if not math.isfinite(effect) or effect <= 0 or not math.isfinite(sd) or sd < 0:
        raise InputError(f"need effect > 0 and sd ≥ 0, got effect={effect}, sd={sd}")
    return max(1, math.ceil((_z_sum(alpha, power) * sd / effect) ** 2 - 1e-9))
