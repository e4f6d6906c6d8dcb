"""The six verdicts: one dataset per branch of the decision procedure (docs/statistics.md), and
the engine's numbers against independent computations (scipy's paired t interval on hand-built
differences, the t-based MDE, statsmodels' Hotelling T²)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import optimize, stats
from statsmodels.stats.multivariate import test_mvmean as hotelling_reference

import calipers
from calipers.verdicts.compare import CompareResult
from calipers.verdicts.gates import Verdict
from conftest import MakeSamples
from layered_data import row

# These tests exercise the verdict rules on small hand-made tables (a difference with two or three
# values): the t interval is asked for by name, as `auto` would rightly not trust it on so few
# informative units (tests/test_auto_interval.py covers that choice).
FAST = {"n_resamples": 2000, "interval": "t"}


def run_compare(
    make_samples: MakeSamples, rows: list[dict[str, Any]], treatments: tuple[str, ...] = ("t",)
) -> CompareResult:
    return calipers.compare(
        make_samples(rows), "layered", baseline="c", candidates=list(treatments), **FAST
    )


def test_solo_when_only_the_control_is_given(make_samples: MakeSamples) -> None:
    rows = [row("c", i, fact=(4, 5), judge=4.0) for i in range(30)]
    result = run_compare(make_samples, rows, treatments=())
    assert result.verdict is Verdict.SOLO and "nothing to compare" in result.reason
    assert result.pairs == [] and result.variants["c"].composite.mean == pytest.approx(4.1)


def test_progress_when_significantly_up_and_every_gate_passes(make_samples: MakeSamples) -> None:
    rows = []
    for i in range(60):
        rows.append(row("c", i, fact=(4, 5), judge=4.0))
        rows.append(row("t", i, fact=(5, 5) if i % 3 else (4, 5), judge=4.0))
    result = run_compare(make_samples, rows)
    assert result.verdict is Verdict.PROGRESS, result.reason
    assert "every layer gate passes" in result.reason
    pair = result.pairs[0].comparison
    assert pair.composite.estimate == pytest.approx(0.8 * 40 / 60 / 2)
    assert pair.components["fact"].significant and not pair.components["judge"].significant


def test_regress_when_the_composite_interval_is_below_zero(make_samples: MakeSamples) -> None:
    rows = []
    for i in range(40):
        rows.append(row("c", i, fact=(4, 5), judge=5.0))
        rows.append(row("t", i, fact=(4, 5), judge=4.0 if i % 2 else 5.0))
    result = run_compare(make_samples, rows)
    assert result.verdict is Verdict.REGRESS and "is below 0" in result.reason


def test_regress_when_a_layer_breaks_the_gate_it_passed_in_control(
    make_samples: MakeSamples,
) -> None:
    rows = []
    for i in range(40):
        rows.append(row("c", i, fact=(4, 5), judge=3.6))  # fact 4.2 passes
        rows.append(row("t", i, fact=(3, 5), judge=5.0))  # fact 3.4 fails; composite up
    result = run_compare(make_samples, rows)
    assert result.pairs[0].comparison.composite.significant
    assert result.verdict is Verdict.REGRESS
    assert "layer gate broken: fact 4.20 → 3.40" in result.reason


def test_noise_when_nothing_moves(make_samples: MakeSamples) -> None:
    rows = []
    for i in range(80):  # 40 would be UNDERPOWERED: its MDE (0.23) is above min_effect (0.2)
        rows.append(row("c", i, fact=(4, 5), judge=4.0))
        rows.append(row("t", i, fact=(4, 5), judge=5.0 if i % 2 else 3.0))  # ±1, mean 0
    result = run_compare(make_samples, rows)
    assert result.verdict is Verdict.NOISE and "no layer moved" in result.reason
    mde = result.pairs[0].comparison.mde
    assert (
        mde is not None
        and mde < 0.2
        and f"would have detected a difference of ±{mde:.3f}" in (result.reason)
    )


def test_cautious_when_layers_move_but_the_composite_stays_flat(
    make_samples: MakeSamples,
) -> None:
    rows = []
    # Composites equal on all 80 units bound the difference below 4·(1 − 0.05^(1/80)) = 0.148 <
    # min_effect 0.2; with 40 the bound (0.29) would be UNDERPOWERED.
    for i in range(80):
        rows.append(row("c", i, fact=(3, 5), judge=5.0))  # 3.4 and 5.0
        rows.append(row("t", i, fact=(4, 5), judge=4.2))  # 4.2 and 4.2: composite equal
    result = run_compare(make_samples, rows)
    assert result.verdict is Verdict.CAUTIOUS, result.reason
    assert "layer(s) moved: fact +0.800, judge -0.800" in result.reason


def test_cautious_when_the_treatment_fails_a_gate(make_samples: MakeSamples) -> None:
    rows = []
    for i in range(40):
        rows.append(row("c", i, fact=(2, 5), judge=4.0))  # fact 2.6 fails in both runs
        rows.append(row("t", i, fact=(3, 5), judge=4.0))
    result = run_compare(make_samples, rows)
    assert result.verdict is Verdict.CAUTIOUS and "fails the gate on fact" in result.reason


def test_cautious_when_the_gain_is_trivial(make_samples: MakeSamples) -> None:
    rows = []
    for i in range(80):
        rows.append(row("c", i, fact=(16, 20)))
        rows.append(row("t", i, fact=(17, 20) if i % 4 == 0 else (16, 20)))
    result = run_compare(make_samples, rows)
    pair = result.pairs[0].comparison
    assert pair.composite.estimate == pytest.approx(0.05) and pair.composite.significant
    assert result.verdict is Verdict.CAUTIOUS and "below 0.1" in result.reason


def test_cautious_when_judges_disagree(make_samples: MakeSamples) -> None:
    rng = np.random.default_rng(2)
    a = rng.integers(3, 6, 60).astype(float)
    b = rng.integers(3, 6, 60).astype(float)
    rows = []
    for i in range(60):
        judges = {"j1": a[i], "j2": b[i]}
        rows.append(row("c", i, fact=(4, 5), judge=judges))
        rows.append(row("t", i, fact=(5, 5), judge=judges))
    result = run_compare(make_samples, rows)
    pearson = result.variants["c"].judge_pearson
    assert pearson is not None and pearson < 0.4
    assert pearson == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert result.verdict is Verdict.CAUTIOUS and "judges disagree" in result.reason
    assert result.badges["judges_agree"] is False


def test_cautious_when_runs_are_unstable_across_epochs(make_samples: MakeSamples) -> None:
    rows = []
    for i in range(40):
        for e in range(2):
            rows.append(row("c", i, epoch=e, judge=2.0 if e == 0 else 4.0))
            rows.append(row("t", i, epoch=e, judge=3.0 if e == 0 else 5.0))
    result = run_compare(make_samples, rows)
    cv = result.variants["c"].cv_median
    assert cv == pytest.approx(np.std([2.0, 4.0], ddof=1) / 3.0)
    assert result.verdict is Verdict.CAUTIOUS and "unstable across epochs" in result.reason


def test_underpowered_when_the_mde_is_above_the_smallest_effect_worth_detecting(
    make_samples: MakeSamples,
) -> None:
    rows = []
    for i in range(10):
        rows.append(row("c", i, judge=4.0))
        rows.append(row("t", i, judge=[3.0, 5.0, 4.0, 4.5, 3.5][i % 5]))
    result = run_compare(make_samples, rows)
    assert result.verdict is Verdict.UNDERPOWERED
    mde = result.pairs[0].comparison.mde
    assert mde is not None and "with 10 paired units the smallest effect it detects" in (
        result.reason
    )
    assert f"{mde:.3f}" in result.reason and "smallest worth detecting (0.2)" in result.reason
    # The same data against a larger smallest-effect-worth-detecting is NOISE.
    lenient = calipers.compare(
        make_samples(rows), "layered", baseline="c", candidates=["t"], min_effect=1.0, **FAST
    )
    assert lenient.verdict is Verdict.NOISE


def test_three_pairs_all_up_is_underpowered_not_progress(make_samples: MakeSamples) -> None:
    rows = []
    for i in range(3):
        rows.append(row("c", i, fact=(3, 5), judge=3.0))
        rows.append(row("t", i, fact=(5, 5), judge=5.0))
    result = run_compare(make_samples, rows)
    pair = result.pairs[0].comparison
    assert pair.composite.interval is None  # no spread: no interval
    assert pair.composite.exact_p == pytest.approx(stats.binomtest(3, 3).pvalue)  # 0.25
    assert result.verdict is Verdict.UNDERPOWERED and "no verdict from 3" in result.reason
    assert result.gate_failure("ship") is not None


def epoch_rows(n: int, epochs: int, constant: bool) -> list[dict[str, Any]]:
    rng = np.random.default_rng(5)
    rows = []
    for i in range(n):
        base = float(rng.integers(2, 5))
        for e in range(epochs):
            noise = 0.0 if constant else float(rng.choice([-1.0, 1.0]))
            rows.append(row("c", i, epoch=e, judge=base))
            rows.append(row("t", i, epoch=e, judge=min(5.0, max(1.0, base + noise))))
    return rows


def test_underpowered_when_repeats_show_no_saturation_with_high_confidence(
    make_samples: MakeSamples,
) -> None:
    result = run_compare(make_samples, epoch_rows(30, 4, constant=True))
    sat = result.variants["t"].saturation
    assert sat.saturated is True and sat.confidence == "medium"  # 30 samples: medium
    assert result.verdict is Verdict.UNDERPOWERED and "saturated (medium" in result.reason


def test_noise_when_saturated_with_high_confidence(make_samples: MakeSamples) -> None:
    result = run_compare(make_samples, epoch_rows(60, 4, constant=True))
    sat = result.variants["t"].saturation
    assert sat.saturated_with_high_confidence and sat.shrinks == [0.0, 0.0, 0.0]
    assert result.verdict is Verdict.NOISE
    assert result.badges["saturated"] is True


def test_swapping_control_and_treatment_negates_every_difference(
    make_samples: MakeSamples,
) -> None:
    rng = np.random.default_rng(8)
    rows = []
    for i in range(200):  # a bootstrap is offered from 200 units
        for e in range(2):
            rows.append(row("c", i, epoch=e, fact=(int(rng.integers(0, 5)), 4), judge=3.0))
            rows.append(row("t", i, epoch=e, fact=(int(rng.integers(1, 5)), 4), judge=4.0))
    samples = make_samples(rows)
    ab = calipers.compare(samples, "layered", baseline="c", candidates=["t"], **FAST).pairs[0]
    ba = calipers.compare(samples, "layered", baseline="t", candidates=["c"], **FAST).pairs[0]
    for name in ("fact", "judge"):
        d1, d2 = ab.comparison.components[name], ba.comparison.components[name]
        assert d1.estimate == pytest.approx(-d2.estimate)  # type: ignore[operator]
    c1, c2 = ab.comparison.composite, ba.comparison.composite
    assert c1.interval is not None and c2.interval is not None
    assert (c1.low, c1.high) == pytest.approx((-c2.high, -c2.low), abs=1e-12)  # type: ignore[operator]
    # A bootstrap interval mirrors resample by resample (same seed, negated data).
    kw: dict[str, Any] = {**FAST, "interval": "percentile"}
    b1 = calipers.compare(samples, "layered", baseline="c", candidates=["t"], **kw)
    b2 = calipers.compare(samples, "layered", baseline="t", candidates=["c"], **kw)
    i1, i2 = b1.pairs[0].comparison.composite.interval, b2.pairs[0].comparison.composite.interval
    assert i1 is not None and i2 is not None and i1.bootstrap and i2.bootstrap
    np.testing.assert_allclose(i1.bootstrap.distribution, -i2.bootstrap.distribution, atol=1e-12)


def test_several_treatments_split_alpha_and_roll_up_to_the_worst(
    make_samples: MakeSamples,
) -> None:
    rows = []
    for i in range(40):
        rows.append(row("c", i, fact=(4, 5), judge=4.0))
        rows.append(row("good", i, fact=(5, 5) if i % 2 else (4, 5), judge=4.0))
        rows.append(row("bad", i, fact=(3, 5) if i % 2 else (4, 5), judge=4.0))
    result = calipers.compare(
        make_samples(rows), "layered", baseline="c", candidates=["good", "bad"], **FAST
    )
    assert [p.decision.verdict for p in result.pairs] == [Verdict.PROGRESS, Verdict.REGRESS]
    assert result.verdict is Verdict.REGRESS and "worst of 2 pairs" in result.reason
    assert all(p.alpha == pytest.approx(0.025) for p in result.pairs)
    good = result.pairs[0].comparison
    c = np.full(40, (4.2 + 4.0) / 2)
    t = np.where(np.arange(40) % 2 == 1, (5.0 + 4.0) / 2, c)
    ref = stats.ttest_rel(t, c).confidence_interval(confidence_level=0.975)
    assert (good.composite.low, good.composite.high) == pytest.approx((ref.low, ref.high))


def test_mde_and_hotelling_against_independent_references(make_samples: MakeSamples) -> None:
    rng = np.random.default_rng(4)
    rows = []
    diffs = []
    for i in range(45):
        cf, tf = int(rng.integers(0, 5)), int(rng.integers(0, 5))
        cj, tj = float(rng.integers(1, 6)), float(rng.integers(1, 6))
        rows.append(row("c", i, fact=(cf, 4), judge=cj))
        rows.append(row("t", i, fact=(tf, 4), judge=tj))
        diffs.append((4 * (tf - cf) / 4, tj - cj))
    result = run_compare(make_samples, rows)
    pair = result.pairs[0].comparison
    d = np.array(diffs)
    composite_diff = d.mean(axis=1) / 1  # mean of the two layers' differences
    # ncp · sd/√n, ncp where a two-sided t test on 44 df rejects with 80% power (scipy's nct).
    se = composite_diff.std(ddof=1) / np.sqrt(45)
    crit = stats.t.ppf(0.975, 44)
    ncp = optimize.brentq(lambda nc: stats.nct.sf(crit, 44, nc) - 0.8, 0.1, 10)
    allowance = np.sqrt(44 / stats.chi2.ppf(0.4, 44))  # the SE's 60% upper bound (Browne 1995)
    assert pair.mde == pytest.approx(ncp * se * allowance, rel=1e-6)
    ref = hotelling_reference(d, np.zeros(2))
    assert pair.hotelling is not None
    assert pair.hotelling.f == pytest.approx(ref.statistic)
    assert pair.hotelling.p_value == pytest.approx(ref.pvalue)


def test_monte_carlo_note_when_a_bound_is_at_zero(make_samples: MakeSamples) -> None:
    rows = []
    for i in range(200):
        rows.append(row("c", i, judge=3.0))
        rows.append(row("t", i, judge=4.0 if i < 3 else 3.0))  # 3 of 200 up: low bound ≈ 0
    result = calipers.compare(
        make_samples(rows), "layered", baseline="c", candidates=["t"], n_resamples=500,
        interval="percentile",
    )  # fmt: skip
    pair = result.pairs[0].comparison
    assert pair.composite.interval is not None and pair.composite.interval.method == "percentile"
    assert pair.composite.monte_carlo_uncertain
    assert any("Monte Carlo error" in n for n in result.notes)
