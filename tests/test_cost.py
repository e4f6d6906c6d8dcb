"""Cost per solved item, the cost per additional solved item and the net benefit
(`calipers.stats.cost`, `calipers.verdicts.cost`, `calipers compare --value-per-solved`): each
interval against an independent reference, the unbounded cases said as such, missing cost never
0, the graders' cost apart, the worth-it gate's exit codes, and the calibration study's code."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from calipers.cli.main import main
from calipers.stats.cost import (
    COST_RESAMPLES,
    LOG_DELTA_UNITS,
    cost_per_additional,
    cost_per_solved,
    net_benefit,
    probability_positive,
    unit_moments,
)
from calipers.stats.interval_parts import NoInterval
from conftest import validate_schema


def lognormal_run(n: int, p: float, sigma: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    solved = (rng.random(n) < p).astype(float)
    cost = np.exp(-3 + sigma * rng.standard_normal(n))
    return cost, solved


# ------------------------------------------------------------------ references


def test_ratio_interval_agrees_with_scipy_bootstrap_at_large_n() -> None:
    """The interval of mean cost / mean solved against scipy's BCa bootstrap of the same ratio on
    the same data (8,000 items, lognormal costs, log sd 0.8): within 3% — the log-delta interval
    (light tails, ≥ 1,000 units) and, on the same data, the bootstrap-t it stands in for."""
    cost, solved = lognormal_run(8000, 0.4, 0.8, seed=1)
    ours = cost_per_solved(cost, solved)
    assert ours.method == "log-delta"
    resampled = cost_per_solved(cost[:999], solved[:999])  # below LOG_DELTA_UNITS
    assert resampled.method == "bootstrap-t"
    ref = stats.bootstrap(
        (cost, solved),
        lambda c, s, axis=-1: c.mean(axis=axis) / s.mean(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=4000,
        method="BCa",
        random_state=np.random.default_rng(7),
    ).confidence_interval
    assert ours.estimate == pytest.approx(cost.mean() / solved.mean(), rel=1e-12)
    assert ours.low == pytest.approx(ref.low, rel=0.03)
    assert ours.high == pytest.approx(ref.high, rel=0.03)


def test_many_light_tailed_units_get_the_log_delta_interval_and_heavy_ones_the_bootstrap() -> None:
    """From LOG_DELTA_UNITS units, light-tailed values get R̂·exp(±t_{G−1}·se_log) (the closed
    form, written out here) with no resampling; heavy-tailed values (sd of the logs ≥ 1.25) keep
    the bootstrap-t at any size."""
    cost, solved = lognormal_run(LOG_DELTA_UNITS, 0.5, 1.0, seed=3)
    light = cost_per_solved(cost, solved)
    assert light.method == "log-delta" and light.n_resamples is None
    r = cost.mean() / solved.mean()
    g = cost.size
    se = math.sqrt(g / (g - 1) * np.sum((cost / cost.sum() - solved / solved.sum()) ** 2))
    q = stats.t.ppf(0.975, g - 1)
    assert light.low == pytest.approx(r * math.exp(-q * se), rel=1e-12)
    assert light.high == pytest.approx(r * math.exp(q * se), rel=1e-12)
    heavy_cost, heavy_solved = lognormal_run(5000, 0.5, 1.6, seed=4)
    heavy = cost_per_solved(heavy_cost, heavy_solved)
    assert heavy.method == "bootstrap-t" and heavy.n_resamples == COST_RESAMPLES


def t_star(c: np.ndarray, a: np.ndarray, log_r_hat: float, axis: int = -1) -> np.ndarray:
    """(log R* − log R̂)/se* written out for resamples along `axis`: R* = Σc*/Σa*,
    se*² = G/(G − 1)·Σ(c*/Σc* − a*/Σa*)²."""
    g = c.shape[axis]
    total_c, total_a = c.sum(axis, keepdims=True), a.sum(axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(g / (g - 1) * np.sum((c / total_c - a / total_a) ** 2, axis=axis))
        ratio = np.squeeze(total_c, axis) / np.squeeze(total_a, axis)
        return np.asarray((np.log(ratio) - log_r_hat) / se)


def test_bootstrap_t_is_scipys_bootstrap_on_the_same_resamples() -> None:
    """scipy.stats.bootstrap, given the same Generator, draws the same resamples of the units
    (rng.integers(0, G, (B, G))); on them the t* written out here give the same quantiles and
    interval as calipers' counted, vectorised draws — with clusters and epochs, on the units'
    sums."""
    rng = np.random.default_rng(21)
    n_samples, epochs = 240, 2
    sample = np.repeat(np.arange(n_samples), epochs)
    group = sample // 3
    cost = np.exp(-3 + 1.5 * rng.standard_normal(sample.size))
    solved = (rng.random(sample.size) < 0.7).astype(float)
    weights = np.full(sample.size, 1 / epochs)
    made = cost_per_solved(cost, solved, clusters=group, weights=weights, rng=99,
                           n_resamples=3000)  # fmt: skip
    c_g = np.bincount(group, weights=cost * weights)
    a_g = np.bincount(group, weights=solved * weights)
    log_r = math.log(c_g.sum() / a_g.sum())
    ref = stats.bootstrap((c_g, a_g), lambda c, a, axis=-1: t_star(c, a, log_r, axis),
                          paired=True, vectorized=True, n_resamples=3000, method="percentile",
                          rng=np.random.default_rng(99))  # fmt: skip
    dist = ref.bootstrap_distribution
    q_low = float(np.quantile(dist, 0.025, method="lower"))
    q_high = float(np.quantile(dist, 0.975, method="higher"))
    assert made.method == "bootstrap-t" and made.seed == 99 and made.n_resamples == 3000
    assert made.t_quantiles == pytest.approx((q_low, q_high), rel=1e-9)
    g = c_g.size
    se = math.sqrt(g / (g - 1) * float(np.sum((c_g / c_g.sum() - a_g / a_g.sum()) ** 2)))
    estimate = c_g.sum() / a_g.sum()
    assert made.low == pytest.approx(estimate * math.exp(-q_high * se), rel=1e-9)
    assert made.high == pytest.approx(estimate * math.exp(-q_low * se), rel=1e-9)
    body = made.to_dict()
    assert body["seed"] == 99 and body["n_resamples"] == 3000 and body["method"] == "bootstrap-t"


def test_bootstrap_t_on_four_units_is_the_enumerated_bootstrap() -> None:
    """Four units: the bootstrap's exact distribution is the 4⁴ = 256 equally likely ordered
    draws, enumerated here; with 200,000 resamples calipers' t* quantiles are its exact
    quantiles (the 7th and 250th of the 256 sorted t*: the cumulative shares 6/256 and 249/256
    lie more than 4 Monte Carlo standard errors from 2.5% and 97.5%). A draw with nothing
    solved has t* = +∞."""
    import itertools

    from calipers.stats.cost import log_ratio_t_quantiles

    c = np.array([0.02, 0.05, 0.11, 0.40])
    a = np.array([1.0, 0.0, 1.0, 1.0])
    draws = np.array(list(itertools.product(range(4), repeat=4)))
    exact = t_star(c[draws], a[draws], math.log(c.sum() / a.sum()))
    exact = np.sort(np.where(np.isnan(exact), np.inf, exact))
    q = log_ratio_t_quantiles(c[:, None], a[:, None], confidence_level=0.95,
                              n_resamples=200_000, seed=5)[0]  # fmt: skip
    assert q == pytest.approx((exact[6], exact[249]), rel=1e-12)


def test_figures_on_the_same_units_share_one_draw() -> None:
    """`per_solved_intervals` draws once per number of units: each figure is what its own call
    with the same seed gives (a leaderboard's runs, a run's tasks)."""
    from calipers.stats.cost import per_solved_intervals

    runs = [lognormal_run(400, p, 1.2, seed=s) for s, p in ((1, 0.3), (2, 0.6), (3, 0.9))]
    every = [*runs, lognormal_run(150, 0.5, 1.0, seed=4)]
    batched = per_solved_intervals([unit_moments(c, s) for c, s in every], rng=17)
    for (cost, solved), made in zip(every, batched, strict=True):
        alone = cost_per_solved(cost, solved, rng=17)
        assert made.method == alone.method == "bootstrap-t"
        assert made.low == pytest.approx(alone.low, rel=1e-12)
        assert made.high == pytest.approx(alone.high, rel=1e-12)
        assert made.seed == alone.seed == 17


def test_log_scale_se_is_the_hand_formula_with_clusters_and_epochs() -> None:
    """Epochs enter as their sample's means (weights 1/epochs), groups as units: the interval is
    exp(log R − t*·se), se² = G/(G−1)·Σ(c_g/Σc − a_g/Σa)² computed here by hand, t* the
    bootstrap-t quantiles (checked against scipy above)."""
    rng = np.random.default_rng(3)
    n_samples, epochs = 120, 3
    sample = np.repeat(np.arange(n_samples), epochs)
    group = sample // 4
    cost = np.exp(-2 + rng.standard_normal(sample.size))
    solved = (rng.random(sample.size) < 0.6).astype(float)
    weights = np.full(sample.size, 1 / epochs)
    made = cost_per_solved(cost, solved, clusters=group, weights=weights)
    per_sample_c = cost.reshape(n_samples, epochs).mean(axis=1)
    per_sample_a = solved.reshape(n_samples, epochs).mean(axis=1)
    c_g = per_sample_c.reshape(-1, 4).sum(axis=1)
    a_g = per_sample_a.reshape(-1, 4).sum(axis=1)
    g = c_g.size
    estimate = c_g.sum() / a_g.sum()
    u = c_g / c_g.sum() - a_g / a_g.sum()
    se = math.sqrt(g / (g - 1) * float(u @ u))
    assert made.t_quantiles is not None
    q_low, q_high = made.t_quantiles
    assert made.estimate == pytest.approx(estimate, rel=1e-12)
    assert made.standard_error_log == pytest.approx(se, rel=1e-9)
    assert made.low == pytest.approx(estimate * math.exp(-q_high * se), rel=1e-9)
    assert made.high == pytest.approx(estimate * math.exp(-q_low * se), rel=1e-9)
    assert made.moments.n_units == g
    assert made.critical_value == pytest.approx(stats.t.ppf(0.975, g - 1), rel=1e-9)


def _hand_moments(dc: np.ndarray, da: np.ndarray) -> tuple[float, float, float, float, float]:
    n = dc.size
    mc, ma = dc.mean(), da.mean()
    rc, ra = dc - mc, da - ma
    k = n / (n - 1) / n**2
    return mc, ma, k * float(rc @ rc), k * float(ra @ ra), k * float(rc @ ra)


def test_fieller_against_the_quadratic_solved_by_hand() -> None:
    """Cost per additional solved item: the R with (Δc − RΔa)² = t²(v_cc − 2Rv_ca + R²v_aa),
    solved here with the quadratic formula from the moments computed by hand."""
    rng = np.random.default_rng(5)
    n = 400
    a0 = (rng.random(n) < 0.5).astype(float)
    a1 = np.where(rng.random(n) < 0.3, 1.0, a0)
    c0 = np.exp(-3 + 0.7 * rng.standard_normal(n))
    c1 = 1.8 * c0 * np.exp(0.2 * rng.standard_normal(n))
    made = cost_per_additional(c0, c1, a0, a1)
    mc, ma, vcc, vaa, vca = _hand_moments(c1 - c0, a1 - a0)
    q = stats.t.ppf(0.975, n - 1)
    qa = ma**2 - q**2 * vaa
    qb = -2 * (mc * ma - q**2 * vca)
    qc = mc**2 - q**2 * vcc
    assert qa > 0  # Δaccuracy clearly above 0: a bounded interval
    root = math.sqrt(qb**2 - 4 * qa * qc)
    low, high = (-qb - root) / (2 * qa), (-qb + root) / (2 * qa)
    assert made.method == "fieller"
    assert made.estimate == pytest.approx(mc / ma, rel=1e-12)
    assert made.low == pytest.approx(low, rel=1e-9)
    assert made.high == pytest.approx(high, rel=1e-9)
    # the net benefit's interval touches 0 exactly at Fieller's ends: P(net > 0) = 0.975 there
    assert probability_positive(made.moments, [high])[0] == pytest.approx(0.975, abs=1e-9)
    assert probability_positive(made.moments, [low])[0] == pytest.approx(0.025, abs=1e-9)
    assert probability_positive(made.moments, [mc / ma])[0] == pytest.approx(0.5, abs=1e-12)


def test_unbounded_when_the_accuracy_difference_interval_includes_zero() -> None:
    rng = np.random.default_rng(11)
    n = 200
    a0 = (rng.random(n) < 0.5).astype(float)
    a1 = a0.copy()
    flip = rng.choice(n, 6, replace=False)
    a1[flip] = 1 - a1[flip]  # three up, three down (or so): Δaccuracy ≈ 0
    c0 = np.exp(-3 + 0.5 * rng.standard_normal(n))
    c1 = 2 * c0
    made = cost_per_additional(c0, c1, a0, a1)
    assert made.unbounded and made.high is None
    body = made.to_dict()
    assert body["high"] is None and body["unbounded"] in ("both", "above")
    assert "reaches 0" in body["reason"]
    json.dumps(body, allow_nan=False)  # no inf hidden in a float field


def test_cost_per_solved_unbounded_when_accuracy_reaches_zero() -> None:
    cost, _ = lognormal_run(100, 0.5, 1.0, seed=2)
    solved = np.zeros(100)
    solved[:2] = 1.0  # 2 of 100: the accuracy's interval (mean ± t·se) reaches 0
    made = cost_per_solved(cost, solved)
    assert made.method == "fieller" and made.high is None
    assert made.low is not None and made.low > 0
    assert made.to_dict()["unbounded"] == "above"
    none = cost_per_solved(cost, np.zeros(100))
    assert none.method == "none-solved" and none.estimate is None and none.high is None
    assert none.low is not None and none.low <= cost.mean()


def test_net_benefit_is_the_paired_t_on_the_per_unit_net_values() -> None:
    """v·Δaccuracy − Δcost per item: scipy's paired t (ttest_rel) on each item's net value, and
    statsmodels' DescrStatsW on the per-unit differences with clusters."""
    rng = np.random.default_rng(13)
    n = 300
    a0 = (rng.random(n) < 0.55).astype(float)
    a1 = np.where(rng.random(n) < 0.2, 1.0, a0)
    c0 = np.exp(-3 + rng.standard_normal(n))
    c1 = 1.5 * np.exp(-3 + rng.standard_normal(n))
    value = 0.4
    made = net_benefit(c0, c1, a0, a1, value=value)
    ref = stats.ttest_rel(value * a1 - c1, value * a0 - c0).confidence_interval(0.95)
    assert made.interval.low == pytest.approx(ref.low, rel=1e-9)
    assert made.interval.high == pytest.approx(ref.high, rel=1e-9)
    one_sided = stats.ttest_rel(value * a1 - c1, value * a0 - c0, alternative="greater").pvalue
    assert made.probability_positive([value])[0] == pytest.approx(1 - one_sided, rel=1e-9)
    # clusters: units are groups of 3 items; statsmodels on the groups' mean differences
    from statsmodels.stats.weightstats import DescrStatsW

    groups = np.arange(n) // 3
    clustered = net_benefit(c0, c1, a0, a1, value=value, clusters=groups)
    net = (value * a1 - c1) - (value * a0 - c0)
    per_group = np.bincount(groups, weights=net) / np.bincount(groups)
    low, high = DescrStatsW(per_group).tconfint_mean(0.05)
    assert clustered.interval.low == pytest.approx(low, rel=1e-9)
    assert clustered.interval.high == pytest.approx(high, rel=1e-9)


def test_moments_need_two_units_and_finite_values() -> None:
    with pytest.raises(NoInterval):
        unit_moments([1.0], [1.0])
    from calipers.errors import InputError

    with pytest.raises(InputError, match="missing cost or outcome is not 0"):
        cost_per_solved([0.1, float("nan"), 0.2], [1.0, 0.0, 1.0])
    with pytest.raises(InputError, match="value per solved"):
        net_benefit([1.0] * 8, [1.0] * 8, [0.0] * 8, [1.0] * 8, value=-1.0)


# ------------------------------------------------------------------ the command


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def priced_runs(
    n: int = 300,
    *,
    gain: float = 0.25,
    factor: float = 1.5,
    missing: int = 0,
    names: tuple[str, str] = ("cheap", "dear"),
) -> list[dict[str, Any]]:
    rng = np.random.default_rng(17)
    rows = []
    for i in range(n):
        base = bool(rng.random() < 0.5)
        new = base or bool(rng.random() < gain)
        c = float(np.exp(-4 + 0.5 * rng.standard_normal()))
        rows.append({"run": names[0], "task": "qa", "sample_id": f"s{i}", "correct": base,
                     "cost_usd": c, "grader_cost_usd": 0.01})  # fmt: skip
        row = {"run": names[1], "task": "qa", "sample_id": f"s{i}", "correct": new,
               "grader_cost_usd": 0.01}  # fmt: skip
        if i >= missing:
            row["cost_usd"] = factor * c
        rows.append(row)
    return rows


def compare(path: Path, *extra: str, names: tuple[str, str] = ("cheap", "dear")) -> list[str]:
    return ["compare", str(path), "--scheme", "metric", "--metric", "correct",
            "--baseline", names[0], "--candidate", names[1], "--flips", "0", *extra]  # fmt: skip


def published(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["schema", "--report", "compare"]) == 0
    schema: dict[str, Any] = json.loads(capsys.readouterr().out)
    return schema


def test_a_long_light_tailed_run_reports_the_log_delta_interval_within_the_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1,200 paired items with light-tailed costs (log sd 0.5): each run's cost per solved item by
    the log-delta interval, no resamples recorded, and the report valid against the schema."""
    path = write_jsonl(tmp_path / "runs.jsonl", priced_runs(1200))
    out = tmp_path / "c.json"
    assert main(compare(path, "--value-per-solved", "0.5", "--json", str(out))) == 0
    report = json.loads(out.read_text())
    validate_schema(report, published(capsys))
    for run in report["cost"]["runs"].values():
        interval = run["interval"]
        assert interval["method"] == "log-delta" and interval["n_resamples"] is None
        half = interval["critical_value"] * interval["standard_error_log"]
        assert interval["low"] == pytest.approx(run["estimate"] * math.exp(-half), rel=1e-12)


def test_compare_reports_cost_and_the_worth_it_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", priced_runs())
    out = tmp_path / "c.json"
    code = main(compare(path, "--value-per-solved", "0.5", "--gate", "worth-it", "--json",
                        str(out), "--html", str(tmp_path / "c.html"), "--markdown",
                        str(tmp_path / "c.md")))  # fmt: skip
    assert code == 0
    report = json.loads(out.read_text())
    validate_schema(report, published(capsys))
    cost = report["cost"]
    assert report["gate"]["name"] == "worth-it" and report["gate"]["passed"]
    run = cost["runs"]["cheap"]
    assert run["interval"]["method"] == "bootstrap-t" and run["low"] < run["estimate"] < run["high"]
    assert run["interval"]["seed"] == report["parameters"]["seed"]  # the compare's, recorded
    assert run["grader_cost"] == pytest.approx(3.0)  # 300 × 0.01, apart from the system's
    assert run["total_cost"] < 300 * 0.05  # the graders' 0.01 each is not in it
    pair = cost["pairs"][0]
    assert pair["net_benefit"]["low"] > 0 and len(pair["curve"]) > 20
    page = (tmp_path / "c.html").read_text()
    assert 'id="cost"' in page and "P(net benefit &gt; 0)" in page
    assert "**Cost** per solved item" in (tmp_path / "c.md").read_text()
    # a value too low to pay for the cost: the gate fails with exit 3 and says why
    code = main(compare(path, "--value-per-solved", "0.001", "--gate", "worth-it"))
    assert code == 3
    assert "not worth it at 0.001 per solved item" in capsys.readouterr().err


def test_worth_it_needs_a_value_and_is_compares_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", priced_runs(60))
    assert main(compare(path, "--gate", "worth-it")) == 1
    assert "--value-per-solved" in capsys.readouterr().err
    assert main(["watch", str(path), "--metric", "correct", "--baseline", "cheap",
                 "--candidate", "dear", "--gate", "worth-it"]) == 1  # fmt: skip
    assert "worth-it is calipers compare's" in capsys.readouterr().err


def test_missing_cost_is_refused_not_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "runs.jsonl", priced_runs(120, missing=5))
    out = tmp_path / "c.json"
    code = main(compare(path, "--value-per-solved", "0.5", "--gate", "worth-it", "--json",
                        str(out)))  # fmt: skip
    assert code == 3  # nothing shows the gain is worth it
    cost = json.loads(out.read_text())["cost"]
    assert cost["runs"]["dear"]["estimate"] is None
    assert "5 scored observation(s) of 'dear' have no cost_usd" in cost["runs"]["dear"]["refusal"]
    assert cost["pairs"][0]["net_benefit"] is None


def test_small_runs_are_refused_an_interval_and_names_are_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ("[red]base", "<script>x</script>")
    path = write_jsonl(tmp_path / "runs.jsonl", priced_runs(20, names=names))
    out = tmp_path / "c.json"
    code = main(compare(path, "--value-per-solved", "0.5", "--json", str(out), "--html",
                        str(tmp_path / "c.html"), names=names))  # fmt: skip
    assert code == 0
    run = json.loads(out.read_text())["cost"]["runs"][names[0]]
    assert run["low"] is None and "fewer than 30" in run["refusal"]
    assert run["estimate"] is not None  # the point estimate is still shown
    shown = capsys.readouterr().out
    assert "[red]base: cost per sample" in shown  # the markup shown, not applied
    page = (tmp_path / "c.html").read_text()
    assert "<script>x</script>" not in page and "&lt;script&gt;" in page


def test_no_cost_no_section(tmp_path: Path) -> None:
    rows = [r for r in priced_runs(40)]
    for r in rows:
        r.pop("cost_usd", None)
        r.pop("grader_cost_usd", None)
    path = write_jsonl(tmp_path / "runs.jsonl", rows)
    out = tmp_path / "c.json"
    assert main(compare(path, "--json", str(out))) == 0
    assert "cost" not in json.loads(out.read_text())
    assert main(compare(path, "--value-per-solved", "1", "--gate", "worth-it")) == 3


# ------------------------------------------------------------------ the calibration study


def test_the_study_runs_and_measures_what_it_says() -> None:
    from calipers.calibration.cost import CostCell, run_cell, truths

    truth = truths(CostCell(0.5, 1.0, 100))
    assert truth["cost_per_solved"] == pytest.approx(math.exp(-3 + 0.5) / 0.5, rel=1e-9)
    made = run_cell(CostCell(0.5, 1.0, 100), reps=60, seed=1, number=0)
    assert made["reps"] == 60 and 0.8 <= made["coverage"]["per_solved"] <= 1.0
    assert 0.8 <= made["coverage"]["log-delta"] <= 1.0
    assert 0.8 <= made["coverage"]["net"] <= 1.0


# ------------------------------------------------------------------ the docs


def test_docs_show_what_the_code_prints() -> None:
    import doc_examples

    assert doc_examples.example_block("cost") == doc_examples.rendered("cost")
    assert doc_examples.example_block("cost", "assistant") == doc_examples.rendered(
        "cost", "assistant"
    )
    assert doc_examples.example_block("cost", "coverage") == doc_examples.rendered(
        "cost", "coverage"
    )
    from calipers.calibration import studies

    page = (doc_examples.ROOT / "docs" / "calibration.md").read_text()
    assert studies.cost_section(studies._load(studies.COST_JSON)) in page


# ------------------------------------------------------------------ tokens and seconds


def test_tokens_and_seconds_per_solved_beside_the_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tokens (tokens_in + tokens_out) and seconds (latency_s) per solved item by the cost's own
    figures: the interval `cost_per_solved` gives on those values with the comparison's seed;
    the graders' tokens never in them; a missing count refused, never 0."""
    rows = priced_runs(200)
    rng = np.random.default_rng(3)
    for r in rows:
        r.update(tokens_in=int(rng.integers(100, 200)), tokens_out=int(rng.integers(10, 400)),
                 latency_s=float(rng.uniform(0.5, 3.0)), grader_tokens_in=5_000,
                 grader_tokens_out=500)  # fmt: skip
    del rows[1]["tokens_out"]  # one observation of 'dear' has no output count
    path = write_jsonl(tmp_path / "runs.jsonl", rows)
    out = tmp_path / "c.json"
    code = main(compare(path, "--seed", "5", "--json", str(out), "--markdown",
                        str(tmp_path / "c.md"), "--html", str(tmp_path / "c.html")))  # fmt: skip
    assert code == 0
    assert "tokens (tokens_in + tokens_out)" in capsys.readouterr().out
    report = json.loads(out.read_text())
    schema = published(capsys)
    validate_schema(report, schema)
    from test_schema_declares_every_key import undeclared

    # every key of the cost section is in the schema (the rest of the report is not this test's)
    assert undeclared(report["cost"], schema["properties"]["cost"], schema) == []
    # in calipers' order of the units (the samples sorted by id): the draws index them
    cheap = sorted((r for r in rows if r["run"] == "cheap"), key=lambda r: r["sample_id"])
    tokens = np.array([r["tokens_in"] + r["tokens_out"] for r in cheap], dtype=float)
    solved = np.array([r["correct"] for r in cheap], dtype=float)
    seconds = np.array([r["latency_s"] for r in cheap])
    usage = report["cost"]["runs"]["cheap"]["usage"]
    for name, values in (("tokens", tokens), ("seconds", seconds)):
        ref = cost_per_solved(values, solved, rng=5)
        assert usage[name]["estimate"] == pytest.approx(values.sum() / solved.sum(), rel=1e-12)
        assert usage[name]["low"] == pytest.approx(ref.low, rel=1e-9)
        assert usage[name]["high"] == pytest.approx(ref.high, rel=1e-9)
        assert usage[name]["interval"]["seed"] == 5
    assert usage["tokens"]["total"] == pytest.approx(tokens.sum())  # no grader tokens in it
    dear = report["cost"]["runs"]["dear"]["usage"]
    assert dear["tokens"]["estimate"] is None
    assert (
        "1 scored observation(s) of 'dear' lack tokens_in + tokens_out"
        in (dear["tokens"]["refusal"])
    )
    assert dear["seconds"]["estimate"] is not None
    assert "seconds (latency\\_s)" in (tmp_path / "c.md").read_text()  # escaped
    assert "tokens (tokens_in + tokens_out)" in (tmp_path / "c.html").read_text()


def test_no_telemetry_no_usage(tmp_path: Path) -> None:
    """Data without tokens or latency: the cost section has no usage figures at all."""
    path = write_jsonl(tmp_path / "runs.jsonl", priced_runs(60))
    out = tmp_path / "c.json"
    assert main(compare(path, "--json", str(out))) == 0
    assert json.loads(out.read_text())["cost"]["runs"]["cheap"]["usage"] == {}


def test_degenerate_draws_give_infinite_t_never_an_overflow() -> None:
    """Three units (a run's task): some draws repeat one unit, whose se* is 0 up to rounding; their
    t* is ±∞ by the side of R̂, not a rounding quotient, and the interval has no infinity in it."""
    cost = np.array([0.014, 0.015, 0.016])
    solved = np.array([0.523, 0.426, 0.429])
    made = cost_per_solved(cost, solved, rng=1)
    assert made.method == "bootstrap-t" and made.t_quantiles is not None
    assert all(abs(q) == math.inf or abs(q) < 1e3 for q in made.t_quantiles)
    json.dumps(made.to_dict(), allow_nan=False)
    # every unit the same ratio: no spread, the interval is the estimate
    flat = cost_per_solved(np.full(40, 0.02), np.ones(40), rng=1)
    assert flat.low == pytest.approx(0.02) and flat.high == pytest.approx(0.02)


# ------------------------------------------------------------------ other cost laws


def test_the_other_laws_have_the_means_scipy_gives() -> None:
    """The families study's truths: each law's mean against scipy.stats' distribution (the
    runaway mixture: a lognormal's mean, scipy's, mixed by hand), and its draws agree with it."""
    from calipers.calibration import cost_families as fam

    lognormal = stats.lognorm(s=0.3, scale=fam.SCALE).mean()
    expected = {
        "gamma0.5": stats.gamma(a=0.5, scale=fam.SCALE / 0.5).mean(),
        "pareto2.5": stats.pareto(b=2.5, scale=fam.SCALE).mean(),
        "pareto2.1": stats.pareto(b=2.1, scale=fam.SCALE).mean(),
        "runaway3%x50": lognormal * (0.97 + 0.03 * 50),
        "runaway1%x100": lognormal * (0.99 + 0.01 * 100),
    }
    assert set(expected) == set(fam.FAMILIES)
    for name, (draw, mean) in fam.FAMILIES.items():
        assert mean == pytest.approx(expected[name], rel=1e-12), name
        costs, _ = draw(400_000, np.random.default_rng(1))
        if name != "pareto2.1":  # its variance is finite but its sample mean converges slowly
            se = costs.std() / math.sqrt(costs.size)
            assert abs(costs.mean() - mean) < 5 * se, name


def test_the_families_study_measures_what_it_says() -> None:
    from calipers.calibration import cost_families as fam

    made = fam.run_cell(fam.FamilyCell("runaway1%x100", 0.5, 100), reps=40, seed=3, number=0)
    seen = made["runaways_seen"]
    # the sample without a runaway call looks light-tailed and cannot cover the mean it decides
    assert seen["none"]["share"] > 0 and seen["none"]["coverage"] == 0.0
    assert seen["none"]["share"] + seen["some"]["share"] == pytest.approx(1.0)
    assert made["coverage"]["per_solved"] == pytest.approx(
        seen["some"]["share"] * seen["some"]["coverage"], abs=1e-12
    )
    section = fam.families_section({"reps": 40, "seed": 3, "wall_s": 1.0, "cells": [made]})
    assert "`runaway1%x100/p0.5/n100`" in section and "| 100 |" in section
    import doc_examples
    from calipers.calibration import studies

    page = (doc_examples.ROOT / "docs" / "calibration.md").read_text()
    assert fam.families_section(studies._load(studies.FAMILIES_JSON)) in page
