"""Distribution-free intervals for a bounded mean: the hedged-capital betting interval of
Waudby-Smith & Ramdas (2024, JRSS-B, "Estimating means of bounded random variables by betting").

For values in known bounds [a, b], scaled to [0, 1], and a candidate mean m, two gamblers bet on
the values one after another: K⁺(m) = Π(1 + λᵢ⁺(xᵢ − m)) gains when the mean is above m,
K⁻(m) = Π(1 − λᵢ⁻(xᵢ − m)) when it is below. Each bet λᵢ is chosen from the values before xᵢ
only (predictable), and truncated so that the capital stays positive (λ⁺ ≤ c/m, λ⁻ ≤ c/(1 − m)).
If m is the true mean each capital is a nonnegative martingale with expectation 1, so by Markov's
(Ville's) inequality P(θK⁺ + (1 − θ)K⁻ ≥ 1/α) ≤ α, and the interval

    {m : θK⁺(m) < 1/α  and  (1 − θ)K⁻(m) < 1/α}

covers the mean with probability ≥ 1 − α for EVERY distribution on [a, b] at EVERY n — no normal
approximation, no assumption on the shape. K⁺ falls and K⁻ rises with m, so the set is an interval
and each end is one monotone root, found by a bracketing root finder (scipy's Chandrupatla steps,
`calipers.stats.chandrupatla`).

Bets. `schedule="interval"` (a fixed n, WSR §5: λᵢ = √(2 log(2/α)/(n σ̂²ᵢ₋₁))) gives the
narrowest interval for one look at n values; `schedule="sequence"` (λᵢ = √(2 log(2/α)/(σ̂²ᵢ₋₁ i
log(1 + i))), WSR Theorem 3) gives a confidence *sequence*, valid at every n at once — the one the
`ville` package computes, against which this module is tested. σ̂² and μ̂ are WSR's predictable
plug-ins: μ̂ᵢ = (½ + Σ_{j≤i} xⱼ)/(i + 1), σ̂²ᵢ = (¼ + Σ_{j≤i}(xⱼ − μ̂ⱼ)²)/(i + 1).

A sequence with a `horizon` h fixed before the data bets λᵢ = √(2 log(2/α)/(h σ̂²ᵢ₋₁)) — the
fixed-n bets tuned at h, still predictable, so the capital is a martingale at every n and the
sequence is valid at every n; it is narrowest near h (`calipers.stats.sequential`: tuned at half
the planned N, it showed a gain twice the detectable effect at a mean 0.23–0.30 of N where WSR
Theorem 3's bets took 0.34–0.63, benchmarks/sequential_bets.py).
Several horizons average their capitals (an average of e-values is an e-value): a mixture that
needs no N.

Units and weights. The values are the independent units (a sample's epoch mean, a group's mean);
a unit of weight w bets w/max(w) of the stake, which tests "every unit has mean m" and so the
weighted mean Σwx/Σw (equal weights — calipers' estimand with the default clustering — are the
plain case).

Order. The capital depends on the order the values are bet on; the interval is valid for any order
fixed before seeing the values. `orders` > 1 averages the capitals of that many seeded random
orders (an average of e-values is an e-value), which makes the bounds depend less on one order.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats.chandrupatla import bracket_root

FloatArray = npt.NDArray[np.float64]
Schedule = Literal["interval", "sequence"]

THETA = 0.5  # the share of the stake on "above m": symmetric
# c in λ ≤ c/m (WSR use ½ and ¾): each bet risks at most c of the capital. ¾ gave intervals 9–13%
# narrower than ½ at 10–30 units on continuous scores, the same from 300 (any c < 1 is valid).
TRUNCATION = 0.75
BISECTION_STEPS = 60  # 2⁻⁶⁰ of the scale: far below any reported digit
MATRIX_CELLS = 4_000_000  # values × candidates evaluated in one matrix


@dataclass(frozen=True)
class BettingInterval:
    """A betting interval for a bounded mean, on the values' own scale."""

    estimate: float
    low: float
    high: float
    bounds: tuple[float, float]
    confidence_level: float
    schedule: str
    orders: int
    seed: int | None  # the seed of the random orders (None: the values' own order)
    p_value: float  # min(1, 1/max capital at the null value given), a valid p-value
    n_units: int
    horizons: tuple[int, ...] | None = None  # a sequence's horizons (None: WSR Theorem 3 bets)


def _plug_in(z: FloatArray) -> FloatArray:
    """σ̂²ᵢ₋₁ for each i: the variance estimate from the values before the i-th."""
    i = np.arange(1, z.size + 1, dtype=np.float64)
    mu = (0.5 + np.cumsum(z)) / (i + 1)
    var = (0.25 + np.cumsum((z - mu) ** 2)) / (i + 1)
    return np.concatenate(([0.25], var[:-1]))


def _bets(
    z: FloatArray,
    alpha: float,
    schedule: str,
    horizon: int | None = None,
    var_prev: FloatArray | None = None,
) -> FloatArray:
    """λᵢ for the values z; `var_prev`: `_plug_in(z)` where the caller has it (it does not
    depend on the horizon: one for every horizon of a mixture)."""
    if var_prev is None:
        var_prev = _plug_in(z)
    n = z.size
    if horizon is not None:  # a sequence tuned at a horizon fixed before the data
        return np.sqrt(2.0 * math.log(2.0 / alpha) / (horizon * var_prev))
    if schedule == "interval":
        return np.sqrt(2.0 * math.log(2.0 / alpha) / (n * var_prev))
    i = np.arange(1, n + 1, dtype=np.float64)
    return np.sqrt(2.0 * math.log(2.0 / alpha) / (var_prev * i * np.log1p(i)))


def _log_capital(
    z: FloatArray,
    lam: FloatArray,
    stake: FloatArray | None,
    m: FloatArray,
    *,
    up: bool,
    c: float,
    most: float = math.inf,
) -> FloatArray:
    """log K⁺(m) (up) or log K⁻(m) for each candidate m (1-D), over the values z: the candidates
    in blocks of rows of one matrix (values × candidates within ~4M cells). `most`: the largest
    bet (max λ) — where it is below a candidate's cap the cap changes no bet, and the minimum is
    skipped (the same products: a root finder's evaluation is then one pass fewer)."""
    out = np.empty(m.size)
    with np.errstate(divide="ignore"):
        cap = c / (m if up else 1.0 - m)
    if m.size == 1:  # the root finder's case: one pass, in place, no matrix
        step = (z - m[0]) if up else (m[0] - z)
        if stake is None and most <= cap[0]:
            step *= lam
        else:
            bet = np.minimum(lam, cap[0])
            if stake is not None:
                bet *= stake
            step *= bet
        out[0] = np.sum(np.log1p(step, out=step))
        return out
    block = max(1, MATRIX_CELLS // max(z.size, 1))
    for start in range(0, m.size, block):
        mj = m[start : start + block, None]
        step = (z[None, :] - mj) if up else (mj - z[None, :])
        caps = cap[start : start + block, None]
        if stake is None and most <= float(caps.min()):
            step *= lam[None, :]
        else:
            bet = np.minimum(lam[None, :], caps)
            if stake is not None:  # a stake of 1 changes no bet
                bet *= stake[None, :]
            step *= bet
        out[start : start + block] = np.sum(np.log1p(step, out=step), axis=1)
    return out


# np.sum's pairwise summation, leaf by leaf. numpy sums a contiguous run of n values by halves
# (the first half n/2 rounded down to a multiple of 8) down to runs of at most 128; `pairwise`
# takes the same halves down to runs of at most `leaf`, computed there by `np.sum` — so the
# total is np.sum's over the whole run, bit for bit (tests/test_betting.py), while the terms of
# a run are made in a buffer that stays in the cache: over 500,000 units × 5 horizons the
# terms of one candidate were ~4 passes over 20 MB, most of an evaluation's time.
PAIRWISE_LEAF = 8_192


def pairwise(leaf_sums: Callable[[int, int], FloatArray], start: int, n: int,
             leaf: int = PAIRWISE_LEAF) -> FloatArray:  # fmt: skip
    """np.sum(terms[..., start:start + n], axis=-1) where `leaf_sums(a, b)` gives
    np.sum(terms[..., a:b], axis=-1) of a run of at most `leaf` (≥ 128) terms."""
    if n <= leaf:
        return leaf_sums(start, start + n)
    half = n // 2
    half -= half % 8
    left = pairwise(leaf_sums, start, half, leaf)
    return left + pairwise(leaf_sums, start + half, n - half, leaf)


def _log_capitals_at(
    z: FloatArray,
    lams: FloatArray,
    stake: FloatArray | None,
    m: float,
    *,
    up: bool,
    c: float,
    most: FloatArray,
) -> FloatArray:
    """`_log_capital` at one candidate m for each row of bets `lams` (horizons × values) on the
    same values: the same products, log1p and pairwise sum of each row (`pairwise`), made run
    by run in one buffer. `most`: each row's largest bet (the cap is skipped in the rows where
    it changes none: min(λ, cap) is λ)."""
    point = np.float64(m)
    with np.errstate(divide="ignore"):
        cap = c / (point if up else 1.0 - point)
    rows = lams.shape[0]
    leaf = PAIRWISE_LEAF
    # the first `capped` rows take the minimum with the cap, the others have every bet below it
    # (min(λ, cap) is λ there): a mixture's short horizons bet more than its long ones
    needs = most > cap
    capped = int(np.argmin(needs)) if not needs.all() else rows
    if needs[capped:].any():
        capped = rows

    def leaf_sums_in(
        buffer: FloatArray, step_buffer: FloatArray
    ) -> Callable[[int, int], FloatArray]:
        def leaf_sums(a: int, b: int) -> FloatArray:
            step = step_buffer[: b - a]
            if up:
                np.subtract(z[a:b], point, out=step)
            else:
                np.subtract(point, z[a:b], out=step)
            out = buffer[:, : b - a]
            if capped:
                np.minimum(lams[:capped, a:b], cap, out=out[:capped])
            if capped < rows:
                if stake is None:
                    np.multiply(lams[capped:, a:b], step, out=out[capped:])
                else:
                    np.multiply(lams[capped:, a:b], stake[a:b], out=out[capped:])
            if stake is not None:
                if capped:
                    np.multiply(out[:capped], stake[a:b], out=out[:capped])
                np.multiply(out, step, out=out)
            elif capped:
                np.multiply(out[:capped], step, out=out[:capped])
            return np.asarray(np.sum(np.log1p(out, out=out), axis=1), dtype=np.float64)

        return leaf_sums

    def sums(start: int, n: int) -> FloatArray:
        return pairwise(leaf_sums_in(np.empty((rows, leaf)), np.empty(leaf)), start, n, leaf)

    n = z.size
    pool = _pool() if n >= PARALLEL_VALUES else None
    if pool is None:
        return sums(0, n)
    # numpy's first half in a second thread (numpy lets go of the interpreter inside each
    # product and logarithm), the second here: the same two sums, added as np.sum adds them
    half = n // 2
    half -= half % 8
    first = pool.submit(sums, 0, half)
    second = sums(half, n - half)
    return first.result() + second


# Over many values one candidate's capitals are computed on two threads where there are two
# processors: 500,000 units × 5 horizons are 2.5 million logarithms an evaluation, ~35 of them.
PARALLEL_VALUES = 100_000
_POOLS: dict[int, ThreadPoolExecutor | None] = {}


def _pool() -> ThreadPoolExecutor | None:
    """One worker thread, started when first needed (again in a forked process, which has no
    threads); None on a single processor."""
    pid = os.getpid()
    if pid not in _POOLS:
        _POOLS.clear()
        try:
            processors = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            processors = os.cpu_count() or 1
        _POOLS[pid] = ThreadPoolExecutor(max_workers=1) if processors > 1 else None
    return _POOLS[pid]


def _average_log(logs: list[FloatArray]) -> FloatArray:
    """log of the mean of the capitals (log-sum-exp over the orders)."""
    stacked = np.vstack(logs)
    top = stacked.max(axis=0)
    return np.asarray(top + np.log(np.mean(np.exp(stacked - top), axis=0)), dtype=np.float64)


def betting_interval(
    values: npt.ArrayLike,
    *,
    bounds: tuple[float, float],
    weights: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
    schedule: Schedule = "interval",
    orders: int = 1,
    rng: int | None = None,
    null_value: float | None = None,
    truncation: float = TRUNCATION,
    horizon: int | Sequence[int] | None = None,
    precision: float = 2.0**-BISECTION_STEPS,
) -> BettingInterval:
    """The hedged-capital interval for the (weighted) mean of `values`, which must lie in
    `bounds`; its ends found to `precision` of the scale's width (conservatively: the end
    reported is outside the interval by at most that). `null_value` (on the values' scale): the
    p-value reported is of "the mean is null_value" (None: no test, p = 1). `horizon` (schedule
    "sequence" only): the bets tuned at that many units, or the average capital over several
    horizons (None: WSR Theorem 3)."""
    lo, hi = float(bounds[0]), float(bounds[1])
    if not lo < hi:
        raise InputError(f"bounds must satisfy low < high, got {bounds}", parameters=["bounds"])
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
        raise InputError("values must be a non-empty one-dimensional array of finite numbers")
    outside = (x < lo) | (x > hi)
    if outside.any():
        first = int(np.flatnonzero(outside)[0])
        raise InputError(
            f"{int(outside.sum())} value(s) lie outside the declared bounds [{lo:g}, {hi:g}] "
            f"(the first: {x[first]:g})",
            hint="Declare the metric's true bounds (--bounds LOW,HIGH), or none for an "
            "unbounded metric.",
            parameters=["bounds"],
        )
    if schedule not in ("interval", "sequence"):
        raise InputError(f"unknown schedule '{schedule}'", parameters=["schedule"])
    if not 0.0 < truncation < 1.0:
        raise InputError("truncation must lie in (0, 1)", parameters=["truncation"])
    if orders < 1:
        raise InputError("orders must be at least 1", parameters=["orders"])
    horizons = check_horizons(horizon)
    if horizons is not None and schedule != "sequence":
        raise InputError(
            "a horizon tunes a confidence sequence: use schedule='sequence'",
            hint="With schedule='interval' the bets are tuned at the number of values itself.",
            parameters=["horizon", "schedule"],
        )
    alpha = 1.0 - confidence_level
    z = (x - lo) / (hi - lo)
    if weights is None:
        w = np.ones_like(z)
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != z.shape or np.any(w <= 0) or not np.all(np.isfinite(w)):
            raise InputError("weights must be positive, one per value")
    estimate = float(w @ z / w.sum())
    stake = w / w.max()
    perms: list[npt.NDArray[np.intp]] = [np.arange(z.size)]
    if orders > 1:
        gen = np.random.default_rng(rng)
        perms = [gen.permutation(z.size) for _ in range(orders)]
    equal = bool(np.all(stake == 1.0))  # equal weights: no stake to multiply by
    orders_made = [(z[p], None if equal else stake[p]) for p in perms]
    plug_ins = [_plug_in(zp) for zp, _ in orders_made]
    streams = [
        (zp, lam, st, float(lam.max()))
        for (zp, st), var_prev in zip(orders_made, plug_ins, strict=True)
        for h in (horizons or (None,))
        for lam in (_bets(zp, alpha, schedule, h, var_prev),)
    ]
    # the bets of each order as one matrix (horizons × values): one candidate's capitals are
    # then computed for every horizon at once, block by block (`_log_capitals_at`)
    width = len(horizons or (None,))
    stacked = [
        (zp, np.vstack([lam for _, lam, _, _ in streams[k * width : (k + 1) * width]]), st,
         np.array([most for _, _, _, most in streams[k * width : (k + 1) * width]]))
        for k, (zp, st) in enumerate(orders_made)
    ]  # fmt: skip

    def log_k(m: FloatArray, *, up: bool) -> FloatArray:
        if m.size <= 2 and z.size > PAIRWISE_LEAF:  # a candidate or two over many values
            each = [
                np.concatenate([
                    _log_capitals_at(zp, lams, st, float(mj), up=up, c=truncation, most=most)
                    for zp, lams, st, most in stacked
                ])
                for mj in m
            ]  # fmt: skip
            return _average_log(list(np.stack(each, axis=1)))
        return _average_log(
            [
                _log_capital(s, lam, st, m, up=up, c=truncation, most=most)
                for s, lam, st, most in streams
            ]
        )

    threshold = math.log(1.0 / alpha)
    # θK⁺ falls with m: the lower end is where it crosses 1/α; (1 − θ)K⁻ rises: the upper end.
    low = _root(
        lambda m: math.log(THETA) + log_k(m, up=True) - threshold,
        estimate,
        lower=True,
        precision=precision,
        cells=z.size * len(streams),
    )
    high = _root(
        lambda m: math.log(1 - THETA) + log_k(m, up=False) - threshold,
        estimate,
        lower=False,
        precision=precision,
        cells=z.size * len(streams),
    )
    p_value = 1.0
    if null_value is not None and lo <= null_value <= hi:
        m0 = np.array([(null_value - lo) / (hi - lo)])
        up, down = float(log_k(m0, up=True)[0]), float(log_k(m0, up=False)[0])
        try:
            capital = max(THETA * math.exp(up), (1 - THETA) * math.exp(down))
            p_value = min(1.0, 1.0 / capital) if capital > 0 else 1.0
        except OverflowError:  # a capital past a double's range (many values, a null far off)
            p_value = math.exp(-max(math.log(THETA) + up, math.log(1 - THETA) + down))
    scale = hi - lo
    return BettingInterval(
        estimate=lo + scale * estimate,
        low=lo + scale * low,
        high=lo + scale * high,
        bounds=(lo, hi),
        confidence_level=confidence_level,
        schedule=schedule,
        orders=len(perms),
        seed=rng if orders > 1 else None,
        p_value=p_value,
        n_units=int(z.size),
        horizons=horizons,
    )


def check_horizons(horizon: int | Sequence[int] | None) -> tuple[int, ...] | None:
    """The horizons as a tuple of positive integers (None: none)."""
    if horizon is None:
        return None
    values = (horizon,) if isinstance(horizon, int | np.integer) else tuple(horizon)
    if not values or any(
        isinstance(h, bool) or not isinstance(h, int | np.integer) or h < 1 for h in values
    ):
        raise InputError(
            f"a horizon must be a positive whole number of units, got {horizon!r}",
            hint="Tune the sequence at the units you expect to need (about half the planned N).",
            parameters=["horizon"],
        )
    return tuple(int(h) for h in values)


def _root(
    excess: Callable[[FloatArray], FloatArray],
    estimate: float,
    *,
    lower: bool,
    precision: float = 2.0**-BISECTION_STEPS,
    cells: int = 0,
) -> float:
    """One end of the interval: `excess(m)` is < 0 inside the interval and monotone in m, so the
    lower end is searched on [0, estimate] and the upper one on [estimate, 1]; the point returned
    is the last one found outside (outside by at most `precision`, or by a few units in the last
    place where that is finer than a double resolves). `cells`: values × streams an evaluation
    of `excess` passes over, which picks the search."""
    far = 0.0 if lower else 1.0
    ends = excess(np.array([far, estimate]))
    if ends[0] < 0:
        return far
    if not ends[1] < 0:  # only for pathological orders: the interval is the estimate
        return estimate
    if cells > FINDER_CELLS:
        return _found(excess, far, estimate, precision, (float(ends[0]), float(ends[1])))
    return _multisection(excess, far, estimate, precision)


# Two searches for one end, equal to a few units in the last place (tests/test_betting.py). A
# multisection evaluates SECTIONS candidates a round in one matrix — 12 rounds to 2⁻⁶⁰ — cheap
# while the values are few; Chandrupatla's bracketing finder (`calipers.stats.chandrupatla`,
# scipy's steps) evaluates one candidate a step, 12–20 steps, and wins once an evaluation is a
# long pass: over 500,000 units × 5 horizons an end took 8 s by multisection, 0.3 s by the
# finder (issue 36's `watch` on an undecided pair).
SECTIONS = 31
FINDER_CELLS = 200_000


def _multisection(
    excess: Callable[[FloatArray], FloatArray], far: float, estimate: float, precision: float
) -> float:
    out, ins = far, estimate
    while abs(ins - out) > precision:
        grid = out + (ins - out) * np.arange(1, SECTIONS + 1) / (SECTIONS + 1)
        inside = excess(grid) < 0
        first = int(np.argmax(inside)) if inside.any() else SECTIONS
        # the candidates run from the outside end towards the estimate: the last outside one and
        # the first inside one bracket the end
        new_out = out if first == 0 else float(grid[first - 1])
        new_ins = ins if first == SECTIONS else float(grid[first])
        if (new_out, new_ins) == (out, ins):
            break
        out, ins = new_out, new_ins
    return out


def _found(
    excess: Callable[[FloatArray], FloatArray],
    far: float,
    estimate: float,
    precision: float,
    ends: tuple[float, float] | None = None,
) -> float:
    """The end by Chandrupatla's finder; `ends`: excess at (far, estimate), already computed."""

    def signed(m: float) -> float:
        # excess ≥ 0 is outside: an exact 0 becomes the smallest positive number, so that the
        # bracket's ends always differ in sign as the finder needs
        return _signed(float(excess(np.array([m]))[0]))

    a, b = sorted((far, estimate))
    fa = fb = None
    if ends is not None:  # the same numbers the finder's first two evaluations would give
        f_far, f_estimate = _signed(ends[0]), _signed(ends[1])
        fa, fb = (f_far, f_estimate) if a == far else (f_estimate, f_far)
    xl, xr, fl, _ = bracket_root(signed, a, b, fa=fa, fb=fb, xatol=precision, maxiter=200)
    return xl if fl >= 0 else xr


def _signed(value: float) -> float:
    return max(value, _TINY) if value >= 0 else value


_TINY = float(np.finfo(np.float64).tiny)


def reaches_rows(
    z: FloatArray, stake: FloatArray, zero: float, alpha: float, sign: float
) -> npt.NDArray[np.bool_]:
    """For each row of values z in [0, 1] (the units of one resample, bet on in their order with
    `stake`), whether the fixed-n bettor against the mean `zero` in the direction `sign` (> 0:
    the mean is above it) ends with a capital of at least 1/α (with the other side's half of
    the stake, θ = ½): the betting interval then excludes `zero` on that side."""
    threshold = math.log(1.0 / alpha) - math.log(THETA)
    lam = np.minimum(_bets_rows(z, alpha), TRUNCATION / (zero if sign > 0 else 1 - zero))
    step = (z - zero) if sign > 0 else (zero - z)
    return np.asarray(np.sum(np.log1p(lam * stake * step), axis=1) >= threshold)


def _bets_rows(z: FloatArray, alpha: float) -> FloatArray:
    """`_bets(…, "interval")` for each row of z (a resample of n values)."""
    n = z.shape[1]
    i = np.arange(1, n + 1, dtype=np.float64)
    mu = (0.5 + np.cumsum(z, axis=1)) / (i + 1)
    var = (0.25 + np.cumsum((z - mu) ** 2, axis=1)) / (i + 1)
    prev = np.concatenate((np.full((z.shape[0], 1), 0.25), var[:, :-1]), axis=1)
    return np.asarray(np.sqrt(2.0 * math.log(2.0 / alpha) / (n * prev)), dtype=np.float64)
