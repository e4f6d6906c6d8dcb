"""The six verdicts of seed 000 (policy `gates`), decided per (control, treatment) pair.

First match wins (docs/layered.md):
1. one variant only                                                            → SOLO
2. composite CI contains 0 and (pairs < 20, or — where repeats allow a saturation verdict — the
   treatment is not saturated with high confidence)                            → UNDERPOWERED
3. composite CI entirely below 0, or a layer that passed its gate in control
   fails it in treatment                                                       → REGRESS
4. composite CI contains 0: NOISE if every layer's CI contains 0, else         → CAUTIOUS
5. composite significantly up but a treatment gate fails, the gain is below the trivial
   difference, inter-judge Pearson < 0.4 in either variant, or the median run-to-run CV > 0.15
                                                                               → CAUTIOUS
6. otherwise                                                                   → PROGRESS
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from calipers.verdicts.paired import PairedComparison
from calipers.verdicts.persample import (
    CV_LIMIT,
    HUMAN_ALIGNED,
    JUDGE_AGREE,
    JUDGE_DISAGREE,
    RunSummary,
)

MIN_PAIRS = 20
DEFAULT_TRIVIAL_DIFF = 0.1
DEFAULT_THRESHOLD = 3.5  # the layer gate: every present layer's mean must reach it (1–5 scale)


class Verdict(StrEnum):
    PROGRESS = "PROGRESS"
    CAUTIOUS = "CAUTIOUS"
    REGRESS = "REGRESS"
    NOISE = "NOISE"
    UNDERPOWERED = "UNDERPOWERED"
    SOLO = "SOLO"


# The roll-up over several treatments is the worst pair.
SEVERITY = {
    Verdict.REGRESS: 5,
    Verdict.CAUTIOUS: 4,
    Verdict.UNDERPOWERED: 3,
    Verdict.NOISE: 2,
    Verdict.PROGRESS: 1,
    Verdict.SOLO: 0,
}


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def _ci(pair: PairedComparison) -> str:
    c = pair.composite
    if c.interval is None:
        return f"composite {_fmt(c.estimate)} (no interval)"
    return f"composite {_fmt(c.estimate)} [{c.low:+.3f}, {c.high:+.3f}]"


def decide(
    pair: PairedComparison,
    control: RunSummary,
    treatment: RunSummary,
    *,
    gated: bool,
    trivial_diff: float = DEFAULT_TRIVIAL_DIFF,
    use_cv: bool = True,
) -> Decision:
    composite = pair.composite
    ci = _ci(pair)
    sat = treatment.saturation
    if not composite.significant:
        if pair.n_pairs < MIN_PAIRS:
            return Decision(
                Verdict.UNDERPOWERED,
                f"{ci} contains 0 with only {pair.n_pairs} paired samples (< {MIN_PAIRS}); "
                f"the smallest detectable effect is {_mde(pair)}",
            )
        if sat.saturated is not None and not sat.saturated_with_high_confidence:
            state = (
                "not saturated" if not sat.saturated else f"saturated ({sat.confidence} confidence)"
            )
            return Decision(
                Verdict.UNDERPOWERED,
                f"{ci} contains 0 and '{treatment.run}' is {state} over its repeats; "
                f"add samples or epochs (detectable effect {_mde(pair)})",
            )
    if composite.below_zero:
        return Decision(Verdict.REGRESS, f"{ci} is below 0")
    broken = _broken_gates(control, treatment) if gated else []
    if broken:
        return Decision(
            Verdict.REGRESS,
            "layer gate broken: " + ", ".join(broken) + f"; {ci}",
        )
    if not composite.significant:
        moved = [n for n, d in pair.components.items() if d.significant]
        if moved:
            return Decision(
                Verdict.CAUTIOUS,
                f"{ci} contains 0 but layer(s) moved: "
                + ", ".join(f"{n} {_fmt(pair.components[n].estimate)}" for n in moved),
            )
        return Decision(Verdict.NOISE, f"{ci} contains 0 and no layer moved")
    concerns = []
    if gated and not treatment.gate_passed:
        failing = [n for n, c in treatment.components.items() if c.gate is False]
        concerns.append(
            "treatment fails the gate on "
            + (", ".join(failing) if failing else "every layer (none present)")
        )
    if composite.estimate is not None and composite.estimate < trivial_diff:
        concerns.append(f"the gain {_fmt(composite.estimate)} is below {trivial_diff}")
    for run in (control, treatment):
        if run.judge_pearson is not None and run.judge_pearson < JUDGE_DISAGREE:
            concerns.append(f"judges disagree on '{run.run}' (Pearson {run.judge_pearson:.2f})")
        if use_cv and run.cv_median is not None and run.cv_median > CV_LIMIT:
            concerns.append(
                f"'{run.run}' is unstable across epochs (median CV {run.cv_median:.2f})"
            )
    if concerns:
        return Decision(Verdict.CAUTIOUS, f"{ci} is significant but " + "; ".join(concerns))
    gates = " and every layer gate passes" if gated else ""
    return Decision(Verdict.PROGRESS, f"{ci} is significant{gates}")


def _mde(pair: PairedComparison) -> str:
    return "n/a" if pair.mde is None else f"{pair.mde:.3f}"


def _broken_gates(control: RunSummary, treatment: RunSummary) -> list[str]:
    """Layers whose gate passed in control and fails (or vanished) in treatment."""
    broken = []
    for name, c in control.components.items():
        t = treatment.components.get(name)
        if c.gate and (t is None or t.gate is not True):
            after = "missing" if t is None or t.mean is None else f"{t.mean:.2f}"
            broken.append(f"{name} {c.mean:.2f} → {after}")
    return broken


def badges(pair: PairedComparison, control: RunSummary, treatment: RunSummary) -> dict[str, Any]:
    """The four methodology badges; None where the data cannot say."""
    pearsons = [r.judge_pearson for r in (control, treatment) if r.judge_pearson is not None]
    humans = [r.human_pearson for r in (control, treatment) if r.human_pearson is not None]
    sat = treatment.saturation
    return {
        "judges_agree": all(p >= JUDGE_AGREE for p in pearsons) if pearsons else None,
        "difference_significant": pair.composite.significant,
        "saturated": sat.saturated_with_high_confidence if sat.saturated is not None else None,
        "human_aligned": all(h >= HUMAN_ALIGNED for h in humans) if humans else None,
    }
