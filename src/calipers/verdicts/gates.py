"""The six verdicts of seed 000 (policy `gates`), decided per (control, treatment) pair, each rule
made to hold its error rate (docs/statistics.md; measured in docs/calibration.md).

"Significant" means the pair's interval (at 1 − α/K for K treatments) excludes 0 — and for paired
0/1 outcomes the exact McNemar test agrees. First match wins:
1. one variant only                                                            → SOLO
2. composite not significant and the data cannot decide: no interval (too few units, no spread),
   the minimum detectable effect above `min_effect`, or — where repeats allow a saturation
   verdict — the treatment not saturated with high confidence                  → UNDERPOWERED
3. composite significantly below 0 by at least the trivial difference, or a layer gate broken with
   evidence (control passes it; treatment's interval lies below it after a significant drop of
   that layer)                                                                 → REGRESS
   — unless samples are missing in one run in a way that differs between the runs or may track
   the outcome and the drop does not hold across the worst/best-case bounds of the missing
   outcomes (`calipers.verdicts.missing_bounds`)                               → CAUTIOUS
4. composite not significant: CAUTIOUS if a layer moved (Holm over the layers), else NOISE
5. composite significantly below 0 but by less than the trivial difference      → CAUTIOUS
6. composite significantly up but: below the trivial difference, a treatment gate fails, a
   quantity goes missing more often in one run (exact McNemar), the gain does not hold across
   the missing outcomes' bounds (as in 3), judges disagree (Pearson < 0.4), or the median
   run-to-run CV > 0.15                                                        → CAUTIOUS
7. otherwise                                                                   → PROGRESS
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from calipers.verdicts.missing_bounds import MissingBounds
from calipers.verdicts.paired import PairedComparison
from calipers.verdicts.run_summary import (
    CV_LIMIT,
    HUMAN_ALIGNED,
    JUDGE_AGREE,
    JUDGE_DISAGREE,
    RunSummary,
)

# Defaults relative to the width of the compared scale (1 for pass rates and 0–1 scores, 4 for
# 1–5 layers): the smallest effect worth detecting, and a difference too small to act on.
MIN_EFFECT_FRACTION = 0.05
TRIVIAL_FRACTION = 0.025
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


def _ci(pair: PairedComparison, label: str = "composite") -> str:
    """The difference in words; `label` names the value (the metric scheme: its metric)."""
    c = pair.composite
    if c.interval is None and c.constant and c.exact_p is not None:
        return (
            f"{label} {_fmt(c.estimate)} on every one of {c.n_pairs} paired units "
            f"(exact sign test p = {c.exact_p:.2g})"
        )
    if c.interval is None and c.unchanged:
        return f"{label} unchanged on every one of {c.n_pairs} paired units"
    if c.interval is None:
        return f"{label} {_fmt(c.estimate)} (no interval)"
    return f"{label} {_fmt(c.estimate)} [{c.low:+.3f}, {c.high:+.3f}]"


@dataclass(frozen=True)
class Thresholds:
    """What a pair's decision compares against, on the composite's own scale."""

    # the smallest effect worth detecting: above it a NOISE is UNDERPOWERED; None when the scale
    # is unknown (an unbounded metric, nothing declared): no NOISE, since nothing says what a
    # worthwhile effect is
    min_effect: float | None
    trivial_diff: float  # significant differences smaller than this are CAUTIOUS either way
    threshold: float | None  # the layer gate (None when ungated)
    span: float | None = 1.0  # the width of the composite's scale (None: unbounded)
    use_cv: bool = True


def unchanged_bound(n_units: int, alpha: float, span: float) -> float:
    """When every one of n units has exactly the same score in both runs, the share of units that
    differ at all is below 1 − α^(1/n) (the exact binomial bound; "rule of three" ≈ 3/n), and no
    unit can differ by more than the scale's width: |difference| < span·(1 − α^(1/n))."""
    return float(span * (1.0 - alpha ** (1.0 / n_units)))


def decide(
    pair: PairedComparison,
    control: RunSummary,
    treatment: RunSummary,
    *,
    gated: bool,
    limits: Thresholds,
    label: str = "composite",
) -> Decision:
    composite = pair.composite
    ci = _ci(pair, label)
    sat = treatment.saturation
    detectable = _mde(pair)
    flat = _why_not_significant(pair)
    if not composite.significant:
        if composite.interval is None and not composite.unchanged:
            why = composite.refusal or "no interval"
            return Decision(
                Verdict.UNDERPOWERED,
                f"{ci}: {why}; no verdict from {pair.n_pairs} paired unit(s)",
            )
        if sat.saturated is not None and not sat.saturated_with_high_confidence:
            state = (
                "not saturated" if not sat.saturated else f"saturated ({sat.confidence} confidence)"
            )
            return Decision(
                Verdict.UNDERPOWERED,
                f"{ci} {flat} and '{treatment.run}' is {state} over its repeats; "
                f"add samples or epochs (detectable effect {_mde(pair)})",
            )
        if limits.min_effect is None or limits.span is None:
            return Decision(
                Verdict.UNDERPOWERED,
                f"{ci} {flat}; the value has no declared scale, so no effect is known to be worth "
                f"detecting (detectable effect {detectable}): give --min-effect or --bounds",
            )
        if composite.interval is None:
            bound = unchanged_bound(pair.n_pairs, 1.0 - pair.confidence_level, limits.span)
            detectable = f"{bound:.3f} (every unit unchanged: exact bound)"
            if bound > limits.min_effect:
                return Decision(
                    Verdict.UNDERPOWERED,
                    f"composite unchanged on every one of {pair.n_pairs} paired units, which "
                    f"only bounds the difference below {bound:.3f} — above the smallest effect "
                    f"worth detecting ({limits.min_effect:.3g})",
                )
        if pair.mde is not None and math.isinf(pair.mde):
            return Decision(
                Verdict.UNDERPOWERED,
                f"{ci} {flat}, and with {pair.n_pairs} paired units no difference on this scale "
                "is detectable with 80% power by the exact test the verdict needs",
            )
        if pair.mde is not None and pair.mde > limits.min_effect:
            return Decision(
                Verdict.UNDERPOWERED,
                f"{ci} {flat}, and with {pair.n_pairs} paired units the smallest effect it "
                f"detects (80% power, spread over the units) is {pair.mde:.3f}, above the "
                "smallest worth detecting "
                f"({limits.min_effect:.3g}); about {needed_units(pair, limits.min_effect)} units "
                "would detect that",
            )
    estimate = composite.estimate or 0.0
    bounded = pair.missing_bounds
    if bounded is not None and not bounded.triggered:
        bounded = None
    if composite.below_zero and abs(estimate) >= limits.trivial_diff:
        if bounded is not None and not bounded.holds_regress(limits.trivial_diff):
            return Decision(
                Verdict.CAUTIOUS,
                f"{ci} is below 0, but missing outcomes could decide it: {bounded.describe()} "
                f"— {bounded.trigger}",
            )
        return Decision(Verdict.REGRESS, f"{ci} is below 0" + _across(bounded))
    broken = broken_gates(pair, limits.threshold) if gated else []
    if broken:
        return Decision(Verdict.REGRESS, "layer gate broken: " + ", ".join(broken) + f"; {ci}")
    if not composite.significant:
        moved = [n for n, d in pair.components.items() if d.significant]
        if moved:
            return Decision(
                Verdict.CAUTIOUS,
                f"{ci} {flat} but layer(s) moved: "
                + ", ".join(f"{n} {_fmt(pair.components[n].estimate)}" for n in moved),
            )
        still = " and no layer moved" if gated else ""  # a scheme without layers: no layer words
        return Decision(
            Verdict.NOISE,
            f"{ci} {flat}{still}; the data would have detected a difference of "
            f"±{detectable} (80% power, an effect spread over the units)",
        )
    if composite.below_zero:
        return Decision(
            Verdict.CAUTIOUS,
            f"{ci} is a significant drop, smaller than the trivial difference "
            f"{limits.trivial_diff:.3g}",
        )
    concerns = []
    if gated and not treatment.gate_passed:
        failing = [n for n, c in treatment.components.items() if c.gate is False]
        concerns.append(
            "treatment fails the gate on "
            + (", ".join(failing) if failing else "every layer (none present)")
        )
    if estimate < limits.trivial_diff:
        concerns.append(f"the gain {_fmt(estimate)} is below {limits.trivial_diff:.3g}")
    undecided = bounded is not None and not bounded.holds_progress(limits.trivial_diff)
    if bounded is not None and undecided:
        concerns.append(
            f"missing outcomes could decide it: {bounded.describe()} — {bounded.trigger}"
        )
    for name in pair.missing_differs:
        if name == "composite" and undecided:
            continue  # said by the bounds, with the same test on samples
        m = pair.missing[name]
        what = "a composite" if name == "composite" else f"the {name} layer"
        concerns.append(
            f"{what} is missing more often in one run: present in control only on "
            f"{m.control_only} of {m.n_observation_pairs} pairs, in treatment only on "
            f"{m.treatment_only} (exact McNemar p = {m.p_value:.2g})"
        )
    for run in (control, treatment):
        if run.judge_pearson is not None and run.judge_pearson < JUDGE_DISAGREE:
            concerns.append(f"judges disagree on '{run.run}' (Pearson {run.judge_pearson:.2f})")
        if limits.use_cv and run.cv_median is not None and run.cv_median > CV_LIMIT:
            concerns.append(
                f"'{run.run}' is unstable across epochs (median CV {run.cv_median:.2f})"
            )
    if concerns:
        return Decision(Verdict.CAUTIOUS, f"{ci} is significant but " + "; ".join(concerns))
    gates = " and every layer gate passes" if gated else ""
    return Decision(Verdict.PROGRESS, f"{ci} is significant{gates}" + _across(bounded))


def _across(bounded: MissingBounds | None) -> str:
    """The bounds a PROGRESS or REGRESS held across, when they had to be read."""
    if bounded is None:
        return ""
    return f", and holds across the missing outcomes: {bounded.describe()}"


def _why_not_significant(pair: PairedComparison) -> str:
    c = pair.composite
    if c.interval is not None and not c.interval.contains(0.0):
        return (
            f"excludes 0, but the exact McNemar test does not agree (p = {c.exact_p:.2g}): "
            "not significant"
        )
    return "contains 0" if c.interval is not None else "is not significant"


def needed_units(pair: PairedComparison, effect: float) -> int:
    """Units for the MDE to reach `effect`: n·(MDE/effect)², as the MDE shrinks with √n."""
    if pair.mde is None or effect <= 0:
        return pair.n_pairs
    return max(pair.n_pairs + 1, math.ceil(pair.n_pairs * (pair.mde / effect) ** 2))


def _mde(pair: PairedComparison) -> str:
    return "n/a" if pair.mde is None else f"{pair.mde:.3f}"


def broken_gates(pair: PairedComparison, threshold: float | None) -> list[str]:
    """Layers whose gate control passes and treatment fails with evidence."""
    if threshold is None:
        return []
    broken = []
    for name, g in pair.gates.items():
        if g.broken(threshold):
            broken.append(
                f"{name} {g.control_mean:.2f} → {g.treatment_mean:.2f} "
                f"(upper bound {g.treatment_high:.2f} < {threshold:g})"
            )
    return broken


def badges(
    pair: PairedComparison, control: RunSummary, treatment: RunSummary, *, judged: bool = True
) -> dict[str, Any]:
    """The methodology badges; None where the data cannot say. The judge badges (judges agree,
    human aligned) only for a scheme with a judge layer (`judged`): a plain metric has none."""
    pearsons = [r.judge_pearson for r in (control, treatment) if r.judge_pearson is not None]
    humans = [r.human_pearson for r in (control, treatment) if r.human_pearson is not None]
    sat = treatment.saturation
    found = {
        "judges_agree": all(p >= JUDGE_AGREE for p in pearsons) if pearsons else None,
        "difference_significant": pair.composite.significant,
        "saturated": sat.saturated_with_high_confidence if sat.saturated is not None else None,
        "human_aligned": all(h >= HUMAN_ALIGNED for h in humans) if humans else None,
    }
    if not judged:
        del found["judges_agree"], found["human_aligned"]
    return found
