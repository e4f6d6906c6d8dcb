"""Repeats: pass@k and pass^k (exact unbiasedness by enumeration, Chen et al.'s reference
formula), the variance split (statsmodels' ANOVA), the epochs a width needs (the analytic optimum,
recovered from simulated data within ±1), and their place in `score` and `compare`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from click.testing import CliRunner
from scipy import stats
from scipy.special import comb

from calipers.cli.main import cli
from calipers.errors import InputError
from calipers.stats.repeats import (
    VarianceSplit,
    pass_at_k,
    pass_hat_k,
    summarize_repeats,
    variance_split,
)


def chen_pass_at_k(n: int, c: int, k: int) -> float:
    """The numerically stable estimator of Chen et al. (2021), as their paper writes it."""
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 20])
def test_pass_at_k_equals_chen_et_al_and_the_binomial_ratio(n: int) -> None:
    for k in range(1, n + 1):
        c = np.arange(n + 1)
        got = pass_at_k(c, np.full(c.size, n), k)
        assert got == pytest.approx([chen_pass_at_k(n, int(ci), k) for ci in c], abs=1e-12)
        assert got == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)
        assert pass_hat_k(c, np.full(c.size, n), k) == pytest.approx(
            comb(c, k) / comb(n, k), abs=1e-12
        )


@pytest.mark.parametrize("n", [2, 3, 5, 8])
@pytest.mark.parametrize("p", [0.02, 0.3, 0.7, 0.98])
def test_the_estimators_are_exactly_unbiased(n: int, p: float) -> None:
    """E over c ~ Binomial(n, p) of the estimate is 1 − (1 − p)^k (pass@k) and p^k (pass^k)."""
    c = np.arange(n + 1)
    pmf = stats.binom.pmf(c, n, p)
    for k in range(1, n + 1):
        tries = np.full(c.size, n)
        assert pmf @ pass_at_k(c, tries, k) == pytest.approx(1 - (1 - p) ** k, abs=1e-12)
        assert pmf @ pass_hat_k(c, tries, k) == pytest.approx(p**k, abs=1e-12)


def test_bad_counts_are_refused() -> None:
    with pytest.raises(InputError, match="at least 3 tries"):
        pass_at_k([1, 2], [2, 3], 3)
    with pytest.raises(InputError, match="between 0 and the number of tries"):
        pass_hat_k([4], [3], 1)
    with pytest.raises(InputError, match="pass/fail"):
        summarize_repeats([0.5, 1.0], [0, 0])


def test_variance_split_is_the_one_way_anova() -> None:
    rng = np.random.default_rng(2)
    tries = rng.integers(2, 6, size=30)
    item = np.repeat(np.arange(30), tries)
    x = rng.normal(0, 1.0, 30)[item] + rng.normal(0, 0.5, item.size)
    split = variance_split(x, item)
    assert split is not None
    frame = pd.DataFrame({"x": x, "item": item})
    table = sm.stats.anova_lm(smf.ols("x ~ C(item)", frame).fit())
    msb, msw = table["mean_sq"].iloc[0], table["mean_sq"].iloc[1]
    n0 = (item.size - np.sum(tries**2) / item.size) / 29
    assert split.within == pytest.approx(msw, rel=1e-10)
    assert split.between == pytest.approx((msb - msw) / n0, rel=1e-10)
    assert split.mean_tries == pytest.approx(tries.mean())


def test_epochs_for_a_width_is_the_analytic_optimum() -> None:
    split = VarianceSplit(between=0.01, within=0.2, n_items=100, mean_tries=3)
    z = stats.norm.ppf(0.975)
    for h in (0.05, 0.04, 0.03):
        k = split.epochs_for(h, z)
        assert k is not None
        exact = 0.2 / (100 * (h / z) ** 2 - 0.01)
        assert k == math.ceil(exact)
        assert split.half_width(k, z) <= h < (split.half_width(k - 1, z) if k > 1 else math.inf)
    assert split.epochs_for(0.015, z) is None  # the items' spread alone is wider: more items


def simulated_splits(
    rng: np.random.Generator, between: float, within: float, n: int, tries: int, sims: int
) -> list[VarianceSplit]:
    item = np.repeat(np.arange(n), tries)
    out = []
    for _ in range(sims):
        x = rng.normal(0, math.sqrt(between), n)[item]
        split = variance_split(x + rng.normal(0, math.sqrt(within), item.size), item)
        assert split is not None
        out.append(split)
    return out


def test_recommended_epochs_from_data_are_within_one_of_the_optimum() -> None:
    """Simulated evals (200 items, 5 tries, normal scores with known components): the epochs
    recommended for ±0.025 from the estimated split vs the optimum from the true one."""
    rng = np.random.default_rng(7)
    z = stats.norm.ppf(0.975)
    optimum = VarianceSplit(0.004, 0.15, 200, 5).epochs_for(0.025, z)
    assert optimum == 6  # 0.15 / (200·(0.025/1.96)² − 0.004) = 5.26
    found = [s.epochs_for(0.025, z) for s in simulated_splits(rng, 0.004, 0.15, 200, 5, 400)]
    within_one = sum(k is not None and abs(k - optimum) <= 1 for k in found) / len(found)
    assert within_one >= 0.9  # measured 0.968 over 500


@pytest.mark.parametrize(
    ("between", "within", "n", "h", "tries"),
    [(0.004, 0.15, 200, 0.025, 3), (0.02, 0.1, 100, 0.04, 3), (0.01, 0.2, 300, 0.02, 3)],
)
def test_the_recommendations_range_covers_the_optimum(
    between: float, within: float, n: int, h: float, tries: int
) -> None:
    """Close to the floor the items set (z·√(between/n)) the point recommendation is noisy
    (within ±1 in 36–89% of these designs); its 90% range holds the optimum ≥ 90% of the time."""
    rng = np.random.default_rng(8)
    z = stats.norm.ppf(0.975)
    optimum = VarianceSplit(between, within, n, tries).epochs_for(h, z)
    assert optimum is not None
    covered = 0
    splits = simulated_splits(rng, between, within, n, tries, 200)
    for split in splits:
        low, high = split.epochs_range(h, z)
        covered += low is not None and low <= optimum and (high is None or optimum <= high)
    assert covered / len(splits) >= 0.9


def test_flips_and_flaky_samples() -> None:
    outcomes = [1, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 1]
    items = ["a"] * 3 + ["b"] * 3 + ["c"] * 3 + ["d"] * 3
    found = summarize_repeats(outcomes, items, names=["a", "b", "c", "d"])
    # P(two tries disagree) = 2c(n − c)/(n(n − 1)): a 0, b 2/3, c 2/3, d 2/3
    assert found.flip_rate == pytest.approx((0 + 2 / 3 * 3) / 4)
    assert found.flaky == ["b", "c", "d"]
    assert [e.k for e in found.estimates["pass@k"]] == [1, 2, 3]
    assert found.at("pass@k", 1).estimate == pytest.approx(np.mean(outcomes))  # type: ignore[union-attr]
    assert found.at("pass^k", 3).estimate == pytest.approx(0.25)  # type: ignore[union-attr]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def runs_with_epochs(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(11)
    p_item = rng.beta(3, 1.5, size=40)
    rows = []
    for run, lift in (("base", 0.0), ("cand", 0.08)):
        for i, p in enumerate(p_item):
            for epoch in range(4):
                passed = bool(rng.random() < min(1.0, p + lift))
                rows.append({"run": run, "task": "t" if i < 20 else "u", "sample_id": f"s{i}",
                             "epoch": epoch, "correct": passed})  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["correct"] = frame["correct"].astype(float)
    return write(tmp_path / "epochs.jsonl", rows), frame


def test_score_reports_repeats_per_run_and_task(tmp_path: Path) -> None:
    path, frame = runs_with_epochs(tmp_path)
    result = CliRunner().invoke(
        cli, ["score", str(path), "--scheme", "metric", "--metric", "correct", "--json", "-"]
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)["runs"]["base"]
    repeats = body["repeats"]
    base = frame[frame.run == "base"]
    c = base.groupby("sample_id").correct.sum().to_numpy()
    assert [e["k"] for e in repeats["pass@k"]] == [1, 2, 3, 4]
    at4 = repeats["pass^k"][3]
    assert at4["estimate"] == pytest.approx(np.mean(comb(c, 4) / comb(4, 4)), abs=1e-12)
    assert repeats["pass@k"][0]["estimate"] == pytest.approx(body["composite"]["mean"])
    assert repeats["pass@k"][0]["low"] == pytest.approx(body["composite"]["low"])
    assert repeats["n_flaky"] == int(np.sum((c > 0) & (c < 4)))
    task_u = repeats["tasks"]["u"]["pass@k"][1]
    cu = base[base.task == "u"].groupby("sample_id").correct.sum().to_numpy()
    assert task_u["estimate"] == pytest.approx(np.mean(1 - comb(4 - cu, 2) / comb(4, 2)))
    assert all(0 <= e["low"] <= e["estimate"] <= e["high"] <= 1 for e in repeats["pass^k"])
    assert repeats["flaky"][0].startswith(("t/", "u/"))
    text = (
        CliRunner()
        .invoke(cli, ["score", str(path), "--scheme", "metric", "--metric", "correct"])
        .output
    )
    assert "pass^4" in text and "flaky" in text


def test_compare_reports_the_pass_hat_k_difference(tmp_path: Path) -> None:
    path, frame = runs_with_epochs(tmp_path)
    result = CliRunner().invoke(
        cli,
        ["compare", str(path), "--scheme", "metric", "--metric", "correct", "--baseline",
         "base", "--candidate", "cand", "--json", "-"],
    )  # fmt: skip
    (pair,) = json.loads(result.stdout)["pairs"]
    counts = frame.groupby(["run", "sample_id"]).correct.sum().unstack(0)
    expected = np.mean(comb(counts.cand, 4) - comb(counts.base, 4))
    assert pair["repeats"]["k"] == 4
    assert pair["repeats"]["estimate"] == pytest.approx(expected, abs=1e-12)
    assert pair["repeats"]["low"] < pair["repeats"]["estimate"] < pair["repeats"]["high"]


def test_scores_that_are_not_pass_fail_get_the_variance_split_only(tmp_path: Path) -> None:
    rows = [{"run": "r", "task": "t", "sample_id": f"s{i}", "epoch": e,
             "scores": {"q": 0.1 * i + 0.01 * e}} for i in range(8) for e in range(3)]  # fmt: skip
    path = write(tmp_path / "q.jsonl", rows)
    result = CliRunner().invoke(
        cli, ["score", str(path), "--scheme", "metric", "--metric", "q", "--json", "-"]
    )
    repeats = json.loads(result.stdout)["runs"]["r"]["repeats"]
    assert "pass@k" not in repeats and repeats["variance"]["within"] > 0
    assert "need 0/1 outcomes" in repeats["notes"][0]


def test_judge_repeats_give_the_judges_own_noise(tmp_path: Path) -> None:
    """A judge asked 3 times on each output: the pooled variance between its repeats (per
    sample and judge) is reported, with its degrees of freedom, also without epochs."""
    rng = np.random.default_rng(5)
    rows, deviations = [], []
    for i in range(30):
        scores = np.clip(np.round(3 + rng.normal(0, 0.8, 3)), 1, 5)
        deviations.append(float(np.sum((scores - scores.mean()) ** 2)))
        rows.append({"run": "r", "task": "t", "sample_id": f"s{i}",
                     "assertions": [{"type": "contains", "name": "f", "passed": True}],
                     "judgments": [{"judge": "j", "repeat": k, "score": float(x)}
                                   for k, x in enumerate(scores)]})  # fmt: skip
    path = write(tmp_path / "judged.jsonl", rows)
    result = CliRunner().invoke(cli, ["score", str(path), "--scheme", "layered", "--json", "-"])
    assert result.exit_code == 0, result.output
    judged = json.loads(result.stdout)["runs"]["r"]["repeats"]["judge_repeats"]
    assert judged["df"] == 60
    assert judged["variance"] == pytest.approx(sum(deviations) / 60, abs=1e-9)


def test_per_task_figures_equal_each_tasks_rows_taken_alone() -> None:
    # run_repeats groups the rows by task with two sorts; the reference masks each task's rows
    # and summarizes them on their own (task codes with a gap, unequal tries, clustered items)
    from calipers.verdicts.repeats import run_repeats

    rng = np.random.default_rng(7)
    n_items = 600
    item_task = rng.choice([0, 1, 3, 4], size=n_items, p=[0.4, 0.3, 0.2, 0.1])
    tries = rng.integers(2, 5, size=n_items)
    sid = np.repeat(np.arange(n_items), tries)
    rng.shuffle(sid)  # rows in no order
    values = (rng.random(sid.size) < rng.beta(2, 2, n_items)[sid]).astype(float)
    units = np.repeat(np.arange(n_items // 3), 3)[sid]  # three items a cluster, within a task
    units = units * 10 + item_task[sid]
    tasks = ["a", "b", "unused", "c", "d"]
    found = run_repeats(
        values, sid.astype(np.int64), item_task[sid].astype(np.int64), tasks,
        units=units.astype(np.int64), names=None, confidence_level=0.95, z=1.96,
    )  # fmt: skip
    assert found is not None and set(found.tasks) == {"a", "b", "c", "d"}
    ks = [e.k for e in found.summary.estimates["pass@k"]]  # type: ignore[union-attr]
    for code, name in enumerate(tasks):
        rows = item_task[sid] == code
        if not rows.any():
            continue
        item_codes = np.unique(sid[rows], return_inverse=True)[1].ravel()
        first = np.unique(item_codes, return_index=True)[1]
        alone = summarize_repeats(values[rows], item_codes, ks=ks, item_clusters=units[rows][first])
        for kind in ("pass@k", "pass^k"):
            assert [e.to_dict() for e in found.tasks[name][kind]] == [
                e.to_dict() for e in alone.estimates[kind]
            ]
