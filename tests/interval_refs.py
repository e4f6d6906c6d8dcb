"""Independent references for the intervals calipers chooses, solved numerically with brentq from
their defining equations rather than from calipers' closed forms."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

Z = 1.959963984540054


def cc_score_bounds(x: float, n: float, z: float = Z) -> tuple[float, float]:
    """The p whose continuity-corrected score test accepts x of n: |x − np| − ½ ≤ z·√(np(1 − p))."""

    def excess(p: float) -> float:
        return abs(x - n * p) - 0.5 - z * math.sqrt(n * p * (1 - p))

    p_hat = x / n
    low = 0.0 if x <= 0 or excess(1e-15) <= 0 else optimize.brentq(excess, 1e-15, p_hat)
    high = 1.0 if x >= n or excess(1 - 1e-15) <= 0 else optimize.brentq(excess, p_hat, 1 - 1e-15)
    return low, high


def hall_bounds(x: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Hall (1992) solved forward: the μ with g((x̄ − μ)/s) = ±t/√n, g(t) = t + γt²/3 + γ²t³/27
    + γ/(6n), γ scipy's adjusted skewness — found by brentq."""
    n, mean, sd = x.size, float(x.mean()), float(x.std(ddof=1))
    gamma = float(stats.skew(x, bias=False))  # G1 = n/((n − 1)(n − 2))·Σ(x − x̄)³/s³
    q = stats.t.ppf(1 - (1 - level) / 2, n - 1) / math.sqrt(n)

    def g(mu: float) -> float:
        t = (mean - mu) / sd
        return t + gamma * t * t / 3 + gamma**2 * t**3 / 27 + gamma / (6 * n)

    span = 50 * sd
    low = optimize.brentq(lambda mu: g(mu) - q, mean - span, mean + span)
    high = optimize.brentq(lambda mu: g(mu) + q, mean - span, mean + span)
    return low, high
