"""What the demo says beside its two verdicts on the same change: the cost figures behind the
objective composite's adjustment, and why the layered verdict (quality only) and the objective
gate (quality and cost) can disagree. Every figure is read from the result objects."""

from __future__ import annotations

from dataclasses import dataclass

from calipers.schemes.objective.scoring import COST_METRICS, TaskScore
from calipers.schemes.objective.verdict import ObjectiveComparison, ObjectiveVerdict
from calipers.verdicts.compare import CompareResult
from calipers.verdicts.gates import Verdict

UNITS = {"cost_usd": "$", "latency_s": "s"}


@dataclass(frozen=True)
class CostFigure:
    """One cost metric, per sample, on both sides of the comparison (over the tasks whose
    adjustment used it)."""

    metric: str
    baseline: float
    candidate: float

    @property
    def ratio(self) -> float | None:
        return self.candidate / self.baseline if self.baseline > 0 else None


@dataclass(frozen=True)
class CostSummary:
    figures: list[CostFigure]
    adjustments: list[float]  # one per task the adjustment applies to
    mean_ratios: list[float]  # the per-task mean of the cost ratios, before the clamp
    cost_weight: float

    @property
    def uniform(self) -> bool:
        return bool(self.adjustments) and max(self.adjustments) - min(self.adjustments) < 1e-12


def amount(metric: str, value: float) -> str:
    if metric == "cost_usd":
        return f"${value:.4g}"
    return f"{value:.4g}{UNITS.get(metric, '')}"


def _per_sample(scores: list[TaskScore], metric: str) -> float:
    """The per-sample mean of a metric over tasks (each task's mean weighted by its samples)."""
    weighted = [(t.cost[metric], t.n) for t in scores if metric in t.cost]
    total = sum(n for _, n in weighted)
    return sum(v * n for v, n in weighted) / total if total else float("nan")


def _mean_ratio(before: TaskScore, after: TaskScore) -> float | None:
    """The mean over the shared cost metrics of candidate / baseline, as the composite takes it
    (a zero reference counts 2 when the candidate spends something, else 1)."""
    ratios = []
    for metric in after.cost_metrics:
        ref, act = before.cost.get(metric), after.cost.get(metric)
        if ref is None or act is None:
            continue
        ratios.append(act / ref if ref > 0 else (2.0 if act > 0 else 1.0))
    return sum(ratios) / len(ratios) if ratios else None


# the objective's `tokens` is input and output tokens together (the leaderboard's are output only)
COST_LABELS = {"tokens": "tokens (in + out)"}


def cost_summary(objective: ObjectiveComparison) -> CostSummary:
    """The cost figures behind the candidate's adjustment, over the tasks both runs have."""
    base = objective.scores.get(objective.baseline, {})
    cand = objective.scores.get(objective.candidate, {})
    shared = [t for t in sorted(base.keys() & cand.keys()) if cand[t].cost_metrics]
    used = {m for t in shared for m in cand[t].cost_metrics}
    figures = [
        CostFigure(
            m,
            _per_sample([base[t] for t in shared if m in cand[t].cost_metrics], m),
            _per_sample([cand[t] for t in shared if m in cand[t].cost_metrics], m),
        )
        for m in COST_METRICS
        if m in used
    ]
    ratios = [r for t in shared if (r := _mean_ratio(base[t], cand[t])) is not None]
    return CostSummary(
        figures,
        [cand[t].cost_adjustment for t in shared],
        ratios,
        objective.settings.cost_weight,
    )


def cost_lines(objective: ObjectiveComparison) -> list[str]:
    """Plain lines: each cost metric per sample for both runs and their ratio, then the rule and
    the adjustment it gave."""
    summary = cost_summary(objective)
    if not summary.figures:
        return ["no cost metric is reported by both runs: the cost adjustment is 0 on every task"]
    width = max(len(objective.baseline), len(objective.candidate))
    lines = [
        f"cost per sample ({len(summary.adjustments)} tasks):  "
        f"{objective.baseline:<{width}} → {objective.candidate}"
    ]
    for f in summary.figures:
        ratio = "" if f.ratio is None else f"  (×{f.ratio:.2f})"
        label = COST_LABELS.get(f.metric, f.metric)
        lines.append(
            f"  {label:<17} {amount(f.metric, f.baseline):>10} → "
            f"{amount(f.metric, f.candidate)}{ratio}"
        )
    low, high = min(summary.mean_ratios), max(summary.mean_ratios)
    spread = f"×{low:.2f}" if high - low < 0.005 else f"×{low:.2f} to ×{high:.2f}"
    adj_low, adj_high = min(summary.adjustments), max(summary.adjustments)
    applied = (
        f"{adj_low:+.3f} on every task"
        if summary.uniform
        else f"from {adj_low:+.3f} to {adj_high:+.3f} by task"
    )
    clamped = " (clamped)" if any(abs(1 - r) > 1 for r in summary.mean_ratios) else ""
    lines.append(
        f"cost adj = {summary.cost_weight:g} × clamp(1 − mean ratio, −1, 1), per task; mean "
        f"ratio {spread} → {applied}{clamped}"
    )
    return lines


def agree(layered: CompareResult, objective: ObjectiveComparison) -> bool:
    """Whether the two verdicts say the same thing: progress and improved, or regress and
    regressed, or neither on both sides."""
    good = layered.verdict is Verdict.PROGRESS
    bad = layered.verdict is Verdict.REGRESS
    return (good, bad) == (
        objective.verdict is ObjectiveVerdict.IMPROVED,
        objective.verdict is ObjectiveVerdict.REGRESSED,
    )


def _names(tasks: list[str]) -> str:
    return tasks[0] if len(tasks) == 1 else ", ".join(tasks[:-1]) + " and " + tasks[-1]


def why_they_differ(layered: CompareResult, objective: ObjectiveComparison) -> str:
    """One sentence: what each verdict measures and, from the numbers, what made them differ."""
    pair = next(p for p in layered.pairs if p.comparison.treatment == objective.candidate)
    diff = pair.comparison.composite
    interval = diff.interval
    quality = f"composite {diff.estimate:+.3f}" + (
        f" [{interval.low:+.3f}, {interval.high:+.3f}]" if interval is not None else ""
    )
    first = f"layered: {layered.verdict.value} on quality alone ({quality}, cost not counted)"
    summary = cost_summary(objective)
    usd = next((f for f in summary.figures if f.metric == "cost_usd"), None)
    shown = usd or (summary.figures[0] if summary.figures else None)
    if shown is None or shown.ratio is None:
        cost = "reports no cost both runs share (no adjustment)"
    else:
        what = "costs {:.2f}× as much" if shown is usd else f"uses {{:.2f}}× the {shown.metric}"
        cost = (
            f"{what.format(shown.ratio)} a sample "
            f"({amount(shown.metric, shown.candidate)} against "
            f"{amount(shown.metric, shown.baseline)}, {(shown.ratio - 1) * 100:+.0f}%), "
            "a cost adjustment of "
            + (
                f"{summary.adjustments[0]:+.3f} on every task"
                if summary.uniform
                else f"{min(summary.adjustments):+.3f} to {max(summary.adjustments):+.3f}"
            )
        )
    verdict = objective.verdict.value.upper()
    drop = objective.settings.regression_composite_drop
    if objective.verdict is ObjectiveVerdict.REGRESSED and objective.regressions:
        base = objective.scores.get(objective.baseline, {})
        cand = objective.scores.get(objective.candidate, {})
        dropped = {r.task for r in objective.regressions if r.kind == "composite_drop"}
        # a composite drop the cost alone explains: quality (objective and judge) held
        by_cost = [
            t.task
            for t in objective.tasks
            if t.task in dropped
            and t.task in base
            and t.task in cand
            and cand[t.task].objective >= base[t.task].objective
            and cand[t.task].base >= base[t.task].base
            and (t.cost_adjustment or 0) < 0
        ]
        others = sorted({r.kind for r in objective.regressions if r.task not in by_cost})
        parts = []
        if by_cost:
            before = {t.baseline for t in objective.tasks if t.task in by_cost}
            already = (
                f", where {objective.baseline} already scored {before.pop():.3f}"
                if len(before) == 1
                else ""
            )
            parts.append(
                f"on {_names(by_cost)}{already}, the cost adjustment alone takes the composite "
                f"down by more than {drop:g}"
            )
        if others:
            parts.append(f"regressions the cost does not explain ({', '.join(others)})")
        n = len(objective.regressions)
        second = (
            f"objective: {verdict} because {objective.candidate} {cost}: "
            + "; and ".join(parts)
            + f" — {n} hard regression{'s' if n != 1 else ''}, and one is enough whatever "
            f"the net gain ({objective.net_gain:+.3f})"
        )
    else:
        second = (
            f"objective: {verdict} on quality and cost together ({objective.candidate} {cost}): "
            f"{objective.reason}"
        )
    return f"{first}; {second}."
