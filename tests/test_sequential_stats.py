"""The sequential numerics (`calipers.stats.sequential`, `calipers.stats.group_sequential`) against
independent references: the `ville` package for the betting e-process, its confidence sequence
and the beta-binomial mixture; exact enumeration for the validity of every bet schedule and of the
discordant-pairs test; scipy's multivariate normal and published tables for the group-sequential
boundaries."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest
import ville
from scipy import stats

from calipers.errors import InputError
from calipers.stats.group_sequential import (
    constant_bounds,
    crossing_probabilities,
    group_sequential_bounds,
    spending_function,
)
from calipers.stats.sequence_trace import interval_trace
from calipers.stats.sequential import (
    HORIZON_MIXTURE,
    BettingEProcess,
    CapitalGrid,
    DiscordantTest,
    confidence_sequence,
    discordant_log_evalues,
    log_capital_paths,
)

# --- the betting e-process --------------------------------------------------------------------


@pytest.mark.parametrize(("seed", "n"), [(1, 20), (2, 300), (3, 2000)])
@pytest.mark.parametrize(("bounds", "null"), [((0.0, 1.0), 0.3), ((1.0, 5.0), 2.3), ((-1, 1), 0.0)])
def test_the_e_process_equals_villes_betting_test(
    seed: int, n: int, bounds: tuple[float, float], null: float
) -> None:
    rng = np.random.default_rng(seed)
    x = bounds[0] + (bounds[1] - bounds[0]) * rng.beta(2, 5, n)
    ours = BettingEProcess(bounds=bounds, null=null, alpha=0.05, truncation=0.5)
    for value in x:
        ours.update(value)
    up = ville.BettingTest(null, bounds=bounds, alternative="greater", alpha=0.05, c=0.5).fit(x)
    down = ville.BettingTest(null, bounds=bounds, alternative="less", alpha=0.05, c=0.5).fit(x)
    assert ours.n == n
    assert ours.log_capital_above == pytest.approx(up.log_e_values_[-1], rel=1e-10, abs=1e-10)
    assert ours.log_capital_below == pytest.approx(down.log_e_values_[-1], rel=1e-10, abs=1e-10)
    # the anytime p-value is ville's running one
    assert ours.p_value_above == pytest.approx(up.p_values_[-1], rel=1e-9)
    assert ours.p_value_below == pytest.approx(down.p_values_[-1], rel=1e-9)


@pytest.mark.parametrize("horizon", [None, 50, (16, 64, 256)])
def test_update_many_is_repeated_update(horizon: int | tuple[int, ...] | None) -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, 500)
    one = BettingEProcess(bounds=(0, 1), null=0.45, alpha=0.01, horizon=horizon)
    many = BettingEProcess(bounds=(0, 1), null=0.45, alpha=0.01, horizon=horizon)
    for value in x:
        one.update(value)
    many.update_many(x[:7])
    many.update_many(x[7:300])
    many.update_many(x[300:])
    assert many.n == one.n == 500
    assert many.log_capital_above == pytest.approx(one.log_capital_above, abs=1e-9)
    assert many.log_capital_below == pytest.approx(one.log_capital_below, abs=1e-9)
    assert many.p_value_above == pytest.approx(one.p_value_above, rel=1e-9)
    paths = log_capital_paths(x, 0.45, alpha=0.01, truncation=0.9, horizon=horizon)
    assert paths[0][0, -1] == pytest.approx(one.log_capital_above, abs=1e-9)


def _reference_capital(x: np.ndarray, m: float, alpha: float, horizon: int, c: float) -> float:
    """log K⁺ by the formula, written out: λᵢ = √(2 log(2/α)/(h σ̂²ᵢ₋₁)), the plug-ins of WSR."""
    log_k, total, dev, var = 0.0, 0.0, 0.0, 0.25
    for i, z in enumerate(x, 1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (horizon * var)), c / m)
        log_k += math.log(1 + lam * (z - m))
        total += z
        mu = (0.5 + total) / (i + 1)
        dev += (z - mu) ** 2
        var = (0.25 + dev) / (i + 1)
    return log_k


def test_horizon_bets_follow_the_formula() -> None:
    x = np.random.default_rng(9).uniform(0, 1, 400)
    made = BettingEProcess(bounds=(0, 1), null=0.4, alpha=0.02, horizon=120, truncation=0.8)
    made.update_many(x)
    assert made.log_capital_above == pytest.approx(_reference_capital(x, 0.4, 0.02, 120, 0.8))
    # a mixture of horizons is the log of the average capital
    mix = BettingEProcess(bounds=(0, 1), null=0.4, alpha=0.02, horizon=(30, 120), truncation=0.8)
    mix.update_many(x)
    each = [_reference_capital(x, 0.4, 0.02, h, 0.8) for h in (30, 120)]
    assert mix.log_capital_above == pytest.approx(np.log(np.mean(np.exp(each))))


@pytest.mark.parametrize("horizon", [None, 4, HORIZON_MIXTURE])
@pytest.mark.parametrize("m", [0.2, 0.5, 0.8])
def test_every_schedule_holds_villes_bound_exactly(
    horizon: int | tuple[int, ...] | None, m: float
) -> None:
    """Every sequence of 14 pass/fail values (the law that puts the most weight on the bounds):
    P(K⁺ reaches 1/α at some n ≤ 14) ≤ α when the mean is m, exactly."""
    n, alpha = 14, 0.1
    seqs = np.array(list(itertools.product((0.0, 1.0), repeat=n)))
    up, down = log_capital_paths(seqs, m, alpha=alpha, truncation=0.9, horizon=horizon)
    ones = seqs.sum(axis=1)
    prob = m**ones * (1 - m) ** (n - ones)
    for path in (up, down):
        crossed = (path >= math.log(1 / alpha)).any(axis=1)
        assert prob[crossed].sum() <= alpha + 1e-12
    # and the test is not vacuous: some sequences reject on one side or the other
    either = (np.maximum(up, down) >= math.log(1 / alpha)).any(axis=1)
    assert either.any()


def test_a_value_outside_the_bounds_is_an_error() -> None:
    with pytest.raises(InputError, match="outside the declared bounds"):
        BettingEProcess(bounds=(0, 1), null=0.5).update(1.2)
    with pytest.raises(InputError, match="outside the bounds"):
        BettingEProcess(bounds=(0, 1), null=1.5)
    with pytest.raises(InputError, match="horizon"):
        BettingEProcess(bounds=(0, 1), null=0.5, horizon=0)


def test_an_update_costs_microseconds() -> None:
    x = np.random.default_rng(2).uniform(0, 1, 5000)
    process = BettingEProcess(bounds=(0, 1), null=0.5, horizon=HORIZON_MIXTURE)
    start = time.perf_counter()
    for value in x:
        process.update(value)
    per = (time.perf_counter() - start) / x.size
    assert per < 2e-4  # measured ~15 µs with seven horizons; the look budget is 1 ms a unit


# --- the confidence sequence ------------------------------------------------------------------


@pytest.mark.parametrize(("seed", "n"), [(1, 10), (2, 200), (3, 600)])
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-1.0, 1.0)])
def test_the_confidence_sequence_equals_villes(
    seed: int, n: int, bounds: tuple[float, float]
) -> None:
    rng = np.random.default_rng(seed)
    x = bounds[0] + (bounds[1] - bounds[0]) * rng.beta(2, 5, n)
    grid = 20_001
    ref = ville.BettingCS(bounds=bounds, alpha=0.05, c=0.5, theta=0.5, grid=grid, intersect=False)
    ref_low, ref_high = ref.fit(x).interval()
    ours = confidence_sequence(x, bounds=bounds, confidence_level=0.95, truncation=0.5)
    step = (bounds[1] - bounds[0]) / (grid - 1)
    assert ref_low - 1e-12 <= ours.low <= ref_low + 1.5 * step
    assert ref_high - 1.5 * step <= ours.high <= ref_high + 1e-12


@pytest.mark.parametrize("seed", [5, 6])
def test_the_grid_interval_is_villes_at_every_n(seed: int) -> None:
    """ville evaluates the capital on a grid too, and widens to the neighbouring grid points:
    on the same grid the two agree exactly after every value."""
    rng = np.random.default_rng(seed)
    x = 1 + 4 * rng.beta(5, 2, 400)
    grid = CapitalGrid(bounds=(1, 5), alpha=0.05, truncation=0.5, points=2001)
    ref = ville.BettingCS(bounds=(1, 5), alpha=0.05, c=0.5, grid=2001, intersect=False).fit(x)
    for i, value in enumerate(x):
        grid.update(value)
        low, high = grid.interval()
        assert low == pytest.approx(ref.lower_[i], abs=1e-12)
        assert high == pytest.approx(ref.upper_[i], abs=1e-12)


def test_the_trace_is_the_grid_value_by_value() -> None:
    rng = np.random.default_rng(7)
    x = rng.uniform(-0.4, 0.8, 1200)
    at = [1, 2, 17, 599, 600, 1100, 1200]
    for horizon in (None, 800, HORIZON_MIXTURE):
        grid = CapitalGrid(bounds=(-1, 1), alpha=0.01, horizon=horizon, extra=(0.0, -0.05))
        stepwise = []
        for i, value in enumerate(x, 1):
            grid.update(value)
            if i in at:
                stepwise.append(grid.interval())
        lows, highs = interval_trace(
            x, at, bounds=(-1, 1), alpha=0.01, horizon=horizon, extra=(0.0, -0.05)
        )
        assert np.allclose(np.c_[lows, highs], stepwise, atol=1e-12)


def test_the_horizon_sequence_holds_the_grid_to_its_exact_ends() -> None:
    rng = np.random.default_rng(8)
    x = rng.uniform(0, 1, 700) ** 2
    exact = confidence_sequence(x, bounds=(0, 1), confidence_level=0.98, horizon=HORIZON_MIXTURE)
    grid = CapitalGrid(bounds=(0, 1), alpha=0.02, horizon=HORIZON_MIXTURE, points=4001)
    for value in x:
        grid.update(value)
    low, high = grid.interval()
    assert exact.horizons == HORIZON_MIXTURE
    assert low <= exact.low <= low + 2 / 4000
    assert high - 2 / 4000 <= exact.high <= high


# --- discordant pairs -------------------------------------------------------------------------


@pytest.mark.parametrize("a", [0.5, 1.0, 4.0])
def test_the_two_sided_mixture_is_villes_bernoulli_test(a: float) -> None:
    rng = np.random.default_rng(11)
    signs = rng.choice([-1, 0, 1], size=400, p=[0.15, 0.6, 0.25])
    test = DiscordantTest(prior=a)
    ups, downs = [], []
    for s in signs:
        test.update(int(s))
        if s != 0:
            ups.append(test.log_e_value_above)
            downs.append(test.log_e_value_below)
    discordant = (signs[signs != 0] > 0).astype(float)
    ref = ville.BernoulliTest(0.5, prior=(a, a)).fit(discordant)
    two_sided = np.logaddexp(ups, downs) - math.log(2)
    assert np.allclose(two_sided, ref.log_e_values_, atol=1e-9)
    assert test.above == int(discordant.sum()) and test.below == discordant.size - test.above


@pytest.mark.parametrize("p", [0.5, 0.4])
@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_the_discordant_test_is_exact_by_enumeration(p: float, alpha: float) -> None:
    """Every sequence of 18 discordant pairs: the chance that E⁺ reaches 1/α by the 18th is at
    most α when each pair favours the candidate with probability ½ (or less)."""
    n = 18
    seqs = np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.int64)
    b = np.cumsum(seqs, axis=1)
    c = np.arange(1, n + 1) - b
    counts = np.arange(n + 1)
    table, _ = discordant_log_evalues(counts[:, None], counts[None, :])  # E⁺ by (b, c)
    crossed = (table[b, c] >= math.log(1 / alpha)).any(axis=1)
    k = seqs.sum(axis=1)
    prob = p**k * (1 - p) ** (n - k)
    assert 0 < prob[crossed].sum() <= alpha
    # the incremental test agrees with the vectorised one, concordant pairs changing nothing
    test = DiscordantTest()
    for s in (1, 1, 0, -1, 1, 0, 1):
        test.update(s)
    up, down = discordant_log_evalues(4, 1)
    assert test.log_e_value_above == pytest.approx(float(up))
    assert test.log_e_value_below == pytest.approx(float(down))
    many = DiscordantTest()
    many.update_many([1, 1, 0, -1, 1, 0, 1])
    assert many.p_value_above == pytest.approx(test.p_value_above)


# --- group-sequential boundaries --------------------------------------------------------------


def test_obrien_fleming_spending_matches_the_published_table() -> None:
    # Lan–DeMets O'Brien–Fleming-type spending, K = 5 equal looks, two-sided α = 0.05
    # (Jennison & Turnbull 2000; gsDesign sfLDOF and rpact asOF give the same)
    made = group_sequential_bounds(np.arange(1, 6) / 5, alpha=0.05, spending="obrien-fleming")
    assert made == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=1e-3)


def test_classical_boundaries_match_pocock_and_obrien_fleming() -> None:
    # Pocock (1977): K = 5, two-sided α = 0.05 → 2.413; O'Brien & Fleming (1979): C = 2.040
    assert constant_bounds(5, alpha=0.05, shape="pocock") == pytest.approx([2.413] * 5, abs=1e-3)
    obf = constant_bounds(5, alpha=0.05, shape="obrien-fleming")
    assert obf[-1] == pytest.approx(2.040, abs=1e-3)
    assert obf == pytest.approx(obf[-1] * np.sqrt(5 / np.arange(1, 6)))


def _mvn_exit(c: np.ndarray, t: np.ndarray, *, sides: int, drift: float = 0.0) -> np.ndarray:
    """P(crossed by look k) for each k, from the joint normal law, corr √(tᵢ/tⱼ)."""
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    mean = drift * np.sqrt(t)
    out = []
    for k in range(1, t.size + 1):
        law = stats.multivariate_normal(
            mean=mean[:k], cov=cov[:k, :k], abseps=1e-7, releps=1e-7, maxpts=2_000_000
        )
        lower = -c[:k] if sides == 2 else np.full(k, -np.inf)
        stay = law.cdf(c[:k], lower_limit=lower)
        out.append(1 - stay)
    return np.array(out)


@pytest.mark.parametrize("spending", ["obrien-fleming", "pocock"])
@pytest.mark.parametrize("sides", [1, 2])
@pytest.mark.parametrize(
    "fractions", [np.arange(1, 6) / 5, np.array([0.1, 0.35, 0.7, 1.0]), np.array([0.5, 1.0])]
)
def test_the_boundaries_spend_alpha_under_the_multivariate_normal(
    spending: str, sides: int, fractions: np.ndarray
) -> None:
    alpha = 0.05
    c = group_sequential_bounds(fractions, alpha=alpha, spending=spending, sides=sides)  # type: ignore[arg-type]
    spent = sides * spending_function(fractions, alpha=alpha / sides, spending=spending)  # type: ignore[arg-type]
    assert _mvn_exit(c, fractions, sides=sides) == pytest.approx(spent, abs=3e-5)
    # the recursion's own first-crossing probabilities add up to the same
    first = crossing_probabilities(c, fractions, sides=sides)
    assert np.cumsum(first) == pytest.approx(spent, abs=1e-7)


def test_crossing_under_a_drift_is_the_multivariate_normal_power() -> None:
    t = np.arange(1, 6) / 5
    c = group_sequential_bounds(t, alpha=0.05, spending="obrien-fleming")
    power = crossing_probabilities(c, t, sides=1, drift=2.8)  # the upper side at the MDE's drift
    assert np.cumsum(power) == pytest.approx(_mvn_exit(c, t, sides=1, drift=2.8), abs=5e-5)


def test_bad_boundaries_requests_are_errors_that_say_what_to_give() -> None:
    with pytest.raises(InputError, match="increase") as err:
        group_sequential_bounds([0.5, 0.4, 1.0], alpha=0.05)
    assert "share of the planned units" in (err.value.hint or "")
    with pytest.raises(InputError, match="spending"):
        group_sequential_bounds([0.5, 1.0], alpha=0.05, spending="haybittle")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="sides"):
        group_sequential_bounds([0.5, 1.0], alpha=0.05, sides=3)
