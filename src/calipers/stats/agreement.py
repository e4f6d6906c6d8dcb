"""Agreement between judges, and between a judge and human labels."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError


def pearson(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Pearson correlation; NaN when either side is constant (no correlation is defined)."""
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(f"pearson needs two 1-D arrays of one length, got {a.shape}, {b.shape}")
    if a.size < 2 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InputError("pearson needs at least 2 finite pairs")
    da, db = a - a.mean(), b - b.mean()
    denom = float(np.sqrt((da @ da) * (db @ db)))
    if denom == 0.0:
        return float("nan")
    return float(np.clip((da @ db) / denom, -1.0, 1.0))


def krippendorff_alpha(
    ratings: npt.ArrayLike, *, level: Literal["interval", "nominal"] = "interval"
) -> float:
    """Krippendorff's alpha for a raters × units array, NaN marking a missing rating.

    Only units with at least two ratings are pairable. α = 1 − D_o/D_e, with the squared
    difference (interval) or inequality (nominal) as the distance.
    """
    data = np.asarray(ratings, dtype=float)
    if data.ndim != 2:
        raise InputError(f"ratings must be raters × units, got shape {data.shape}")
    if level not in ("interval", "nominal"):
        raise InputError(f"level must be 'interval' or 'nominal', got {level!r}")
    present = np.isfinite(data)
    m = present.sum(axis=0)
    keep = m >= 2
    data, present, m = data[:, keep], present[:, keep], m[keep]
    n = int(m.sum())
    if n < 2:
        raise InputError("krippendorff_alpha needs at least one unit rated twice")
    values = np.where(present, data, 0.0)
    if level == "interval":
        s1, s2 = values.sum(axis=0), (values**2).sum(axis=0)
        observed = float(np.sum(2 * (m * s2 - s1**2) / (m - 1))) / n
        t1, t2 = s1.sum(), s2.sum()
        expected = 2 * (n * t2 - t1**2) / (n * (n - 1))
    else:
        cats = np.unique(data[present])
        per_unit = np.stack([((data == c) & present).sum(axis=0) for c in cats])
        observed = float(np.sum((m**2 - (per_unit**2).sum(axis=0)) / (m - 1))) / n
        totals = per_unit.sum(axis=1)
        expected = float(n**2 - (totals**2).sum()) / (n * (n - 1))
    if expected == 0:
        return float("nan")
    return float(1.0 - observed / expected)


def icc_2_1(ratings: npt.ArrayLike) -> float:
    """ICC(2,1) of Shrout & Fleiss: two-way random effects, absolute agreement, single rater.
    `ratings` is units × raters; units with a missing rating are dropped."""
    x = np.asarray(ratings, dtype=float)
    if x.ndim != 2 or x.shape[1] < 2:
        raise InputError(f"ratings must be units × raters with ≥ 2 raters, got {x.shape}")
    x = x[np.all(np.isfinite(x), axis=1)]
    n, k = x.shape
    if n < 2:
        raise InputError("icc_2_1 needs at least 2 fully rated units")
    grand = x.mean()
    row = x.mean(axis=1)
    col = x.mean(axis=0)
    ms_rows = k * float(np.sum((row - grand) ** 2)) / (n - 1)
    ms_cols = n * float(np.sum((col - grand) ** 2)) / (k - 1)
    resid = x - row[:, None] - col[None, :] + grand
    ms_err = float(np.sum(resid**2)) / ((n - 1) * (k - 1))
    denom = ms_rows + (k - 1) * ms_err + k * (ms_cols - ms_err) / n
    return float("nan") if denom == 0 else float((ms_rows - ms_err) / denom)


def quadratic_weighted_kappa(
    a: npt.ArrayLike, b: npt.ArrayLike, *, min_rating: int, max_rating: int
) -> float:
    """Cohen's kappa with quadratic weights for integer ratings in [min_rating, max_rating]."""
    x = np.asarray(a)
    y = np.asarray(b)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise InputError("quadratic_weighted_kappa needs two 1-D arrays of one length")
    if max_rating <= min_rating:
        raise InputError("max_rating must exceed min_rating")
    xi = np.rint(x).astype(int) - min_rating
    yi = np.rint(y).astype(int) - min_rating
    k = max_rating - min_rating + 1
    if np.any((xi < 0) | (xi >= k) | (yi < 0) | (yi >= k)):
        raise InputError(f"ratings must lie in [{min_rating}, {max_rating}]")
    observed = np.zeros((k, k))
    np.add.at(observed, (xi, yi), 1.0)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / x.size
    idx = np.arange(k)
    weights = (idx[:, None] - idx[None, :]) ** 2 / (k - 1) ** 2
    denom = float((weights * expected).sum())
    return float("nan") if denom == 0 else float(1.0 - (weights * observed).sum() / denom)
