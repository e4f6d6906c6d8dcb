"""`calipers leaderboard` (issue 34): a run without the ranked metric is listed as lacking it —
not ranked, and said so in the terminal, the JSON and the page — instead of stopping the
leaderboard; and `--html` writes a leaderboard page with each run's rank interval and tie group
for every scheme that ranks runs (reasonscore, metric, layered), the same numbers as the JSON."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.demo.synthetic import DEMO_MODELS, generate_samples, write_jsonl

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three models with `correct` (and layers), and a run whose samples have neither `correct`
    nor a score: a suite's run that never graded outcomes."""
    rows: list[dict[str, Any]] = list(
        generate_samples(models=DEMO_MODELS[:3], samples_per_point=2, epochs=1)
    )
    rows += [{"run": "no-outcomes", "task": r["task"], "sample_id": r["sample_id"],
              "tier": r["tier"], "point": r["point"], "tokens_out": 20}
             for r in rows if r["run"] == DEMO_MODELS[0].name]  # fmt: skip
    path = tmp_path_factory.mktemp("lb") / "runs.jsonl"
    write_jsonl(path, iter(rows))
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["leaderboard", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_run_without_the_metric_is_listed_not_ranked(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    ranked = sorted(m.name for m in DEMO_MODELS[:3])
    code, out, err = _run(capsys, str(data), "--scheme", "metric", "--metric", "correct")
    assert code == 0, err
    assert "Traceback" not in err
    flat = " ".join(out.split())
    assert "3 runs ranked by correct (higher is better); 1 without a value, not ranked (—)" in flat
    assert re.search(r"│\s*—\s*│ no-outcomes\s*│ no value\s*│", out), out
    assert "not scored or ranked: no-outcomes (no sample has the metric 'correct')" in flat

    json_path, page_path = tmp_path / "m.json", tmp_path / "m.html"
    code, _, _ = _run(capsys, str(data), "--scheme", "metric", "--metric", "correct", "--json",
                      str(json_path), "--html", str(page_path))  # fmt: skip
    report = json.loads(json_path.read_text())
    assert report["lacking"] == ["no-outcomes"]
    assert sorted(report["runs"]) == ranked
    assert sorted(r["run"] for r in report["ranking"]["runs"]) == ranked
    page = html.unescape(page_path.read_text())
    assert '<td>no-outcomes</td><td colspan="2">no value of correct: not ranked</td>' in page

    # every run lacking it is still an error that says so, with the metrics there are
    code, _, err = _run(capsys, str(data), "--scheme", "metric", "--metric", "f1")
    assert code == 1 and "no sample" in err and "has the metric 'f1'" in err
    assert "Traceback" not in err


def _rank_rows(page: str, anchor: str) -> list[tuple[str, str, str]]:
    """(run, "low–high", tie group) of the page's ranks table."""
    table = page.split(f'<table id="{anchor}-ranks">', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr><td>\d+</td><td>([^<]+)</td><td>(\d+–\d+)</td><td>(\d+)</td></tr>",
                      table)  # fmt: skip


@pytest.mark.parametrize("scheme", ["metric", "layered", "reasonscore"])
def test_every_ranking_scheme_writes_a_page_with_rank_intervals(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], scheme: str
) -> None:
    args = ["--metric", "correct"] if scheme == "metric" else []
    json_path, page_path = tmp_path / f"{scheme}.json", tmp_path / f"{scheme}.html"
    code, _, err = _run(capsys, str(data), "--scheme", scheme, *args, "--json", str(json_path),
                        "--html", str(page_path), "-q")  # fmt: skip
    assert code == 0, err
    report = json.loads(json_path.read_text())
    page = html.unescape(page_path.read_text())
    if scheme == "reasonscore":
        group = report["groups"][0]
        expected = {(r["run"], f"{r['rank_low']}–{r['rank_high']}", str(r["group"]))
                    for r in group["rank_intervals"]["runs"]}  # fmt: skip
        table = page.split('<table id="leaderboard"', 1)[1].split("</table>", 1)[0]
        assert "95% rank interval</th><th>tie group</th>" in table
        shown = set(re.findall(r"<tr><td>\d+</td><td>([^<◆]+?)(?: ◆)?</td>(?:(?!</tr>).)*?"
                               r"<td>(\d+–\d+)</td><td>(\d+)</td>(?:(?!</tr>).)*?</tr>", table,
                               re.S))  # fmt: skip
        assert shown == expected
        assert "Rank interval: the ranks the data allow each run" in page
    else:
        expected = {(r["run"], f"{r['rank_low']}–{r['rank_high']}", str(r["group"]))
                    for r in report["ranking"]["runs"]}  # fmt: skip
        assert len(expected) == 3 and report["lacking"] == ["no-outcomes"]
        assert set(_rank_rows(page, scheme)) == expected
