"""Whether a t interval can be shown to hold on these units: the rule `auto` applies before it
trusts a t interval on data that are not 0/1 (docs/statistics.md, "Which interval").

A t interval's coverage error is driven by the skewness of the units it averages (Edgeworth: the
leading term is γ²/n) and by how few units carry the variation. The rule of Sugden, Smith & Jones
(2000, refining Cochran's 25γ²) asks for more than 28 + 25·γ̂² units for the normal approximation
of a mean; calipers also asks for MIN_INFORMATIVE *informative* units — those not at the most
common value, since a difference that is 0 for 90% of items rests on the other 10% — so small
samples, skew, mass at a bound and a few items that move a lot all fall to the distribution-free
interval (or, without bounds, the studentized bootstrap).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

BASE_UNITS = 28  # Sugden, Smith & Jones (2000): n > 28 + 25·γ₁²
SKEW_FACTOR = 25
# and at least this many units off the most common value: with fewer, the standard error rests on
# a handful of values (a difference that is 0 for 9 items in 10)
MIN_INFORMATIVE = 12


@dataclass(frozen=True)
class Adequacy:
    """The rule's verdict on a t interval, and the figures it read."""

    holds: bool
    n_units: int
    informative: int  # units not at the most common value (+ one of those at it)
    skewness: float
    needed: int  # informative units the rule asks for

    @property
    def reason(self) -> str:
        moved = (
            f"{self.informative} informative of {self.n_units} units"
            if self.informative < self.n_units
            else f"{self.n_units} units"
        )
        verdict = "the t interval holds" if self.holds else "too few for a t interval"
        return (
            f"{moved}, skewness {self.skewness:+.2f}: {verdict} (it needs more than "
            f"28 + 25·skewness² = {BASE_UNITS + SKEW_FACTOR * self.skewness**2:.1f} units, "
            f"{MIN_INFORMATIVE} of them informative)"
        )


def t_adequacy(units: npt.ArrayLike) -> Adequacy:
    """The rule on the units' values (their means, or mean differences)."""
    x = np.asarray(units, dtype=np.float64)
    g = int(x.size)
    if g < 3:
        return Adequacy(False, g, g, 0.0, BASE_UNITS + 1)
    scale = float(np.max(np.abs(x))) or 1.0
    _, counts = np.unique(np.round(x / scale, 12), return_counts=True)
    informative = g - int(counts.max()) + 1
    centred = x - x.mean()
    m2 = float(np.mean(centred**2))
    skew = 0.0
    if m2 > 0:
        # cubed by two products: numpy's `**3` calls pow() per element, 10× slower (0.28 ms of
        # 10,000 units); the mean differs from pow's in the last bits (relative ≤ 1e-11)
        g1 = float(np.mean(centred * centred * centred)) / m2**1.5
        skew = g1 * np.sqrt(g * (g - 1)) / (g - 2)  # the adjusted Fisher–Pearson G1
    needed = int(np.floor(BASE_UNITS + SKEW_FACTOR * skew * skew)) + 1
    holds = g >= needed and informative >= MIN_INFORMATIVE
    return Adequacy(holds, g, informative, float(skew), needed)


def t_rule_probability(units: int, skewness: float) -> float:
    """The probability that the rule holds on `units` units drawn from a population with this
    skewness: the sample skewness taken as normal around it with its standard error
    √(6n(n − 1)/((n − 2)(n + 1)(n + 3))); the rule asks 25·γ̂² < n − 28 (the informative count
    is not modelled: scores, not 0/1 outcomes). 0 below 29 units."""
    from scipy.special import ndtr

    n = int(units)
    if n <= BASE_UNITS:
        return 0.0
    se = float(np.sqrt(6.0 * n * (n - 1) / ((n - 2) * (n + 1) * (n + 3))))
    reach = float(np.sqrt((n - BASE_UNITS) / SKEW_FACTOR))
    return float(ndtr((reach - skewness) / se) - ndtr((-reach - skewness) / se))


def t_rule_floor(skewness: float, *, level: float = 0.99, most: int = 10_000_000) -> int:
    """The fewest units at which the rule holds with probability `level` (a planner's floor: a
    plan below it would promise a t interval's power where `auto` may use another interval)."""
    low, high = BASE_UNITS, BASE_UNITS + 1
    while t_rule_probability(high, skewness) < level:
        low, high = high, high * 2
        if high > most:
            return most
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if t_rule_probability(mid, skewness) < level else (low, mid)
    return high
