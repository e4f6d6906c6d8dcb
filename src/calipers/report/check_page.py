"""The page of a robustness check (`calipers check --html`), from its kelvin-layout output
directory."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

from calipers.render.html import render, write_html
from calipers.render.json_report import clean
from calipers.render.plots import heatmap
from calipers.schemes.robustness.terminal import band

_DIFF_LINES = 120  # per variant: enough to see what changed, small enough for a page


def check_page(out: Path, *, diagnostic: str | None = None) -> str:
    """A robustness check, from its kelvin-layout output directory: signals with bands and
    intervals, sensitivity per type, a stability heatmap (mean decision distance per case and
    perturbation family), and per case the decisions and the diff of each perturbed input."""

    run = clean(json.loads((out / "report.json").read_text(encoding="utf-8")))
    cases = []
    for name in run["cases"]["run"]:  # kelvin's layout: <out>/<case>/report.json
        path = out / name / "report.json"
        if not path.is_file():
            continue
        case = clean(json.loads(path.read_text(encoding="utf-8")))
        baseline_input = _read(out / name / "baseline" / "input.md")
        for variant in case["perturbations"]:
            text = _read(out / name / "perturbations" / variant["variant_id"] / "input.md")
            variant["diff"] = _diff_lines(baseline_input, text)
            variant["family"] = re.sub(r"-\d+$", "", variant["variant_id"])
        cases.append(case)
    families = sorted({v["family"] for c in cases for v in c["perturbations"]})
    grid = [
        [_mean([v["distance"] for v in c["perturbations"] if v["family"] == f]) for f in families]
        for c in cases
    ]
    plots = {}
    if cases and families:
        plots["heatmap"] = heatmap(
            grid, rows=[c["case"] for c in cases], columns=families,
            title="decision distance from the baseline (0 = unchanged)", label="mean distance",
        )  # fmt: skip
    bands = {
        name: band(run[name], name, (run.get("intervals") or {}).get(name))
        if run.get(name) is not None
        else None
        for name in ("invariance", "sensitivity")
    }
    context = {**run, "case_reports": cases, "bands": bands, "diagnostic": diagnostic}
    return render("check", context, plots=plots)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _diff_lines(before: str, after: str) -> list[tuple[str, str]]:
    """(kind, text) per line of a unified diff: kind is add, del, hunk or same."""
    lines = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1):
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        lines.append((kind, line))
        if len(lines) >= _DIFF_LINES:
            lines.append(("hunk", f"… diff cut at {_DIFF_LINES} lines"))
            break
    return lines


def _mean(values: list[Any]) -> float | None:
    numbers = [float(v) for v in values if v is not None]
    return sum(numbers) / len(numbers) if numbers else None


def write_check_page(out: Path, destination: Path, *, diagnostic: str | None = None) -> None:
    write_html(check_page(out, diagnostic=diagnostic), destination)
