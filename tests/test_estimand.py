"""The estimand with repeated samples: each sample weighs the same (the mean of its epochs), in
the intervals (t, Hall, Wilson, Newcombe, bootstrap), the verdicts and the schemes — checked
against statsmodels, closed forms on per-sample means, and inspect_ai's own headline."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from click.testing import CliRunner

from calipers.cli.main import cli
from calipers.stats import mean_bootstrap, paired_bootstrap
from calipers.stats.estimate import mean_interval, paired_interval
from calipers.stats.interval_parts import sample_weights

INSPECT = Path(__file__).parent / "fixtures" / "importers" / "inspect"


def unbalanced(rng: np.random.Generator, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Continuous values of n samples with 1, 2 or 4 epochs each (weights exact in binary)."""
    epochs = rng.choice([1, 2, 4], size=n)
    sid = np.repeat(np.arange(n), epochs)
    item = rng.normal(0.6, 0.15, size=n)
    return item[sid] + rng.normal(0, 0.1, size=sid.size), sid


def per_sample_means(x: np.ndarray, sid: np.ndarray) -> np.ndarray:
    return np.asarray(pd.Series(x).groupby(sid).mean().to_numpy())


def test_sample_weights_make_every_sample_weigh_the_same() -> None:
    sid = np.array(["a", "a", "a", "b", "c", "c"])
    w = sample_weights(sid)
    assert w.tolist() == pytest.approx([1 / 3] * 3 + [1.0] + [0.5] * 2)
    x = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    assert float(w @ x / w.sum()) == pytest.approx((1 / 3 + 1 + 0.5) / 3)


@pytest.mark.parametrize("seed", range(5))
def test_weighted_t_interval_is_the_t_interval_of_per_sample_means(seed: int) -> None:
    x, sid = unbalanced(np.random.default_rng(seed))
    got = mean_interval(x, clusters=sid, weights=sample_weights(sid), method="t")
    ref = mean_interval(per_sample_means(x, sid), method="t")
    assert got.estimate == pytest.approx(per_sample_means(x, sid).mean(), abs=1e-12)
    for field in ("estimate", "low", "high", "standard_error"):
        assert getattr(got, field) == pytest.approx(getattr(ref, field), abs=1e-12), field
    assert (got.n_units, got.n_observations) == (40, x.size)


@pytest.mark.parametrize("seed", range(5))
def test_weighted_cluster_robust_se_equals_statsmodels_wls(seed: int) -> None:
    """Clusters coarser than samples (groups of 4): the CR1 standard error of the weighted mean
    is statsmodels' WLS on a constant with cluster-robust covariance (G/(G−1) with K = 1)."""
    rng = np.random.default_rng(100 + seed)
    x, sid = unbalanced(rng, 60)
    groups = sid // 4
    w = sample_weights(sid)
    got = mean_interval(x, clusters=groups, weights=w, method="t")
    fit = sm.WLS(x, np.ones_like(x), weights=w).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert got.estimate == pytest.approx(float(fit.params[0]), abs=1e-12)
    assert got.standard_error == pytest.approx(float(fit.bse[0]), rel=1e-10)
    assert got.df == 14  # G − 1


def test_weighted_paired_t_equals_paired_t_of_per_sample_mean_differences() -> None:
    rng = np.random.default_rng(7)
    c, sid = unbalanced(rng)
    t = c + rng.normal(0.05, 0.1, size=c.size)
    got = paired_interval(c, t, clusters=sid, weights=sample_weights(sid), method="t")
    d = per_sample_means(t - c, sid)
    ref = paired_interval(np.zeros_like(d), d, method="t")
    for field in ("estimate", "low", "high", "standard_error"):
        assert getattr(got, field) == pytest.approx(getattr(ref, field), abs=1e-12), field


def test_weighted_bootstrap_resamples_per_sample_means() -> None:
    """A sample's weighted sum is its mean and its weight 1: the same distribution, draw for
    draw, as the bootstrap of the per-sample means (epochs 1, 2, 4: exact weights)."""
    x, sid = unbalanced(np.random.default_rng(3), 300)
    w = sample_weights(sid)
    got = mean_bootstrap(x, clusters=sid, weights=w, n_resamples=2000, rng=11)
    ref = mean_bootstrap(per_sample_means(x, sid), n_resamples=2000, rng=11)
    assert got.estimate == pytest.approx(ref.estimate, abs=1e-12)
    assert np.allclose(got.distribution, ref.distribution, atol=1e-12)
    paired = paired_bootstrap(np.zeros_like(x), x, clusters=sid, weights=w, rng=11)
    assert paired.estimate == pytest.approx(ref.estimate, abs=1e-12)
    via_interval = mean_interval(x, clusters=sid, weights=w, method="percentile", rng=11)
    assert via_interval.estimate == pytest.approx(ref.estimate, abs=1e-12)


def test_weighted_score_intervals() -> None:
    """0/1 outcomes with unequal epochs: Wilson's estimate is the mean of per-sample rates, its
    effective n = p(1 − p)/Var_CR1 of that mean (within [G, n], before Korn–Graubard); Newcombe's
    estimate the mean of per-sample mean differences."""
    rng = np.random.default_rng(5)
    n = 80
    epochs = rng.choice([1, 2, 4], size=n)
    sid = np.repeat(np.arange(n), epochs)
    p_item = rng.beta(3, 2, size=n)
    c = (rng.random(sid.size) < p_item[sid]).astype(float)
    t = (rng.random(sid.size) < np.clip(p_item[sid] + 0.1, 0, 1)).astype(float)
    w = sample_weights(sid)
    one = mean_interval(c, clusters=sid, weights=w)
    rates = per_sample_means(c, sid)
    assert (one.formula, one.estimate) == ("wilson-cc", pytest.approx(rates.mean(), abs=1e-12))
    g = rates.size
    var_cr1 = float(np.sum((rates - rates.mean()) ** 2)) / (g * (g - 1))
    from scipy import stats

    kg = (stats.norm.ppf(0.975) / stats.t.ppf(0.975, g - 1)) ** 2
    p = rates.mean()
    expected = min(c.size, max(g, p * (1 - p) / var_cr1)) * kg
    assert one.n_effective == pytest.approx(expected, rel=1e-10)
    assert one.low < p < one.high
    pair = paired_interval(c, t, clusters=sid, weights=w)
    assert pair.formula == "newcombe-cc"
    assert pair.estimate == pytest.approx(per_sample_means(t - c, sid).mean(), abs=1e-12)
    assert pair.low < pair.estimate < pair.high


def test_equal_epochs_give_the_unweighted_result_to_the_last_bit() -> None:
    rng = np.random.default_rng(9)
    sid = np.repeat(np.arange(30), 3)
    x = rng.normal(size=sid.size)
    a = mean_interval(x, clusters=sid, weights=sample_weights(sid), method="t")
    b = mean_interval(x, clusters=sid, method="t")
    assert (a.estimate, a.low, a.high) == (b.estimate, b.low, b.high)


def test_weights_are_checked() -> None:
    from calipers.errors import InputError

    with pytest.raises(InputError, match="weights has 2 values for 3"):
        mean_interval([0.1, 0.2, 0.3], weights=[1, 1])
    with pytest.raises(InputError, match="finite and > 0"):
        mean_interval([0.1, 0.2, 0.3], weights=[1, 0, 1])


def score_json(args: list[str]) -> dict:
    result = CliRunner().invoke(cli, ["score", *args, "--json", "-"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_score_equals_inspects_headline_with_unequal_epochs() -> None:
    """errors.eval (inspect_ai, sample 3 errored in epoch 2): calipers' mean is inspect's own
    headline accuracy, the mean of per-sample epoch means (0.6944; the row mean is 0.7059)."""
    name = "errors.eval"
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_import_inspect import header

    log = header(name)
    (entry,) = [e for e in log["results"]["scores"] if "accuracy" in e["metrics"]]
    expected = entry["metrics"]["accuracy"]["value"]
    report = score_json([str(INSPECT / name), "--scheme", "metric", "--metric", entry["name"]])
    (run,) = report["runs"].values()
    assert run["composite"]["mean"] == pytest.approx(expected, abs=1e-12)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_compare_and_score_weigh_samples_equally(tmp_path: Path) -> None:
    """Sample s0 scored in 4 epochs, the rest in 1: the run means, the task means and the paired
    difference are over samples, computed here by pandas."""
    rng = np.random.default_rng(1)
    rows = []
    for run, shift in (("base", 0.0), ("cand", 0.08)):
        for i in range(12):
            for epoch in range(4 if i == 0 else 1):
                value = float(np.clip(0.3 + 0.04 * i + shift + rng.normal(0, 0.05), 0, 1))
                rows.append({"run": run, "task": "t" if i < 6 else "u", "sample_id": f"s{i}",
                             "epoch": epoch, "scores": {"q": value}})  # fmt: skip
    path = write_jsonl(tmp_path / "runs.jsonl", rows)
    frame = pd.DataFrame([{**r, "q": r["scores"]["q"]} for r in rows])
    by_sample = frame.groupby(["run", "task", "sample_id"])["q"].mean().reset_index()
    report = score_json([str(path), "--scheme", "metric", "--metric", "q"])
    for run in ("base", "cand"):
        mine = by_sample[by_sample.run == run]
        body = report["runs"][run]
        assert body["composite"]["mean"] == pytest.approx(mine.q.mean(), abs=1e-12)
        for task, mean in mine.groupby("task").q.mean().items():
            assert body["tasks"][task]["mean"] == pytest.approx(mean, abs=1e-12)
    result = CliRunner().invoke(
        cli,
        [
            "compare",
            str(path),
            "--scheme",
            "metric",
            "--metric",
            "q",
            "--baseline",
            "base",
            "--candidate",
            "cand",
            "--json",
            "-",
        ],
    )
    assert result.exit_code in (0, 1), result.output
    compared = json.loads(result.stdout)
    wide = by_sample.pivot(index="sample_id", columns="run", values="q")
    (pair,) = compared["pairs"]
    assert pair["composite"]["estimate"] == pytest.approx((wide.cand - wide.base).mean(), abs=1e-12)


def test_score_weights_weigh_samples_in_means_and_paired_differences(tmp_path: Path) -> None:
    """score_weights (promptfoo's per-test metric weights) multiply the per-sample weight: the
    run mean is Σ W·mean_s / Σ W; a pair weighs the mean of its two sides' W."""
    rng = np.random.default_rng(4)
    rows, weights = [], {}
    for i in range(10):
        weights[f"s{i}"] = {"base": float(1 + i % 3), "cand": float(1 + i % 3 + (i == 0))}
        for run in ("base", "cand"):
            for epoch in range(2 if i < 3 else 1):
                rows.append({"run": run, "task": "t", "sample_id": f"s{i}", "epoch": epoch,
                             "scores": {"q": float(rng.random())},
                             "score_weights": {"q": weights[f"s{i}"][run]}})  # fmt: skip
    path = write_jsonl(tmp_path / "w.jsonl", rows)
    frame = pd.DataFrame([{**r, "q": r["scores"]["q"]} for r in rows])
    means = frame.groupby(["run", "sample_id"])["q"].mean().unstack(0)
    w = pd.DataFrame(weights).T
    report = score_json([str(path), "--scheme", "metric", "--metric", "q"])
    for run in ("base", "cand"):
        expected = float((means[run] * w[run]).sum() / w[run].sum())
        assert report["runs"][run]["composite"]["mean"] == pytest.approx(expected, abs=1e-12)
    result = CliRunner().invoke(
        cli,
        ["compare", str(path), "--scheme", "metric", "--metric", "q", "--baseline", "base",
         "--candidate", "cand", "--json", "-"],
    )  # fmt: skip
    (pair,) = json.loads(result.stdout)["pairs"]
    pair_w = (w.base + w.cand) / 2
    expected = float(((means.cand - means.base) * pair_w).sum() / pair_w.sum())
    assert pair["composite"]["estimate"] == pytest.approx(expected, abs=1e-12)
