"""`calipers rank --cost --margin Δ` (issue 40, item 3): the cheapest run within Δ of the best by
multiple comparisons with the best, and confident dominance — checked against independent
references: a plain numpy loop over an enumerated bootstrap for the MCB bounds, scipy's paired t
and exact binomial tests and statsmodels' Holm for the dominance labels, labels on constructed
cases, the refusal of a missing cost, hostile names, and the docs' examples."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from calipers.cli.main import main
from calipers.stats.cost_selection import (
    bootstrap_means,
    holm,
    mcb_lower_bounds,
    mcnemar_greater,
    paired_t_greater,
    select_within_margin,
)
from conftest import validate_schema

# ------------------------------------------------------------------ the MCB bounds by hand


def _mcb_by_loop(draws: np.ndarray, point: np.ndarray, alpha: float, floor: float) -> np.ndarray:
    """Hsu's constrained MCB lower bounds, written out with loops: se of each difference from
    the draws, per candidate best b the (1 − α) quantile of max_j ((θ̂_b − θ̂_j) − (θ*_b − θ*_j))
    / se_bj, d the largest, L_i = min(0, min_j θ̂_i − θ̂_j − d·se_ij)."""
    k = point.size
    se = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            if i != j:
                se[i, j] = max(float(np.std(draws[:, i] - draws[:, j], ddof=1)), floor)
    quantiles = []
    for b in range(k):
        stat = []
        for r in range(draws.shape[0]):
            stat.append(max(((point[b] - point[j]) - (draws[r, b] - draws[r, j])) / se[b, j]
                            for j in range(k) if j != b))  # fmt: skip
        quantiles.append(np.quantile(stat, 1 - alpha))
    d = max(quantiles)
    return np.array([
        min(0.0, min(point[i] - point[j] - d * se[i, j] for j in range(k) if j != i))
        for i in range(k)
    ])  # fmt: skip


def test_mcb_bounds_on_an_enumerated_bootstrap_match_a_plain_loop() -> None:
    # 3 runs on 6 items; every one of the 6^6 = 46,656 equally likely resamples enumerated
    x = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 1, 0], [1, 1, 0], [1, 0, 1]], float)
    draws = np.array([x[list(idx)].mean(axis=0)
                      for idx in itertools.product(range(6), repeat=6)])  # fmt: skip
    point = x.mean(axis=0)
    lower, d, _, _ = mcb_lower_bounds(draws, point, alpha=0.05, floor=1 / 6)
    expected = _mcb_by_loop(draws[::7], point, 0.05, 1 / 6)  # the loop is slow: every 7th
    lower_sub, _, _, _ = mcb_lower_bounds(draws[::7], point, alpha=0.05, floor=1 / 6)
    np.testing.assert_allclose(lower_sub, expected, atol=1e-12)
    assert lower[0] == 0.0 or lower[0] > -1  # the best: min(0, ·)
    assert np.all(lower <= 0) and d > 0


def test_bootstrap_draws_are_the_plain_resampling_loop_with_the_same_seed() -> None:
    rng = np.random.default_rng(5)
    sums = rng.normal(size=(40, 3))  # continuous: no repeated units, the index draws
    sizes = np.ones(40)
    made = bootstrap_means(sums, sizes, n_resamples=200, rng=np.random.default_rng(9))
    loop = np.random.default_rng(9)
    expected = np.array([sums[loop.integers(0, 40, size=40)].mean(axis=0) for _ in range(200)])
    np.testing.assert_allclose(made, expected, atol=1e-12)


def test_repeated_units_draw_the_same_distribution() -> None:
    # 0/1 items of 3 runs: at most 8 patterns, drawn as multinomial counts — the same law as
    # resampling items: compare the moments with a plain loop over many resamples
    rng = np.random.default_rng(2)
    x = (rng.random((400, 3)) < [0.7, 0.6, 0.5]).astype(float)
    made = bootstrap_means(x, np.ones(400), n_resamples=20_000, rng=np.random.default_rng(1))
    loop = np.random.default_rng(4)
    plain = np.array([x[loop.integers(0, 400, 400)].mean(axis=0) for _ in range(4_000)])
    np.testing.assert_allclose(made.mean(axis=0), x.mean(axis=0), atol=1e-3)
    np.testing.assert_allclose(made.std(axis=0), plain.std(axis=0), rtol=0.05)
    np.testing.assert_allclose(np.corrcoef(made.T), np.corrcoef(plain.T), atol=0.04)


def test_select_uses_the_bounds_and_records_its_seed() -> None:
    rng = np.random.default_rng(3)
    x = (rng.random((300, 3)) < [0.8, 0.79, 0.6]).astype(float)
    cost = np.tile([3.0, 1.0, 0.2], (300, 1))
    made = select_within_margin(x, cost, runs=["a", "b", "c"], margin=0.05, rng=11,
                                n_resamples=500)  # fmt: skip
    again = bootstrap_means(x, np.ones(300), n_resamples=500, rng=np.random.default_rng(11))
    lower, d, _, _ = mcb_lower_bounds(again, x.mean(axis=0), alpha=0.05, floor=1 / 300)
    np.testing.assert_allclose(made.lower, lower)
    assert made.seed == 11 and made.critical_value == pytest.approx(d)
    for i, run in enumerate(made.runs):  # acceptable exactly when the bound is above −Δ
        assert (made.labels[i] in ("acceptable", "cheapest acceptable")) == (
            made.lower[i] > -0.05 and not made.dominated_by[i]
        ), run


# ------------------------------------------------------------------ dominance tests vs scipy


def test_paired_t_is_scipys_ttest_rel_one_sided() -> None:
    rng = np.random.default_rng(8)
    x = rng.lognormal(size=(50, 3)) * [1.0, 1.2, 0.7]
    p, t = paired_t_greater(x, np.ones(50))
    for i, j in itertools.permutations(range(3), 2):
        ref = stats.ttest_rel(x[:, j], x[:, i], alternative="greater")
        assert p[i, j] == pytest.approx(ref.pvalue, rel=1e-9)
        assert t[i, j] == pytest.approx(ref.statistic, rel=1e-9)


def test_exact_mcnemar_is_scipys_binomial_test() -> None:
    rng = np.random.default_rng(4)
    x = (rng.random((60, 3)) < [0.5, 0.7, 0.55]).astype(float)
    p, b = mcnemar_greater(x)
    for i, j in itertools.permutations(range(3), 2):
        wins = int(np.sum((x[:, j] == 1) & (x[:, i] == 0)))
        losses = int(np.sum((x[:, j] == 0) & (x[:, i] == 1)))
        ref = stats.binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue
        assert b[i, j] == wins and p[i, j] == pytest.approx(ref, rel=1e-9)


def test_holm_is_statsmodels_holm() -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(6)
    p = rng.random((5, 5)) ** 4
    made = holm(p, 0.05)
    off = ~np.eye(5, dtype=bool)
    ref, *_ = multipletests(p[off], alpha=0.05, method="holm")
    assert list(made[off]) == list(ref) and not made[~off].any()


def test_dominance_needs_both_one_sided_tests() -> None:
    rng = np.random.default_rng(1)
    n = 2_000
    base = (rng.random(n) < 0.8).astype(float)
    flip = rng.random(n) < 0.25
    worse = np.where(flip, 0.0, base)  # accuracy ~0.6: every solved item also solved by base
    x = np.column_stack([base, worse, base])
    cost = np.column_stack([np.full(n, 1.0), np.full(n, 2.0), np.full(n, 0.5)])
    cost *= rng.lognormal(0, 0.3, size=(n, 3))
    made = select_within_margin(x, cost, runs=["a", "b", "c"], margin=0.03, rng=1,
                                n_resamples=500)  # fmt: skip
    assert made.accuracy_test == "exact McNemar"
    # b is beaten on accuracy and on cost by a and by c; a and c solve the same items, so
    # neither dominates the other (c is cheaper, not more accurate)
    assert set(made.dominated_by[1]) == {"a", "c"}
    assert made.dominated_by[0] == () and made.dominated_by[2] == ()
    assert made.labels == ("acceptable", "dominated", "cheapest acceptable")


# ------------------------------------------------------------------ labels on constructed cases


def _runs(n: int = 1_000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(12)
    a = (rng.random(n) < 0.8).astype(float)
    b = a.copy()
    b[np.flatnonzero(a == 1)[: n // 100]] = 0.0  # 1 point below a, on the same items
    c = (rng.random(n) < 0.5).astype(float)
    d = np.where(rng.random(n) < 0.25, 0.0, c)  # below c
    x = np.column_stack([a, b, c, d])
    cost = np.tile([1.0, 0.5, 0.1, 2.0], (n, 1)) * rng.lognormal(0, 0.2, size=(n, 4))
    return x, cost


def test_labels_on_a_constructed_case() -> None:
    x, cost = _runs()
    made = select_within_margin(x, cost, runs=["a", "b", "c", "d"], margin=0.03, rng=2,
                                n_resamples=1_000)  # fmt: skip
    labels = dict(zip(made.runs, made.labels, strict=True))
    assert labels == {"a": "acceptable", "b": "cheapest acceptable",
                      "c": "not shown within margin", "d": "dominated"}  # fmt: skip
    assert made.chosen == "b" and set(made.dominated_by[3]) >= {"a", "b", "c"}
    # the same runs with a margin smaller than b's shortfall: only a is shown
    tight = select_within_margin(x, cost, runs=["a", "b", "c", "d"], margin=0.002, rng=2,
                                 n_resamples=1_000)  # fmt: skip
    assert tight.chosen in (None, "a") and tight.labels[1] == "not shown within margin"


def test_refusals_of_bad_input() -> None:
    from calipers.errors import InputError

    x, cost = _runs(100)
    with pytest.raises(InputError, match="missing cost or outcome is not 0"):
        bad = cost.copy()
        bad[3, 1] = np.nan
        select_within_margin(x, bad, runs=list("abcd"), margin=0.03)
    with pytest.raises(InputError, match="margin"):
        select_within_margin(x, cost, runs=list("abcd"), margin=0.0)


# ------------------------------------------------------------------ the command


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def leaderboard(n: int = 300, names: tuple[str, ...] = ("big", "mid", "small"),
                missing: int = 0, tokens: bool = False) -> list[dict[str, Any]]:  # fmt: skip
    rng = np.random.default_rng(21)
    accuracy, price = (0.8, 0.79, 0.55), (1.0, 0.3, 0.05)
    rows = []
    for i in range(n):
        z = rng.standard_normal()
        for k, run in enumerate(names):
            p = 1 / (1 + np.exp(-(np.log(accuracy[k] / (1 - accuracy[k])) + z)))
            row = {"run": run, "task": "qa", "sample_id": f"s{i}",
                   "correct": bool(rng.random() < p), "grader_cost_usd": 0.01}  # fmt: skip
            if not (k == 1 and i < missing):
                row["cost_usd"] = float(price[k] * rng.lognormal(0, 0.5))
            if tokens:  # the system's tokens and seconds, and a judge's tokens never counted
                row.update(tokens_in=100 * (k + 1), tokens_out=int(rng.integers(10, 50)),
                           latency_s=0.5 * (k + 1), grader_tokens_in=10_000)  # fmt: skip
            rows.append(row)
    return rows


def published(kind: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["schema", "--report", kind]) == 0
    schema: dict[str, Any] = json.loads(capsys.readouterr().out)
    return schema


def test_rank_cost_writes_every_output_and_its_schema_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_schema_declares_every_key import undeclared

    path = write_jsonl(tmp_path / "runs.jsonl", leaderboard(tokens=True))
    out = tmp_path / "r.json"
    code = main(["rank", str(path), "--cost", "--margin", "0.1", "--n-resamples", "1000",
                 "--seed", "3", "--json", str(out), "--html", str(tmp_path / "r.html"),
                 "--markdown", str(tmp_path / "r.md")])  # fmt: skip
    assert code == 0
    report = json.loads(out.read_text())
    schema = published("cost-rank", capsys)
    validate_schema(report, schema)
    assert undeclared(report, schema, schema) == []
    assert report["seed"] == 3 and report["n_resamples"] == 1000
    by = {r["run"]: r for r in report["runs"]}
    assert by["small"]["label"] == "not shown within margin"
    assert by["big"]["cost_per_solved"]["grader_cost"] == pytest.approx(3.0)  # apart
    assert by["big"]["cost_per_solved"]["interval"]["method"] == "bootstrap-t"
    assert by["big"]["cost_per_solved"]["interval"]["seed"] == 3  # the ranking's, recorded
    # tokens and seconds per solved item beside the cost; the judge's 10,000 tokens not in them
    usage = by["big"]["cost_per_solved"]["usage"]
    assert set(usage) == {"tokens", "seconds"} and usage["tokens"]["per_sample"] < 200
    assert usage["seconds"]["per_sample"] == pytest.approx(0.5)
    assert usage["tokens"]["low"] < usage["tokens"]["estimate"] < usage["tokens"]["high"]
    assert "tokens per solved item [95%]" in (tmp_path / "r.md").read_text()
    assert report["chosen"] in ("mid", "big")
    assert "Cheapest acceptable" in (tmp_path / "r.md").read_text()
    assert "calipers rank --cost" in (tmp_path / "r.html").read_text()
    # the same seed gives the same report
    assert main(["rank", str(path), "--cost", "--margin", "0.1", "--n-resamples", "1000",
                 "--seed", "3", "--json", str(tmp_path / "again.json")]) == 0  # fmt: skip
    assert json.loads((tmp_path / "again.json").read_text()) == report


def test_a_missing_cost_refuses_the_ranking_never_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", leaderboard(missing=4))
    code = main(["rank", str(path), "--cost", "--margin", "0.05", "--json", str(tmp_path / "x")])
    assert code == 1 and not (tmp_path / "x").exists()
    err = capsys.readouterr().err
    assert "4 scored observation(s) of 'mid' have no cost_usd" in err
    assert "not 0" in err


def test_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", leaderboard(40))
    assert main(["rank", str(path), "--cost"]) == 1
    assert "--margin" in capsys.readouterr().err
    assert main(["rank", str(path), "--margin", "0.1"]) == 1
    assert "apply with --cost" in capsys.readouterr().err
    assert main(["rank", str(path), "--cost", "--margin", "0.1", "--pairwise"]) == 1
    few = write_jsonl(tmp_path / "few.jsonl", leaderboard(20))
    assert main(["rank", str(few), "--cost", "--margin", "0.1"]) == 1
    assert "fewer than 30" in capsys.readouterr().err


def test_hostile_run_names_are_escaped_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ("[red]big", "<script>x</script>", "**small** | `x`")
    path = write_jsonl(tmp_path / "runs.jsonl", leaderboard(200, names=names))
    code = main(["rank", str(path), "--cost", "--margin", "0.05", "--n-resamples", "500",
                 "--html", str(tmp_path / "r.html"),
                 "--markdown", str(tmp_path / "r.md")])  # fmt: skip
    assert code == 0
    shown = capsys.readouterr().out
    assert "[red]big" in shown  # the markup shown, not applied
    page = (tmp_path / "r.html").read_text()
    assert "<script>x</script>" not in page and "&lt;script&gt;" in page
    summary = (tmp_path / "r.md").read_text()
    assert "<script>" not in summary and "\\*\\*small\\*\\* \\| \\`x\\`" in summary


# ------------------------------------------------------------------ the study and the docs


def test_the_selection_study_runs_and_counts_wrong_choices() -> None:
    from calipers.calibration.cost_selection import SelectionCell, run_selection_cell

    cell = SelectionCell("at-margin", (0.7, 0.67, 0.67), (10.0, 1.0, 0.1), 200)
    made = run_selection_cell(cell, reps=40, seed=1, number=0)
    assert made["truth"]["wrong_runs"] == ["r1", "r2"]  # exactly Δ worse counts as wrong
    assert made["naive_wrong"] > made["mcb_wrong"]
    assert 0.0 <= made["mcb_none"] <= 1.0


def test_docs_show_what_the_code_prints() -> None:
    import doc_examples

    assert doc_examples.example_block("cost", "rank-example") == doc_examples.rendered(
        "cost", "rank-example"
    )
    assert doc_examples.example_block("cost", "selection") == doc_examples.rendered(
        "cost", "selection"
    )
    from calipers.calibration import studies

    page = (doc_examples.ROOT / "docs" / "calibration.md").read_text()
    section = studies.selection_section(studies._load(studies.SELECTION_JSON))
    assert section.startswith("\n### The cheapest acceptable run") and section in page
