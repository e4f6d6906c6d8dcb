"""Score pages: one section per scheme, drawn from the report's JSON document by the scheme's own
declaration (`Scheme.html_section`). `calipers score --html` renders one section; `calipers report
--html` renders every section the store's data has, after an overview of its runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calipers.render.html import render, write_html
from calipers.render.json_report import clean
from calipers.schemes import get_scheme


def _section(report: dict[str, Any], anchor: str) -> dict[str, Any]:
    return {**get_scheme(report["scheme"]).html_section(report), "anchor": anchor}


def score_page(report: dict[str, Any]) -> str:
    """The page of a `calipers score` report, whichever scheme made it."""
    report = clean(report)
    return render("score", report, sections=[_section(report, report["scheme"])])


def store_page(report: dict[str, Any]) -> str:
    """The page of `calipers report`: the store's runs, then a section per scheme scored."""
    report = clean(report)
    sections = [
        _section(section, key.replace(":", "-")) for key, section in report["sections"].items()
    ]
    return render("store", report, sections=sections)


def write_score_page(report: dict[str, Any], destination: Path) -> None:
    write_html(score_page(report), destination)


def write_store_page(report: dict[str, Any], destination: Path) -> None:
    write_html(store_page(report), destination)
