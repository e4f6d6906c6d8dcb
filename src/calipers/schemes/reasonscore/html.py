"""ReasonScore on an HTML page: per-tier bars, difficulty curves per task, and score against
tokens with the Pareto frontier."""

from __future__ import annotations

import re
from typing import Any

from calipers.render import plots as draw


def _natural(text: str) -> list[Any]:
    """'length=8' before 'length=16'."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def reasonscore_section(report: dict[str, Any]) -> dict[str, Any]:
    """Leaderboard, per-tier bars, difficulty curves per task across points, score against tokens
    with the Pareto frontier."""
    runs = report["runs"]
    order = report["ranking"]
    tiers: list[str] = []
    for run in runs.values():
        tiers += [t for t in run["tiers"] if t not in tiers]
    plots = {}
    if runs and tiers:
        plots["tiers"] = draw.grouped_bars(
            tiers, {name: [_tier_score(runs[name], t) for t in tiers] for name in order},
            title="ReasonScore per tier (1000 · geometric mean of task scores)",
            ylabel="ReasonScore",
        )  # fmt: skip
    curves = _difficulty_curves(runs, tiers, order)
    if curves:
        plots["curves"] = draw.curves(
            curves, title="difficulty curves: point score (Wilson upper bound, 0–1) per task",
            ylabel="point score",
        )  # fmt: skip
    frontier = report.get("pareto_frontier") or []
    points = [
        (name, runs[name]["avg_tokens"], runs[name]["avg_score"])
        for name in order
        if runs[name]["avg_tokens"] is not None and runs[name]["avg_score"] is not None
    ]
    if points:
        plots["pareto"] = draw.pareto(
            points, frontier, title="mean ReasonScore against mean output tokens",
            xlabel="mean output tokens (fewer is better)", ylabel="mean ReasonScore",
        )  # fmt: skip
    return {"kind": "reasonscore", "report": report, "plots": plots, "tiers": tiers}


def _tier_score(run: dict[str, Any], tier: str) -> float | None:
    entry = run["tiers"].get(tier)
    return entry["score"] if entry else None


def _difficulty_curves(
    runs: dict[str, Any], tiers: list[str], order: list[str]
) -> dict[str, tuple[list[str], dict[str, list[float | None]]]]:
    """Per task: its points in tier order, then in natural order within a tier; per run the point
    scores (None where a run has no such point)."""
    tasks = sorted(
        {task for r in runs.values() for t in r["tiers"].values() for task in t["tasks"]}
    )
    panels = {}
    for task in tasks:
        axis: list[tuple[str, str]] = []
        for tier in tiers:
            points = {
                p["point"]
                for r in runs.values()
                for p in ((r["tiers"].get(tier) or {}).get("tasks", {}).get(task) or {}).get(
                    "points", []
                )
            }
            axis += [(tier, p) for p in sorted(points, key=_natural)]
        if not axis:
            continue
        series = {}
        for name in order:
            by_key = {
                (tier, p["point"]): p["score"]
                for tier, t in runs[name]["tiers"].items()
                for p in (t["tasks"].get(task) or {}).get("points", [])
            }
            series[name] = [by_key.get(key) for key in axis]
        multi_tier = len({tier for tier, _ in axis}) > 1
        labels = [f"{tier}: {p}" if multi_tier else p for tier, p in axis]
        panels[task] = (labels, series)
    return panels
