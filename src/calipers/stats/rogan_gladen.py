"""The misclassification-corrected pass rate of a pass/fail judge (Rogan & Gladen 1978), with the
judge's sensitivity and specificity estimated on a human-labelled slice of the same run.

    p̂ = (q̂ + Ŝp − 1) / (Ŝe + Ŝp − 1)

q̂ the judge's pass rate over every sample, Ŝe = P̂(judge passes | human passes) and
Ŝp = P̂(judge fails | human fails) on the labelled samples, J = Ŝe + Ŝp − 1 (Youden's index).
Its interval is the delta method (Greenland 1996; Lang & Reiczigel 2014 for its small-sample
behaviour), Var(p̂) = Σ_g u_g² with u the influence values

    u_i = [(f_i − q̂)/N − p̂·L_i·y_i·(f_i − Ŝe)/n₁ + (1 − p̂)·L_i·(1 − y_i)·((1 − f_i) − Ŝp)/n₀] / J

(L_i = 1 on labelled samples, n₁ and n₀ the labelled human passes and fails) summed within
clusters: the labelled samples are also in q̂, and this counts that overlap, which the textbook
formula [q(1 − q)/N + p²Se(1 − Se)/n₁ + (1 − p)²Sp(1 − Sp)/n₀]/J² — for an independent
validation study — leaves out. The interval is p̂ ± z·SE, clipped to [0, 1].

calipers shows the stratified PPI++ estimate for pass/fail judges (`calipers.stats.ppi_binary`)
and reports this as a cross-check (docs/judges.md): from 30 labels the stratified interval covered
95.3–99.7% in every pass/fail cell of the study, this one as little as 77.0% (30 labels, an
accurate judge: an estimated sensitivity or specificity of 1 has no variance in the delta method),
and 1/J multiplies every error — with a sensitivity or specificity of 0.6 it was 1.3–5.5× as wide
as the labels' own interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats.bootstrap import dense_codes
from calipers.stats.interval_parts import NoInterval
from calipers.stats.intervals import z_from_confidence
from calipers.stats.ppi import MIN_LABELS, TooFewLabels

# A judge whose Youden index on the labelled slice is at most this is no better than a coin for
# the correction: 1/J multiplies every error, and the interval is refused.
MIN_YOUDEN = 0.05


@dataclass(frozen=True)
class CorrectedProportion:
    """A judge's pass rate corrected for its misclassification, with a delta-method interval."""

    estimate: float  # clipped into [0, 1]
    raw_estimate: float  # (q̂ + Ŝp − 1)/J, which can fall outside [0, 1]
    low: float
    high: float
    standard_error: float
    confidence_level: float
    apparent: float  # q̂: the judge's own pass rate over every sample
    sensitivity: float
    specificity: float
    youden: float
    n: int
    n_labelled: int
    n_labelled_pass: int
    n_labelled_fail: int
    method: str = "rogan-gladen"
    formula: str = "delta"

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "raw_estimate": self.raw_estimate,
            "low": self.low,
            "high": self.high,
            "standard_error": self.standard_error,
            "confidence_level": self.confidence_level,
            "apparent": self.apparent,
            "sensitivity": self.sensitivity,
            "specificity": self.specificity,
            "youden": self.youden,
            "n": self.n,
            "n_labelled": self.n_labelled,
            "n_labelled_pass": self.n_labelled_pass,
            "n_labelled_fail": self.n_labelled_fail,
            "method": self.method,
            "formula": self.formula,
        }


def corrected_proportion(
    judge: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
    min_labels: int = MIN_LABELS,
) -> CorrectedProportion:
    """Rogan–Gladen pass rate from every sample's 0/1 `judge` verdict and the 0/1 `human` labels
    of a random subset (NaN where a sample has none), aligned row by row. Raises `TooFewLabels`
    below `min_labels` labelled units, `NoInterval` when the labels hold no pass or no fail
    (sensitivity or specificity unknown) or the judge is no better than chance on them."""
    f = np.asarray(judge, dtype=np.float64)
    y = np.asarray(human, dtype=np.float64)
    if f.ndim != 1 or f.shape != y.shape:
        raise InputError(
            f"judge and human must be one-dimensional and of one length: {f.shape} vs {y.shape}"
        )
    labelled = np.isfinite(y)
    if not np.all((f == 0) | (f == 1)) or not np.all((y[labelled] == 0) | (y[labelled] == 1)):
        raise InputError(
            "the misclassification correction is for pass/fail (0/1) judges and labels",
            hint="Use ppi_mean for other scores.",
        )
    codes = np.arange(f.size) if clusters is None else dense_codes(np.asarray(clusters))
    if codes.shape != f.shape:
        raise InputError(f"clusters has {codes.size} labels for {f.size} observations")
    g_l = int(np.unique(codes[labelled]).size)
    if g_l < max(min_labels, 2):
        raise TooFewLabels(g_l, max(min_labels, 2))
    yl = np.where(labelled, y, 0.0)
    passes, fails = labelled & (yl == 1), labelled & (yl == 0)
    n1, n0 = int(passes.sum()), int(fails.sum())
    if n1 == 0 or n0 == 0:
        raise NoInterval(
            f"the {int(labelled.sum())} human labels are all "
            f"{'fail' if n1 == 0 else 'pass'}: the judge's "
            f"{'sensitivity' if n1 == 0 else 'specificity'} cannot be estimated"
        )
    q = float(f.mean())
    se = float(f[passes].mean())
    sp = float(1.0 - f[fails].mean())
    j = se + sp - 1.0
    if j <= MIN_YOUDEN:
        raise NoInterval(
            f"the judge is no better than chance on the labelled samples (sensitivity {se:.2f}, "
            f"specificity {sp:.2f}, Youden's J {j:.2f} ≤ {MIN_YOUDEN}): nothing to correct with"
        )
    raw = (q + sp - 1.0) / j
    u = (
        (f - q) / f.size
        - raw * passes * (f - se) / n1
        + (1.0 - raw) * fails * ((1.0 - f) - sp) / n0
    ) / j
    per_unit = np.bincount(codes, weights=u)
    std = math.sqrt(float(per_unit @ per_unit))
    z = z_from_confidence(confidence_level)
    return CorrectedProportion(
        min(1.0, max(0.0, raw)), raw, max(0.0, raw - z * std), min(1.0, raw + z * std), std,
        confidence_level, q, se, sp, j, int(f.size), int(labelled.sum()), n1, n0,
    )  # fmt: skip
