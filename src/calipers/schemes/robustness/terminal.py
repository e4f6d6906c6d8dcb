"""Terminal view of a robustness result: kelvin's bands and its single diagnostic, with the
intervals kelvin does not have, and a per-case table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.render.terminal import notes as print_notes
from calipers.render.terminal import num
from calipers.render.text import escape
from calipers.schemes.robustness.scoring import (
    INVARIANCE_KINDS,
    RobustnessResult,
    RunRobustness,
)

_INVARIANCE_BANDS = (
    (0.90, "rock-steady — good"),
    (0.70, "mostly — good"),
    (0.50, "uneven — watch"),
    (0.30, "drifting — concerning"),
    (0.0, "unstable — concerning"),
)
_SENSITIVITY_BANDS = (
    (0.90, "sharply reactive — good"),
    (0.70, "reactive — good"),
    (0.50, "partial — watch"),
    (0.30, "sluggish — concerning"),
    (0.0, "barely — concerning"),
)


def band(score: float, kind: str, interval: Any = None) -> str:
    """kelvin's verdict phrase for an invariance or sensitivity score, judged on its interval
    when there is one (an `Interval`, or a report's dict with low and high): the band when the
    whole interval lies in it, otherwise "undetermined" naming the bands the interval spans (a
    point in a good band with an interval reaching a concerning one is not good)."""
    bands = _INVARIANCE_BANDS if kind == "invariance" else _SENSITIVITY_BANDS

    def of(x: float) -> str:
        return next(label for lower, label in bands if x >= lower)

    low, high = _bounds(interval)
    if low is None or high is None:
        return of(score)
    worst, best = of(low), of(high)
    if worst == best:
        return worst
    (worst_name, worst_verdict), (best_name, best_verdict) = (
        worst.split(" — "), best.split(" — "))  # fmt: skip
    if worst_verdict == best_verdict:  # two bands with one verdict: "reactive to sharply … — good"
        return f"{worst_name} to {best_name} — {best_verdict}"
    return (
        f"undetermined — the interval spans {worst_name} ({worst_verdict}) to {best_name} "
        f"({best_verdict})"
    )


def _bounds(interval: Any) -> tuple[float | None, float | None]:
    if interval is None or isinstance(interval, str):
        return None, None
    if isinstance(interval, dict):
        return interval.get("low"), interval.get("high")
    return getattr(interval, "low", None), getattr(interval, "high", None)


def signal_band(result: RunRobustness, name: str) -> str:
    """The band of a run's signal (`invariance` or `sensitivity`), judged on its interval."""
    score = getattr(result, name)
    return band(score, name, result.intervals.get(name))


def _bar(score: float) -> str:
    filled = round(score * 10)
    return "█" * filled + "░" * (10 - filled)


def diagnostic(result: RunRobustness, decision_field: str, governing_types: list[str]) -> str:
    """kelvin's one diagnostic finding, never more: ignored governing type, drifting
    presentation, large per-case variance, or none; without a finding, the closing sentence
    follows the bands (healthy only when every signal shown is in a good band)."""
    inv, sens = result.invariance, result.sensitivity
    if governing_types and len(result.cases) > 1 and sens is not None and sens < 0.30:
        for gtype, entry in result.sensitivity_by_type().items():
            if entry["sample"] and entry["mean"] is not None and entry["mean"] < 0.50:
                unchanged = sum(
                    1
                    for c in result.cases
                    for v in c.variants
                    if v.kind == "swap" and v.governing_type == gtype and v.distance == 0.0
                )
                return (
                    f"⚠ {gtype.replace('_', ' ').capitalize()}s are being ignored. Swapping the "
                    f"governing {gtype} for a different valid one didn't change the "
                    f"{decision_field} in {unchanged} of {entry['sample']} cases."
                )
    if inv is not None and inv < 0.50:
        rates = []
        for kind, what in (("reorder", "presentation"), ("pad_length", "input length"),
                           ("pad_content", "distractors")):  # fmt: skip
            scored = [v for c in result.cases for v in c.variants if v.kind == kind]
            scored = [v for v in scored if v.distance is not None]
            changed = sum(1 for v in scored if v.distance and v.distance > 0)
            if scored:
                rates.append((changed / len(scored), kind, what, changed, len(scored)))
        if rates:
            _, kind, what, changed, n = max(rates, key=lambda r: r[0])
            return (
                f"⚠ Output drifts on {kind}. The {decision_field} changed in {changed} of {n} "
                f"cases when only {what} changed."
            )
    shown = _shown_signals(result, governing_types)
    weak = " and ".join(
        f"{name} is {signal_band(result, name)} ({score:.2f}{_interval(result, name, short=True)})"
        for name, score in shown
        if not signal_band(result, name).endswith("— good")
    )
    per_case = [1.0 - sum(d) / len(d) for c in result.cases if (d := c.distances(INVARIANCE_KINDS))]
    if len(per_case) >= 2:
        mean = sum(per_case) / len(per_case)
        if sum((x - mean) ** 2 for x in per_case) / len(per_case) > 0.09:
            if weak:
                return f"Per-case variance is large, and {weak}: see the cases below."
            return "Aggregate looks healthy but per-case variance is large: see the cases below."
    # the closing sentence follows the bands printed above it: "healthy" only when every signal
    # shown is in a "good" band
    if weak:
        return f"No single cause found; {weak}: spot-check the per-case results."
    if len(shown) == 2:
        return "Both signals look healthy. Spot-check the per-case results for anomalies."
    if shown:
        return (
            f"{shown[0][0].capitalize()} looks healthy (the only signal measured). Spot-check the "
            "per-case results for anomalies."
        )
    return "No signal could be measured: see the cases below."


def _shown_signals(result: RunRobustness, governing_types: list[str]) -> list[tuple[str, float]]:
    """The signals the summary shows a band for (as `run_summary` decides)."""
    shown = []
    if result.invariance is not None:
        shown.append(("invariance", result.invariance))
    if governing_types and len(result.cases) > 1 and result.sensitivity is not None:
        shown.append(("sensitivity", result.sensitivity))
    return shown


def _interval(result: RunRobustness, name: str, *, short: bool = False) -> str:
    i = result.intervals.get(name)
    if i is None or (short and isinstance(i, str)):
        return ""
    if isinstance(i, str):
        return f"  (no interval: {escape(i)})"
    if short:
        return f" [{i.low:.2f}, {i.high:.2f}]"
    return f"  {result.confidence_level:.0%} CI [{i.low:.2f}, {i.high:.2f}]"


def run_summary(
    result: RunRobustness,
    console: Console,
    *,
    decision_field: str = "decision",
    governing_types: list[str] | None = None,
) -> None:
    types = governing_types
    if types is None:
        types = sorted(result.sensitivity_by_type())
    ok = sum(1 for c in result.cases if c.baseline_ok)
    total = sum(len(c.variants) for c in result.cases)
    console.print(
        f"[bold]{escape(result.run)}[/]: {ok} cases · {total} perturbations", highlight=False
    )
    inv, sens, k = result.invariance, result.sensitivity, result.kelvin_score
    if inv is not None:
        console.print(
            f"  Invariance   {inv:.2f}  {_bar(inv)}  {signal_band(result, 'invariance')}"
            f"{_interval(result, 'invariance')}",
            highlight=False,
        )
    if not types:
        console.print("  Sensitivity not measured — no governing types declared.")
    elif len(result.cases) == 1:
        console.print("  Sensitivity not measured — only one case, no peers to swap from.")
    elif sens is not None:
        console.print(
            f"  Sensitivity  {sens:.2f}  {_bar(sens)}  {signal_band(result, 'sensitivity')}"
            f"{_interval(result, 'sensitivity')}",
            highlight=False,
        )
    if k is not None:
        console.print(f"  K            {k:.2f}  (1 − Inv) + (1 − Sens), 0–2, lower = more anchored")
    body = result.to_dict()
    if "noise_floor_eta" in body:
        k_cal = body["kelvin_score_calibrated"]
        console.print(
            f"  Noise floor η {body['noise_floor_eta']:.3f}; K_cal "
            + (f"{k_cal:.2f}" if k_cal is not None else "— (noise exceeds the invariance signal)"),
            highlight=False,
        )
    if "sensitivity_condition" in body:
        console.print(
            f"  Condition swaps {num(body['sensitivity_condition'], '.2f')} "
            f"(n = {body['sensitivity_condition_sample']}); content effect "
            f"{num(body['content_effect'], '.2f')}",
            highlight=False,
        )
    console.print("  " + escape(diagnostic(result, decision_field, types)), highlight=False)
    failed = result.failed_variants()
    if failed:
        console.print(f"  [dim]{failed} of {total} perturbations failed (see the cases).[/]")
    console.print("  [dim]Diagnostic signals — not truth metrics.[/]")


def case_table(result: RunRobustness, console: Console) -> None:
    table = Table(title=f"{escape(result.run)}: per case", title_justify="left", pad_edge=False)
    for name in ("case", "baseline", "invariance", "n", "sensitivity", "n ", "failed"):
        table.add_column(name, justify="left" if name in ("case", "baseline") else "right")
    for c in result.cases:
        s = c.scores()
        baseline = (
            escape(repr(c.baseline_decision))
            if c.baseline_ok
            else f"[red]failed[/]: {escape(c.baseline_error or '')}"
        )
        table.add_row(
            escape(c.case), baseline, num(s["invariance"], ".2f"), str(s["invariance_sample"]),
            num(s["sensitivity"], ".2f"), str(s["sensitivity_sample"]),
            str(sum(1 for v in c.variants if not v.ok)),
        )  # fmt: skip
    console.print(table)


def robustness_report(result: RobustnessResult, console: Console, *, cases: bool = True) -> None:
    for run in result.runs.values():
        run_summary(run, console)
        if cases:
            case_table(run, console)
    print_notes(result.notes, console)
