"""Decisions with a margin, the paired tests beside the interval, and per-task corrections —
against statsmodels and scipy, and the public reference case (1,000 paired pass/fail items, 55
that regress, 45 that improve)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.descriptivestats import sign_test as sm_sign_test
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_paired

import calipers
from calipers.cli.main import main
from calipers.errors import InputError
from calipers.stats.interval_parts import Interval
from calipers.stats.paired_tests import (
    clustered_standard_error,
    mcnemar_exact,
    paired_t,
    sign_test,
)
from calipers.verdicts.by_task import adjust_p
from calipers.verdicts.difference import Difference
from calipers.verdicts.margin import decide_margin, parse_margin
from conftest import MakeSamples


def reference_rows() -> list[dict[str, Any]]:
    rows = []
    cells = [(True, False, 55), (False, True, 45), (True, True, 800), (False, False, 100)]
    i = 0
    for a, b, count in cells:
        for _ in range(count):
            rows.append({"run": "A", "task": "t", "sample_id": f"s{i}", "correct": a})
            rows.append({"run": "B", "task": "t", "sample_id": f"s{i}", "correct": b})
            i += 1
    return rows


@pytest.mark.slow  # the full comparison of a 1,000-pair reference case
@pytest.mark.extended
def test_reference_case_is_non_inferior_at_margin_005(make_samples: MakeSamples) -> None:
    result = calipers.compare(
        make_samples(reference_rows()), "metric", metric="correct", baseline="A",
        candidates=["B"], margin=0.05,
    )  # fmt: skip
    pair = result.pairs[0]
    assert pair.margin is not None and pair.margin.decision == "non-inferior"
    d = pair.comparison.composite
    assert d.estimate == pytest.approx(-0.01)
    assert d.low == pytest.approx(-0.030, abs=0.001) and d.high == pytest.approx(0.010, abs=0.001)
    tests = pair.comparison.tests
    assert tests["mcnemar"]["p_less"] == pytest.approx(
        stats.binomtest(45, 100, alternative="less").pvalue, abs=1e-12
    )
    assert tests["mcnemar"]["p_less"] == pytest.approx(0.184, abs=0.001)
    # a tighter margin than the worst plausible drop: the data cannot tell
    tight = calipers.compare(
        make_samples(reference_rows()), "metric", metric="correct", baseline="A",
        candidates=["B"], margin=0.02,
    )  # fmt: skip
    assert tight.pairs[0].margin is not None
    assert tight.pairs[0].margin.decision == "inconclusive"


@pytest.mark.parametrize(("b", "c"), [(45, 55), (0, 0), (0, 7), (12, 3), (200, 170)])
def test_exact_mcnemar_is_statsmodels(b: int, c: int) -> None:
    result = mcnemar_exact(b, c)
    ref = mcnemar(np.array([[100, c], [b, 50]]), exact=True)
    assert result.statistic == pytest.approx(ref.statistic, abs=1e-10)
    assert result.p_value == pytest.approx(ref.pvalue, abs=1e-10)
    if b + c:
        assert result.p_greater == pytest.approx(
            stats.binomtest(b, b + c, alternative="greater").pvalue, abs=1e-10
        )
        assert result.p_less == pytest.approx(
            stats.binomtest(b, b + c, alternative="less").pvalue, abs=1e-10
        )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sign_test_is_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = np.round(rng.normal(0.2, 1.0, 30), 1)
    d[:4] = 0.0
    result = sign_test(d)
    m, p = sm_sign_test(d, 0.0)
    assert result.statistic == pytest.approx(m, abs=1e-10)
    assert result.p_value == pytest.approx(p, abs=1e-10)
    nonzero = d[d != 0]
    k = int(np.sum(nonzero > 0))
    assert result.p_greater == pytest.approx(
        stats.binomtest(k, nonzero.size, alternative="greater").pvalue, abs=1e-10
    )


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_paired_t_is_scipys(alternative: str) -> None:
    rng = np.random.default_rng(3)
    c = rng.normal(0.5, 0.2, 25)
    t = c + rng.normal(0.05, 0.1, 25)
    result = paired_t(t - c)
    ref = stats.ttest_rel(t, c, alternative=alternative)
    assert result is not None
    assert result.statistic == pytest.approx(ref.statistic, abs=1e-10)
    p = {"two-sided": result.p_value, "greater": result.p_greater, "less": result.p_less}
    assert p[alternative] == pytest.approx(ref.pvalue, abs=1e-10)


def test_clustered_standard_error_is_statsmodels_cluster_robust_cr0() -> None:
    rng = np.random.default_rng(4)
    groups = np.repeat(np.arange(40), rng.integers(1, 6, 40))
    effect = rng.normal(0, 0.3, 40)[groups]
    d = 0.1 + effect + rng.normal(0, 0.5, groups.size)
    result = clustered_standard_error(d, groups)
    fit = sm.OLS(d, np.ones(d.size)).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False}
    )
    assert result is not None
    assert result.detail["standard_error"] == pytest.approx(fit.bse[0], abs=1e-10)
    assert result.statistic == pytest.approx(fit.tvalues[0], abs=1e-10)
    assert result.p_value == pytest.approx(stats.norm.sf(abs(fit.tvalues[0])) * 2, abs=1e-10)


@pytest.mark.parametrize(("method", "ref"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjusted_p_values_are_multipletests(method: str, ref: str) -> None:
    p = [0.001, 0.04, 0.03, 0.2, 0.012, 0.9, 0.04]
    assert adjust_p(p, method) == pytest.approx(list(multipletests(p, method=ref)[1]), abs=1e-12)
    assert adjust_p(p, "none") == p
    with pytest.raises(InputError, match="unknown adjustment"):
        adjust_p(p, "bonferonni")


def test_tost_is_statsmodels_ttost_paired(make_samples: MakeSamples) -> None:
    rng = np.random.default_rng(5)
    c = rng.normal(3.0, 0.5, 40)
    t = c + rng.normal(0.02, 0.2, 40)
    rows = [
        {"run": run, "task": "t", "sample_id": f"s{i}", "scores": {"m": float(v)}}
        for run, values in (("A", c), ("B", t)) for i, v in enumerate(values)
    ]  # fmt: skip
    result = calipers.compare(
        make_samples(rows), "metric", metric="m", baseline="A", candidates=["B"],
        margin=0.15, equivalence=True, confidence_level=0.90, interval="t",
    )  # fmt: skip  # an unbounded metric: t by name (auto gives none without bounds)
    held = result.pairs[0].margin
    assert held is not None and held.tost is not None
    p, lower, upper = ttost_paired(t, c, -0.15, 0.15)
    assert held.tost["p_value"] == pytest.approx(p, abs=1e-10)
    assert held.tost["p_lower"] == pytest.approx(lower[1], abs=1e-10)
    assert held.tost["p_upper"] == pytest.approx(upper[1], abs=1e-10)
    # equivalence at the 90% interval is TOST at α = 0.05
    assert (held.decision == "equivalent") == (p <= 0.05)


def _difference(low: float, high: float, significant: bool = False) -> Difference:
    interval = Interval((low + high) / 2, low, high, "t", "t", 0.95, (high - low) / 3.92, 30.0,
                        31, 31, 31.0)  # fmt: skip
    return Difference(interval.estimate, 31, interval, significant=significant)


@pytest.mark.parametrize(
    ("low", "high", "significant", "equivalence", "expected"),
    [
        (0.01, 0.05, True, False, "superior"),
        (0.01, 0.05, False, False, "non-inferior"),  # the exact test disagrees: not superior
        (-0.03, 0.01, False, False, "non-inferior"),
        (-0.03, 0.01, False, True, "equivalent"),
        (-0.03, 0.08, False, True, "non-inferior"),  # too wide on the upside to be equivalent
        (-0.07, 0.01, False, False, "inconclusive"),
        (-0.12, -0.06, True, False, "inferior"),
        (-0.04, -0.01, True, False, "non-inferior"),  # a real drop, but within the margin
    ],
)
def test_margin_decision_rules(
    low: float, high: float, significant: bool, equivalence: bool, expected: str
) -> None:
    decision = decide_margin(
        _difference(low, high, significant), 0.05, given="0.05", equivalence=equivalence,
        confidence_level=0.95,
    )  # fmt: skip
    assert decision.decision == expected


def test_margin_parsing() -> None:
    assert parse_margin("0.05").on_scale(1.0) == 0.05
    assert parse_margin("2%").on_scale(4.0) == pytest.approx(0.08)
    for bad in ("-0.1", "0", "abc", "150%", "nan"):
        with pytest.raises(InputError):
            parse_margin(bad)


def test_no_interval_is_inconclusive() -> None:
    d = Difference(1.0, 3, None, refusal="3 independent units: a t interval needs at least 6")
    decision = decide_margin(d, 0.1, given="0.1", equivalence=False, confidence_level=0.95)
    assert decision.decision == "inconclusive" and "needs at least 6" in decision.reason


def _task_rows() -> list[dict[str, Any]]:
    """Four tasks of 60 samples: one where B is much better, one much worse, two unchanged."""
    rng = np.random.default_rng(7)
    rows = []
    for task, shift in (("up", 0.35), ("down", -0.35), ("same1", 0.0), ("same2", 0.0)):
        for i in range(60):
            p = rng.uniform(0.3, 0.7)
            a = bool(rng.random() < p)
            b = bool(rng.random() < min(max(p + shift, 0.0), 1.0))
            rows.append({"run": "A", "task": task, "sample_id": f"{task}{i}", "correct": a})
            rows.append({"run": "B", "task": task, "sample_id": f"{task}{i}", "correct": b})
    return rows


@pytest.mark.parametrize(("adjust", "ref"), [("holm", "holm"), ("bh", "fdr_bh"), ("none", None)])
def test_per_task_p_values_are_adjusted_together(
    make_samples: MakeSamples, adjust: str, ref: str | None
) -> None:
    result = calipers.compare(
        make_samples(_task_rows()), "metric", metric="correct", baseline="A", candidates=["B"],
        adjust=adjust,
    )  # fmt: skip
    pair = result.pairs[0]
    tasks = pair.comparison.tasks
    assert pair.comparison.task_adjust == adjust
    raw = [tasks[t]["p_value"] for t in tasks]
    # paired 0/1, one observation per sample: each task's p is its exact McNemar test
    for name, t in tasks.items():
        rows = [r for r in _task_rows() if r["task"] == name]
        a = [r["correct"] for r in rows if r["run"] == "A"]
        b = [r["correct"] for r in rows if r["run"] == "B"]
        only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
        only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
        table = np.array([[0, only_a], [only_b, 0]])
        assert t["test"] == "mcnemar"
        assert t["p_value"] == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-10)
    expected = raw if ref is None else list(multipletests(raw, method=ref)[1])
    assert [tasks[t]["p_adjusted"] for t in tasks] == pytest.approx(expected, abs=1e-12)
    assert tasks["up"]["moved"] == "up" and tasks["down"]["moved"] == "down"
    assert tasks["same1"]["moved"] is None and tasks["same2"]["moved"] is None
    for t in tasks.values():
        assert (t["moved"] is not None) == (t["p_adjusted"] <= pair.alpha)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cli_margin_gate_json_and_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write(tmp_path / "ref.jsonl", reference_rows())
    base = ["compare", str(data), "--scheme", "metric", "--metric", "correct",
            "--baseline", "A", "--candidate", "B"]  # fmt: skip
    out = tmp_path / "out.json"
    code = main([*base, "--margin", "0.05", "--gate", "non-inferior", "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    pair = report["pairs"][0]
    assert pair["decision"] == "non-inferior" and pair["margin"]["margin"] == 0.05
    assert pair["tests"]["mcnemar"]["p_less"] == pytest.approx(0.184, abs=0.001)
    assert "non-inferior" in capsys.readouterr().out
    assert main([*base, "--margin", "2%", "--gate", "non-inferior", "-q"]) == 3  # inconclusive
    assert main([*base, "--gate", "non-inferior", "-q"]) == 1  # no margin: an input error
    assert "needs a margin" in capsys.readouterr().err
    assert main([*base, "--margin", "-1", "-q"]) == 1


def test_cli_by_task_lists_moved_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _write(tmp_path / "tasks.jsonl", _task_rows())
    base = ["compare", str(data), "--scheme", "metric", "--metric", "correct",
            "--baseline", "A", "--candidate", "B"]  # fmt: skip
    assert main([*base, "--gate", "none", "--adjust", "bh"]) == 0
    text = capsys.readouterr().out
    assert "2 of 4 tasks moved (Benjamini–Hochberg" in text
    # every task's row; ▲ ▼ mark the two that moved
    assert re.search(r"│up\s*│[^\n]*▲", text) and re.search(r"│down\s*│[^\n]*▼", text)
    out = tmp_path / "none.json"
    assert main([*base, "--gate", "none", "--by", "none", "--json", str(out), "-q"]) == 0
    assert json.loads(out.read_text())["pairs"][0]["task_adjust"] is None
