"""Hotelling's T² test that the mean of a vector of paired differences is zero."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError


@dataclass(frozen=True)
class HotellingResult:
    t2: float
    f: float
    df1: int  # dimensions (rank of the covariance)
    df2: int  # n − df1
    p_value: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def hotelling_t2(differences: npt.ArrayLike) -> HotellingResult:
    """One-sample Hotelling T² of H0: E[d] = 0, for an n × p array of difference vectors.

    T² = n·d̄ᵀS⁻¹d̄ with S the sample covariance; F = (n − p)/(p(n − 1))·T² ~ F(p, n − p).
    A singular S (a layer whose difference never varies, or layers that move in lockstep) is
    handled with the pseudo-inverse, and p is then the rank of S.
    """
    d = np.asarray(differences, dtype=float)
    if d.ndim != 2:
        raise InputError(f"differences must be n × p, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise InputError("differences must be finite")
    n = d.shape[0]
    mean = d.mean(axis=0)
    cov = np.atleast_2d(np.cov(d, rowvar=False)) if n > 1 else np.zeros((d.shape[1],) * 2)
    p = int(np.linalg.matrix_rank(cov)) if n > 1 else 0
    if p == 0 or n - p < 1:
        raise InputError(f"Hotelling T² needs more observations than dimensions (n={n}, p={p})")
    t2 = float(n * mean @ np.linalg.pinv(cov) @ mean)
    f = (n - p) / (p * (n - 1)) * t2
    from scipy.special import fdtrc  # the F survival function; scipy.stats costs seconds

    return HotellingResult(
        t2=t2, f=float(f), df1=p, df2=n - p, p_value=float(fdtrc(p, n - p, f)), n=n
    )
