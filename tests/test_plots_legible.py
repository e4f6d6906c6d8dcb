"""Plots a person can read (issue 34), checked on the SVG itself: the forest plot's "−margin" label
stays clear of the title and every text is at least 10 px as the page draws it; the leaderboard
page draws no chart without data, and no legend whose entries share a colour. The same page is
then measured in Chromium (text sizes and overlaps as rendered)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.demo.synthetic import DEMO_MODELS, generate_samples, write_jsonl
from calipers.render import plots

SVG = "{http://www.w3.org/2000/svg}"
MIN_PX = 10.0
EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"


@dataclass
class Text:
    text: str
    x: float
    y: float  # the baseline, in the SVG's user units
    size: float  # font size in user units
    px: float  # font size in CSS px as drawn at the SVG's own width


def texts(svg: str) -> list[Text]:
    """Every <text> of a matplotlib SVG with its position and size. Its width is in pt and its
    viewBox in pt: a user unit is 4/3 px."""
    root = ET.fromstring(svg)
    width = float(root.attrib["width"].removesuffix("pt")) * 4 / 3  # CSS px
    scale = width / float(root.attrib["viewBox"].split()[2])
    found = []
    for element in root.iter(f"{SVG}text"):
        size = float(re.search(r"font-size: ([\d.]+)px", element.attrib["style"])[1])  # type: ignore[index]
        if "x" in element.attrib:
            x, y = float(element.attrib["x"]), float(element.attrib["y"])
        else:  # placed by transform="translate(x y) …"
            moved = re.search(r"translate\(([-\d.]+) ([-\d.]+)\)", element.attrib["transform"])
            x, y = float(moved[1]), float(moved[2])  # type: ignore[index]
        found.append(Text("".join(element.itertext()), x, y, size, size * scale))
    return found


def _handle_colour(handle: ET.Element) -> str | None:
    """A legend handle's colour: a bar's fill, else a line's stroke."""
    for element in handle.iter():
        style = element.attrib.get("style", "")
        fill = re.search(r"fill: (#[0-9a-f]{6})", style)
        if fill and fill[1] != "#ffffff":
            return fill[1]
        stroke = re.search(r"stroke: (#[0-9a-f]{6})", style)
        if stroke:
            return stroke[1]
    return None


def legend_colours(svg: str) -> list[list[str]]:
    """Per legend of the SVG, the colour of each entry's handle, in order."""
    root = ET.fromstring(svg)
    legends = []
    for legend in (g for g in root.iter(f"{SVG}g") if g.attrib.get("id", "").startswith("legend")):
        colours: list[str] = []
        pending: str | None = None
        for child in legend:
            ident = child.attrib.get("id", "")
            if ident.startswith(("patch_", "line2d_")) and pending is None:
                pending = _handle_colour(child)
            elif ident.startswith("text_"):
                assert pending is not None, "a legend entry without a handle"
                colours.append(pending)
                pending = None
        legends.append(colours)
    return legends


ROWS = [("composite", 0.41, 0.37, 0.45, True), ("fact", 0.61, 0.52, 0.70, True),
        ("behavior", -0.05, -0.07, -0.03, True), ("judge", 0.67, 0.64, 0.71, True)]  # fmt: skip


@pytest.mark.parametrize("margin", [0.1, 0.6, 0.02])
def test_the_margin_label_stays_below_the_title(margin: float) -> None:
    svg = plots.forest(ROWS, title="paired differences (95% intervals), margin ±0.1",
                       margin=margin)  # fmt: skip
    found = texts(svg)
    (label,) = [t for t in found if t.text == "−margin"]
    (title,) = [t for t in found if t.text.startswith("paired differences")]
    # a line of text spans at most its font size above its baseline and a quarter below
    assert label.y - label.size > title.y + 0.25 * title.size, (label, title)
    ticks = [t for t in found if t is not title and t is not label]
    assert {t.text for t in ticks} >= {"composite", "fact", "behavior", "judge", "0.0"}
    small = [t for t in found if t.px < MIN_PX]
    assert not small, small
    assert min(t.px for t in ticks) >= 12.0  # tick labels: 9 pt = 12 px


def _leaderboard_data(tmp_path: Path) -> Path:
    """Two models with ReasonScore's fields, and two runs in other tasks whose samples have no
    `correct` (a suite's runs): a second group of comparable runs with nothing to draw."""
    rows = list(generate_samples(models=DEMO_MODELS[:2], samples_per_point=2, epochs=1))
    for run in ("bare-1", "bare-2"):
        rows += [{"run": run, "task": task, "sample_id": task, "tokens_out": 17}
                 for task in ("account", "refund")]  # fmt: skip
    path = tmp_path / "leaderboard.jsonl"
    write_jsonl(path, iter(rows))
    return path


def test_the_leaderboard_page_draws_no_empty_chart_and_tells_its_runs_apart(
    tmp_path: Path,
) -> None:
    data, page_path = _leaderboard_data(tmp_path), tmp_path / "leaderboard.html"
    assert main(["leaderboard", str(data), "--html", str(page_path), "--json",
                 str(tmp_path / "l.json"), "-q"]) == 0  # fmt: skip
    report = json.loads((tmp_path / "l.json").read_text())
    assert [g["ranking"] for g in report["groups"]][1] == ["bare-1", "bare-2"]
    page = page_path.read_text()
    groups = page.split("<h3>Group ")[1:]
    groups[-1] = groups[-1].split("<h3>Difficulty curves</h3>")[0]
    assert len(groups) == 2
    assert groups[0].count("<svg") == 2  # tier bars and score against tokens
    assert "<svg" not in groups[1]  # nothing to draw: no chart
    legends = 0
    for svg in re.findall(r"<svg.*?</svg>", page, re.S):
        for colours in legend_colours(svg):
            assert len(set(colours)) == len(colours), colours
            legends += len(colours) >= 2
        for t in texts(svg):
            assert t.text not in ("account", "refund", "bare-1", "bare-2"), t  # no empty panel
            assert t.px >= MIN_PX, t
    assert legends >= 3  # tier bars, score against tokens, difficulty curves


@pytest.mark.slow  # a browser
def test_the_pages_text_is_legible_in_chromium(chromium: Any, tmp_path: Path) -> None:
    from browser import open_page
    from page_checks import open_everything, overlapping_text, text_sizes

    compare = tmp_path / "compare.html"
    assert main(["compare", str(EXAMPLES / "layered.jsonl"), "--scheme", "layered",
                 "--baseline", "prompt-v1", "--candidate", "prompt-v2", "--margin", "0.5",
                 "--gate", "none", "--html", str(compare), "-q"]) == 0  # fmt: skip
    leaderboard = tmp_path / "leaderboard.html"
    assert main(["leaderboard", str(_leaderboard_data(tmp_path)), "--html", str(leaderboard),
                 "-q"]) == 0  # fmt: skip
    for html in (compare, leaderboard):
        loaded = open_page(chromium, html)
        open_everything(loaded.page)
        svg_sizes = [s for s in text_sizes(loaded.page) if s.kind == "svg"]
        assert svg_sizes and min(s.px for s in svg_sizes) >= MIN_PX
        assert overlapping_text(loaded.page) == []
        assert "−margin" in loaded.page.inner_text("body") or html is leaderboard
