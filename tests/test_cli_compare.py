"""`calipers compare` and `calipers score` for the comparable schemes, end to end through the CLI:
exit codes for each gate, data problems, and reports that validate against the published schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from conftest import validate_schema
from layered_data import row


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def published(kind: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["schema", "--report", kind]) == 0
    schema: dict[str, Any] = json.loads(capsys.readouterr().out)
    return schema


def two_runs(shift: int) -> list[dict[str, Any]]:
    """Control passes 3 of 5 fact checks; treatment passes 3 + shift on every other sample."""
    rows = []
    for i in range(80):  # identical runs on 80 units bound the difference below min_effect
        for e in range(2):
            rows.append(row("base", i, epoch=e, fact=(4, 5), judge=4.0, scores={"acc": 0.5}))
            passed = 4 + shift if i % 2 else 4
            acc = 0.5 + 0.1 * shift * (i % 2)
            rows.append(row("new", i, epoch=e, fact=(passed, 5), judge=4.0, scores={"acc": acc}))
    return rows


def compare_args(path: Path) -> list[str]:
    return ["compare", str(path), "--scheme", "layered", "--control", "base", "--treatment", "new"]


@pytest.mark.parametrize(
    ("shift", "gate", "code", "verdict"),
    [
        (1, "no-regress", 0, "PROGRESS"),
        (1, "ship", 0, "PROGRESS"),
        (-1, "no-regress", 3, "REGRESS"),
        (-1, "none", 0, "REGRESS"),
        (0, "no-regress", 0, "NOISE"),
        (0, "ship", 3, "NOISE"),
    ],
)
def test_exit_code_follows_the_gate(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    shift: int,
    gate: str,
    code: int,
    verdict: str,
) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", two_runs(shift))
    out = tmp_path / "report.json"
    args = [*compare_args(path), "--gate", gate, "--json", str(out), "--n-resamples", "2000"]
    assert main(args) == code
    report = json.loads(out.read_text())
    assert report["verdict"] == verdict
    validate_schema(report, published("compare", capsys))
    assert report["seed"] == 20_240_917 and report["pairs"][0]["n_pairs"] == 80


def test_json_to_stdout_and_terminal_verdict_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", two_runs(1))
    assert main([*compare_args(path), "--json", "-", "--seed", "7"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["seed"] == 7 and report["parameters"]["seed"] == 7
    assert main([*compare_args(path), "--n-resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PROGRESS composite +0.200 [+0.1")


def test_metric_comparison_from_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", two_runs(1))
    db = tmp_path / "s.duckdb"
    assert main(["import", str(path), "--db", str(db)]) == 0
    out = tmp_path / "m.json"
    args = ["compare", "--db", str(db), "--scheme", "metric", "--metric", "acc"]
    args += ["--control", "base", "--treatment", "new", "--json", str(out)]
    assert main(args) == 0
    report = json.loads(out.read_text())
    assert report["pairs"][0]["composite"]["estimate"] == pytest.approx(0.05)
    assert report["pairs"][0]["layers"] == {}
    validate_schema(report, published("compare", capsys))


def test_runs_that_share_no_sample_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [row("base", i, judge=4.0) for i in range(5)]
    rows += [row("new", i, judge=4.0, task="other") for i in range(5)]
    path = write_jsonl(tmp_path / "runs.jsonl", rows)
    assert main(compare_args(path)) == 2
    assert "share no sample" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--treatment", "ghost"], "run(s) not found in"),
        (["--weights", "fact=two"], "not a number"),
        (["--confidence", "1.5"], "1.5"),
    ],
)
def test_input_problems_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], words: str
) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", two_runs(1))
    assert main([*compare_args(path), *extra]) == 1
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_score_reports_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", two_runs(1))
    for scheme, extra in (("layered", []), ("metric", ["--metric", "acc"])):
        out = tmp_path / f"{scheme}.json"
        args = ["score", str(path), "--scheme", scheme, *extra, "--json", str(out)]
        assert main([*args, "--n-resamples", "500"]) == 0
        report = json.loads(out.read_text())
        validate_schema(report, published(scheme, capsys))
        assert set(report["runs"]) == {"base", "new"}
