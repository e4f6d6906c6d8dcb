"""`calipers demo`: seeded, complete data, imported and ranked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import calipers
from calipers.cli.demo import DEMO_FLIPS
from calipers.cli.main import main
from calipers.demo.synthetic import generate_samples


@pytest.mark.slow  # the whole demo: data, checks, a suite run, pages
def test_demo_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--dir", str(tmp_path)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the console wraps at 80 columns
    assert "ReasonScore leaderboard" in out and "seed 20261122" in out
    # the layered comparison of two variants ends with its verdict and reason
    assert "Layered comparison" in out and "atlas-small (control)" in out
    assert "CAUTIOUS composite +0.412" in out and "fails the gate on judge" in out
    assert (tmp_path / "demo.duckdb").exists()
    # after each layered comparison, the samples that flipped: the counts, the largest few
    with calipers.open(db=tmp_path / "demo.duckdb") as samples:
        atlas = calipers.compare(samples, "layered", baseline="atlas-small",
                                 candidates=["atlas-large"]).flips["atlas-large"]  # fmt: skip
        assistant = calipers.compare(samples, "layered", baseline="assistant-v1",
                                     candidates=["assistant-v2"]).flips["assistant-v2"]  # fmt: skip
    for f in (atlas, assistant):
        head = (f"Flips {f.treatment} against {f.control}: {f.n_regressions} regressions "
                f"({f.kinds['regression']['stable']} stable,")  # fmt: skip
        assert head in out
        shown = [*f.regressions[:DEMO_FLIPS], *f.improvements[:DEMO_FLIPS]]
        assert all(f"{x.task} · {x.sample_id} " in out for x in shown)
        assert not any(f"{x.task} · {x.sample_id} " in out for x in f.regressions[DEMO_FLIPS:])
    assert "the 3 largest regressions:" in out and "the 3 largest improvements:" in out
    assert (assistant.n_regressions, assistant.n_improvements) == (0, 8)
    # one sample per task: no task is tested on its own, and the terminal says so
    assert "assistant-v2: none of the 12 tasks could be tested on its own" in out
    assert "0 of 0 tasks moved" not in out
    # then the example robustness project, scaffolded and checked with the demo's seed
    assert "Robustness check" in out and "Sensitivity 1.00" in out
    check = json.loads((tmp_path / "check" / "kelvin" / "report.json").read_text())
    assert check["seed"] == 20261122 and check["sensitivity"] == 1.0
    assert f"Invariance {check['invariance']:.2f}" in out
    # then the example assistant's suite, run in two versions, judged and compared
    assert "Suite run: orbit-support (12 tasks)" in out
    assert "assistant-v1: 12 samples, assertions 11/24 passed, 12 judged" in out
    assert "assistant-v2: 12 samples, assertions 24/24 passed, 12 judged" in out
    assert "PROGRESS composite" in out
    assert "REGRESSED · do not promote" in out  # v2's higher cost, on tasks v1 already got right
    con = duckdb.connect(str(tmp_path / "demo.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT run, count(*), count(input), sum(len(judgments)) FROM samples "
            "WHERE run LIKE 'assistant-%' GROUP BY run ORDER BY run"
        ).fetchall()
    finally:
        con.close()
    assert rows == [("assistant-v1", 12, 12, 12), ("assistant-v2", 12, 12, 12)]
    assert (tmp_path / "runs" / "assistant-v2" / "refund" / "0" / "output.json").exists()
    page = (tmp_path / "compare.html").read_text()  # opened in chromium by test_html_reports
    assert f"→ {tmp_path / 'compare.html'}" in out and "assistant-v2 − assistant-v1" in page
    assert f"→ {tmp_path / 'check.html'}" in out
    assert "Robustness check" in (tmp_path / "check.html").read_text()
    assert f"→ {tmp_path / 'report.html'}" in out
    store = (tmp_path / "report.html").read_text()
    assert all(f'<section id="{s}">' in store for s in ("reasonscore", "layered", "objective"))
    lines = (tmp_path / "samples.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert len(first["judgments"]) == 2 and len(first["assertions"]) == 2
    assert {a["layer"] for a in first["assertions"]} == {"fact", "behavior"}
    samples = [json.loads(line) for line in lines]
    assert len({s["task"] for s in samples}) == 12 and len({s["tier"] for s in samples}) == 3
    assert {s["epoch"] for s in samples} == {0, 1}
    assert any(s["truncated"] for s in samples) and any(s["guess_chance"] > 0 for s in samples)


def test_demo_data_is_reproducible_from_its_seed() -> None:
    a = [s for _, s in zip(range(300), generate_samples(seed=5), strict=False)]
    b = [s for _, s in zip(range(300), generate_samples(seed=5), strict=False)]
    c = [s for _, s in zip(range(300), generate_samples(seed=6), strict=False)]
    assert a == b and a != c


def test_the_demo_judge_scores_content_word_recall() -> None:
    from importlib import resources

    judge = Path(str(resources.files("calipers.demo.assistant"))) / "judge.py"

    def score(expected: str, answer: str) -> int:
        prompt = f"<expected>\n{expected}\n</expected>\n<answer>\n{answer}\n</answer>"
        done = subprocess.run([sys.executable, str(judge)], input=prompt, text=True,
                              capture_output=True, check=True)  # fmt: skip
        return int(json.loads(done.stdout)["score"])

    expected = "Riders must be at least 16 years old."  # 7 content words
    assert score(expected, "Please contact support.") == 1
    assert score(expected, expected) == 5
    assert score(expected, "Riders must be 16.") == 1 + round(4 * 3 / 7)


@pytest.mark.slow  # the whole demo again
@pytest.mark.extended
def test_demo_in_a_relative_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `make demo` uses the default, relative --dir; the check's pipeline runs in the project's
    # directory, so the paths it is given must not be relative to ours.
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--dir", "nested/demo"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Sensitivity 1.00" in out and "PROGRESS composite" in out
