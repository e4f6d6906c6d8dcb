"""The objective composite on an HTML page: per run and task, and the comparison page."""

from __future__ import annotations

from typing import Any

from calipers.render import cost_leaderboard
from calipers.render import plots as draw
from calipers.render.html import render
from calipers.render.json_report import clean


def objective_section(report: dict[str, Any]) -> dict[str, Any]:
    """objective scores: per run and task the objective, judge, cost adjustment and composite."""
    runs = report["runs"]
    tasks = sorted({t["task"] for r in runs.values() for t in r["tasks"]})
    plots = {}
    if tasks:
        plots["tasks"] = draw.grouped_bars(
            tasks,
            {
                name: [next((t["composite"] for t in r["tasks"] if t["task"] == task), None)
                       for task in tasks]
                for name, r in runs.items()
            },
            title="composite per task", ylabel="composite",
        )  # fmt: skip
    return {"kind": "objective", "report": report, "plots": plots,
            **cost_leaderboard.page_context(report)}  # fmt: skip


def objective_compare_page(report: dict[str, Any]) -> str:
    """objective: the verdict and the promote decision, net gain against its threshold, per-task
    deltas (plotted), hard regressions, and the weights and thresholds used."""
    report = clean(report)
    tasks = report["tasks"]
    plots = {}
    if tasks:
        plots["deltas"] = draw.deltas(
            [t["task"] for t in tasks],
            [t["delta"] for t in tasks],
            title="composite delta per task (candidate − baseline)",
        )
    return render("objective-compare", report, plots=plots)
