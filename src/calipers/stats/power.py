"""Power of a paired comparison: the smallest effect a design can detect, and the n it needs."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

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


EXACT_POWER_MAX_UNITS = (
    2_000  # above this the normal approximation of the sign test is exact enough
)


def sign_test_detectable(
    n_units: int, nonzero_share: float, mean_step: float, *, alpha: float, power: float = 0.8
) -> float | None:
    """The smallest mean difference the two-sided exact sign test over `n_units` detects with
    probability `power`: inf when no difference can reach it (too few units), None when there are
    more than EXACT_POWER_MAX_UNITS units (the normal approximation then serves).

    Model: a unit's difference is nonzero with probability ψ = `nonzero_share` + δ/s — an effect
    δ moves up to δ/s more units — and of size s = `mean_step`; a nonzero one
    is positive with probability π = ½ + δ/(2ψs). Power = Σ_m Bin(m; G, ψ)·P(Bin(m, π) ≥ k_m),
    k_m the exact critical count. Used for paired 0/1 outcomes, where the exact McNemar test must
    agree with the interval and small discordant counts, not the standard error, limit detection.
    """
    from scipy.special import bdtr, bdtrc, bdtrik

    g = int(n_units)
    if g > EXACT_POWER_MAX_UNITS or mean_step <= 0:
        return None
    if g < 1:
        return math.inf
    m = np.arange(g + 1)
    # k_m = m − c_m, c_m the largest lower-tail count with P(Bin(m, ½) ≤ c) ≤ α/2 (symmetry);
    # no c (c_m < 0) means m nonzero units can never reject.
    with np.errstate(invalid="ignore"):
        c = np.floor(np.nan_to_num(bdtrik(alpha / 2, np.maximum(m, 1), 0.5), nan=-1.0))
    c = np.where((c >= 0) & (bdtr(np.maximum(c, 0), np.maximum(m, 1), 0.5) > alpha / 2), c - 1, c)
    c = np.where((c + 1 <= m) & (bdtr(c + 1, np.maximum(m, 1), 0.5) <= alpha / 2), c + 1, c)
    k = np.where((c >= 0) & (m > 0), m - c, g + 1).astype(np.int64)

    def achieved(delta: float) -> float:
        psi = min(1.0, nonzero_share + delta / mean_step)
        pi = min(1.0, 0.5 + delta / (2.0 * psi * mean_step))
        p_m = np.exp(_log_binom_pmf(m, g, psi))
        reject = np.where(k <= m, bdtrc(k - 1, m, pi), 0.0)
        return float(p_m @ reject)

    if achieved(mean_step) < power:
        return math.inf
    low, high = 0.0, mean_step
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if achieved(mid) < power else (low, mid)
    return high


def _log_binom_pmf(k: npt.NDArray[np.int64], n: int, p: float) -> npt.NDArray[np.float64]:
    from scipy.special import gammaln

    if p <= 0.0:
        return np.where(k == 0, 0.0, -np.inf)
    if p >= 1.0:
        return np.where(k == n, 0.0, -np.inf)
    return np.asarray(
        gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) + k * np.log(p)
        + (n - k) * np.log1p(-p),
        dtype=np.float64,
    )  # fmt: skip
