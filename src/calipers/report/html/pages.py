"""Pages per report kind: the report's JSON document plus the plots drawn from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calipers.report.html import render, write_html
from calipers.report.html.plots import forest
from calipers.report.json_report import clean


def compare_page(report: dict[str, Any]) -> str:
    """layered / metric comparison: the verdict, variants, a forest plot of the paired
    differences per pair, per-task table, badges, methodology."""
    report = clean(report)
    plots = {}
    for i, pair in enumerate(report["pairs"]):
        rows = [("composite", *_diff(pair["composite"]))]
        rows += [(name, *_diff(d)) for name, d in pair["layers"].items()]
        plots[f"forest-{i}"] = forest(
            rows, title=f"paired differences ({pair['confidence_level']:.0%} intervals)"
        )
    return render("compare", report, plots=plots)


def _diff(d: dict[str, Any] | None) -> tuple[Any, Any, Any, bool]:
    if not d:
        return None, None, None, False
    return d.get("estimate"), d.get("low"), d.get("high"), bool(d.get("significant"))


PAGES = {"compare": compare_page}


def write_page(kind: str, report: dict[str, Any], destination: Path) -> None:
    write_html(PAGES[kind](report), destination)
