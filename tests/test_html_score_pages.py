"""Score, leaderboard and store pages in headless Chromium: no console error, no request beyond
the page's own file, a screenshot that is not blank, tables that agree with the JSON report, and
hostile run, task and sample names that show as text and run nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from browser import HOSTILE, LoadedPage, open_page, screenshot_is_blank
from calipers.cli.main import main
from calipers.demo.synthetic import DEMO_MODELS, generate_samples, write_jsonl
from calipers.render.changes import FLIPS_SCRIPT
from rubric_data import rubric_row

pytestmark = pytest.mark.slow  # a browser page each

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"


def assert_clean(loaded: LoadedPage, html: Path) -> None:
    assert loaded.console_errors == []
    assert loaded.requests == [html.resolve().as_uri()]  # the page itself, nothing else
    assert loaded.page.evaluate("window.__pwned") is None
    assert loaded.page.locator("img").count() == 0
    # the one script a page may run: the flips table's filter, allowed by its hash in the CSP
    assert loaded.page.locator("script").all_text_contents() in ([], [FLIPS_SCRIPT])
    assert not screenshot_is_blank(loaded.page.screenshot(full_page=True))


@pytest.fixture(scope="module")
def reasonscore_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rs") / "samples.jsonl"
    models = tuple(m.__class__(**{**m.__dict__, "name": n}) for m, n in zip(
        DEMO_MODELS, ["atlas", HOSTILE[0], "borealis", "cirrus"], strict=True
    ))  # fmt: skip
    write_jsonl(path, generate_samples(models=models, samples_per_point=3, epochs=1))
    return path


def test_leaderboard_page_ranks_and_marks_the_pareto_frontier(
    chromium: Any, reasonscore_file: Path, tmp_path: Path
) -> None:
    html, report_path = tmp_path / "lb.html", tmp_path / "lb.json"
    code = main(["leaderboard", str(reasonscore_file), "--html", str(html),
                 "--json", str(report_path), "-q"])  # fmt: skip
    assert code == 0
    report = json.loads(report_path.read_text())
    loaded = open_page(chromium, html)
    assert_clean(loaded, html)
    rows = loaded.page.locator("#leaderboard tr").all_inner_texts()[1:]
    names = [row.split("\t")[1].removesuffix(" ◆") for row in rows]
    assert [g["ranking"] for g in report["groups"]] == [names]  # one group: every run shares all
    marked = [n for n, row in zip(names, rows, strict=True) if "◆" in row]
    runs = report["runs"]
    dominated = {
        a for a in runs for b in runs
        if runs[b]["avg_score"] >= runs[a]["avg_score"]
        and runs[b]["avg_tokens"] <= runs[a]["avg_tokens"]
        and (runs[b]["avg_score"], runs[b]["avg_tokens"]) != (runs[a]["avg_score"],
                                                              runs[a]["avg_tokens"])
    }  # fmt: skip
    assert sorted(marked) == sorted(set(runs) - dominated)
    # leaderboard, tier bars, difficulty curves, Pareto plot
    assert loaded.page.locator("#reasonscore svg").count() == 3
    assert HOSTILE[0] in loaded.page.inner_text("#leaderboard")
    tiers = loaded.page.locator("#leaderboard th").all_inner_texts()[2:5]
    assert tiers == ["easy", "medium", "hard"]


def test_leaderboard_page_has_one_table_per_group_of_comparable_runs(
    chromium: Any, reasonscore_file: Path, tmp_path: Path
) -> None:
    """A run with fewer tiers and tasks (a hostile name, 2 tokens an answer) is its own group:
    shown unranked in its own table, never ranked with the runs that have every tier and task."""
    lone = [
        {"run": HOSTILE[2], "task": HOSTILE[1], "tier": "easy", "point": "p", "sample_id": str(i),
         "correct": True, "guess_chance": 0.0, "tokens_out": 2}
        for i in range(4)
    ]  # fmt: skip
    data = tmp_path / "mixed.jsonl"
    data.write_text(reasonscore_file.read_text() + "".join(json.dumps(r) + "\n" for r in lone))
    html, report_path = tmp_path / "lb.html", tmp_path / "lb.json"
    code = main(["leaderboard", str(data), "--html", str(html), "--json", str(report_path), "-q"])
    assert code == 0
    report = json.loads(report_path.read_text())
    loaded = open_page(chromium, html)
    assert_clean(loaded, html)
    assert loaded.page.locator("table.leaderboard").count() == len(report["groups"]) == 2
    for selector, group in zip(("#leaderboard", "#leaderboard-2"), report["groups"], strict=True):
        rows = loaded.page.locator(f"{selector} tr").all_inner_texts()[1:]
        assert [row.split("\t")[1].removesuffix(" ◆") for row in rows] == group["ranking"]
        ranks = [row.split("\t")[0] for row in rows]
        assert ranks == ([str(i) for i in range(1, len(rows) + 1)] if group["ranked"] else ["—"])
        headers = loaded.page.locator(f"{selector} th").all_inner_texts()
        assert headers[2 : 2 + len(group["tiers"])] == group["tiers"]
    assert report["groups"][1]["ranking"] == [HOSTILE[2]]
    text = loaded.page.inner_text("#reasonscore")
    assert f"{HOSTILE[2]} is the only run with tier easy × 1 task: {HOSTILE[1]}" in text


def test_rubric_page_shows_breakdowns_grades_and_history(chromium: Any, tmp_path: Path) -> None:
    db, html, out = tmp_path / "s.duckdb", tmp_path / "rubric.html", tmp_path / "rubric.json"
    rows = [rubric_row("agent", f"s{i}", 7 + (i % 3) * 0.5, task="triage") for i in range(8)]
    first = tmp_path / "first.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["score", str(first), "--scheme", "rubric", "--db", str(db), "-q",
                 "--record-history"]) == 0  # fmt: skip
    hostile = [
        rubric_row(HOSTILE[1], HOSTILE[2], 3.0, task="triage", red_flags=["invented_api"]),
        rubric_row("agent", "late", 9.0, task="triage", bonuses=["adds_tests"]),
    ]
    second = tmp_path / "second.jsonl"
    second.write_text("".join(json.dumps(r) + "\n" for r in hostile))
    code = main(["score", str(second), "--scheme", "rubric", "--db", str(db), "--record-history",
                 "--html", str(html), "--json", str(out), "-q"])  # fmt: skip
    assert code == 0
    report = json.loads(out.read_text())
    loaded = open_page(chromium, html)
    loaded.page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true })")
    loaded.page.evaluate("document.querySelectorAll('td, summary a').forEach(e => e.click())")
    assert_clean(loaded, html)
    text = loaded.page.inner_text("#rubric")
    flagged = next(e for e in report["evaluations"] if e["run"] == HOSTILE[1])
    assert flagged["history_flags"]  # 3.0 against a history of 7–8
    assert f"review: {len(flagged['history_flags'])} flag(s)" in text
    assert "red flag invented_api" in text and "bonus adds_tests" in text
    assert HOSTILE[2] in text
    grades = loaded.page.locator("#rubric-runs tr").all_inner_texts()[1:]
    for run, r in report["runs"].items():
        row = next(g for g in grades if g.startswith(run))
        assert all(f"{g}: {n}" in row for g, n in r["grades"].items() if n)
    assert len(report["history"]["triage"]) == 10
    assert loaded.page.locator("#rubric svg").count() == 2  # grade bars, one task's history


KELVIN_RUN = Path(__file__).parent / "fixtures/kelvin/experiments/pillar2_decomposition_demo"


@pytest.mark.parametrize(
    ("scheme", "data", "extra", "table"),
    [
        ("layered", EXAMPLES / "layered.jsonl", [], "#layered-runs tr"),
        ("metric", None, ["--metric", "accuracy"], "#metric-runs tr"),
        ("objective", EXAMPLES / "objective.jsonl", [], "#objective table tr"),
        ("robustness", KELVIN_RUN, [], "#robustness-signals tr"),
    ],
)
def test_other_score_pages_render(
    chromium: Any, reasonscore_file: Path, tmp_path: Path, scheme: str, data: Path | None,
    extra: list[str], table: str,
) -> None:  # fmt: skip
    html, out = tmp_path / f"{scheme}.html", tmp_path / f"{scheme}.json"
    code = main(["score", str(data or reasonscore_file), "--scheme", scheme, *extra,
                 "--html", str(html), "--json", str(out), "-q"])  # fmt: skip
    assert code == 0
    report = json.loads(out.read_text())
    loaded = open_page(chromium, html)
    assert_clean(loaded, html)
    rows = loaded.page.locator(table).all_inner_texts()
    for run in report["runs"]:
        assert any(row.startswith(run) for row in rows) or run in loaded.page.inner_text("body")


def test_store_page_has_a_section_per_scheme_scored(
    chromium: Any, reasonscore_file: Path, tmp_path: Path
) -> None:
    db, html, out = tmp_path / "s.duckdb", tmp_path / "store.html", tmp_path / "store.json"
    assert main(["import", str(reasonscore_file), "--db", str(db)]) == 0
    code = main(["report", "--db", str(db), "--html", str(html), "--json", str(out), "-q"])
    assert code == 0
    report = json.loads(out.read_text())
    assert {"reasonscore", "layered", "objective"} <= set(report["sections"])
    assert "rubric" in report["skipped"] and "robustness" in report["skipped"]
    loaded = open_page(chromium, html)
    assert_clean(loaded, html)
    for key in report["sections"]:
        assert loaded.page.locator(f"section#{key.replace(':', '-')}").count() == 1
    runs = loaded.page.locator("#store-runs tr").all_inner_texts()[1:]
    assert [r.split("\t")[0] for r in runs] == [r["run"] for r in report["runs"]]
    skipped = loaded.page.inner_text("#skipped")
    assert all(name in skipped for name in report["skipped"])


def test_report_needs_an_output_and_a_store(tmp_path: Path, capsys: Any) -> None:
    assert main(["report", "--db", str(tmp_path / "none.duckdb")]) == 1
    assert "nothing to write" in capsys.readouterr().err
    code = main(["report", "--db", str(tmp_path / "none.duckdb"), "--html", str(tmp_path / "x")])
    assert code == 2  # a data error: no store there
    assert "no store at" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
