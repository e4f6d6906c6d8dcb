"""The cost section of a comparison report (`report["cost"]`, `calipers.verdicts.cost`) as words:
the same sentences in the terminal, the Markdown summary and the HTML page, so the three never
disagree. Plain text here; each view escapes it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.render.text import escape

# multiples of the break-even value shown in the terminal's table of P(net benefit > 0)
CURVE_SHOWN = (0.25, 0.5, 1.0, 2.0, 4.0)


def money(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.4g}" if abs(x) >= 1e-4 or x == 0 else f"{x:.3e}"


def _signed(x: float | None) -> str:
    return "—" if x is None else f"{x:+.4g}"


def amount(x: float | None) -> str:
    """A count of tokens or seconds: whole numbers with separators from 1,000 on."""
    if x is None:
        return "—"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def _ratio_text(
    r: Mapping[str, Any] | None, per: str, fmt: Callable[[float | None], str] = money
) -> str:
    """A ratio with its interval in words: bounded, or which side is unbounded and why; `fmt`
    formats its figures (money, or counts of tokens and seconds)."""
    if r is None:
        return "—"
    est = "undefined" if r.get("estimate") is None else fmt(r["estimate"])
    low, high = r.get("low"), r.get("high")
    level = f"{r.get('confidence_level', 0.95):.0%}"
    if low is not None and high is not None:
        span = f"[{fmt(low)}, {fmt(high)}]"
    elif low is not None:
        span = f"[{fmt(low)}, unbounded)"
    elif high is not None:
        span = f"(unbounded, {fmt(high)}]"
    else:
        excluded = r.get("excluded")
        span = "unbounded both ways" + (
            f" (the data rule out only ({fmt(excluded[0])}, {fmt(excluded[1])}))"
            if excluded
            else ""
        )
    text = f"{est} per {per}, {level} {span} ({r.get('method')})"
    if low is None or high is None:
        text += f": {r.get('reason')}"
    return text


def run_lines(cost: Mapping[str, Any]) -> list[str]:
    """One line per run: cost per solved item with its interval, or why there is none; the
    graders' cost apart; then its warnings."""
    per = cost.get("outcome", "solved item")
    lines = []
    for name, r in (cost.get("runs") or {}).items():
        grader = ""
        if r.get("grader_cost") is not None:
            grader = (
                f"; graders' cost {money(r['grader_cost'])} over {r.get('grader_observations')} "
                "observations, not counted"
            )
        if r.get("estimate") is None and r.get("cost_per_sample") is None:
            lines.append(f"{name}: no cost figures: {r.get('refusal')}{grader}")
            continue
        head = (
            f"{name}: cost per sample {money(r.get('cost_per_sample'))}, mean outcome "
            f"{_num(r.get('outcome_mean'))}, {r.get('n_samples')} samples"
        )
        if r.get("interval") is not None:
            head += f"; {_ratio_text(r['interval'], per)}"
        elif r.get("estimate") is not None:
            head += f"; {money(r['estimate'])} per {per}, no interval: {r.get('refusal')}"
        elif r.get("refusal"):
            head += f"; {r['refusal']}"
        lines.append(head + grader)
        lines += [f"  warning: {w}" for w in r.get("warnings") or []]
        lines += usage_lines(r, per)
    return lines


def usage_text(u: Mapping[str, Any], per: str) -> str:
    """A run's (or task's) tokens or seconds per solved item in words, as its cost's."""
    if u.get("interval") is not None:
        return f"{amount(u.get('per_sample'))} per sample; " + _ratio_text(
            u["interval"], per, amount
        )
    if u.get("estimate") is not None:
        return (
            f"{amount(u.get('per_sample'))} per sample; {amount(u['estimate'])} per {per}, no "
            f"interval: {u.get('refusal')}"
        )
    if u.get("per_sample") is not None:
        return f"{amount(u.get('per_sample'))} per sample" + (
            f"; {u['refusal']}" if u.get("refusal") else ""
        )
    return f"not given: {u.get('refusal')}"


def usage_lines(r: Mapping[str, Any], per: str) -> list[str]:
    """Under a run's cost: its tokens and seconds per solved item where the telemetry has them
    (the system's: tokens_in + tokens_out, latency_s; never the graders'), with their
    warnings."""
    lines = []
    for measure, u in (r.get("usage") or {}).items():
        lines.append(f"  {measure} ({u.get('column')}): {usage_text(u, per)}")
        lines += [f"  warning: {measure}: {w}" for w in u.get("warnings") or []]
    return lines


def pair_lines(cost: Mapping[str, Any]) -> list[str]:
    """Per pair: what the gain costs (Δcost per item, cost per additional solved item) and, with
    a value per solved item, the net benefit and whether it is shown above 0."""
    per = cost.get("outcome", "solved item")
    lines = []
    for p in cost.get("pairs") or []:
        who = f"{p.get('treatment')} vs {p.get('control')}"
        if p.get("refusal") and p.get("delta_cost") is None:
            lines.append(f"{who}: no cost comparison: {p['refusal']}")
            continue
        lines.append(
            f"{who}: {_signed(p.get('delta_cost'))} cost per item for "
            f"{_signed(p.get('delta_outcome'))} {per}s per item over {p.get('n_pairs')} "
            "paired samples; "
            + (
                f"cost per additional {per}: {_ratio_text(p.get('cost_per_additional'), per)}"
                if p.get("cost_per_additional")
                else f"no interval: {p.get('refusal')}"
            )
        )
        net = p.get("net_benefit")
        if net is not None:
            shown = "worth it: above 0" if (net.get("low") or 0) > 0 else "not shown above 0"
            lines.append(
                f"  net benefit at {money(net['value_per_solved'])} per {per}: "
                f"{_signed(net['estimate'])} per item, {net['confidence_level']:.0%} "
                f"[{_signed(net['low'])}, {_signed(net['high'])}] (paired t, {net['n_units']} "
                f"units): {shown}; P(net benefit > 0) = {net['probability_positive']:.3f}"
            )
        elif p.get("net_refusal"):
            lines.append(f"  net benefit: no interval: {p['net_refusal']}")
        lines += [f"  warning: {w}" for w in p.get("warnings") or []]
    return lines


def curve_rows(pair: Mapping[str, Any]) -> list[tuple[float, float]]:
    """The few (value, P(net > 0)) rows a terminal or summary shows: the break-even's multiples
    in CURVE_SHOWN (the nearest values of the curve), and the stated value."""
    curve = pair.get("curve") or []
    if not curve:
        return []
    values = [float(c["value"]) for c in curve]
    d_cost, d_out = pair.get("delta_cost"), pair.get("delta_outcome")
    picks: set[int] = set()
    if d_cost and d_out and d_cost > 0 and d_out > 0:
        even = d_cost / d_out
        for k in CURVE_SHOWN:
            target = math.log(even * k)
            picks.add(
                min(
                    range(len(values)), key=lambda i: abs(math.log(max(values[i], 1e-300)) - target)
                )
            )
    else:
        step = max(1, (len(values) - 1) // 4)
        picks.update(range(0, len(values), step))
    net = pair.get("net_benefit")
    if net:
        picks.add(min(range(len(values)), key=lambda i: abs(values[i] - net["value_per_solved"])))
    return [(values[i], float(curve[i]["probability_positive"])) for i in sorted(picks)]


def curve_meaning(cost: Mapping[str, Any]) -> str:
    return (
        "P(net benefit > 0) at a value V per solved item is the one-sided confidence level of "
        "the paired t interval of V·Δoutcome − Δcost (1 − the one-sided p-value of net ≤ 0), "
        "not a posterior probability"
    )


def cost_terminal(report: Mapping[str, Any], console: Console) -> None:
    """The cost section under a comparison in the terminal (nothing when there is none)."""
    cost = report.get("cost")
    if not cost:
        return
    console.print()
    console.print(
        f"[bold]Cost[/] per {escape(cost.get('outcome', 'solved item'))} (the system's "
        "cost_usd; graders' cost apart)",
        highlight=False,
    )
    for line in run_lines(cost) + pair_lines(cost):
        style = "yellow" if line.lstrip().startswith("warning:") else None
        text = escape(line)
        console.print(f"[{style}]{text}[/]" if style else text, highlight=False)
    for p in cost.get("pairs") or []:
        rows = curve_rows(p)
        if not rows:
            continue
        table = Table(
            title=f"P(net benefit > 0) for {escape(p.get('treatment'))} by value per "
            f"{escape(cost.get('outcome', 'solved item'))}",
            title_justify="left",
            pad_edge=False,
        )
        table.add_column("value")
        table.add_column("P(net > 0)", justify="right")
        for v, prob in rows:
            table.add_row(money(v), f"{prob:.3f}")
        console.print(table)
    if any(p.get("curve") for p in cost.get("pairs") or []):
        console.print(f"[dim]{escape(curve_meaning(cost))}; the full curve is in --json.[/]",
                      highlight=False)  # fmt: skip
    for note in cost.get("notes") or []:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def cost_page_context(report: Mapping[str, Any]) -> dict[str, Any]:
    """What the page's cost section (`_cost.html.j2`) shows: the same sentences as the terminal,
    each run's per-task figures and each pair's whole curve. Text is escaped by the template."""
    cost = report.get("cost")
    if not cost:
        return {"cost": None}
    tasks = []
    per = cost.get("outcome", "solved item")
    for run, r in (cost.get("runs") or {}).items():
        for task, t in (r.get("tasks") or {}).items():
            tasks.append({
                "run": run, "task": task, "samples": t.get("n_samples"),
                "cost_per_sample": money(t.get("cost_per_sample")),
                "outcome": _num(t.get("outcome_mean")),
                "per_solved": (
                    _ratio_text(t["interval"], per)
                    if t.get("interval")
                    else (money(t.get("estimate")) + f" (no interval: {t.get('refusal')})"
                          if t.get("estimate") is not None else str(t.get("refusal") or "—"))
                ),
                "usage": "; ".join(
                    f"{m}: {usage_text((u.get('tasks') or {})[task], per)}"
                    for m, u in (r.get("usage") or {}).items() if task in (u.get("tasks") or {})
                ),
            })  # fmt: skip
    curves = [
        {
            "treatment": p.get("treatment"),
            "rows": [
                (money(c["value"]), f"{c['probability_positive']:.3f}")
                for c in p.get("curve") or []
            ],
        }
        for p in cost.get("pairs") or []
        if p.get("curve")
    ]
    return {
        "cost": {
            "outcome": cost.get("outcome", "solved item"),
            "runs": run_lines(cost),
            "pairs": pair_lines(cost),
            "tasks": tasks,
            "task_usage": any(row["usage"] for row in tasks),
            "curves": curves,
            "meaning": curve_meaning(cost),
            "notes": list(cost.get("notes") or []),
        }
    }
