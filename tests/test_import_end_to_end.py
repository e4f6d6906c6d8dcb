"""Other tools' real outputs through the whole engine: imported (format detected by content),
scored and compared, with the numbers checked against what the tools themselves wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calipers.cli.main import main

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
PROMPTFOO = FIXTURES / "promptfoo" / "results.json"
LM_EVAL = FIXTURES / "lm_eval"
INSPECT = FIXTURES / "inspect"

# promptfoo's assertion types that are calipers fact-layer checks (contains, equals, regex, …)
PROMPTFOO_FACT_TYPES = {
    "contains", "icontains", "not-contains", "not-icontains", "contains-all", "icontains-all",
    "contains-any", "icontains-any", "equals", "not-equals", "regex", "is-json", "similar",
}  # fmt: skip


def report(args: list[str], tmp_path: Path, capsys: Any, *, code: int = 0) -> dict[str, Any]:
    out = tmp_path / "report.json"
    assert main([*args, "--json", str(out), "-q"]) == code, capsys.readouterr().err
    return dict(json.loads(out.read_text()))


def test_promptfoo_scored_layered_with_its_assertions_as_the_fact_layer(
    tmp_path: Path, capsys: Any
) -> None:
    """Fact layer per run = mean over tests of 1 + 4 · passed weight / weight of its fact-type
    assertions, computed here from promptfoo's raw componentResults (a provider error: every
    assertion counts as failed, as calipers run records it)."""
    raw = json.loads(PROMPTFOO.read_text())
    per_run: dict[str, list[float]] = {}
    for result in raw["results"]["results"]:
        run = f"{result['provider'].get('label') or result['provider']['id']} / "
        run += result["prompt"]["label"]
        components = (result.get("gradingResult") or {}).get("componentResults") or []
        total = passed = 0.0
        for assertion in result["testCase"].get("assert", []):
            weight = float(assertion.get("weight", 1))
            if assertion["type"] not in PROMPTFOO_FACT_TYPES or weight == 0:
                continue
            outcome = next((c for c in components if c.get("assertion") == assertion), None)
            total += weight
            passed += weight if outcome is not None and outcome["pass"] else 0.0
        if total:
            per_run.setdefault(run, []).append(1 + 4 * passed / total)
    scored = report(["score", str(PROMPTFOO), "--scheme", "layered"], tmp_path, capsys)
    assert set(scored["runs"]) == set(per_run)
    for run, values in per_run.items():
        fact = scored["runs"][run]["components"]["fact"]
        assert fact["n"] == len(values)
        assert fact["mean"] == pytest.approx(np.mean(values))
    # and the two providers compared on the same tests, assertions as their fact layer
    compared = report(
        ["compare", str(PROMPTFOO), "--scheme", "layered", "--control", "echo / terse",
         "--treatment", "lookup / terse", "--gate", "none"], tmp_path, capsys,
    )  # fmt: skip
    (pair,) = compared["pairs"]
    assert pair["n_pairs"] == 6
    fact = pair["layers"]["fact"]
    # 6 paired tests: fewer than the 6 units a t interval needs have the fact layer on both sides;
    # the layer lies on 1–5, so the distribution-free betting interval holds at any n
    # (docs/statistics.md) and is the one given.
    assert fact["estimate"] is not None and fact["low"] is not None
    assert fact["interval"]["formula"] == "hedged-capital" and fact["refusal"] is None
    assert -4.0 <= fact["low"] <= fact["estimate"] <= fact["high"] <= 4.0


def test_two_lm_eval_runs_compared_with_the_metric_scheme(tmp_path: Path, capsys: Any) -> None:
    """Imported into a store by content (no --format), compared on acc: the paired difference
    is the difference of lm-eval's own accuracies, with an interval."""
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(LM_EVAL / "run-a"), str(LM_EVAL / "run-b"), "--db", db]) == 0
    acc = {}
    for run in ("run-a", "run-b"):
        (results,) = (LM_EVAL / run).glob("*/results_*.json")
        acc[run] = json.loads(results.read_text())["results"]["tiny_mc"]["acc,none"]
    compared = report(
        ["compare", "--db", db, "--scheme", "metric", "--metric", "acc", "--control", "dummy-a",
         "--treatment", "dummy-b", "--gate", "none"], tmp_path, capsys,
    )  # fmt: skip
    (pair,) = compared["pairs"]
    assert pair["n_pairs"] == 8  # tiny_mc's 8 documents; tiny_gen has no acc
    assert pair["composite"]["estimate"] == pytest.approx(acc["run-b"] - acc["run-a"])
    assert pair["composite"]["low"] <= pair["composite"]["estimate"] <= pair["composite"]["high"]
    assert compared["verdict"] in {"PROGRESS", "REGRESS", "NOISE", "CAUTIOUS", "UNDERPOWERED"}


def test_two_inspect_runs_compared_with_the_metric_scheme(tmp_path: Path, capsys: Any) -> None:
    """Two inspect_ai logs (6 samples × 3 epochs each), read directly: epochs pair as clusters,
    and the difference is that of inspect's own accuracies (equal epochs: mean of sample means)."""
    from test_import_inspect import header  # reads the log's header.json (zstd or deflate)

    accuracy = {}
    for name in ("run-a", "run-b"):
        (match,) = [s for s in header(f"{name}.eval")["results"]["scores"] if s["name"] == "match"]
        accuracy[name] = match["metrics"]["accuracy"]["value"]
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(INSPECT / "run-a.eval"), str(INSPECT / "run-b.eval"),
                 "--db", db]) == 0  # fmt: skip
    compared = report(
        ["compare", "--db", db, "--scheme", "metric", "--metric", "match",
         "--control", "mockllm/model-a", "--treatment", "mockllm/model-b", "--gate", "none"],
        tmp_path, capsys,
    )  # fmt: skip
    (pair,) = compared["pairs"]
    assert pair["n_pairs"] == 6
    assert pair["composite"]["estimate"] == pytest.approx(accuracy["run-b"] - accuracy["run-a"])
    assert pair["composite"]["low"] < pair["composite"]["high"]


@pytest.mark.parametrize(
    ("fmt", "path", "expected"),
    [
        ("promptfoo", LM_EVAL / "run-a", "promptfoo's results file"),
        ("lm-eval", PROMPTFOO, "not an lm-eval results JSON"),
        ("kelvin", PROMPTFOO, "not a directory"),
    ],
)
def test_the_wrong_format_named_is_exit_1_naming_the_file(
    tmp_path: Path, capsys: Any, fmt: str, path: Path, expected: str
) -> None:
    db = tmp_path / "s.duckdb"
    code = main(["import", str(path), "--format", fmt, "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert str(path) in err and expected in err
    assert "Traceback" not in err
    assert not db.exists() or main(["runs", "--db", str(db), "--json"]) == 0
