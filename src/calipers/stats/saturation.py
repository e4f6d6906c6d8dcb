"""Has a variant's score stopped moving as repeats accumulate? (seed 000's "saturated")

Checkpoint e uses epochs 0..e of every sample: each sample's mean over those epochs, and the
width 2·z·sd/√n of the interval on their mean. More repeats shrink the width while per-sample
noise still dominates; once three consecutive transitions each shrink it by at most 5 %, more
repeats no longer buy precision and the score is saturated. Confidence in that verdict comes from
the number of samples behind it: high ≥ 50, medium 20–49, low < 20.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.stats.bootstrap import dense_codes

SHRINK_LIMIT = 0.05
TRANSITIONS = 3
HIGH_CONFIDENCE_SAMPLES = 50
MEDIUM_CONFIDENCE_SAMPLES = 20


@dataclass(frozen=True)
class SaturationResult:
    widths: list[float]  # CI width at each checkpoint (epochs 0..e)
    shrinks: list[float]  # relative shrink of each transition
    saturated: bool | None  # None: fewer than TRANSITIONS + 1 checkpoints
    confidence: str  # high, medium, low
    n_samples: int
    notes: list[str] = field(default_factory=list)

    @property
    def saturated_with_high_confidence(self) -> bool:
        return bool(self.saturated) and self.confidence == "high"

    def to_dict(self) -> dict[str, Any]:
        return {
            "saturated": self.saturated,
            "confidence": self.confidence,
            "n_samples": self.n_samples,
            "widths": self.widths,
            "shrinks": self.shrinks,
        }


def confidence_for(n_samples: int) -> str:
    if n_samples >= HIGH_CONFIDENCE_SAMPLES:
        return "high"
    return "medium" if n_samples >= MEDIUM_CONFIDENCE_SAMPLES else "low"


def saturation(
    values: npt.ArrayLike,
    samples: npt.ArrayLike,
    epochs: npt.ArrayLike,
    *,
    z: float = 1.96,
) -> SaturationResult:
    """Saturation of the mean of `values` (one per observation; `samples` are integer sample
    codes, `epochs` the repeat index of each observation)."""
    x = np.asarray(values, dtype=float)
    codes = np.asarray(samples)
    ep = np.asarray(epochs)
    keep = np.isfinite(x)
    x, codes, ep = x[keep], codes[keep], ep[keep]
    dense = dense_codes(codes)
    n_samples = int(dense.max()) + 1 if dense.size else 0
    confidence = confidence_for(n_samples)
    levels = np.flatnonzero(np.bincount(ep)) if ep.size and ep.min() >= 0 else np.unique(ep)
    if levels.size < TRANSITIONS + 1:
        return SaturationResult(
            [], [], None, confidence, n_samples,
            [f"{levels.size} epoch(s): saturation needs at least {TRANSITIONS + 1}"],
        )  # fmt: skip
    sums = np.zeros(n_samples)
    counts = np.zeros(n_samples)
    widths: list[float] = []
    for level in levels:
        at = ep == level
        sums += np.bincount(dense[at], weights=x[at], minlength=n_samples)
        counts += np.bincount(dense[at], minlength=n_samples)
        seen = counts > 0
        means = sums[seen] / counts[seen]
        sd = float(np.std(means, ddof=1)) if means.size > 1 else 0.0
        widths.append(2 * z * sd / np.sqrt(max(means.size, 1)))
    shrinks = [(a - b) / a if a > 0 else 0.0 for a, b in itertools.pairwise(widths)]
    saturated = all(s <= SHRINK_LIMIT for s in shrinks[-TRANSITIONS:])
    return SaturationResult(widths, shrinks, saturated, confidence, n_samples)
