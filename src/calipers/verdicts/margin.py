"""Decisions against a margin: is the treatment no worse than the control by more than M?

The decision reads the pair's own calibrated interval — the one the verdict uses, at confidence
1 − α/K for K treatments, clusters and epochs respected — so each of its bounds is a one-sided
test at α/2K. With L and H its bounds and M > 0 the margin on the compared quantity's scale:

    superior       L > 0 and the difference is significant by the verdict's rules
                   (for paired 0/1 outcomes the exact McNemar test must agree)
    equivalent     with --equivalence: −M < L and H < M (two one-sided tests)
    non-inferior   L > −M: the worst plausible drop is inside the margin
    inferior       H < −M: even the best plausible case is a drop beyond the margin
    inconclusive   otherwise: the interval reaches past −M on one side and not on the other

(first match wins). Without an interval (too few units, no spread) the decision is inconclusive
and says why.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from calipers.errors import InputError
from calipers.verdicts.difference import Difference

DECISIONS = ("superior", "equivalent", "non-inferior", "inconclusive", "inferior")
PASSING = frozenset({"superior", "equivalent", "non-inferior"})  # --gate non-inferior


@dataclass(frozen=True)
class Margin:
    """A margin as given: an amount on the compared quantity's scale, or a percentage of the
    scale's width ("2%": 0.02 on pass rates, 0.08 on 1–5 layers)."""

    value: float
    percent: bool = False

    def on_scale(self, span: float) -> float:
        return self.value / 100.0 * span if self.percent else self.value

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.percent else f"{self.value:g}"


_MARGIN = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(%?)\s*$")


def parse_margin(text: str | float | Margin) -> Margin:
    if isinstance(text, Margin):
        return text
    if isinstance(text, int | float):
        value, percent = float(text), False
    else:
        match = _MARGIN.match(str(text))
        if not match:
            raise InputError(
                f"--margin {text!r} is not a number or a percentage",
                hint="Give the margin on the compared quantity's scale (--margin 0.05) or as a "
                "percentage of the scale's width (--margin 2%).",
                parameters=["margin"],
            )
        value, percent = float(match.group(1)), bool(match.group(2))
    if not math.isfinite(value) or value <= 0:
        raise InputError(
            f"--margin must be positive, got {text!r}",
            hint="A margin is how much worse the treatment may be: --margin 0.05.",
            parameters=["margin"],
        )
    if percent and value >= 100:
        raise InputError(f"--margin {text!r} is the whole scale or more", parameters=["margin"])
    return Margin(value, percent)


@dataclass(frozen=True)
class MarginDecision:
    margin: float  # on the compared quantity's scale
    given: str  # as the user gave it ("0.05", "2%")
    equivalence: bool
    decision: str
    reason: str
    low: float | None
    high: float | None
    confidence_level: float
    tost: dict[str, float] | None = None  # with --equivalence on a t interval

    @property
    def passes(self) -> bool:
        return self.decision in PASSING

    def to_dict(self) -> dict[str, Any]:
        return {
            "margin": self.margin,
            "given": self.given,
            "equivalence": self.equivalence,
            "decision": self.decision,
            "reason": self.reason,
            "low": self.low,
            "high": self.high,
            "confidence_level": self.confidence_level,
            "tost": self.tost,
        }


def decide_margin(
    d: Difference, margin: float, *, given: str, equivalence: bool, confidence_level: float
) -> MarginDecision:
    def out(decision: str, reason: str) -> MarginDecision:
        return MarginDecision(
            margin, given, equivalence, decision, reason, d.low, d.high, confidence_level,
            tost(d, margin) if equivalence else None,
        )  # fmt: skip

    if d.interval is None:
        why = d.refusal or "no interval"
        return out("inconclusive", f"no interval to hold against the margin ({why})")
    low, high, m = d.interval.low, d.interval.high, margin
    bounds = f"[{low:+.3f}, {high:+.3f}]"
    if low > 0 and d.significant:
        return out("superior", f"the whole interval {bounds} is above 0")
    if equivalence and -m < low and high < m:
        return out("equivalent", f"the interval {bounds} lies within ±{m:.4g}")
    if low > -m:
        return out(
            "non-inferior",
            f"the worst plausible change {low:+.3f} is inside the margin -{m:.4g}",
        )
    if high < -m:
        return out("inferior", f"even the best plausible change {high:+.3f} is below -{m:.4g}")
    return out(
        "inconclusive",
        f"the interval {bounds} reaches past -{m:.4g}: a drop beyond the margin is plausible "
        "and so is one within it (more samples narrow it)",
    )


def tost(d: Difference, margin: float) -> dict[str, float] | None:
    """Two one-sided t tests of |δ| ≥ margin on a t interval's standard error and df (for other
    intervals the interval itself is the test): H0 δ ≤ −M against δ > −M, and H0 δ ≥ M against
    δ < M; the TOST p-value is the larger. Equivalence at the pair's interval is the same as both
    p-values ≤ (1 − confidence)/2."""
    from scipy.special import stdtr

    i = d.interval
    if i is None or i.df is None or i.method != "t" or i.standard_error <= 0:
        return None
    lower = (i.estimate + margin) / i.standard_error
    upper = (i.estimate - margin) / i.standard_error
    p_lower, p_upper = float(stdtr(i.df, -lower)), float(stdtr(i.df, upper))
    return {
        "statistic_lower": lower, "p_lower": p_lower,
        "statistic_upper": upper, "p_upper": p_upper,
        "p_value": max(p_lower, p_upper), "df": i.df,
    }  # fmt: skip
