"""Simulated robustness checks: cases whose variants move the decision with a case-level rate.

Each case draws its own rate of changed decisions from a Beta law, and each variant changes the
decision (distance 1, as kelvin's distance between two categorical decisions) with that rate:
9 reorder/pad variants for invariance (3 of each kind), and 1–3 swaps for sensitivity. The truth
is the population mean: invariance 1 − E[rate] = 0.85, sensitivity E[rate] = 0.65 (the number of
swaps is independent of the rate, so the pooled mean estimates the same quantity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calipers.schemes.robustness.scoring import CaseResult, VariantResult

INVARIANCE_VARIANTS = ("reorder", "pad_length", "pad_content")  # 3 of each per case
SWAPS = (1, 3)  # per case, uniformly


@dataclass(frozen=True)
class RateLaw:
    """Beta law of a case's rate of changed decisions, by its mean and concentration."""

    mean: float
    concentration: float

    def draw(self, rng: np.random.Generator, size: int) -> npt.NDArray[np.float64]:
        a, b = self.mean * self.concentration, (1.0 - self.mean) * self.concentration
        return np.asarray(rng.beta(a, b, size), dtype=np.float64)


INVARIANCE_DISTANCE = RateLaw(0.15, 4.0)  # invariance truth 1 − 0.15
SENSITIVITY_DISTANCE = RateLaw(0.65, 3.0)
TRUTH = {"invariance": 1.0 - INVARIANCE_DISTANCE.mean, "sensitivity": SENSITIVITY_DISTANCE.mean}


def simulate_cases(rng: np.random.Generator, n_cases: int) -> list[CaseResult]:
    inv_rate = INVARIANCE_DISTANCE.draw(rng, n_cases)
    sens_rate = SENSITIVITY_DISTANCE.draw(rng, n_cases)
    swaps = rng.integers(SWAPS[0], SWAPS[1] + 1, n_cases)
    cases = []
    for c in range(n_cases):
        variants = []
        for kind in INVARIANCE_VARIANTS:
            for i, moved in enumerate(rng.random(3) < inv_rate[c]):
                variants.append(_variant(f"{kind}-{i + 1:02d}", kind, None, moved))
        for i, moved in enumerate(rng.random(int(swaps[c])) < sens_rate[c]):
            variants.append(_variant(f"swap-gate_rule-{i + 1:02d}", "swap", "gate_rule", moved))
        cases.append(CaseResult(f"case{c:02d}", True, None, "a", ["a"], variants))
    return cases


def _variant(variant_id: str, kind: str, governing: str | None, moved: bool) -> VariantResult:
    return VariantResult(
        variant_id, kind, governing, True, None, "b" if moved else "a", 1.0 if moved else 0.0
    )
