"""Intervals of judge agreement (`calipers.stats.agreement_intervals`) against independent
references: Fisher's interval against `scipy.stats.pearsonr`, α against the `krippendorff`
package, the α bootstrap against `scipy.stats.bootstrap` on the same unit resamples with the
`krippendorff` package as its statistic; the coverage study's section against its figures."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import krippendorff
import numpy as np
import pytest
import scipy.stats as st

from calipers.calibration import agreement as study
from calipers.stats.agreement_intervals import (
    MIN_ALPHA_UNITS,
    krippendorff_interval,
    pearson_interval,
    run_agreement,
)

ROOT = Path(__file__).parent.parent


def _judges(rng: np.random.Generator, n: int, raters: int = 3, noise: float = 0.8) -> np.ndarray:
    z = rng.standard_normal(n)
    return np.clip(np.rint(3 + z + noise * rng.standard_normal((raters, n))), 1, 5)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("level", [0.95, 0.9])
def test_fisher_interval_is_scipys(seed: int, level: float) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    x = rng.standard_normal(n)
    y = 0.6 * x + rng.standard_normal(n)
    found = pearson_interval(x, y, confidence_level=level, method="fisher-z")
    ref = st.pearsonr(x, y)
    ci = ref.confidence_interval(confidence_level=level)
    assert found.estimate == pytest.approx(ref.statistic, abs=1e-12)
    assert found.low == pytest.approx(ci.low, abs=1e-9)
    assert found.high == pytest.approx(ci.high, abs=1e-9)
    assert (found.n_units, found.n_items, found.clustered) == (n, n, False)


def test_robust_interval_never_narrower_and_its_variance_is_the_jackknifes() -> None:
    rng = np.random.default_rng(3)
    n = 3000
    z = np.exp(0.8 * rng.standard_normal(n))  # skewed items: Fisher's variance is too small
    x = np.clip(np.rint(2 + z + 0.5 * rng.standard_normal(n)), 1, 5)
    y = np.clip(np.rint(2 + z + 0.5 * rng.standard_normal(n)), 1, 5)
    robust = pearson_interval(x, y)
    plain = pearson_interval(x, y, method="fisher-z")
    assert robust.method == "fisher-z-robust" and plain.method == "fisher-z"
    assert robust.low is not None and robust.high is not None
    assert plain.low is not None and plain.high is not None
    assert robust.low <= plain.low and robust.high >= plain.high
    # the influence-function variance of atanh(r) against the delete-one jackknife's
    r = float(np.corrcoef(x, y)[0, 1])
    keep = np.ones(n, dtype=bool)
    jack = np.empty(n)
    for i in range(n):
        keep[i] = False
        jack[i] = math.atanh(np.corrcoef(x[keep], y[keep])[0, 1])
        keep[i] = True
    var_jack = (n - 1) / n * float(((jack - jack.mean()) ** 2).sum())
    half = (robust.high - robust.low) / 2  # on tanh's scale; compare on z's
    half_z = (math.atanh(robust.high) - math.atanh(robust.low)) / 2
    t = st.t.ppf(0.975, n - 3)
    var_if = (half_z / t) ** 2 * (n - 3) / n
    assert var_if == pytest.approx(var_jack, rel=0.05)
    assert half > 0 and math.atanh(r) == pytest.approx(
        (math.atanh(robust.high) + math.atanh(robust.low)) / 2, abs=1e-12
    )


def test_fisher_on_clusters_counts_the_clusters() -> None:
    rng = np.random.default_rng(5)
    x, y = _judges(rng, 60, raters=2)
    groups = np.repeat(np.arange(12), 5)
    found = pearson_interval(x, y, clusters=groups, method="fisher-z")
    r = st.pearsonr(x, y).statistic
    half = st.norm.ppf(0.975) / math.sqrt(12 - 3)
    assert found.low == pytest.approx(math.tanh(math.atanh(r) - half), abs=1e-12)
    assert found.high == pytest.approx(math.tanh(math.atanh(r) + half), abs=1e-12)
    assert (found.n_units, found.n_items, found.clustered) == (12, 60, True)


def test_pearson_refusals_keep_the_estimate() -> None:
    same = pearson_interval([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    assert same.estimate == 1.0 and same.low is None and "Fisher" in (same.refusal or "")
    flat = pearson_interval([3, 3, 3, 3, 3], [1, 2, 3, 4, 5])
    assert flat.estimate is None and "same score" in (flat.refusal or "")
    few = pearson_interval([1, 2, 4], [1, 3, 2])
    assert few.estimate is not None and few.low is None and "at least 4" in (few.refusal or "")
    assert few.to_dict()["refusal"] == few.refusal


@pytest.mark.parametrize("level", ["interval", "nominal"])
def test_alpha_is_the_krippendorff_packages(level: str) -> None:
    rng = np.random.default_rng(11)
    data = _judges(rng, 40, raters=4)
    data[0, :5] = np.nan  # missing ratings
    data[1:, 7] = np.nan  # an item rated once: not pairable
    found = krippendorff_interval(data, level=level, n_resamples=200)  # type: ignore[arg-type]
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert found.estimate == pytest.approx(ref, abs=1e-12)
    assert found.n_items == 39


def test_alpha_on_a_tiny_table_by_hand() -> None:
    # two raters, three items: (1, 2), (3, 3), (5, 4); pairable values n = 6, mean 3
    # D_o = Σ 2(x−y)²/(m−1)/n = (2 + 0 + 2)/6; D_e = 2(n Σv² − (Σv)²)/(n(n−1)) = 2(6·64 − 324)/30
    data = np.array([[1.0, 3.0, 5.0], [2.0, 3.0, 4.0]])
    expected = 1 - (4 / 6) / (2 * (6 * 64 - 18**2) / 30)
    found = krippendorff_interval(data, min_units=0, n_resamples=100)
    assert found.estimate == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("clustered", [False, True])
def test_alpha_bootstrap_is_scipys_on_the_same_resamples(method: str, clustered: bool) -> None:
    rng = np.random.default_rng(21)
    n_units, size = 36, 3 if clustered else 1
    data = _judges(rng, n_units * size) + rng.choice([-0.5, 0.0, 0.5], (3, n_units * size))
    groups = np.repeat(np.arange(n_units), size)
    columns = [np.flatnonzero(groups == g) for g in range(n_units)]

    def statistic(units: np.ndarray) -> float:  # the drawn clusters' items, by the package
        items = np.concatenate([columns[int(u)] for u in units])
        return float(krippendorff.alpha(reliability_data=data[:, items],
                                        level_of_measurement="interval"))  # fmt: skip

    found = krippendorff_interval(
        data, clusters=groups if clustered else None, n_resamples=600, method=method,  # type: ignore[arg-type]
        algorithm="index", rng=7,
    )  # fmt: skip
    ref = st.bootstrap(
        (np.arange(n_units),), statistic, vectorized=False, n_resamples=600,
        method="BCa" if method == "bca" else "percentile", rng=np.random.default_rng(7),
    )  # fmt: skip
    assert found.distribution is not None
    np.testing.assert_allclose(
        np.sort(found.distribution), np.sort(ref.bootstrap_distribution), atol=1e-12
    )
    assert found.low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert found.high == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert (found.method, found.seed, found.n_units) == (method, 7, n_units)


def test_counting_draws_give_the_index_draws_distribution() -> None:
    rng = np.random.default_rng(4)
    data = _judges(rng, 300, raters=2)  # at most 25 kinds of unit: `auto` counts
    counted = krippendorff_interval(data, n_resamples=20_000, rng=1)
    indexed = krippendorff_interval(data, n_resamples=20_000, algorithm="index", rng=2)
    assert counted.distribution is not None and indexed.distribution is not None
    assert st.ks_2samp(counted.distribution, indexed.distribution).pvalue > 0.001
    assert counted.low == pytest.approx(indexed.low, abs=0.01)
    assert counted.high == pytest.approx(indexed.high, abs=0.01)


def test_alpha_refusals() -> None:
    rng = np.random.default_rng(8)
    few = krippendorff_interval(_judges(rng, MIN_ALPHA_UNITS - 1))
    assert few.estimate is not None and few.low is None
    assert f"below {MIN_ALPHA_UNITS}" in (few.refusal or "")
    flat = krippendorff_interval(np.full((2, 40), 3.0))
    assert flat.estimate is None and "do not vary" in (flat.refusal or "")
    shown = krippendorff_interval(_judges(rng, MIN_ALPHA_UNITS), n_resamples=500)
    assert shown.low is not None and shown.refusal is None and shown.to_dict()["seed"] is not None


def test_run_agreement_takes_each_items_mean_over_epochs() -> None:
    rng = np.random.default_rng(2)
    n, epochs = 40, 3
    items = np.repeat(np.arange(n), epochs)
    z = rng.standard_normal(n)[items]
    a = np.clip(np.rint(3 + z + rng.standard_normal(items.size)), 1, 5)
    b = np.clip(np.rint(3 + z + rng.standard_normal(items.size)), 1, 5)
    c = np.clip(np.rint(3 + z + rng.standard_normal(items.size)), 1, 5)
    found = run_agreement({"a": a, "b": b}, items, n_resamples=300)
    mean_a, mean_b = a.reshape(n, epochs).mean(axis=1), b.reshape(n, epochs).mean(axis=1)
    assert found.judge_pearson is not None and found.judge_alpha is not None
    assert found.judge_pearson.estimate == pytest.approx(st.pearsonr(mean_a, mean_b).statistic)
    reference = krippendorff.alpha(
        reliability_data=np.vstack([mean_a, mean_b]), level_of_measurement="interval"
    )
    assert found.judge_alpha.estimate == pytest.approx(reference)
    assert found.judge_pearson.n_items == n and found.judge_pearson.low is not None
    three = run_agreement({"a": a, "b": b, "c": c}, items, n_resamples=300).to_dict()
    assert len(three["judge_pairs"]) == 3 and three["judge_pairs"][0]["judges"] == ["a", "b"]
    assert three["judge_pearson"]["low"] is None and "3 pairs" in three["judge_pearson"]["refusal"]
    groups = items // 10  # 4 groups of 10 items
    clustered = run_agreement({"a": a, "b": b}, items, units=groups, unit="group")
    assert clustered.judge_pearson is not None and clustered.judge_pearson.n_units == 4
    assert clustered.judge_alpha is not None and clustered.judge_alpha.low is None  # 4 < 30


def test_layered_scheme_reports_the_intervals() -> None:
    from calipers import api

    rng = np.random.default_rng(9)
    rows = []
    for i in range(40):
        z = rng.standard_normal()
        scores = np.clip(np.rint(3 + z + 0.7 * rng.standard_normal(2)), 1, 5)
        rows.append({
            "run": "r", "task": "t", "sample_id": f"s{i}", "epoch": 0,
            "judgments": [{"judge": j, "dimension": None, "score": float(s), "scale_min": 1,
                           "scale_max": 5} for j, s in zip(("a", "b"), scores, strict=True)],
        })  # fmt: skip
    report = api.score(rows, "layered").to_dict()
    run = report["runs"]["r"]
    body = run["agreement"]
    assert body["judge_pearson"]["estimate"] == run["judge_pearson"]
    assert body["judge_krippendorff_alpha"]["estimate"] == run["judge_krippendorff_alpha"]
    assert body["judge_pearson"]["method"] == "fisher-z-robust"
    assert body["judge_krippendorff_alpha"]["method"] == "bca"
    assert body["judge_krippendorff_alpha"]["seed"] == report["parameters"]["seed"]


def test_layered_comparison_prints_the_agreement_its_json_holds(tmp_path: Path) -> None:
    """`calipers compare --scheme layered` in the terminal shows each run's judge agreement
    with its interval, the figures of its --json (as `calipers score` shows them)."""
    from calipers.cli.main import main

    rng = np.random.default_rng(11)
    rows = []
    for run, shift in (("base", 0.0), ("new", 0.4)):
        for i in range(40):
            z = rng.standard_normal() + shift
            scores = np.clip(np.rint(3 + z + 0.7 * rng.standard_normal(2)), 1, 5)
            rows.append({
                "run": run, "task": "t", "sample_id": f"s{i}", "epoch": 0,
                "judgments": [{"judge": j, "dimension": None, "score": float(s)}
                              for j, s in zip(("a", "b"), scores, strict=True)],
            })  # fmt: skip
    data = tmp_path / "judged.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["compare", str(data), "--baseline", "base", "--candidate", "new", "--scheme",
            "layered", "--gate", "none"]  # fmt: skip
    out = tmp_path / "compare.json"
    assert main([*args, "--json", str(out), "-q"]) == 0
    variants = json.loads(out.read_text(encoding="utf-8"))["variants"]
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        assert main(args) == 0
    text = " ".join(shown.getvalue().split())
    assert "judge agreement (95% intervals" in text
    for run in ("base", "new"):
        r = variants[run]["agreement"]["judge_pearson"]
        assert f"{run}: judges r {r['estimate']:.2f} [{r['low']:.2f}, {r['high']:.2f}]" in text


def test_the_study_section_is_rendered_from_its_figures(tmp_path: Path) -> None:
    figures = ROOT / "benchmarks" / "results" / "agreement_calibration.json"
    body = json.loads(figures.read_text(encoding="utf-8"))
    assert body["min_alpha_units"] == MIN_ALPHA_UNITS and body["reps"] >= 1000
    page = (ROOT / "docs" / "calibration.md").read_text(encoding="utf-8")
    assert study.section(body, study.DEFAULT_JSON) in page, (
        "docs/calibration.md is out of date: python -m calipers.calibration.agreement "
        "--from-json benchmarks/results/agreement_calibration.json --doc docs/calibration.md"
    )
    assert "**FAIL**" not in study.section(body)
    # the study runs end to end (a few reps of one cell)
    out = study.run(reps=20, resamples=200, seed=1, only="normal/high/n20")
    assert out["cells"][0]["pearson"]["coverage"] is not None


def test_the_distinct_unit_sums_are_numpys_unique_rows() -> None:
    # `_distinct_rows` stands for np.unique(rows, axis=0, return_counts=True) (its order decides
    # the counting bootstrap's draws): the same rows, order and counts — ties, NaN and ±inf too
    from calipers.stats.agreement_intervals import _distinct_rows

    rng = np.random.default_rng(7)
    for trial in range(400):
        n, k = int(rng.integers(0, 80)), int(rng.integers(1, 6))
        rows = rng.integers(0, 3, size=(n, k)).astype(float)
        if trial % 3 == 1:
            rows[rng.random((n, k)) < 0.1] = np.nan
        if trial % 3 == 2:
            rows = rng.choice([0.0, 1.5, -2.0, np.inf, -np.inf], size=(n, k))
        expected, counts = np.unique(rows, axis=0, return_counts=True)
        got, got_counts = _distinct_rows(rows)
        assert np.array_equal(got, expected, equal_nan=True), trial
        assert np.array_equal(got_counts, counts) and got_counts.dtype == counts.dtype
