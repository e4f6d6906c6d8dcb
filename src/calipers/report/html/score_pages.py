"""Score pages: one section per scheme, drawn from the report's JSON document. `calipers score
--html` renders one section; `calipers report --html` renders every section the store's data has,
after an overview of its runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from calipers.report.html import plots as draw
from calipers.report.html import render, write_html
from calipers.report.json_report import clean

EVALUATIONS_SHOWN = 200  # rubric breakdowns on a page; the JSON has them all
HISTORY_TASKS_SHOWN = 8  # tasks with a history plot


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


def summary_section(report: dict[str, Any]) -> dict[str, Any]:
    """layered / metric scores: per run the composite with its interval and each component."""
    runs = report["runs"]
    rows = [
        (name, r["composite"]["mean"], r["composite"]["low"], r["composite"]["high"],
         bool(r.get("gate_passed", True)))
        for name, r in runs.items()
    ]  # fmt: skip
    plots = {}
    if rows:
        threshold = report["parameters"].get("threshold")
        plots["composite"] = draw.forest(
            rows, title=f"composite per run ({report['parameters']['confidence_level']:.0%} "
            "intervals)", xlabel="composite", reference=threshold,
        )  # fmt: skip
    components: list[str] = []
    for r in runs.values():
        components += [c for c in r["components"] if c not in components]
    return {"kind": "summary", "report": report, "plots": plots, "components": components}


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
    return {"kind": "objective", "report": report, "plots": plots}


def robustness_section(report: dict[str, Any]) -> dict[str, Any]:
    """robustness scores of stored runs: the signals with bands, per type, per case."""
    from calipers.report.terminal_robustness import band

    bands = {
        name: {
            signal: band(r[signal], signal) if r.get(signal) is not None else None
            for signal in ("invariance", "sensitivity")
        }
        for name, r in report["runs"].items()
    }
    return {"kind": "robustness", "report": report, "plots": {}, "bands": bands}


SECTIONS = {
    "reasonscore": reasonscore_section,
    "rubric": rubric_section,
    "layered": summary_section,
    "metric": summary_section,
    "objective": objective_section,
    "robustness": robustness_section,
}


def score_page(report: dict[str, Any]) -> str:
    """The page of a `calipers score` report (any scheme in SECTIONS)."""
    report = clean(report)
    section = {**SECTIONS[report["scheme"]](report), "anchor": report["scheme"]}
    return render("score", report, sections=[section])


def store_page(report: dict[str, Any]) -> str:
    """The page of `calipers report`: the store's runs, then a section per scheme scored."""
    report = clean(report)
    sections = []
    for key, section in report["sections"].items():
        sections.append({**SECTIONS[section["scheme"]](section), "anchor": key.replace(":", "-")})
    return render("store", report, sections=sections)


def write_score_page(report: dict[str, Any], destination: Path) -> None:
    write_html(score_page(report), destination)
