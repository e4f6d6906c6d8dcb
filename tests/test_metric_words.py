"""A plain metric speaks without layer words or Python literals, and `compare --gate` says how the
gate went in the terminal, the JSON and on the page, passed or failed."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from calipers.cli.main import main

PYTHON_WORDS = re.compile(r"\b(None|True|False)\b")


def _data(path: Path) -> Path:
    rng = random.Random(3)
    rows = []
    for run, p in (("base", 0.6), ("cand", 0.61)):
        for i in range(200):
            ok = rng.random() < p
            rows.append({"run": run, "task": f"t{i % 2}", "sample_id": f"s{i}",
                         "scores": {"accuracy": float(ok)}})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _compare(tmp_path: Path, *extra: str) -> tuple[int, Path, Path]:
    data = _data(tmp_path / "d.jsonl")
    html, report = tmp_path / "c.html", tmp_path / "c.json"
    code = main([
        "compare", str(data), "--scheme", "metric", "--metric", "accuracy", "--baseline", "base",
        "--candidate", "cand", "--flips", "0", "--html", str(html), "--json", str(report), *extra,
    ])  # fmt: skip
    return code, html, report


def test_metric_noise_speaks_without_layers_judge_badges_or_python_literals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, html, report_path = _compare(tmp_path, "--min-effect", "0.5")  # NOISE at n = 200
    assert code == 0
    out = capsys.readouterr().out
    report = json.loads(report_path.read_text())
    assert report["verdict"] == "NOISE"
    assert "contains 0; the data would have detected" in report["reason"]
    assert "layer" not in report["reason"] and "layer" not in out.lower().replace(
        str(tmp_path).lower(), ""
    )
    assert set(report["pairs"][0]["badges"]) == {"difference_significant", "saturated"}
    assert "judges agree" not in out and "human aligned" not in out
    page = html.read_text()
    assert "layer gate" not in page and "policy gates" not in page
    assert "<dd>metric: the six verdicts</dd>" in page
    assert not PYTHON_WORDS.search(re.sub(r"<script.*?</script>|<style.*?</style>", "", page,
                                          flags=re.S))  # fmt: skip
    assert not PYTHON_WORDS.search(out)


def test_a_passing_gate_is_said_in_the_terminal_and_on_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, html, report_path = _compare(tmp_path)  # --gate no-regress by default
    assert code == 0
    assert "gate no-regress: passed (fails on a REGRESS verdict)" in capsys.readouterr().out
    assert json.loads(report_path.read_text())["gate"] == {
        "name": "no-regress", "passed": True, "rule": "fails on a REGRESS verdict",
        "failure": None,
    }  # fmt: skip
    assert 'id="gate"' in html.read_text() and "gate no-regress: passed" in html.read_text()


def test_a_failing_gate_is_said_with_its_rule_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, html, _ = _compare(tmp_path, "--gate", "ship")
    assert code == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "gate ship: failed, exit 3 (passes only on PROGRESS): the verdict is" in out
    page = html.read_text()
    assert "gate ship: failed (exit 3)" in page and "passes only on PROGRESS" in page


def test_gate_none_shows_no_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, html, report_path = _compare(tmp_path, "--gate", "none")
    assert code == 0
    assert "gate" not in json.loads(report_path.read_text())
    assert 'id="gate"' not in html.read_text()


def test_compare_without_scheme_lists_the_schemes_that_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _data(tmp_path / "d.jsonl")
    assert main(["compare", str(data), "--baseline", "base", "--candidate", "cand"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "compare needs --scheme" in err and "layered, metric, objective" in err


def test_layered_on_metric_data_points_to_the_metric_scheme(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _data(tmp_path / "d.jsonl")
    argv = [
        "compare",
        str(data),
        "--scheme",
        "layered",
        "--baseline",
        "base",
        "--candidate",
        "cand",
    ]
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "has no sample with a score" in err and "--scheme metric with --metric NAME" in err


def test_plan_help_shows_one_percent_sign(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--help"]) == 0
    out = capsys.readouterr().out
    assert "2% of the scale" in " ".join(out.split()) and "%%" not in out
