"""Screenshots of every kind of HTML page for docs/reports.md, in docs/images/.

Builds each page from the same large synthetic inputs as the readability tests (tests/page_data.py:
16 runs, 24 tasks where a page has both), opens it in headless Chromium (tests/browser.py) at 1400
px wide and 100% zoom, and saves a 1400-px-wide clip of it: the top of the page (title, verdict,
legend, first tables and plots), and for the plots further down a clip around them. Each PNG is
reduced to an adaptive palette of at most 128 colours to stay under 400 KB. Offline; run with the
project's venv:

    .venv/bin/python benchmarks/page_screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import browser  # noqa: E402
from page_data import build_pages  # noqa: E402

WIDTH = 1400
TOP_HEIGHT = 1600
MAX_BYTES = 400_000

# (image name, page kind, CSS selector of the part to show: None for the top of the page)
SHOTS = [
    ("score-layered", "score-layered", None),
    ("score-metric", "score-metric", None),
    ("score-objective", "score-objective", None),
    ("score-rubric", "score-rubric", None),
    ("score-robustness", "score-robustness", None),
    ("leaderboard", "leaderboard", None),
    ("leaderboard-pareto", "leaderboard", "#reasonscore svg >> nth=1"),
    ("leaderboard-curves", "leaderboard", "#reasonscore svg >> nth=2"),
    ("compare", "compare", None),
    ("compare-objective", "compare-objective", None),
    ("check", "check", None),
    ("rank", "rank", None),
    ("report", "report", None),
    ("report-objective", "report", "section#objective"),
]


def _png(raw: bytes) -> bytes:
    """The screenshot with at most 128 colours (64 if still over MAX_BYTES), optimised."""
    from PIL import Image

    image = Image.open(io.BytesIO(raw)).convert("RGB")
    out = b""
    for colours in (128, 64, 32):
        buffer = io.BytesIO()
        image.quantize(colours, method=Image.Quantize.MEDIANCUT).save(
            buffer, format="PNG", optimize=True
        )
        out = buffer.getvalue()
        if len(out) <= MAX_BYTES:
            break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # pages name their inputs as given: short relative paths
        pages = build_pages(Path("."))
        with browser() as chromium:
            for name, kind, selector in SHOTS:
                page = chromium.new_page(viewport={"width": WIDTH, "height": 900})
                page.goto(Path(pages[kind]).resolve().as_uri(), wait_until="load")
                full = page.evaluate("document.documentElement.scrollHeight")
                if selector is None:
                    top, height = 0, min(full, TOP_HEIGHT)
                else:
                    box = page.locator(selector).bounding_box()
                    assert box is not None, (name, selector)
                    top = max(0, int(box["y"]) - 60)
                    height = min(int(box["height"]) + 100, full - top, 2400)
                clip = {"x": 0, "y": top, "width": WIDTH, "height": height}
                data = _png(page.screenshot(clip=clip, full_page=True))
                (out / f"{name}.png").write_bytes(data)
                print(f"{name}.png  {WIDTH}×{height} px  {len(data) / 1000:.0f} KB")
                page.close()


if __name__ == "__main__":
    main()
