"""The corrected pass rate of a pass/fail judge against pass/fail human labels: PPI++ at the
regression λ, which for a 0/1 judge is the stratified (double-sampling) estimator

    θ̂ = π̂ · â + (1 − π̂) · b̂

π̂ the judge's pass share over every sample, â = P̂(human passes | judge passes) and
b̂ = P̂(human passes | judge fails) on the labelled samples (Tenenbein 1970; the "inverse matrix"
correction of Marshall 1990 and Morrissey & Spiegelman 1999, more efficient than Rogan–Gladen's
sensitivity/specificity form with a random labelled slice). Written as PPI, θ̂ = ȳ_L +
β̂·(f̄ − f̄_L) with β̂ = â − b̂: the coefficient of the unlabelled samples' judge mean is
λ = β̂·(N − n)/N (`calipers.stats.ppi`).

Its interval is built from continuity-corrected Wilson intervals — calipers' interval for every
0/1 proportion — of π, a and b, combined by the method of variance estimates recovery (MOVER;
Zou & Donner 2008, Newcombe 2011) for π·a + (1 − π)·b: the lower bound is

    θ̂ − √(π̂²(â − l_a)² + (1 − π̂)²(b̂ − l_b)² + (â − b̂)²·(π̂ − l_π)²)

(with u_π − π̂ instead when â < b̂), the upper one alike. An accurate judge rarely disagrees
with the labels: at 30 labels and a 0.85 pass rate, a judge with sensitivity and specificity
0.95 disagrees on none of them 21% of the time, and the t interval of PPI++ — whose variance then
comes from the unlabelled samples alone — covered 82.7%; this one 99.1% (docs/judges.md). With
clusters or weights each proportion's count is its effective size after the design effect, as
in `calipers.stats.estimate`.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from calipers.stats.bootstrap import dense_codes
from calipers.stats.interval_parts import Interval, effective_n, weighted_mean, wilson_bounds
from calipers.stats.intervals import z_from_confidence

FloatArray = npt.NDArray[np.float64]


def _proportion(
    x: FloatArray,
    codes: npt.NDArray[np.intp],
    w: FloatArray | None,
    confidence_level: float,
) -> tuple[float, float, float]:
    """A weighted 0/1 proportion and its continuity-corrected Wilson bounds on its effective n."""
    p = weighted_mean(x, w)
    sub = dense_codes(codes)
    if int(sub.max()) + 1 < 2:
        n_eff = 1.0  # one independent unit: as little as one observation says
    else:
        n_eff = effective_n(x, sub, p * (1 - p) / x.size, confidence_level, w)
    low, high = wilson_bounds(p * n_eff, n_eff, z_from_confidence(confidence_level))
    return p, low, high


def stratified_interval(
    f: FloatArray,
    y: FloatArray,
    labelled: npt.NDArray[np.bool_],
    codes: npt.NDArray[np.intp],
    w: FloatArray | None,
    *,
    confidence_level: float,
) -> tuple[Interval | None, str | None, float]:
    """The stratified estimate and its MOVER interval from 0/1 `f` (every row) and 0/1 `y` (the
    `labelled` rows), with the equivalent PPI λ; (None, the reason, λ) when a judge verdict that
    occurs has no labelled sample to estimate the human pass rate from."""
    weights = np.ones_like(f) if w is None else w
    pi, l_pi, u_pi = _proportion(f, codes, w, confidence_level)
    strata: list[tuple[float, float, float]] = []
    for verdict, share in ((1.0, pi), (0.0, 1.0 - pi)):
        rows = labelled & (f == verdict)
        if not rows.any():
            if share > 0:
                name = "pass" if verdict == 1 else "fail"
                why = f"no labelled sample the judge marked {name}: its human pass rate is unknown"
                return None, why, 0.0
            strata.append((0.0, 0.0, 0.0))
            continue
        strata.append(
            _proportion(y[rows], codes[rows], None if w is None else w[rows], confidence_level)
        )
    (a, l_a, u_a), (b, l_b, u_b) = strata
    estimate = pi * a + (1 - pi) * b
    slope = a - b
    share_down, share_up = (pi - l_pi, u_pi - pi) if slope >= 0 else (u_pi - pi, pi - l_pi)
    down = math.sqrt(
        (pi * (a - l_a)) ** 2 + ((1 - pi) * (b - l_b)) ** 2 + (slope * share_down) ** 2
    )
    up = math.sqrt((pi * (u_a - a)) ** 2 + ((1 - pi) * (u_b - b)) ** 2 + (slope * share_up) ** 2)
    low, high = max(0.0, estimate - down), min(1.0, estimate + up)
    z = z_from_confidence(confidence_level)
    unlabelled_share = float(weights[~labelled].sum() / weights.sum())
    g = int(codes.max()) + 1
    interval = Interval(
        estimate, low, high, "ppi", "ppi-stratified-wilson-cc", confidence_level,
        (high - low) / (2 * z), None, g, int(f.size), float(labelled.sum()),
    )  # fmt: skip
    return interval, None, slope * unlabelled_share
