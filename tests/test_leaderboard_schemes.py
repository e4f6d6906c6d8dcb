"""`calipers leaderboard` for the metric and layered schemes (ranked by the headline number with
rank intervals and tie groups), and `calipers runs` listing each run's headline numbers."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from calipers.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, runs: list[tuple[str, float, int]], n: int = 300) -> Path:
    """Runs of `n` shared samples each with accuracy ≈ p and `tokens` output tokens."""
    rng = random.Random(7)
    rows = []
    for run, p, tokens in runs:
        hits = set(rng.sample(range(n), round(p * n)))  # exactly round(p·n) correct
        for i in range(n):
            ok = i in hits
            rows.append({"run": run, "task": "qa", "sample_id": f"s{i}", "correct": ok,
                         "tokens_out": tokens, "scores": {"accuracy": float(ok)}})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _leaderboard(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["leaderboard", *argv, "--json", "-", "-q"]) == 0
    return json.loads(capsys.readouterr().out)


def test_metric_leaderboard_orders_by_accuracy_not_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the inspect case: the more accurate prompt spends more tokens
    data = _write(tmp_path / "d.jsonl", [("short", 0.594, 100), ("long", 0.783, 400)])
    report = _leaderboard([str(data), "--scheme", "metric", "--metric", "accuracy"], capsys)
    assert [r["run"] for r in report["ranking"]["runs"]] == ["long", "short"]
    assert report["runs"]["long"]["composite"]["mean"] == pytest.approx(0.783, abs=0.002)
    assert main(["leaderboard", str(data), "--scheme", "metric", "--metric", "accuracy"]) == 0
    out = capsys.readouterr().out
    assert "metric leaderboard" in out and "ranked by accuracy" in out
    assert out.index("long") < out.index("short")


def test_separated_runs_get_disjoint_rank_intervals_and_near_ones_a_tie_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(
        tmp_path / "d.jsonl",
        [("top", 0.9, 10), ("twin_a", 0.6, 10), ("twin_b", 0.6033, 10), ("bottom", 0.2, 10)],
    )
    report = _leaderboard([str(data), "--scheme", "metric", "--metric", "correct"], capsys)
    ranked = {r["run"]: r for r in report["ranking"]["runs"]}
    assert report["ranking"]["runs"][0]["run"] == "top"
    assert (ranked["top"]["rank_low"], ranked["top"]["rank_high"]) == (1, 1)
    assert (ranked["bottom"]["rank_low"], ranked["bottom"]["rank_high"]) == (4, 4)
    assert ranked["twin_a"]["group"] == ranked["twin_b"]["group"]
    assert ranked["top"]["group"] != ranked["twin_a"]["group"] != ranked["bottom"]["group"]
    assert sorted(map(sorted, report["ranking"]["groups"]))[-1] == ["twin_a", "twin_b"]
    assert main(["leaderboard", str(data), "--scheme", "metric", "--metric", "correct"]) == 0
    out = capsys.readouterr().out
    assert "tied (the data cannot order them): twin_b, twin_a" in " ".join(out.split())


def test_layered_leaderboard_ranks_by_the_composite(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = ROOT / "docs" / "examples" / "layered.jsonl"
    report = _leaderboard([str(data), "--scheme", "layered"], capsys)
    means = {name: r["composite"]["mean"] for name, r in report["runs"].items()}
    order = [r["run"] for r in report["ranking"]["runs"]]
    assert order == sorted(means, key=lambda run: -means[run])
    assert main(["leaderboard", str(data), "--scheme", "layered"]) == 0
    assert "layered leaderboard" in capsys.readouterr().out


def test_leaderboard_refuses_rubric_pointing_to_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(tmp_path / "d.jsonl", [("a", 0.5, 10), ("b", 0.6, 10)])
    assert main(["leaderboard", str(data), "--scheme", "rubric"]) == 1
    err = capsys.readouterr().err
    assert "does not rank runs" in err and "calipers rank" in err and "metric" in err


def test_runs_lists_each_runs_metric_means(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(tmp_path / "d.jsonl", [("short", 0.594, 100), ("long", 0.783, 400)], n=320)
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(data), "--db", db, "-q"]) == 0
    capsys.readouterr()
    assert main(["runs", "--db", db, "--json", "-"]) == 0
    listed = {r["run"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed["short"]["metrics"]["accuracy"] == {"mean": pytest.approx(0.594, abs=0.002),
                                                     "n": 320}  # fmt: skip
    assert list(listed["long"]["metrics"]) == ["correct", "accuracy"]
    assert main(["runs", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "accuracy 0.594 (320)" in out and "accuracy 0.784 (320)" in out
