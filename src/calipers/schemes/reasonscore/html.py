"""ReasonScore on an HTML page: one leaderboard per group of comparable runs with its tier bars
and score against tokens (Pareto frontier), and difficulty curves per task in tier order."""

from __future__ import annotations

from typing import Any

from calipers.render import cost_leaderboard
from calipers.render import plots as draw
from calipers.schemes.reasonscore.ordering import RULES, describe_shared, natural_key


def reasonscore_section(report: dict[str, Any]) -> dict[str, Any]:
    """Per group of comparable runs (the same (tier, task) pairs): its leaderboard, per-tier bars
    and score against tokens with the Pareto frontier; then difficulty curves per task across
    points, easiest tier first (`tier_order`)."""
    runs = report["runs"]
    groups = []
    for number, group in enumerate(report["groups"], start=1):
        order, tiers = group["ranking"], group["tiers"]
        plots = {}
        scores = {name: [_tier_score(runs[name], t) for t in tiers] for name in order}
        scored = {name: s for name, s in scores.items() if any(v is not None for v in s)}
        if group["ranked"] and tiers and scored:  # no chart without a bar to draw
            plots["tiers"] = draw.grouped_bars(
                tiers, scored, title="ReasonScore per tier (1000 · geometric mean of task scores)",
                ylabel="ReasonScore",
            )  # fmt: skip
        points = [
            (name, runs[name]["avg_tokens"], runs[name]["avg_score"])
            for name in order
            if runs[name]["avg_tokens"] is not None and runs[name]["avg_score"] is not None
        ]
        if group["ranked"] and points:
            plots["pareto"] = draw.pareto(
                points, group["pareto_frontier"],
                title="mean ReasonScore against mean output tokens",
                xlabel="mean output tokens (fewer is better)", ylabel="mean ReasonScore",
            )  # fmt: skip
        ranks = group.get("rank_intervals") or {}
        groups.append({
            "number": number,
            "id": "leaderboard" if number == 1 else f"leaderboard-{number}",
            "shares": describe_shared(tiers, group["tasks"], group["pairs"], limit=None),
            **group,
            "plots": plots,
            # per run its rank interval and tie group, as the terminal's leaderboard shows them
            "bounds": {r["run"]: r for r in ranks.get("runs", [])},
            "ties": [g for g in ranks.get("groups", []) if len(g) > 1],
        })  # fmt: skip
    order = [name for group in report["groups"] for name in group["ranking"]]
    tiers = list(report.get("tier_order") or [])
    plots = {}
    curves = _difficulty_curves(runs, tiers, order)
    if curves:
        plots["curves"] = draw.curves(
            curves, title="difficulty curves: point score (Wilson upper bound, 0–1) per task",
            ylabel="point score",
        )  # fmt: skip
    rule = report.get("tier_order_rule", "")
    return {
        "kind": "reasonscore",
        "report": report,
        "plots": plots,
        "groups": groups,
        "tiers": tiers,
        "tier_rule": RULES.get(rule, rule),
        **cost_leaderboard.page_context(report),
    }


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
            axis += [(tier, p) for p in sorted(points, key=natural_key)]
        if not axis:
            continue
        series = {}
        for name in order:
            by_key = {
                (tier, p["point"]): p["score"]
                for tier, t in runs[name]["tiers"].items()
                for p in (t["tasks"].get(task) or {}).get("points", [])
            }
            values = [by_key.get(key) for key in axis]
            if any(v is not None for v in values):  # a run without a score here is left out
                series[name] = values
        if not series:  # no panel without a line to draw
            continue
        multi_tier = len({tier for tier, _ in axis}) > 1
        labels = [f"{tier}: {p}" if multi_tier else p for tier, p in axis]
        panels[task] = (labels, series)
    return panels
