"""The cost section of a leaderboard (`report["cost"]`, `calipers.verdicts.cost_leaderboard`) as
cells and sentences: the same text in the terminal, the Markdown summary and the HTML page.
Plain text here; each view escapes it (run names are data)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console

from calipers.render import markdown_text as md
from calipers.render.cost import amount, money
from calipers.render.text import escape


def shown(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The cost section when some run has a cost figure (None: no section, or no cost at all)."""
    cost = report.get("cost")
    if not cost or cost.get("refusal"):
        return None
    return cost  # type: ignore[no-any-return]


def column(cost: Mapping[str, Any]) -> str:
    return (
        f"cost per {cost.get('outcome', 'solved item')} [{cost.get('confidence_level', 0.95):.0%}]"
    )


def _short(x: float) -> str:
    return f"{x:.3g}"


def _count(x: float) -> str:
    """Tokens or seconds: whole numbers from 1,000 on (`amount`), else 3 significant digits."""
    return amount(x) if abs(x) >= 1000 else _short(x)


def ratio_cell(
    c: Mapping[str, Any] | None, missing: int = 0, fmt: Callable[[float], str] = _short
) -> str:
    """One figure (a run's or a task's; its cost, tokens or seconds per solved item): the
    estimate and its interval, or why there is none."""
    if not c:
        return "—"
    if missing:
        return f"not given: {missing} scored observation(s) lack cost_usd"
    est = c.get("estimate")
    if est is None:
        if c.get("refusal"):
            return "not given: " + str(c["refusal"]).split(":")[0]
        low = c.get("low")
        return "nothing solved" + (f" (≥ {fmt(low)})" if low is not None else "")
    if c.get("refusal"):
        return f"{fmt(est)} (no interval)"
    low, high = c.get("low"), c.get("high")
    span = f"[{'unbounded' if low is None else fmt(low)}, " + (
        f"{'unbounded' if high is None else fmt(high)}]"
    )
    return f"{fmt(est)} {span}"


def usage_sentence(per: str, name: str, r: Mapping[str, Any]) -> str | None:
    """A run's tokens and seconds per solved item where the telemetry has them (the system's,
    never the graders'), in one line; None when it has neither."""
    usage = r.get("usage") or {}
    if not usage:
        return None
    parts = [f"{m} per {per} ({u.get('column')}) {ratio_cell(u, fmt=_count)}"
             for m, u in usage.items()]  # fmt: skip
    return f"{name}: " + "; ".join(parts)


def run_cell(cost: Mapping[str, Any], run: str) -> str:
    r = (cost.get("runs") or {}).get(run)
    return ratio_cell(r, int((r or {}).get("missing_cost") or 0))


def task_cell(cost: Mapping[str, Any], run: str, task: str) -> str:
    r = (cost.get("runs") or {}).get(run) or {}
    if r.get("missing_cost"):
        return "not given (cost_usd missing)"
    return ratio_cell((r.get("tasks") or {}).get(task))


def label_cell(cost: Mapping[str, Any], run: str) -> str:
    r = (cost.get("runs") or {}).get(run) or {}
    if r.get("label"):
        return str(r["label"])
    for g in cost.get("groups") or []:
        if run in (g.get("left_out") or {}):
            return "no label: cost missing"
        if run in g.get("runs", []) and g.get("refusal"):
            return "no label (see below)"
    return "—"


def labelled(cost: Mapping[str, Any]) -> bool:
    """Whether the leaderboard shows a label column (a margin was given)."""
    return cost.get("margin") is not None and bool(cost.get("groups"))


def sentences(cost: Mapping[str, Any]) -> list[str]:
    """What the cost figures are, which of the leaderboard's numbers include cost, the refusals
    and warnings, the graders' cost, and the labels' headline and meaning."""
    per = cost.get("outcome", "solved item")
    lines = [f"cost per {per}: the system's cost_usd per {per}; {cost.get('outcome_source')}."]
    lines += [f"{name}: {text}." for name, text in (cost.get("includes_cost") or {}).items()]
    for name, r in (cost.get("runs") or {}).items():
        if r.get("refusal"):
            lines.append(f"{name}: {r['refusal']}")
        lines += [f"{name}: warning: {w}" for w in r.get("warnings") or []]
        usage = usage_sentence(per, name, r)
        lines += [usage] if usage else []
        for m, u in (r.get("usage") or {}).items():
            lines += [f"{name}: warning: {m}: {w}" for w in u.get("warnings") or []]
        if r.get("grader_cost") is not None:
            lines.append(
                f"{name}: graders' cost {money(r['grader_cost'])} over "
                f"{r.get('grader_observations')} observations, not counted"
            )
    for g in cost.get("groups") or []:
        ranking = g.get("ranking")
        if ranking is None:
            lines.append(f"labels of {', '.join(g.get('runs') or [])}: {g.get('refusal')}")
            continue
        chosen, margin = ranking.get("chosen"), ranking.get("margin")
        lines.append(
            f"cheapest acceptable: {chosen} — shown within {margin:g} of the best "
            f"({ranking.get('metric')}), the lowest {ranking.get('order_by')} of those shown"
            if chosen
            else f"no run is shown within {margin:g} of the best: no cheapest acceptable run"
        )
        meaning = ranking.get("meaning") or {}
        words = {"lower_bound_vs_best": "vs best (lower)", "acceptable": "acceptable",
                 "dominated": "dominated"}  # fmt: skip
        lines += [f"{said}: {meaning[key]}." for key, said in words.items() if key in meaning]
        lines.append(f"frontier (cheapest first): {' → '.join(ranking.get('frontier') or [])}.")
        lines += [f"{r}: no label: its cost is missing" for r in g.get("left_out") or {}]
        lines += [f"note: {n}" for n in ranking.get("notes") or []]
    lines += [f"note: {n}" for n in cost.get("notes") or []]
    return lines


def absent(report: Mapping[str, Any]) -> str | None:
    """The one line said when no run has a cost (None: there is a section, or no cost part)."""
    cost = report.get("cost")
    if cost and cost.get("refusal"):
        return f"cost per solved item: not shown — {cost['refusal']}"
    return None


def print_sentences(report: Mapping[str, Any], console: Console) -> None:
    """The cost section's sentences under a leaderboard in the terminal."""
    missing = absent(report)
    if missing:
        console.print(f"[dim]{escape(missing)}[/]", highlight=False)
    cost = shown(report)
    if cost is None:
        return
    for line in sentences(cost):
        style = "yellow" if ": warning:" in line or line.startswith("note:") else "dim"
        console.print(f"[{style}]{escape(line)}[/]", highlight=False)


def markdown_lines(report: Mapping[str, Any]) -> list[str]:
    """The cost section as a Markdown table (run, figure, label) and its sentences."""
    missing = absent(report)
    if missing:
        return ["", f"_{md.escape(missing)}_"]
    cost = shown(report)
    if cost is None:
        return []
    header = ["run", column(cost)] + (["label"] if labelled(cost) else [])
    rows = [
        [md.escape(run), md.escape(run_cell(cost, run))]
        + ([md.escape(label_cell(cost, run))] if labelled(cost) else [])
        for run in cost.get("runs") or {}
    ]
    return ["", f"**Cost** per {md.escape(cost.get('outcome'))}:", "", *md.table(header, rows),
            "", *[f"- {md.escape(line)}" for line in sentences(cost)]]  # fmt: skip


def page_context(report: Mapping[str, Any]) -> dict[str, Any]:
    """What a leaderboard's page shows of cost (the template escapes the text)."""
    cost = shown(report)
    if cost is None:
        return {"cost": None, "cost_absent": absent(report)}
    runs = list(cost.get("runs") or {})
    return {
        "cost_absent": None,
        "cost": {
            "column": column(cost),
            "labelled": labelled(cost),
            "cells": {run: run_cell(cost, run) for run in runs},
            "labels": {run: label_cell(cost, run) for run in runs},
            "tasks": {
                run: {
                    task: task_cell(cost, run, task)
                    for task in ((cost.get("runs") or {})[run].get("tasks") or {})
                }
                for run in runs
            },
            "sentences": sentences(cost),
        },
    }
