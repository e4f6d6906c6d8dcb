"""HTML reports in headless Chromium: each page renders with no console error and no network
request beyond its own file, its screenshot is not blank, and hostile text in run and task names
(<script>, <img onerror>, javascript: links) shows as text and executes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from browser import HOSTILE, open_page, screenshot_is_blank
from calipers.cli.main import main

pytestmark = pytest.mark.slow  # a browser start: ~2 s


def layered_samples(path: Path, control: str, treatment: str, tasks: list[str]) -> Path:
    lines = []
    for run, bonus in ((control, 0), (treatment, 1)):
        for i, task in enumerate(tasks):
            for s in range(6):
                passed = (i + s + bonus) % 3 != 0
                lines.append({
                    "run": run, "task": task, "sample_id": f"{task}-{s}",
                    "output": f"answer {s}",
                    "assertions": [{"type": "contains", "value": "answer", "passed": passed},
                                   {"type": "max_length", "value": 100, "passed": True}],
                    "judgments": [{"judge": "j", "score": 3 + bonus, "scale_min": 1,
                                   "scale_max": 5}],
                })  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_compare_page_renders_offline_without_errors(chromium: Any, tmp_path: Path) -> None:
    data = layered_samples(tmp_path / "s.jsonl", "base", "new", ["alpha", "beta", "gamma"])
    html = tmp_path / "compare.html"
    code = main(["compare", str(data), "--scheme", "layered", "--control", "base",
                 "--treatment", "new", "--gate", "none", "--html", str(html), "-q"])  # fmt: skip
    assert code == 0
    loaded = open_page(chromium, html)
    assert loaded.console_errors == []
    assert loaded.requests == [html.resolve().as_uri()]  # the page itself, nothing else
    text = loaded.page.inner_text("body")
    verdict = loaded.page.inner_text("#verdict")
    report = json.loads(_json_report(data, tmp_path))
    assert verdict == report["verdict"]
    assert "Methodology" in text and f"seed {report['seed']}" in text
    # inline: the pair's forest plot, and the per-task one (three tasks are tested by default)
    assert loaded.page.locator("svg").count() == 2
    assert not screenshot_is_blank(loaded.page.screenshot(full_page=True))


def test_hostile_names_show_as_text_and_run_nothing(chromium: Any, tmp_path: Path) -> None:
    control, treatment = HOSTILE[0], HOSTILE[1]
    data = layered_samples(tmp_path / "s.jsonl", control, treatment, [HOSTILE[2], "plain"])
    html = tmp_path / "hostile.html"
    code = main(["compare", str(data), "--scheme", "layered", "--control", control,
                 "--treatment", treatment, "--gate", "none", "--html", str(html),
                 "-q"])  # fmt: skip
    assert code == 0
    loaded = open_page(chromium, html)
    loaded.page.evaluate("document.querySelectorAll('td').forEach(td => td.click())")
    assert loaded.page.evaluate("window.__pwned") is None
    assert loaded.console_errors == []
    assert loaded.page.locator("img").count() == 0
    assert loaded.page.locator("a[href^='javascript']").count() == 0
    assert loaded.page.locator("body script").count() == 0
    text = loaded.page.inner_text("body")
    for payload in HOSTILE:
        assert payload in text  # shown literally
    assert loaded.requests == [html.resolve().as_uri()]


def _json_report(data: Path, tmp_path: Path) -> str:
    out = tmp_path / "compare.json"
    main(["compare", str(data), "--scheme", "layered", "--control", "base", "--treatment",
          "new", "--gate", "none", "--json", str(out), "-q"])  # fmt: skip
    return out.read_text()


def test_pages_are_reproducible_and_bad_destinations_are_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = layered_samples(tmp_path / "s.jsonl", "base", "new", ["alpha", "beta"])
    args = ["compare", str(data), "--scheme", "layered", "--control", "base", "--treatment",
            "new", "--gate", "none", "-q"]  # fmt: skip
    assert main([*args, "--html", str(tmp_path / "a.html")]) == 0
    assert main([*args, "--html", str(tmp_path / "b.html")]) == 0
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()
    assert main([*args, "--html", str(tmp_path)]) == 1
    assert "is a directory" in capsys.readouterr().err
    assert not list(tmp_path.glob(".*.tmp"))


def test_objective_page_shows_the_decision_and_hostile_tasks_inertly(
    chromium: Any, tmp_path: Path
) -> None:
    data = layered_samples(tmp_path / "s.jsonl", "base", "new", [*HOSTILE, "plain"])
    html, out = tmp_path / "objective.html", tmp_path / "objective.json"
    code = main(["compare", str(data), "--scheme", "objective", "--baseline", "base",
                 "--candidate", "new", "--gate", "none", "--html", str(html), "--json",
                 str(out), "-q"])  # fmt: skip
    assert code == 0
    report = json.loads(out.read_text())
    loaded = open_page(chromium, html)
    page = loaded.page
    assert loaded.console_errors == [] and loaded.requests == [html.resolve().as_uri()]
    assert page.inner_text("#verdict") == report["verdict"]
    assert page.inner_text("#promote") == ("promote" if report["promote"] else "do not promote")
    assert page.locator("#tasks tr").count() == 1 + len(report["tasks"])
    assert page.evaluate("window.__pwned") is None and page.locator("img").count() == 0
    text = page.inner_text("body")
    assert all(payload in text for payload in HOSTILE)
    assert not screenshot_is_blank(page.screenshot(full_page=True))


@pytest.mark.extended  # the demo's page: test_demo runs the demo, the other pages render here
def test_the_demo_page_renders(chromium: Any, tmp_path: Path) -> None:
    assert main(["demo", "--dir", str(tmp_path)]) == 0
    loaded = open_page(chromium, tmp_path / "compare.html")
    assert loaded.console_errors == []
    assert loaded.requests == [(tmp_path / "compare.html").resolve().as_uri()]
    assert loaded.page.inner_text("#verdict") == "PROGRESS"
    assert loaded.page.locator("table.tasks tr").count() == 1 + 12  # header + the suite's tasks
    assert not screenshot_is_blank(loaded.page.screenshot())


def test_check_page_shows_diffs_and_hostile_case_text_inertly(
    chromium: Any, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    assert main(["init", str(project)]) == 0
    case = project / "cases" / "harbor.md"
    hostile = "\n".join(f"Note: {payload}" for payload in HOSTILE)
    case.write_text(case.read_text().replace("## Gate Rule", f"{hostile}\n\n## Gate Rule", 1))
    html = tmp_path / "check.html"
    code = main(["check", "--config", str(project / "kelvin.yaml"), "--no-store", "-q",
                 "--html", str(html)])  # fmt: skip
    assert code == 0
    report = json.loads((project / "kelvin" / "report.json").read_text())
    loaded = open_page(chromium, html)
    assert loaded.console_errors == []
    assert loaded.requests == [html.resolve().as_uri()]
    page = loaded.page
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0 and page.locator("body script").count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    text = page.inner_text("body")
    for payload in HOSTILE:
        assert payload in text  # in the inputs' diffs, as text
    signals = page.inner_text("#signals")
    assert f"{report['invariance']:.2f}" in signals and f"{report['sensitivity']:.2f}" in signals
    variants = sum(1 for c in report["cases"]["run"]
                   for _ in json.loads((project / "kelvin" / c / "report.json").read_text())
                   ["perturbations"])  # fmt: skip
    assert page.locator("details.case tr").count() == variants + len(report["cases"]["run"])
    assert page.locator("svg").count() == 1  # the heatmap
    assert not screenshot_is_blank(page.screenshot(full_page=True))
