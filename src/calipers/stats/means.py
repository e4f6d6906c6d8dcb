"""Means and multiple-comparison adjustments."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError


def geometric_mean(values: npt.ArrayLike) -> float:
    """exp(mean(log x)). Every value must be finite and > 0: a zero or negative value has no
    logarithm, and silently dropping it would hide exactly the failure a geometric mean exists to
    expose (clamp upstream, as ReasonScore does with its 0.01 floor)."""
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise InputError("geometric mean of no values")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        bad = x[~np.isfinite(x) | (x <= 0)][0]
        raise InputError(f"geometric mean needs finite values > 0, got {bad}")
    return float(np.exp(np.mean(np.log(x))))


def bonferroni_alpha(alpha: float, k: int) -> float:
    """Per-comparison α for k comparisons."""
    if not 0 < alpha < 1 or k < 1:
        raise InputError(f"need 0 < alpha < 1 and k ≥ 1, got alpha={alpha}, k={k}")
    return alpha / k


def holm(pvalues: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Holm step-down adjusted p-values, in the input order."""
    p = np.asarray(pvalues, dtype=float).ravel()
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise InputError("p-values must be in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


def benjamini_hochberg(pvalues: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Benjamini–Hochberg step-up adjusted p-values (false discovery rate), in the input order."""
    p = np.asarray(pvalues, dtype=float).ravel()
    if np.any(~np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise InputError("p-values must be in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")[::-1]
    stepped = np.minimum.accumulate(p[order] * m / np.arange(m, 0, -1))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted
