"""Exact and analytic tests of a paired difference, reported beside the interval that decides.

Each returns a `PairedTest`: its statistic, the two-sided p-value and both one-sided ones
(`p_greater`: the treatment is better; `p_less`: worse), so a report can show every test under
its own name. Conventions follow the references the tests check against to 1e-10:

- `mcnemar_exact`: statsmodels `mcnemar(table, exact=True)` — the statistic is min(b, c), the
  two-sided p the doubled binomial tail, capped at 1;
- `sign_test`: statsmodels `sign_test` — the statistic M = (positives − negatives)/2, zeros
  dropped, the p of scipy's `binomtest`;
- `paired_t`: scipy `ttest_rel` on the units' mean differences;
- `clustered_standard_error`: Miller (2024), "Adding Error Bars to Evals", eq. 4 — the CR0
  (no small-sample factor) standard error of the mean difference over clusters and a normal
  test: statsmodels OLS on a constant with `cov_type="cluster"`, `use_correction=False`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PairedTest:
    name: str
    statistic: float
    p_value: float  # two-sided
    p_greater: float  # H1: treatment − control > 0
    p_less: float  # H1: treatment − control < 0
    df: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "p_value": self.p_value,
            "p_greater": self.p_greater,
            "p_less": self.p_less,
            "df": self.df,
            **self.detail,
        }


def _binomial_tails(k: int, n: int) -> tuple[float, float, float]:
    """Two-sided, P(X ≥ k) and P(X ≤ k) for X ~ Bin(n, ½)."""
    from scipy.special import bdtr, bdtrc

    if n == 0:
        return 1.0, 1.0, 1.0
    greater = float(bdtrc(k - 1, n, 0.5)) if k > 0 else 1.0
    less = float(bdtr(k, n, 0.5))
    two = min(1.0, 2.0 * float(bdtr(min(k, n - k), n, 0.5)))
    return two, greater, less


def mcnemar_exact(treatment_only: int, control_only: int) -> PairedTest:
    """Exact McNemar on the discordant pairs: of b + c pairs where the runs disagree, b passed
    in the treatment only; under no difference b ~ Bin(b + c, ½)."""
    b, c = int(treatment_only), int(control_only)
    two, greater, less = _binomial_tails(b, b + c)
    return PairedTest(
        "mcnemar", float(min(b, c)), two, greater, less, None,
        {"treatment_only": b, "control_only": c, "exact": True},
    )  # fmt: skip


def sign_test(differences: npt.ArrayLike) -> PairedTest:
    d = np.asarray(differences, dtype=float)
    pos, neg = int(np.sum(d > 0)), int(np.sum(d < 0))
    two, greater, less = _binomial_tails(pos, pos + neg)
    return PairedTest(
        "sign", (pos - neg) / 2.0, two, greater, less, None,
        {"positive": pos, "negative": neg, "zero": int(d.size - pos - neg)},
    )  # fmt: skip


def paired_t(unit_differences: npt.ArrayLike) -> PairedTest | None:
    """The t test of the units' mean differences; None with fewer than 2 units or no spread."""
    from scipy.special import stdtr

    d = np.asarray(unit_differences, dtype=float)
    if d.size < 2:
        return None
    sd = float(np.std(d, ddof=1))
    if sd == 0:
        return None
    t = float(d.mean()) / (sd / math.sqrt(d.size))
    df = float(d.size - 1)
    return PairedTest(
        "paired_t", t, float(2 * stdtr(df, -abs(t))), float(stdtr(df, -t)), float(stdtr(df, t)),
        df, {"n_units": int(d.size)},
    )  # fmt: skip


def clustered_standard_error(
    differences: npt.ArrayLike,
    codes: npt.NDArray[np.intp],
    weights: npt.ArrayLike | None = None,
) -> PairedTest | None:
    """Miller's clustered standard error of the mean difference, √(Σ_c (Σ_{i∈c} (d_i − d̄))²)/n,
    and the z test it gives; None with fewer than 2 clusters or no spread. With `weights` the
    mean is Σw·d/Σw and each term is weighted (w_i(d_i − d̄), over Σw)."""
    d = np.asarray(differences, dtype=float)
    w = np.ones_like(d) if weights is None else np.asarray(weights, dtype=float)
    mean = float(w @ d / w.sum()) if weights is not None else float(d.mean())
    sums = np.bincount(codes, weights=w * (d - mean))
    if sums.size < 2:
        return None
    se = math.sqrt(float(sums @ sums)) / float(w.sum())
    if se == 0:
        return None
    z = mean / se
    norm = NormalDist()
    return PairedTest(
        "clustered_se", z, 2 * norm.cdf(-abs(z)), norm.cdf(-z), norm.cdf(z), None,
        {"mean": mean, "standard_error": se, "n_clusters": int(sums.size)},
    )  # fmt: skip
