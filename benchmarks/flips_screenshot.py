"""The screenshot of a comparison page's flips section in docs/images/flips.png (docs/flips.md).

Two inspect_ai log directories of one model — `v1/` holding tests/fixtures/importers/inspect/
run-a.eval and `v2/` holding prompt-v2.eval (mockllm/model-a, the same six questions × 3 epochs,
the task's prompt changed) — compared in one command, as a user would:

    calipers compare v1 --vs v2 --scheme metric --metric match --gate none --html compare.html

then the page opened in headless Chromium (tests/browser.py) at 1200 px wide and 100% zoom, the
first regression's and the first improvement's details opened, and the part from the "Flips"
heading to the note under its table saved, reduced to at most 128 colours. Offline; run with the
project's venv:

    .venv/bin/python benchmarks/flips_screenshot.py [--out docs/images/flips.png]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import browser  # noqa: E402
from calipers.cli.main import main as calipers  # noqa: E402

INSPECT = ROOT / "tests" / "fixtures" / "importers" / "inspect"
SIDES = {"v1": "run-a.eval", "v2": "prompt-v2.eval"}
WIDTH = 1200
MAX_BYTES = 400_000


def _png(raw: bytes) -> bytes:
    """The screenshot with at most 128 colours (fewer if still over MAX_BYTES), optimised."""
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


def flips_page(directory: Path) -> Path:
    """The comparison page of the two log directories, written in `directory`."""
    for side, log in SIDES.items():
        (directory / side).mkdir()
        shutil.copy(INSPECT / log, directory / side)
    page = directory / "compare.html"
    code = calipers(["compare", "v1", "--vs", "v2", "--scheme", "metric", "--metric", "match",
                     "--gate", "none", "--html", str(page), "-q"])  # fmt: skip
    if code != 0:
        raise SystemExit(f"calipers compare exited {code}")
    return page


def screenshot(page_path: Path) -> bytes:
    with browser() as chromium:
        page = chromium.new_page(viewport={"width": WIDTH, "height": 900})
        page.goto(page_path.resolve().as_uri(), wait_until="load")
        for way in ("regression", "improvement"):  # one of each, opened
            page.locator(f'table.flips tr[data-way="{way}"] details').first.evaluate(
                "d => { d.open = true }"
            )
        heading = page.locator("h3", has_text="Flips").first.bounding_box()
        note = page.locator("table.flips + p").first.bounding_box()  # what is listed, the rule
        assert heading is not None and note is not None
        top = max(0, int(heading["y"]) - 10)
        bottom = int(note["y"] + note["height"]) + 10
        clip = {"x": 0, "y": top, "width": WIDTH, "height": bottom - top}
        raw: bytes = page.screenshot(clip=clip, full_page=True)
        return raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "flips.png")
    args = parser.parse_args()
    out = args.out.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # the page names the directories as given: v1, v2
        data = _png(screenshot(flips_page(Path(tmp))))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    print(f"{out.name}  {len(data) / 1000:.0f} KB")


if __name__ == "__main__":
    main()
