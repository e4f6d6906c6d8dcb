"""Pages a person can read, checked in headless Chromium on every kind of page built from a
realistically large input (16 runs, 24 tasks where a page has both; tests/page_data.py): no text
drawn under 9 px at 100% zoom (HTML, and the plots' SVG text at the size the page draws it), no
two pieces of text overlapping within a plot, a visible legend of the verdicts, bands and badges,
and a link to the method's docs that exists in docs/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from browser import open_page
from calipers.render.figure import MARKERS, PALETTE, run_style
from calipers.render.html import _environment
from page_checks import open_everything, overlapping_text, text_sizes
from page_data import PAGES, RUNS, build_pages

pytestmark = [pytest.mark.slow, pytest.mark.extended]  # a browser page each: make test-all

DOCS = Path(__file__).parent.parent / "docs"
MIN_PX = 9.0


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_pages(tmp_path_factory.mktemp("pages"))


@pytest.mark.parametrize("kind", list(PAGES))
def test_page_is_readable(chromium: Any, pages: dict[str, Path], kind: str) -> None:
    html = pages[kind]
    loaded = open_page(chromium, html)
    assert loaded.console_errors == []
    assert loaded.requests == [html.resolve().as_uri()]  # the page itself, nothing else
    page = loaded.page
    open_everything(page)
    sizes = text_sizes(page)
    assert sizes, "no text measured"
    small = sorted((s for s in sizes if s.px < MIN_PX), key=lambda s: s.px)
    assert not small, f"text under {MIN_PX} px: {small[:5]}"
    assert overlapping_text(page) == []
    legend = page.locator("#legend")
    assert legend.is_visible() and "How to read this page" in legend.inner_text()
    links = page.locator("#docs a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert links
    for href in links:
        assert _doc_exists(href), href


def _slug(heading: str) -> str:
    """GitHub's anchor of a markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _doc_exists(href: str) -> bool:
    path, _, anchor = href.removeprefix("docs/").partition("#")
    doc = DOCS / path
    if not doc.is_file():
        return False
    headings = [_slug(line.lstrip("#")) for line in doc.read_text().splitlines()
                if line.startswith("#")]  # fmt: skip
    return not anchor or anchor in headings


def test_big_plots_are_laid_out_for_the_page(chromium: Any, pages: dict[str, Path]) -> None:
    """The plots the user found unreadable: the store report's objective chart (24 tasks × 16
    runs, a labelled grid), difficulty curves and the Pareto plot with 16 runs; cut names keep
    the whole name as a tooltip; `$` in a name stays literal."""
    page = open_page(chromium, pages["report"]).page
    objective = page.locator("section#objective svg").first
    assert objective.locator("text", has_text="0.").count() >= 24 * 16  # a value per cell
    titles = objective.locator("title").all_text_contents()
    assert RUNS[11] in titles  # the long run name, cut in the plot, whole in its tooltip
    page = open_page(chromium, pages["leaderboard"]).page
    svgs = page.locator("#reasonscore svg")
    assert svgs.count() == 3  # tier grid, Pareto, difficulty curves
    assert page.locator("svg text", has_text="prompt-v2 cost_$_per_$_token").count() >= 1
    for index in range(svgs.count()):  # drawn at its own size: never shrunk to fit the page
        width = svgs.nth(index).evaluate("svg => svg.getBoundingClientRect().width")
        intrinsic = svgs.nth(index).evaluate("svg => svg.width.baseVal.value")
        assert width == pytest.approx(intrinsic, abs=1)


def test_rank_page_shows_every_ranking(chromium: Any, pages: dict[str, Path]) -> None:
    import json

    from calipers.cli.main import main

    rubric = pages["rank"].parent / "rubric.jsonl"
    out = pages["rank"].parent / "rank.json"
    assert main(["rank", str(rubric), "--no-history", "--json", str(out), "-q"]) == 0
    report = json.loads(out.read_text())
    page = open_page(chromium, pages["rank"]).page
    assert page.locator("section.ranking").count() == len(report["rankings"])
    rows = page.locator("table.ranking tr").count()
    assert rows == sum(len(r["entries"]) + 1 for r in report["rankings"])
    assert page.locator("svg").count() == 1  # the strip of final scores


def test_the_legend_explains_everything_a_page_can_show() -> None:
    from calipers.schemes.robustness.terminal import _INVARIANCE_BANDS, _SENSITIVITY_BANDS
    from calipers.schemes.rubric.scoring import GRADES
    from calipers.verdicts.gates import Verdict
    from calipers.verdicts.margin import DECISIONS

    keys = ["gates", "margin", "marks", "badges", "gate", "objective", "composite", "bands",
            "pareto", "grades", "rubric", "rank", "generic"]  # fmt: skip
    text = (
        _environment()
        .get_template("_legend.html.j2")
        .render(keys=keys, methods=["layered"], docs_base="docs/")
    )
    for verdict in Verdict:
        assert f">{verdict.value}</span>" in text
    for decision in DECISIONS:
        assert f"<strong>{decision}</strong>" in text
    for lower, grade, label in GRADES[:-1]:
        assert f"<strong>{grade}</strong> ≥ {lower:.2f} {label}" in text
    assert f"<strong>{GRADES[-1][1]}</strong> below {GRADES[-1][2]}" in text
    for _, band in _INVARIANCE_BANDS + _SENSITIVITY_BANDS:
        assert f">{band}</span>" in text
    for verdict in ("improved", "neutral", "regressed", "promote", "do not promote"):
        assert f">{verdict}</span>" in text


def test_docs_links_follow_calipers_docs_url(monkeypatch: pytest.MonkeyPatch) -> None:
    from calipers.render.html import render

    report = {"verdict": "x", "scheme": "plugin", "schema_version": 1}
    page = render("generic-compare", report, title="t", tables=[])
    assert 'href="docs/reports.md"' in page
    monkeypatch.setenv("CALIPERS_DOCS_URL", "https://example.org/calipers/docs")
    page = render("generic-compare", report, title="t", tables=[])
    assert 'href="https://example.org/calipers/docs/reports.md"' in page


def _lab(hexes: tuple[str, ...]) -> Any:
    from matplotlib.colors import to_rgb

    rgb = np.array([to_rgb(h) for h in hexes])
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    to_xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                       [0.0193, 0.1192, 0.9505]])  # fmt: skip
    xyz = linear @ to_xyz.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], 1)


def test_sixteen_runs_and_more_keep_their_own_style() -> None:
    lab = _lab(PALETTE)
    distance = np.sqrt(((lab[:, None] - lab[None]) ** 2).sum(-1))
    np.fill_diagonal(distance, np.inf)
    assert len(PALETTE) == 20 and distance.min() > 25  # CIE76 ΔE: clearly different colours
    assert (
        lab[:, 0].min() > 20 and lab[:, 0].max() < 82
    )  # neither near-black nor washed out on white
    styles = {tuple(run_style(i).values()) for i in range(len(PALETTE) * len(MARKERS))}
    assert len(styles) == 140
