"""The rubric on an HTML page: grade distribution, each evaluation's breakdown, history bands."""

from __future__ import annotations

from typing import Any

from calipers.render import plots as draw
from calipers.render.html import render
from calipers.render.json_report import clean

EVALUATIONS_SHOWN = 200  # rubric breakdowns on a page; the JSON has them all


HISTORY_TASKS_SHOWN = 8  # tasks with a history plot


def rubric_section(report: dict[str, Any]) -> dict[str, Any]:
    """Runs with grade counts, the grade distribution, each evaluation's breakdown, and per task
    its history with the 2 SD band the flags use."""
    runs = report["runs"]
    grades = [g for g in next(iter(runs.values()))["grades"]] if runs else []
    used = [g for g in grades if any(r["grades"][g] for r in runs.values())]
    plots = {}
    if used:
        plots["grades"] = draw.grouped_bars(
            used, {name: [r["grades"][g] for g in used] for name, r in runs.items()},
            title="grade distribution", ylabel="evaluations",
        )  # fmt: skip
    evaluations = report["evaluations"]
    notable = [
        e for e in evaluations if e["deductions"]["items"] or e["bonuses"]["items"]
        or e["history_flags"]
    ]  # fmt: skip
    shown = (notable + [e for e in evaluations if e not in notable])[:EVALUATIONS_SHOWN]
    history = report.get("history") or {}
    flagged = {e["task"] for e in evaluations if e["history_flags"]}
    tasks = sorted(history, key=lambda t: (t not in flagged, -len(history[t]), t))
    for task in tasks[:HISTORY_TASKS_SHOWN]:
        entries = history[task]
        dimensions = list(entries[0]["dimensions"])
        panels = {
            d: (
                [e["dimensions"][d] for e in entries],
                [e["band"][d]["mean"] for e in entries],
                [e["band"][d]["sd"] for e in entries],
            )
            for d in dimensions
        }
        plots[f"history:{task}"] = draw.history_bands(
            panels, title=f"{task}: last {len(entries)} evaluations in history order (red: "
            "more than 2 SD from the 10 before)",
        )  # fmt: skip
    return {
        "kind": "rubric",
        "report": report,
        "plots": plots,
        "shown": shown,
        "history_tasks": tasks[:HISTORY_TASKS_SHOWN],
        "history_hidden": max(0, len(tasks) - HISTORY_TASKS_SHOWN),
    }


def rank_page(report: dict[str, Any]) -> str:
    """`calipers rank --html`: the final scores per task and run (a strip per task), then each
    task's ranking with the level that broke each tie."""
    report = clean(report)
    runs: list[str] = []
    finals: dict[str, dict[str, list[float]]] = {}
    for ranking in report["rankings"]:
        for e in ranking["entries"]:
            runs += [e["run"]] if e["run"] not in runs else []
            finals.setdefault(e["run"], {}).setdefault(ranking["task"], []).append(e["final"])
    plots = {}
    if runs:
        plots["finals"] = draw.strip(
            [r["task"] for r in report["rankings"]], {run: finals[run] for run in runs},
            title="final score of each evaluation, per task and run", xlabel="final score",
            xlim=(0.8, 10.2),
        )  # fmt: skip
    return render("rank", report, plots=plots)
