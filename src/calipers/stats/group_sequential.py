"""Group-sequential boundaries: a z-test looked at K times, with the type-I error spent across the
looks so that the chance of crossing at ANY look is α (Lan & DeMets 1983).

At information fractions 0 < t₁ < … < t_K = 1 the standardised statistics Z₁…Z_K of a mean are,
under the null and asymptotically, jointly normal with corr(Zᵢ, Zⱼ) = √(tᵢ/tⱼ) (i ≤ j): Brownian
motion read at the looks. A boundary c_k is crossed at look k when |Z_k| ≥ c_k (two-sided) or
Z_k ≥ c_k (one-sided). The spending function α(t) says how much of α may have been spent by
fraction t; c_k is the value whose first-crossing probability at look k is α(t_k) − α(t_{k−1}):

    O'Brien–Fleming type   α(t) = 2 − 2Φ(z_{1−α/2}/√t)      (little early, nearly all at the end)
    Pocock type            α(t) = α·log(1 + (e − 1)t)        (about evenly)

A two-sided design at α spends α/2 on each side by the one-sided function at α/2 (the convention
of gsDesign, rpact and EAST, whose tables the tests check: O'Brien–Fleming type, K = 5, two-sided
α = 0.05 → 4.877, 3.357, 2.680, 2.290, 2.031).

The first-crossing probabilities come from the recursive numerical integration of Armitage,
McPherson & Rowe (1969) as Jennison & Turnbull (2000, ch. 19) give it: with S_k = Z_k√t_k the
increments S_k − S_{k−1} ~ N(θΔ_k, Δ_k) are independent, so the density of S_k on the
continuation region is the previous density convolved with a normal kernel — here on a uniform
grid fine against the smallest √Δ, by Simpson's rule; the crossing probability at look k is the
previous density integrated against a normal tail, in closed form. Verified against scipy's
multivariate normal (the crossing probabilities) and published constants (tests).

The boundaries are exact for normal statistics; a z-test of paired differences is normal only
asymptotically (the plug-in variance, discrete outcomes), which is why the calibration grid
measures these designs like every other (docs/calibration.md, "Sequential designs").
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import special

from calipers.errors import InputError


def _brentq() -> Any:
    """scipy's root finder, imported when a boundary is computed: scipy.optimize takes ~0.4 s to
    import, and every `calipers watch` imports this module (through the sequential rules)
    whether or not its design has group looks."""
    from scipy.optimize import brentq

    return brentq


FloatArray = npt.NDArray[np.float64]
Spending = Literal["obrien-fleming", "pocock"]
SPENDING: tuple[str, ...] = ("obrien-fleming", "pocock")
TAIL_SD = 12.0  # the continuation region is cut at 12 sd from the mean (mass beyond ~1e-33)
STEPS_PER_SD = 24  # grid spacing: 1/24 of the smallest increment's sd
MAX_POINTS = 4001


def _check(fractions: npt.ArrayLike, alpha: float, sides: int) -> FloatArray:
    t = np.asarray(fractions, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)):
        raise InputError(
            "information fractions must be a non-empty list of numbers",
            parameters=["information_fractions"],
        )
    if t[0] <= 0 or np.any(np.diff(t) <= 0) or t[-1] > 1 + 1e-12:
        raise InputError(
            f"information fractions must increase within (0, 1], got {t.tolist()}",
            hint="Give the share of the planned units at each look, e.g. 0.2, 0.4, …, 1.",
            parameters=["information_fractions"],
        )
    if not 0 < alpha < 1:
        raise InputError(f"alpha must lie in (0, 1), got {alpha}", parameters=["alpha"])
    if sides not in (1, 2):
        raise InputError(f"sides must be 1 or 2, got {sides}", parameters=["sides"])
    return t


def spending_function(
    t: npt.ArrayLike, *, alpha: float, spending: Spending = "obrien-fleming"
) -> FloatArray:
    """α(t): the type-I error that may have been spent by information fraction t, for one side
    at level α."""
    x = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    if spending == "obrien-fleming":
        z = float(special.ndtri(1 - alpha / 2))
        with np.errstate(divide="ignore"):
            out = np.where(x > 0, 2.0 - 2.0 * special.ndtr(z / np.sqrt(x)), 0.0)
        return np.asarray(out, dtype=np.float64)
    if spending == "pocock":
        return np.asarray(alpha * np.log1p((math.e - 1.0) * x), dtype=np.float64)
    raise InputError(
        f"unknown spending function '{spending}'",
        hint="Spending functions: obrien-fleming, pocock.",
        parameters=["spending"],
    )


class _Recursion:
    """The sub-density of S_k on its continuation region, look after look."""

    def __init__(self, t: FloatArray, drift: float) -> None:
        self.t, self.drift = t, drift
        steps = np.diff(np.concatenate(([0.0], t)))
        self.h_max = float(np.sqrt(steps.min())) / STEPS_PER_SD
        self.k = -1
        self.grid: FloatArray | None = None
        self.mass: FloatArray | None = None  # density × Simpson weight at each grid point

    def _kernel_args(self, k: int) -> tuple[float, float]:
        previous = self.t[k - 1] if k > 0 else 0.0
        delta = float(self.t[k] - previous)
        return self.drift * delta, math.sqrt(delta)

    def crossing(self, k: int, upper: float, lower: float) -> tuple[float, float]:
        """P(first crossing above `upper`), P(below `lower`) at look k, on the S scale."""
        shift, sd = self._kernel_args(k)
        if self.grid is None or self.mass is None:
            up = float(special.ndtr((shift - upper) / sd)) if math.isfinite(upper) else 0.0
            down = float(special.ndtr((lower - shift) / sd)) if math.isfinite(lower) else 0.0
            return up, down
        mean = self.grid + shift
        up = float(self.mass @ special.ndtr((mean - upper) / sd)) if math.isfinite(upper) else 0.0
        down = float(self.mass @ special.ndtr((lower - mean) / sd)) if math.isfinite(lower) else 0.0
        return up, down

    def advance(self, k: int, upper: float, lower: float) -> None:
        """Move to look k with continuation region (lower, upper) on the S scale."""
        shift, sd = self._kernel_args(k)
        centre = self.drift * float(self.t[k])
        spread = TAIL_SD * math.sqrt(float(self.t[k]))
        a, b = max(lower, centre - spread), min(upper, centre + spread)
        if not a < b:
            self.grid, self.mass = np.array([0.0]), np.array([0.0])
            return
        points = min(MAX_POINTS, max(201, math.ceil((b - a) / self.h_max)))
        points += 1 - points % 2  # odd, for Simpson's rule
        s = np.linspace(a, b, points)
        weights = np.full(points, 2.0)
        weights[1::2] = 4.0
        weights[0] = weights[-1] = 1.0
        weights *= (s[1] - s[0]) / 3.0
        if self.grid is None or self.mass is None:
            density = np.exp(-0.5 * ((s - shift) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
        else:
            gap = (s[:, None] - self.grid[None, :] - shift) / sd
            density = (np.exp(-0.5 * gap**2) @ self.mass) / (sd * math.sqrt(2 * math.pi))
        self.grid, self.mass = s, density * weights


def crossing_probabilities(
    bounds: npt.ArrayLike,
    information_fractions: npt.ArrayLike,
    *,
    sides: int = 2,
    drift: float = 0.0,
) -> FloatArray:
    """P(the first crossing is at look k) for each k, for z boundaries `bounds` (inf: no
    crossing possible at that look); `drift` θ: E[Z_k] = θ√t_k (0: the null)."""
    t = _check(information_fractions, 0.5, sides)
    c = np.asarray(bounds, dtype=np.float64)
    if c.shape != t.shape:
        raise InputError("one boundary per look", parameters=["bounds"])
    rec = _Recursion(t, drift)
    out = np.empty(t.size)
    for k in range(t.size):
        upper = float(c[k]) * math.sqrt(float(t[k]))
        lower = -upper if sides == 2 else -math.inf
        up, down = rec.crossing(k, upper, lower)
        out[k] = up + down
        if k + 1 < t.size:
            rec.advance(k, upper, lower)
    return out


def group_sequential_bounds(
    information_fractions: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    spending: Spending = "obrien-fleming",
    sides: int = 2,
) -> FloatArray:
    """The z boundaries c₁…c_K of an α-spending design: under the null the first crossing at
    look k has probability α(t_k) − α(t_{k−1}) (two-sided: |Z_k| ≥ c_k, α two-sided; one-sided:
    Z_k ≥ c_k, α one-sided; two-sided, each side spends α/2). A look whose share of α is nil
    gets inf."""
    t = _check(information_fractions, alpha, sides)
    spent = sides * spending_function(t, alpha=alpha / sides, spending=spending)
    targets = np.diff(np.concatenate(([0.0], spent)))
    rec = _Recursion(t, 0.0)
    out = np.empty(t.size)
    for k in range(t.size):
        root_t = math.sqrt(float(t[k]))

        def excess(c: float, k: int = k, root_t: float = root_t) -> float:
            upper = c * root_t
            up, down = rec.crossing(k, upper, -upper if sides == 2 else -math.inf)
            return up + down - float(targets[k])

        if targets[k] <= 1e-15 or excess(40.0) > 0:
            out[k] = math.inf
        elif excess(0.0) < 0:
            out[k] = 0.0
        else:
            out[k] = _brentq()(excess, 0.0, 40.0, xtol=1e-10, rtol=1e-12)
        upper = float(out[k]) * root_t
        if k + 1 < t.size:
            rec.advance(k, upper, -upper if sides == 2 else -math.inf)
    return out


def constant_bounds(
    looks: int,
    *,
    alpha: float = 0.05,
    shape: Spending = "pocock",
    sides: int = 2,
) -> FloatArray:
    """The classical boundaries at `looks` equally spaced looks: Pocock's (1977) constant c, or
    O'Brien & Fleming's (1979) c·√(K/k), with c such that the crossing probability at any look
    is α — the designs the spending functions approximate."""
    if looks < 1:
        raise InputError("a design needs at least one look", parameters=["looks"])
    t = np.arange(1, looks + 1) / looks
    _check(t, alpha, sides)
    if shape == "pocock":
        profile = np.ones(looks)
    elif shape == "obrien-fleming":
        profile = np.sqrt(looks / np.arange(1, looks + 1))
    else:
        raise InputError(f"unknown boundary shape '{shape}'", parameters=["shape"])

    def excess(c: float) -> float:
        return float(crossing_probabilities(c * profile, t, sides=sides).sum()) - alpha

    c = _brentq()(excess, 0.5, 10.0, xtol=1e-10, rtol=1e-12)
    return np.asarray(c * profile, dtype=np.float64)
