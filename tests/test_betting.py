"""The distribution-free interval for bounded means (`calipers.stats.betting`), the rule that picks
it (`calipers.stats.shape`), and the studentized bootstrap for unbounded metrics — against the
`ville` package, exact enumeration, scipy, and the shapes of data issue 33 measured."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import ville
from scipy import stats

import calipers
from calipers.stats.betting import betting_interval
from calipers.stats.detectable import simulated_detectable
from calipers.stats.estimate import mean_interval, paired_interval
from calipers.stats.interval_parts import NoInterval
from calipers.stats.shape import t_adequacy, t_rule_floor, t_rule_probability
from calipers.stats.studentized import studentized_interval
from conftest import MakeSamples


@pytest.mark.parametrize(("seed", "n"), [(1, 10), (2, 50), (3, 300), (4, 1000)])
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (1.0, 5.0)])
def test_the_sequence_equals_villes_betting_confidence_sequence(
    seed: int, n: int, bounds: tuple[float, float]
) -> None:
    rng = np.random.default_rng(seed)
    x = bounds[0] + (bounds[1] - bounds[0]) * rng.beta(2, 5, n)
    grid = 20_001
    ref = ville.BettingCS(bounds=bounds, alpha=0.05, c=0.5, theta=0.5, grid=grid, intersect=False)
    ref.fit(x)
    ref_low, ref_high = ref.interval()
    ours = betting_interval(x, bounds=bounds, schedule="sequence", truncation=0.5)
    # ville evaluates the capital on a grid and widens to the neighbouring grid points; ours
    # solves for the ends: they agree to one grid step, and ours lies inside ville's.
    step = (bounds[1] - bounds[0]) / (grid - 1)
    assert ref_low - 1e-12 <= ours.low <= ref_low + 1.5 * step
    assert ref_high - 1.5 * step <= ours.high <= ref_high + 1e-12
    assert ours.estimate == pytest.approx(x.mean())


def _exact_coverage(n: int, support: np.ndarray, laws: np.ndarray) -> np.ndarray:
    """Exact coverage of the 95% betting interval for each law on `support`: every sequence of
    n values, its probability under each law, and whether its interval holds the law's mean."""
    seqs = np.array(list(itertools.product(range(support.size), repeat=n)))
    lows, highs = np.empty(len(seqs)), np.empty(len(seqs))
    for i, seq in enumerate(seqs):
        made = betting_interval(support[seq], bounds=(0.0, 1.0))
        lows[i], highs[i] = made.low, made.high
    counts = np.stack([(seqs == k).sum(axis=1) for k in range(support.size)], axis=1)
    log_p = counts @ np.log(np.clip(laws, 1e-300, None)).T  # sequences × laws
    means = laws @ support
    inside = (lows[:, None] <= means[None, :]) & (means[None, :] <= highs[:, None])
    return np.asarray((np.exp(log_p) * inside).sum(axis=0))


def test_exact_coverage_on_pass_fail_at_every_rate() -> None:
    p = np.linspace(0.0, 1.0, 201)
    laws = np.stack([1 - p, p], axis=1)
    coverage = _exact_coverage(10, np.array([0.0, 1.0]), laws)
    assert coverage.min() >= 0.95, p[coverage.argmin()]


def test_exact_coverage_on_three_point_laws() -> None:
    # every law on {0, ½, 1} on a grid of the simplex, mass at the bounds included
    grid = np.linspace(0.0, 1.0, 11)
    laws = np.array([(a, b, 1 - a - b) for a in grid for b in grid if a + b <= 1 + 1e-12])
    laws = np.clip(laws, 0.0, 1.0)
    coverage = _exact_coverage(6, np.array([0.0, 0.5, 1.0]), laws)
    assert coverage.min() >= 0.95, laws[coverage.argmin()]


def test_the_interval_is_the_set_the_capital_does_not_reject() -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, 40)
    made = betting_interval(x, bounds=(0, 1), null_value=made_low_null(x))
    assert made.p_value == pytest.approx(0.05, abs=1e-3)  # the lower end is where p = α


def made_low_null(x: np.ndarray) -> float:
    return betting_interval(x, bounds=(0, 1)).low


@pytest.mark.parametrize("schedule", ["interval", "sequence"])
def test_the_two_searches_find_the_same_ends(
    schedule: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The multisection (short runs) and scipy's bracketing finder (long ones) find each end
    to the last place of a double, and both ends lie outside the set the capital keeps."""
    from calipers.stats import betting

    rng = np.random.default_rng(11)
    cases = [
        (rng.integers(0, 2, 300).astype(float), (0.0, 1.0)),
        (rng.beta(0.3, 3.0, 200), (0.0, 1.0)),
        (rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0], 500), (-1.0, 1.0)),
    ]
    for x, bounds in cases:
        horizon = [16, 128] if schedule == "sequence" else None
        monkeypatch.setattr(betting, "FINDER_CELLS", 10**12)
        sections = betting_interval(x, bounds=bounds, schedule=schedule, horizon=horizon)
        monkeypatch.setattr(betting, "FINDER_CELLS", 0)
        found = betting_interval(x, bounds=bounds, schedule=schedule, horizon=horizon)
        assert found.low == pytest.approx(sections.low, abs=4e-15)
        assert found.high == pytest.approx(sections.high, abs=4e-15)
        # each end is outside: the capital rejects it (p at most α, up to rounding)
        for end in (found.low, found.high):
            if bounds[0] < end < bounds[1]:
                at = betting_interval(
                    x, bounds=bounds, schedule=schedule, horizon=horizon, null_value=end
                )
                assert at.p_value <= 0.05 + 1e-9


def test_values_outside_the_bounds_are_an_error_naming_the_fix() -> None:
    with pytest.raises(calipers.InputError, match="outside the declared bounds") as err:
        betting_interval(np.array([0.2, 1.4]), bounds=(0, 1))
    assert "--bounds" in (err.value.hint or "")


def test_random_orders_average_the_capital_and_record_the_seed() -> None:
    rng = np.random.default_rng(3)
    x = rng.beta(2, 5, 60)
    one = betting_interval(x, bounds=(0, 1))
    eight = betting_interval(x, bounds=(0, 1), orders=8, rng=11)
    assert eight.seed == 11 and eight.orders == 8 and one.seed is None
    again = betting_interval(x, bounds=(0, 1), orders=8, rng=11)
    assert (again.low, again.high) == (eight.low, eight.high)
    assert abs((eight.high - eight.low) / (one.high - one.low) - 1) < 0.2


def test_the_t_rule_reads_scipys_skewness() -> None:
    rng = np.random.default_rng(5)
    x = rng.gamma(2.0, 1.0, 80)
    rule = t_adequacy(x)
    assert rule.skewness == pytest.approx(stats.skew(x, bias=False))
    assert rule.needed == int(28 + 25 * rule.skewness**2) + 1
    assert rule.informative == 80


def _skewed_pair(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A candidate that leaves most items unchanged and moves ~8% of them by +0.6."""
    base = rng.beta(5, 2, n)
    control = np.clip(base + rng.normal(0, 0.03, n), 0, 1)
    treatment = np.clip(base + rng.normal(0, 0.03, n), 0, 1)
    treatment[: max(1, round(0.08 * n))] += 0.6
    return control, np.clip(treatment, 0, 1)


def test_a_skewed_difference_at_20_items_is_not_a_plain_t() -> None:
    control, treatment = _skewed_pair(np.random.default_rng(2), 20)
    made = paired_interval(control, treatment, bounds=(0, 1))
    assert made.method == "betting" and made.formula == "hedged-capital"
    assert made.reason is not None and "too few for a t interval" in made.reason
    assert made.bounds == (-1.0, 1.0)


def test_a_bimodal_run_at_10_items_is_not_a_plain_t() -> None:
    rng = np.random.default_rng(4)
    latent = np.where(rng.random(10) < 0.5, 0.0, 1.0)
    control = np.clip(latent + rng.normal(0, 0.05, 10), 0, 1)
    treatment = np.clip(latent + rng.normal(0, 0.05, 10), 0, 1)
    assert mean_interval(control, bounds=(0, 1)).method == "betting"
    assert paired_interval(control, treatment, bounds=(0, 1)).method == "betting"


def test_without_bounds_a_skewed_metric_gets_a_refusal_naming_the_way_out() -> None:
    rng = np.random.default_rng(9)
    with pytest.raises(NoInterval, match="declare the metric's bounds") as refused:
        mean_interval(rng.lognormal(0, 1.2, 100))
    assert "too few for a t interval" in refused.value.reason
    made = mean_interval(rng.lognormal(0, 1.2, 100), method="studentized")
    assert made.method == "studentized" and made.formula == "bootstrap-t" and made.seed is not None
    with pytest.raises(NoInterval, match="needs at least 10"):
        mean_interval(rng.lognormal(0, 1.2, 8), method="studentized")


def test_betting_needs_bounds_when_asked_for_by_name() -> None:
    with pytest.raises(calipers.InputError, match="declared bounds"):
        mean_interval(np.linspace(0, 1, 30), method="betting")


def test_the_studentized_bootstrap_is_its_formula() -> None:
    rng = np.random.default_rng(1)
    x = rng.lognormal(0, 1, 30)
    made = studentized_interval(x, np.ones_like(x), n_resamples=400, rng=5)
    draws = np.random.default_rng(5).integers(0, x.size, size=(400, x.size))
    t_star = []
    for idx in draws:
        s = x[idx]
        t_star.append((s.mean() - x.mean()) / (s.std(ddof=1) / np.sqrt(x.size)))
    q_low = np.quantile(t_star, 0.025, method="lower")
    q_high = np.quantile(t_star, 0.975, method="higher")
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert made.standard_error == pytest.approx(se)
    assert (made.low, made.high) == pytest.approx((x.mean() - q_high * se, x.mean() - q_low * se))


def _lognormal_rows(n: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        item = rng.lognormal(0, 1.2)
        for run, factor in (("a", 1.0), ("b", 1.3)):
            value = float(item * factor * rng.lognormal(0, 0.2))
            rows.append({"run": run, "task": "t", "sample_id": f"s{i}", "scores": {"cost": value}})
    return rows


def test_lognormal_scores_without_bounds_read_no_scale_from_their_range(
    make_samples: MakeSamples,
) -> None:
    result = calipers.compare(
        make_samples(_lognormal_rows(100, 3)), "metric", metric="cost", baseline="a",
        candidates=["b"],
    )  # fmt: skip
    params = result.parameters
    assert params["scale_span"] is None and params["bounds"] is None
    assert "no scale is read" in params["scale_source"]
    assert params["trivial_diff"] == 0.0 and params["min_effect"] is None
    # too skewed for t, and no bounds: no interval, and the verdict says how to get one
    assert result.pairs[0].comparison.composite.interval is None
    assert result.verdict.name == "UNDERPOWERED" and "--bounds" in result.reason, result.reason
    declared = calipers.compare(
        make_samples(_lognormal_rows(100, 3)), "metric", metric="cost", baseline="a",
        candidates=["b"], bounds="0,1000",
    )  # fmt: skip
    assert declared.parameters["scale_span"] == 1000.0
    assert declared.parameters["scale_source"] == "declared: --bounds 0,1000"
    interval = declared.pairs[0].comparison.composite.interval
    assert interval is not None and interval.method == "betting"
    # with a scale declared, a significant gain is judged against 2.5% of it (25), not against a
    # fraction of the largest value seen
    assert declared.parameters["trivial_diff"] == pytest.approx(25.0)


def test_a_rubric_run_of_10_samples_is_not_a_percentile_bootstrap(
    make_samples: MakeSamples,
) -> None:
    from calipers.schemes import get_scheme
    from calipers.schemes.rubric.scoring import SCALE
    from rubric_data import rubric_row

    rng = np.random.default_rng(2)
    rows = [
        rubric_row("r", f"s{i}", float(np.clip(np.round(rng.normal(4.2, 0.6)), 1, 5)))
        for i in range(10)
    ]
    run = get_scheme("rubric").score(make_samples(rows)).runs["r"]  # type: ignore[attr-defined]
    finals = np.array([float(e) for e in run_finals(make_samples(rows))])
    assert run.method == "hedged-capital" and run.interval is not None
    made = betting_interval(finals, bounds=SCALE)
    assert run.interval == pytest.approx((made.low, made.high))


def run_finals(samples: Any) -> list[Any]:
    from calipers.schemes import get_scheme

    result = get_scheme("rubric").score(samples)
    return [e.final for e in result.evaluations]  # type: ignore[attr-defined]


def test_without_bounds_no_interval_is_given_by_default_even_where_t_would_look_fine() -> None:
    # Bahadur & Savage: no rule read from a sample sees the tail it has not shown, so an unbounded
    # metric gets an interval only when one is named (which assumes light tails)
    x = np.random.default_rng(3).normal(0, 1, 200)
    with pytest.raises(NoInterval, match="no bounds are declared") as refused:
        mean_interval(x)
    assert "--interval t" in refused.value.reason and "the t interval holds" in refused.value.reason
    named = mean_interval(x, method="t")  # named: the skewness-corrected t, as auto's t is
    low, high = stats.t.interval(0.95, 199, x.mean(), stats.sem(x))
    assert named.method == "t"
    assert (named.low, named.high) == pytest.approx((low, high), abs=0.01 * (high - low))
    with pytest.raises(NoInterval, match="no bounds are declared"):
        paired_interval(x, x + np.random.default_rng(4).normal(0.1, 0.2, 200))


def test_the_betting_mde_is_detected_80_percent_of_the_time_on_fresh_samples() -> None:
    # the reference: the betting interval itself, on fresh samples of a known population moved to
    # the MDE reported from one sample of it (not the resamples the MDE was solved on)
    rng = np.random.default_rng(11)
    n = 30
    sample = np.clip(rng.normal(0.0, 0.15, n), -1, 1)
    mde = simulated_detectable(sample, scale=(0, 1), auto=False)  # differences within ±1
    assert mde is not None
    assert 0 < mde < 1
    hits = sum(
        betting_interval(np.clip(rng.normal(mde, 0.15, n), -1, 1), bounds=(-1, 1)).low > 0
        for _ in range(400)
    )
    # 400 fresh samples: 0.8 ± 0.02 (one standard error); the sample's own sd sets the MDE
    assert 0.70 <= hits / 400 <= 0.90, hits


def test_the_t_rules_chance_of_holding_matches_the_rule_applied_to_samples() -> None:
    rng = np.random.default_rng(8)
    for n, shape in ((35, None), (48, None), (48, 25.0), (60, 25.0)):
        skew = 0.0 if shape is None else 2 / np.sqrt(shape)
        draws = [
            rng.normal(size=n) if shape is None else rng.gamma(shape, size=n) for _ in range(2000)
        ]
        share = np.mean([t_adequacy(x).holds for x in draws])
        assert t_rule_probability(n, skew) == pytest.approx(share, abs=0.035), (n, shape)
    assert t_rule_probability(28, 0.0) == 0.0
    floor = t_rule_floor(0.0)
    assert t_rule_probability(floor, 0.0) >= 0.99 > t_rule_probability(floor - 1, 0.0)


def _power_of_auto(
    c: np.ndarray, t: np.ndarray, effect: float, seed: int, reps: int = 400
) -> tuple[float, float]:
    """Brute force: the share of `reps` fresh bootstrap samples of these units (another seed than
    the MDE's), every treatment score moved by one shift within [0, 1] so that the units' mean
    difference is ±`effect` — the treatment's deviations from its mean scaled by the growth of
    m(1 − m), never below 1, the MDE's stated alternative — that `paired_interval` (auto, bounds
    declared) finds significant in that direction: the engine's own choice of interval on each."""
    rng = np.random.default_rng(seed)
    t0 = np.clip(c + (t - c) - np.mean(t - c), 0.0, 1.0)  # the sample's difference as no effect

    def shifted(rows: np.ndarray, by: float) -> np.ndarray:
        m = rows.mean()
        moved = min(max(m + by, 0.0), 1.0)
        k = max(moved * (1 - moved) / (m * (1 - m)), 1.0) if 0 < m < 1 else 1.0
        return np.clip(m + by + k * (rows - m), 0.0, 1.0)

    power = []
    for sign in (1.0, -1.0):
        lo, hi = 0.0, 1.0  # the shift whose mean difference on these units is the effect
        for _ in range(50):
            mid = (lo + hi) / 2
            short = np.mean(shifted(t0, sign * mid) - c) * sign < effect
            lo, hi = (mid, hi) if short else (lo, mid)
        hits = 0
        for _ in range(reps):
            i = rng.integers(0, c.size, c.size)
            got = paired_interval(c[i], shifted(t0[i], sign * hi), bounds=(0.0, 1.0))
            hits += bool(got.low > 0) if sign > 0 else bool(got.high < 0)
        power.append(hits / reps)
    return power[0], power[1]


@pytest.mark.parametrize("kind", ["skewed", "bimodal"])
def test_the_mde_of_auto_is_the_power_of_auto_on_fresh_resamples(kind: str) -> None:
    # issue 33: at 30 skewed units `auto` picks t on about half the samples and betting on the
    # others; the MDE of the interval this sample got (t: 0.04) was detected 50% of the time. On
    # scores piled at the bounds, the differences moved by δ are not a shift any score can make.
    rng = np.random.default_rng({"skewed": 23, "bimodal": 5}[kind])
    if kind == "skewed":  # Beta(5, 2) items + N(0, 0.05) per draw, 30 units: near the t rule's edge
        n, m = 30, stats.beta.rvs(5, 2, size=30, random_state=rng)
        noise = 0.05
    else:  # 40% of the items at 0, 50% at 1, + N(0, 0.1) per draw, 25 units
        n, noise = 25, 0.1
        m = np.clip((rng.uniform(size=25) - 0.4) / 0.1, 0, 1)
    c = np.clip(m + rng.normal(0, noise, n), 0, 1)
    t = np.clip(m + rng.normal(0, noise, n), 0, 1)
    chosen = paired_interval(c, t, bounds=(0.0, 1.0))
    mde = simulated_detectable(t - c, control=c, scale=(0.0, 1.0))
    assert mde is not None and 0 < mde < 0.5
    if kind == "skewed":
        assert chosen.method == "t"  # and yet the MDE is not the t interval's
        assert mde > 2 * chosen.detectable_effect()
    up, down = _power_of_auto(c, t, mde, seed=99)
    # the MDE is the larger direction's: that one at 0.8 (±0.02 at 400 resamples, and ±0.025 the
    # MDE's own 250), the other at least that
    assert 0.72 <= min(up, down) <= 0.88, (up, down)
    assert max(up, down) >= 0.72, (up, down)


def test_the_simulated_procedure_decides_as_paired_interval_does() -> None:
    # the MDE's vectorised judge of each resample — the t rule, Hall's t, the betting capital —
    # against `paired_interval` itself, sample by sample, on data at the t rule's edge
    from calipers.stats.betting import reaches_rows
    from calipers.stats.detectable import hall_statistics, hall_t_detects, t_rule_rows

    rng = np.random.default_rng(17)
    agree = 0
    for k in range(120):
        n = (30, 45, 60)[k % 3]
        m = rng.beta(5, 2, n) if k % 2 else np.clip((rng.uniform(size=n) - 0.4) / 0.1, 0, 1)
        c = np.clip(m + rng.normal(0, 0.05, n), 0, 1)
        t = np.clip(m + 0.04 * (k % 4) + rng.normal(0, 0.05, n), 0, 1)
        got = paired_interval(c, t, bounds=(0.0, 1.0))
        d = (t - c)[None, :]
        use_t = bool(t_rule_rows(d)[0])
        assert use_t == (got.method == "t") == t_adequacy(t - c).holds
        if use_t:
            up = hall_t_detects(*hall_statistics(d, np.ones_like(d)), n, 0.05, 1.0)[0]
        else:
            up = reaches_rows((d + 1) / 2, np.ones_like(d), 0.5, 0.05, 1.0)[0]
        assert bool(up) == bool(got.low > 0), k
        agree += bool(up)
    assert agree > 20  # significant ones were tried too


def test_the_treatment_spreads_as_the_room_grows() -> None:
    # an effect toward the middle of a bounded scale spreads the items (a logistic item moves by
    # its slope, in proportion to (m − lo)(hi − m)); toward a bound it is not counted on to narrow
    from calipers.stats.detectable import room, spread_shift

    rows = np.array([[3.0, 4.0, 5.0], [4.0, 4.0, 4.0], [5.0, 5.0, 5.0]])
    centre = rows.mean(axis=1)
    free, spread = spread_shift(rows, centre, room(centre, (1.0, 5.0)), -1.0, (1.0, 5.0))
    # mean 4 → 3: room 3·1 = 3 → 2·2 = 4, deviations × 4/3
    assert free[0] == pytest.approx([3 - 4 / 3, 3.0, 3 + 4 / 3])
    assert free[1] == pytest.approx([3.0, 3.0, 3.0])  # no deviations to scale
    assert free[2] == pytest.approx([4.0, 4.0, 4.0])  # at the bound: no room to grow from
    assert spread.tolist() == [True, True, False]
    up, spread_up = spread_shift(rows, centre, room(centre, (1.0, 5.0)), 0.5, (1.0, 5.0))
    assert up == pytest.approx(rows + 0.5) and not spread_up.any()


def test_the_root_finder_takes_scipys_steps_bit_for_bit() -> None:
    """`calipers.stats.chandrupatla.bracket_root` (no scipy.optimize import) ends on the bracket
    scipy's `find_root` ends on, to the last bit, on smooth, steep, flat and kinked monotone
    functions, at several tolerances — with the ends' values given or evaluated."""
    from scipy.optimize.elementwise import find_root

    from calipers.stats.chandrupatla import bracket_root

    rng = np.random.default_rng(5)
    functions: list[Any] = [
        lambda x: np.log1p(3 * x) - 0.4,
        lambda x: np.exp(20 * x) - 7.0,
        lambda x: np.tanh(50 * (x - 0.31)),
        lambda x: np.where(x < 0.2, x - 0.21, 5 * (x - 0.21)),
        lambda x: (x - 0.123456789) ** 3,
        lambda x: np.floor(x * 1000) / 1000 - 0.5004,
    ]
    for _ in range(200):
        scale = rng.uniform(0.5, 4.0)
        shift = rng.uniform(-0.2, 0.2)
        functions.append(lambda x, s=scale, c=shift: np.sinh(s * (x - 0.5 - c)) + 0.01 * x)
    for f in functions:
        for xatol in (2.0**-60, 2.0**-20, 1e-3):
            for a, b in ((0.0, 1.0), (0.05, 0.9)):
                fa, fb = float(f(np.array([a]))[0]), float(f(np.array([b]))[0])
                if np.sign(fa) == np.sign(fb):
                    continue
                res = find_root(f, (np.array([a]), np.array([b])),
                                tolerances={"xatol": xatol, "fatol": 0.0, "frtol": 0.0},
                                maxiter=200)  # fmt: skip
                want = (float(res.bracket[0][0]), float(res.bracket[1][0]),
                        float(res.f_bracket[0][0]), float(res.f_bracket[1][0]))  # fmt: skip

                def scalar(x: float, f: Any = f) -> float:
                    return float(f(np.array([x]))[0])

                assert bracket_root(scalar, a, b, xatol=xatol) == want
                assert bracket_root(scalar, a, b, fa=fa, fb=fb, xatol=xatol) == want


def test_the_pairwise_leaves_add_up_to_numpys_sum() -> None:
    """`betting.pairwise` (numpy's halves, leaves summed by np.sum) is np.sum bit for bit, on
    runs of every size around the halving points and rows of widely scaled values."""
    from calipers.stats.betting import pairwise

    rng = np.random.default_rng(9)
    for n in (1, 7, 8, 127, 128, 129, 1000, 8192, 8193, 20_000, 131_073, 500_000):
        x = rng.normal(size=(3, n)) * 10.0 ** rng.integers(-8, 8, size=(3, n))
        for leaf in (128, 1000, 8192):
            got = pairwise(lambda a, b, x=x: np.sum(x[:, a:b], axis=1), 0, n, leaf)
            assert np.array_equal(got, np.sum(x, axis=1)), (n, leaf)


def test_one_candidates_capitals_by_leaves_are_each_horizons_pass() -> None:
    """`_log_capitals_at` (the horizons' rows at once, leaf by leaf, the cap skipped in the rows
    below it) gives each row what `_log_capital` gives it alone, bit for bit, with and without
    stakes, on either side, capped or not."""
    from calipers.stats import betting

    rng = np.random.default_rng(2)
    z = rng.choice([0.0, 0.5, 1.0], size=70_000, p=[0.05, 0.9, 0.05])
    z[::7] = rng.random(z[::7].size)
    var = betting._plug_in(z)
    lams = np.vstack([betting._bets(z, 0.05, "sequence", h, var) for h in (16, 128, 8192)])
    most = lams.max(axis=1)
    stake = rng.integers(1, 4, z.size) / 3.0
    for m in (0.0, 0.2, 0.4999, 0.5, 0.77, 1.0):
        for up in (True, False):
            for st in (None, stake):
                got = betting._log_capitals_at(z, lams, st, m, up=up, c=0.9, most=most)
                for row in range(3):
                    want = betting._log_capital(z, lams[row], st, np.array([m]), up=up, c=0.9,
                                                most=float(most[row]))  # fmt: skip
                    assert got[row] == want[0], (m, up, st is None, row)


def test_two_threads_give_one_threads_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate's capitals over many values, the halves summed on two threads, are the ones
    one thread sums (the same halves, added in the same order): the same ends, bit for bit. A
    forked process starts its own worker (it inherits none)."""
    import os

    from calipers.stats import betting

    rng = np.random.default_rng(6)
    x = rng.choice([-1.0, 0.0, 1.0], size=60_000, p=[0.05, 0.9, 0.05])
    kw: dict[str, Any] = {
        "bounds": (-1.0, 1.0),
        "schedule": "sequence",
        "horizon": (16, 128, 1024, 8192),
        "truncation": 0.9,
        "null_value": 0.0,
    }
    monkeypatch.setattr(betting, "FINDER_CELLS", 0)  # the root finder, one candidate a step
    monkeypatch.setattr(betting, "PARALLEL_VALUES", 10_000)
    two = betting_interval(x, **kw)
    monkeypatch.setattr(betting, "PARALLEL_VALUES", 10**12)
    one = betting_interval(x, **kw)
    assert two == one
    made = betting._pool()
    monkeypatch.setattr(os, "getpid", lambda: -1)
    assert betting._pool() is not made


def test_a_capital_past_a_doubles_range_gives_p_zero_not_an_overflow() -> None:
    """200,000 values near 0.95 against a null of 0: the capital at the null is e^(tens of
    thousands), past a double; the p-value is its reciprocal, 0 to a double, and the interval is
    the one computed without the test."""
    x = np.random.default_rng(0).uniform(0.9, 1.0, 200_000)
    tested = betting_interval(x, bounds=(0.0, 1.0), null_value=0.0)
    plain = betting_interval(x, bounds=(0.0, 1.0))
    assert tested.p_value == 0.0 and plain.p_value == 1.0
    assert (tested.low, tested.high) == (plain.low, plain.high)
