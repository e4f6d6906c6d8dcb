"""The compare page with a margin and per-task tests, in headless Chromium: the decision row and
the per-task table agree with the JSON report, the margin band and the per-task forest plot are
drawn, and a hostile task name shows as text and runs nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from browser import HOSTILE, open_page
from calipers.cli.main import main
from test_html_score_pages import assert_clean

pytestmark = pytest.mark.slow  # a browser page

sys.path.insert(0, str(Path(__file__).parent.parent / "docs" / "examples"))
from decisions_example import task_rows  # noqa: E402


def test_compare_page_draws_the_margin_and_the_tasks(chromium: Any, tmp_path: Path) -> None:
    rows = task_rows()
    for r in rows:
        if r["task"] == "code":
            r["task"] = HOSTILE[0]  # a task name that is a script
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    html, report_path = tmp_path / "compare.html", tmp_path / "compare.json"
    code = main(["compare", str(data), "--scheme", "metric", "--metric", "correct",
                 "--baseline", "A", "--candidate", "B", "--margin", "0.1", "--gate", "none",
                 "--html", str(html), "--json", str(report_path), "-q"])  # fmt: skip
    assert code == 0
    pair = json.loads(report_path.read_text())["pairs"][0]
    loaded = open_page(chromium, html)
    assert_clean(loaded, html)
    page = loaded.page
    decision = page.locator("#decision-0").inner_text()
    assert decision.startswith(pair["decision"]) and pair["margin"]["reason"] in decision
    # the pair's forest plot carries the margin band, and the per-task plot is drawn
    assert "margin ±0.1" in page.content()
    assert page.locator("svg").count() >= 2
    table = page.locator("table.tasks tr").all_inner_texts()[1:]
    by_name = {row.split("\t")[0]: row for row in table}
    assert set(by_name) == set(pair["tasks"])  # the hostile name is text, as given
    for name, task in pair["tasks"].items():
        moved = {"up": "▲ up", "down": "▼ down"}.get(task["moved"] or "", "")
        assert by_name[name].split("\t")[7].strip() == moved
    assert {n for n, t in pair["tasks"].items() if t["moved"]} == {"math", HOSTILE[0]}
