"""layered and metric on an HTML page: composites with intervals, and the comparison page."""

from __future__ import annotations

from typing import Any

from calipers.render import plots as draw
from calipers.render.changes import flips_page_context
from calipers.render.cost import cost_page_context
from calipers.render.html import render
from calipers.render.json_report import clean
from calipers.schemes.layered.scoring import value_label


def summary_section(report: dict[str, Any]) -> dict[str, Any]:
    """layered / metric scores: per run the composite with its interval and each component."""
    runs = report["runs"]
    label = value_label(report["scheme"], report["parameters"])
    # a refused interval has no bounds (its `refusal` says why): the plot shows the mean alone
    rows = [
        (name, r["composite"].get("mean"), r["composite"].get("low"), r["composite"].get("high"),
         bool(r.get("gate_passed", True)))
        for name, r in runs.items()
    ]  # fmt: skip
    plots = {}
    if rows:
        threshold = report["parameters"].get("threshold")
        plots["composite"] = draw.forest(
            rows, title=f"{label} per run ({report['parameters']['confidence_level']:.0%} "
            "intervals)", xlabel=label, reference=threshold,
        )  # fmt: skip
    components: list[str] = []
    layered = any(r.get("layers_used") for r in runs.values())  # metric: one value, no layers
    for r in runs.values() if layered else ():
        components += [c for c in r["components"] if c not in components]
    return {
        "kind": "summary", "report": report, "plots": plots, "components": components,
        "value_label": label, "layered": layered,
    }  # fmt: skip


def compare_page(report: dict[str, Any]) -> str:
    """layered / metric comparison: the verdict, variants, a forest plot of the paired
    differences per pair, per-task table, badges, methodology."""
    report = clean(report)
    label = value_label(report["scheme"], report["parameters"])
    plots = {}
    for i, pair in enumerate(report["pairs"]):
        rows = [(label, *_diff(pair["composite"]))]
        rows += [(name, *_diff(d)) for name, d in pair["layers"].items()]
        margin = (pair.get("margin") or {}).get("margin")
        plots[f"forest-{i}"] = draw.forest(
            rows,
            title=f"paired differences ({pair['confidence_level']:.0%} intervals)"
            + ("" if margin is None else f", margin ±{margin:.3g}"),
            margin=margin,
        )
        if pair.get("task_adjust"):
            tasks = [
                (name, t.get("diff"), t.get("low"), t.get("high"), bool(t.get("moved")))
                for name, t in pair["tasks"].items()
            ]
            plots[f"tasks-{i}"] = draw.forest(
                tasks,
                title=f"per task ({pair['confidence_level']:.0%} intervals; green: moved after "
                f"{pair['task_adjust']} adjustment)",
            )
    return render(
        "compare", report, plots=plots, value_label=label, **flips_page_context(report),
        **cost_page_context(report),
    )  # fmt: skip


def _diff(d: dict[str, Any] | None) -> tuple[Any, Any, Any, bool]:
    if not d:
        return None, None, None, False
    return d.get("estimate"), d.get("low"), d.get("high"), bool(d.get("significant"))
