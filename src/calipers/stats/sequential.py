"""Anytime-valid evidence for a bounded mean, one value at a time: the betting e-process at a fixed
null, the confidence sequence, its interval on a grid kept up to date in O(grid) per value, and
the exact sequential test of paired pass/fail outcomes on their discordant pairs.

Why a sequence. A fixed-n test looked at after every unit rejects a true null far more often
than α (issue 36: 17–19% at α = 0.05 with a look every 50 of 500 items). A nonnegative
martingale K with K₀ = 1 crosses 1/α at SOME n with probability ≤ α (Ville 1939), so a decision
made when it crosses holds at any stopping time — after every unit, or whenever a person looks.

**The betting e-process** (Waudby-Smith & Ramdas 2024, JRSS-B; `calipers.stats.betting`). For
values in [lo, hi] scaled to z ∈ [0, 1] and a null mean m,

    K⁺ₙ = Πᵢ (1 + λᵢ⁺ (zᵢ − m)),   K⁻ₙ = Πᵢ (1 − λᵢ⁻ (zᵢ − m)),
    λᵢ⁺ = min(λᵢ, c/m),  λᵢ⁻ = min(λᵢ, c/(1 − m)),

with λᵢ chosen from the values before the i-th only. If the mean is ≤ m, K⁺ is a nonnegative
supermartingale: "mean > m" is shown when K⁺ ≥ 1/α' (and "mean < m" by K⁻). The bets:
`horizon=None` takes WSR Theorem 3's predictable plug-in λᵢ = √(2 log(2/α)/(σ̂²ᵢ₋₁ i log(1 + i)))
— the sequence the `ville` package computes; a horizon h takes λᵢ = √(2 log(2/α)/(h σ̂²ᵢ₋₁)),
the fixed-n bets tuned at h units (valid at every n all the same, since h is fixed before the
data); several horizons average their capitals. Measured on paired pass/fail and continuous
scores (benchmarks/sequential_bets.py, docs/sequential.md): tuned at half the planned N the process
showed a gain at a mean 0.23–0.30 N when the effect was twice the fixed-N MDE (α = 0.05), against
0.34–0.63 N for Theorem 3's bets; the mixture over the horizons 16·8ʲ (no N needed) at 0.25–0.33 N.
Where the gains' spread is narrow against the scale every schedule is slower (the bounds cap
every bet: docs/sequential.md, "Where a sequence is slow").

**The confidence sequence** is the set of m neither capital rejects at α/2 each:
`confidence_sequence` (exact ends, by `betting_interval`), `CapitalGrid` (the capitals of a fixed
grid of candidate means updated per value — the interval at any n in O(grid), conservative by one
grid step, as `ville.BettingCS`).

**Discordant pairs** (`DiscordantTest`). Of paired pass/fail outcomes only the pairs where the
runs disagree carry evidence; under "no difference" each favours the candidate with probability
½ whatever the items are. Robbins' (1970) mixture of likelihood ratios over p ~ Beta(a, a)
restricted to p > ½,

    E⁺ = ∫_{p>½} (2p)^b (2(1 − p))^c dπ(p) / π(p > ½)
       = 2^{b+c+1} B(a + b, a + c)/B(a, a) · P(Beta(a + b, a + c) > ½),

(b pairs favour the candidate, c the baseline) is a nonnegative supermartingale whenever p ≤ ½,
so P(sup E⁺ ≥ 1/α) ≤ α exactly, at every n, with no approximation; E⁻ swaps b and c, and
(E⁺ + E⁻)/2 is the two-sided Beta(a, a) mixture (`ville.BernoulliTest`). a = ½ (Krichevsky–
Trofimov) needs no tuning: within ½ log n of the best constant bet in hindsight.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from calipers.errors import InputError
from calipers.stats.betting import (
    BISECTION_STEPS,
    BettingInterval,
    betting_interval,
    check_horizons,
)

FloatArray = npt.NDArray[np.float64]

# c in λ ≤ c/m: each bet risks at most c of the capital. The paired differences of a comparison
# rarely come near their bounds (± the scale's width), so the cap binds on small spreads: 0.9
# stopped 3–12% sooner than 0.75 at twice the MDE on scores, the same on pass/fail
# (benchmarks/sequential_bets.py).
SEQUENCE_TRUNCATION = 0.9
# The horizons of the mixture used when no N is planned: 16 to 65,536 units by factors of 8
# (seven horizons by factors of 4 stopped no sooner in a prototype on continuous scores, N 1,300,
# and cost 40% more a look).
HORIZON_MIXTURE: tuple[int, ...] = tuple(16 * 8**j for j in range(5))
KT_PRIOR = 0.5  # Beta(½, ½): the Krichevsky–Trofimov mixture


def _check_bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InputError(f"bounds must satisfy low < high, got {bounds}", parameters=["bounds"])
    return lo, hi


def _check_alpha(alpha: float) -> float:
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha must lie in (0, 1), got {alpha}", parameters=["alpha"])
    return float(alpha)


def _check_truncation(truncation: float) -> float:
    if not 0.0 < truncation < 1.0:
        raise InputError("truncation must lie in (0, 1)", parameters=["truncation"])
    return float(truncation)


def _scale_factor(alpha: float) -> float:
    return 2.0 * math.log(2.0 / alpha)


def bet_sizes(
    z: FloatArray,
    *,
    alpha: float,
    horizon: int | None,
    start: tuple[int, float, float] = (0, 0.0, 0.0),
) -> FloatArray:
    """λᵢ for each value of each row of z (values scaled to [0, 1], rows × n), before the cap:
    WSR's predictable plug-ins continued from `start` = (values before, their sum, the sum of
    squared deviations); `horizon` None: Theorem 3's schedule, else the bets tuned at it."""
    return bets_from(plug_in(z, start), alpha=alpha, horizon=horizon)


def bet_sizes_each(
    z: FloatArray,
    *,
    alpha: float,
    horizons: Sequence[int | None],
    start: tuple[int, float, float] = (0, 0.0, 0.0),
) -> list[FloatArray]:
    """`bet_sizes` for each horizon, the plug-ins (which do not depend on it) computed once."""
    made = plug_in(z, start)
    return [bets_from(made, alpha=alpha, horizon=h) for h in horizons]


def plug_in(
    z: FloatArray, start: tuple[int, float, float] = (0, 0.0, 0.0)
) -> tuple[FloatArray, FloatArray]:
    """(i, σ̂²ᵢ₋₁) for each value of each row of z: the unit's index and WSR's predictable
    variance from the values before it, continued from `start` (as `bet_sizes`)."""
    n0, sum0, dev0 = start
    rows = np.atleast_2d(z)
    i = n0 + np.arange(1, rows.shape[1] + 1, dtype=np.float64)
    mu = (0.5 + sum0 + np.cumsum(rows, axis=1)) / (i + 1)
    var = (0.25 + dev0 + np.cumsum((rows - mu) ** 2, axis=1)) / (i + 1)
    first = 0.25 if n0 == 0 else (0.25 + dev0) / (n0 + 1)
    prev = np.concatenate((np.full((rows.shape[0], 1), first), var[:, :-1]), axis=1)
    return i, prev


def bets_from(
    made: tuple[FloatArray, FloatArray], *, alpha: float, horizon: int | None
) -> FloatArray:
    """λᵢ from `plug_in`'s (i, σ̂²ᵢ₋₁): Theorem 3's schedule (horizon None) or tuned at it."""
    i, prev = made
    k = _scale_factor(alpha)
    if horizon is None:
        return np.asarray(np.sqrt(k / (prev * i * np.log1p(i))), dtype=np.float64)
    return np.asarray(np.sqrt(k / (horizon * prev)), dtype=np.float64)


def log_capital_paths(
    z: FloatArray,
    m: float,
    *,
    alpha: float,
    truncation: float = SEQUENCE_TRUNCATION,
    horizon: int | Sequence[int] | None = None,
    bets: list[FloatArray] | None = None,
) -> tuple[FloatArray, FloatArray]:
    """log K⁺ₙ(m) and log K⁻ₙ(m) at every n, for each row of z (rows × n, scaled to [0, 1]); with
    several horizons the log of the average capital. `bets`: the uncapped λ per horizon when the
    caller has them (they do not depend on m), to test several nulls on one set of bets."""
    rows = np.atleast_2d(np.asarray(z, dtype=np.float64))
    horizons: tuple[int | None, ...] = check_horizons(horizon) or (None,)
    if bets is None:
        bets = [bet_sizes(rows, alpha=alpha, horizon=h) for h in horizons]
    with np.errstate(divide="ignore"):
        cap_up, cap_down = truncation / m, truncation / (1.0 - m)
    ups, downs = [], []
    for lam in bets:
        ups.append(np.cumsum(np.log1p(np.minimum(lam, cap_up) * (rows - m)), axis=1))
        downs.append(np.cumsum(np.log1p(np.minimum(lam, cap_down) * (m - rows)), axis=1))
    return _mean_log(ups), _mean_log(downs)


def _mean_log(logs: list[FloatArray] | FloatArray, axis: int = 0) -> FloatArray:
    """log of the mean of the capitals (a list, or an array along `axis`), elementwise — a plain
    log-sum-exp: scipy's costs ~0.5 ms a call, too much for a look after every unit."""
    if not isinstance(logs, np.ndarray) and len(logs) == 1:
        return np.asarray(logs[0])
    owned = not isinstance(logs, np.ndarray)  # a stack made here: its differences go in place
    stacked: FloatArray = logs if isinstance(logs, np.ndarray) else np.stack(logs)
    if stacked.shape[axis] == 1:
        return np.asarray(np.take(stacked, 0, axis=axis))
    top = stacked.max(axis=axis, keepdims=True)
    top[~np.isfinite(top)] = 0.0
    with np.errstate(divide="ignore"):
        diff = np.subtract(stacked, top, out=stacked if owned else None)
        total = np.exp(diff, out=diff).sum(axis=axis, keepdims=True)
        out = top + np.log(total / stacked.shape[axis])
    return np.asarray(np.squeeze(out, axis=axis))


class BettingEProcess:
    """The two one-sided betting capitals of a bounded mean at one null, updated per value.

    K⁺ (`log_capital_above`) tests "mean ≤ null" and K⁻ (`log_capital_below`) "mean ≥ null":
    rejecting when K ≥ 1/α' is valid at any stopping time (Ville). `alpha` sets the bet sizes
    (the α of the sequence the process belongs to), not a decision. O(1) per value, pure Python
    arithmetic; `update_many` is the same computation vectorised (equal to repeated `update` to
    rounding)."""

    def __init__(
        self,
        *,
        bounds: tuple[float, float],
        null: float,
        alpha: float = 0.05,
        truncation: float = SEQUENCE_TRUNCATION,
        horizon: int | Sequence[int] | None = None,
    ) -> None:
        self.bounds = _check_bounds(bounds)
        lo, hi = self.bounds
        if not lo <= null <= hi:
            raise InputError(
                f"the null {null:g} lies outside the bounds [{lo:g}, {hi:g}]",
                parameters=["null", "bounds"],
            )
        self.null = float(null)
        self.alpha = _check_alpha(alpha)
        self.truncation = _check_truncation(truncation)
        self.horizons: tuple[int, ...] | None = check_horizons(horizon)
        self._m = (self.null - lo) / (hi - lo)
        self._k = _scale_factor(self.alpha)
        with np.errstate(divide="ignore"):
            self._cap_up = self.truncation / self._m if self._m > 0 else math.inf
            self._cap_down = self.truncation / (1 - self._m) if self._m < 1 else math.inf
        width = 1 if self.horizons is None else len(self.horizons)
        self._up = [0.0] * width
        self._down = [0.0] * width
        self._n, self._sum, self._dev, self._var = 0, 0.0, 0.0, 0.25
        self._max_up = self._max_down = 0.0

    @property
    def n(self) -> int:
        return self._n

    def _scaled(self, x: float) -> float:
        lo, hi = self.bounds
        if not lo <= x <= hi:
            raise InputError(
                f"a value {x:g} lies outside the declared bounds [{lo:g}, {hi:g}]",
                hint="Declare the metric's true bounds (--bounds LOW,HIGH).",
                parameters=["bounds"],
            )
        return (x - lo) / (hi - lo)

    def update(self, x: float) -> None:
        z = self._scaled(float(x))
        i = self._n + 1
        m = self._m
        if self.horizons is None:
            lams = [math.sqrt(self._k / (self._var * i * math.log1p(i)))]
        else:
            lams = [math.sqrt(self._k / (h * self._var)) for h in self.horizons]
        for j, lam in enumerate(lams):
            self._up[j] += math.log1p(min(lam, self._cap_up) * (z - m))
            self._down[j] += math.log1p(min(lam, self._cap_down) * (m - z))
        self._n = i
        self._sum += z
        mu = (0.5 + self._sum) / (i + 1)
        self._dev += (z - mu) ** 2
        self._var = (0.25 + self._dev) / (i + 1)
        self._max_up = max(self._max_up, self.log_capital_above)
        self._max_down = max(self._max_down, self.log_capital_below)

    def update_many(self, xs: npt.ArrayLike) -> None:
        x = np.atleast_1d(np.asarray(xs, dtype=np.float64))
        if x.size == 0:
            return
        lo, hi = self.bounds
        if not np.all(np.isfinite(x)) or np.any((x < lo) | (x > hi)):
            bad = x[~np.isfinite(x) | (x < lo) | (x > hi)][0]
            self._scaled(float(bad))  # raises, naming the value
        z = ((x - lo) / (hi - lo))[None, :]
        start = (self._n, self._sum, self._dev)
        horizons: tuple[int | None, ...] = self.horizons or (None,)
        ups, downs = [], []
        for j, h in enumerate(horizons):
            lam = bet_sizes(z, alpha=self.alpha, horizon=h, start=start)[0]
            up = self._up[j] + np.cumsum(np.log1p(np.minimum(lam, self._cap_up) * (z[0] - self._m)))
            down = self._down[j] + np.cumsum(
                np.log1p(np.minimum(lam, self._cap_down) * (self._m - z[0]))
            )
            self._up[j], self._down[j] = float(up[-1]), float(down[-1])
            ups.append(up[None, :])
            downs.append(down[None, :])
        self._max_up = max(self._max_up, float(np.max(_mean_log(ups))))
        self._max_down = max(self._max_down, float(np.max(_mean_log(downs))))
        i = self._n + np.arange(1, x.size + 1, dtype=np.float64)
        mu = (0.5 + self._sum + np.cumsum(z[0])) / (i + 1)
        self._dev += float(np.sum((z[0] - mu) ** 2))
        self._sum += float(np.sum(z[0]))
        self._n += int(x.size)
        self._var = (0.25 + self._dev) / (self._n + 1)

    @staticmethod
    def _log_mean(logs: list[float]) -> float:
        if len(logs) == 1:
            return logs[0]
        top = max(logs)
        return top + math.log(sum(math.exp(v - top) for v in logs) / len(logs))

    @property
    def log_capital_above(self) -> float:
        """log K⁺: the evidence that the mean is above the null."""
        return self._log_mean(self._up)

    @property
    def log_capital_below(self) -> float:
        """log K⁻: the evidence that the mean is below the null."""
        return self._log_mean(self._down)

    @property
    def p_value_above(self) -> float:
        """The anytime-valid p-value of "mean ≤ null": min(1, 1/max_{k≤n} K⁺ₖ)."""
        return min(1.0, math.exp(-self._max_up))

    @property
    def p_value_below(self) -> float:
        return min(1.0, math.exp(-self._max_down))


def confidence_sequence(
    values: npt.ArrayLike,
    *,
    bounds: tuple[float, float],
    confidence_level: float = 0.95,
    horizon: int | Sequence[int] | None = None,
    truncation: float = SEQUENCE_TRUNCATION,
    null_value: float | None = None,
    precision: float | None = None,
) -> BettingInterval:
    """The betting confidence sequence at the current n (the values so far, in the order they
    arrived): an interval that holds at every n at once with probability ≥ `confidence_level`,
    so it may be read after every value. `horizon` as `BettingEProcess`; `precision`: of the
    ends, as a share of the scale's width (None: betting_interval's, far below any digit)."""
    return betting_interval(
        values,
        bounds=bounds,
        confidence_level=confidence_level,
        schedule="sequence",
        horizon=horizon,
        truncation=truncation,
        null_value=null_value,
        precision=2.0**-BISECTION_STEPS if precision is None else precision,
    )


class CapitalGrid:
    """The capitals K⁺(m), K⁻(m) of every candidate mean m of a fixed grid, updated per value in
    O(grid): the confidence sequence's interval at any n without revisiting the values. Its ends
    are the grid points next to the candidates not rejected (conservative by one step, as
    `ville.BettingCS`); `extra` adds candidates (a decision's nulls) so that the interval and
    those decisions agree exactly."""

    def __init__(
        self,
        *,
        bounds: tuple[float, float],
        alpha: float = 0.05,
        truncation: float = SEQUENCE_TRUNCATION,
        horizon: int | Sequence[int] | None = None,
        points: int = 1001,
        extra: Sequence[float] = (),
    ) -> None:
        self.bounds = _check_bounds(bounds)
        lo, hi = self.bounds
        self.alpha = _check_alpha(alpha)
        self.truncation = _check_truncation(truncation)
        self.horizons = check_horizons(horizon)
        if points < 3:
            raise InputError("a grid needs at least 3 points", parameters=["points"])
        scaled = {float(v): (v - lo) / (hi - lo) for v in extra if lo <= v <= hi}
        self.m = np.unique(np.concatenate((np.linspace(0.0, 1.0, points), list(scaled.values()))))
        self._where = {v: int(np.searchsorted(self.m, z)) for v, z in scaled.items()}
        width = 1 if self.horizons is None else len(self.horizons)
        self._width = width
        # one array for both sides: rows 0..H−1 log K⁺ per horizon, rows H..2H−1 log K⁻ (a look
        # after every unit costs a handful of numpy calls, not a dozen)
        with np.errstate(divide="ignore"):
            caps = np.vstack([np.tile(truncation / self.m, (width, 1)),
                              np.tile(truncation / (1.0 - self.m), (width, 1))])  # fmt: skip
        self._caps = caps
        self._signed_m = np.concatenate((np.ones(width), -np.ones(width)))[:, None] * self.m
        self._signs = np.concatenate((np.ones(width), -np.ones(width)))[:, None]
        self._log = np.zeros((2 * width, self.m.size))
        self._hz = None if self.horizons is None else np.asarray(self.horizons * 2, dtype=float)
        self._threshold = math.log(2.0 / self.alpha)  # θ = ½ on each side
        self._spread = math.log(width)  # the mixture of H capitals ≥ the largest − log H
        self._n, self._sum, self._dev, self._var = 0, 0.0, 0.0, 0.25
        self._total = 0.0
        self._k = _scale_factor(self.alpha)

    @property
    def n(self) -> int:
        return self._n

    def update(self, x: float) -> None:
        lo, hi = self.bounds
        if not lo <= x <= hi:
            raise InputError(
                f"a value {x:g} lies outside the declared bounds [{lo:g}, {hi:g}]",
                parameters=["bounds"],
            )
        z = (float(x) - lo) / (hi - lo)
        i = self._n + 1
        if self._hz is None:
            lam: Any = math.sqrt(self._k / (self._var * i * math.log1p(i)))
        else:
            lam = np.sqrt(self._k / (self._hz * self._var))[:, None]
        # log(1 ± λ(z − m)) for the rows of each side: ±(z − m) = ±z ∓ m
        bet = np.minimum(lam, self._caps)
        bet *= self._signs * z - self._signed_m
        self._log += np.log1p(bet, out=bet)
        self._n = i
        self._sum += z
        self._total += float(x)
        mu = (0.5 + self._sum) / (i + 1)
        self._dev += (z - mu) ** 2
        self._var = (0.25 + self._dev) / (i + 1)

    def interval(self) -> tuple[float, float]:
        """The current interval on the values' scale (the whole scale before any value). With
        several horizons the mixture is computed only where the largest horizon's capital
        leaves it in doubt (the mixture lies within log H below it): a look stays cheap."""
        lo, hi = self.bounds
        if self._n == 0:
            return lo, hi
        if self._width == 1:
            return grid_interval(self.m, self._log[0], self._log[1], self._threshold, lo, hi)
        top = self._log.max(axis=0)
        doubt = np.flatnonzero((top >= self._threshold) & (top - self._spread < self._threshold))
        log_k = np.where(top < self._threshold, -np.inf, np.inf)
        if doubt.size:
            mixed = _mean_log(self._log[:, doubt].reshape(2, self._width, doubt.size), axis=1)
            log_k[doubt] = mixed.max(axis=0)
        if not np.any(log_k < self._threshold):  # nothing inside: the full mixture decides
            log_k = _mean_log(self._log.reshape(2, self._width, -1), axis=1).max(axis=0)
        return grid_interval(self.m, log_k, log_k, self._threshold, lo, hi)

    def log_capitals_at(self, values: Sequence[float]) -> tuple[FloatArray, FloatArray]:
        """log K⁺ and log K⁻ at candidates given in `extra` — the betting e-processes at those
        nulls, the same numbers `BettingEProcess` would hold, read off the grid."""
        try:
            idx = [self._where[float(v)] for v in values]
        except KeyError as exc:
            raise InputError(f"{exc.args[0]:g} is not one of the grid's extra candidates") from exc
        cols = self._log[:, idx]
        if self._width == 1:
            return cols[0], cols[1]
        both = _mean_log(cols.reshape(2, self._width, len(idx)), axis=1)
        return both[0], both[1]

    @property
    def estimate(self) -> float | None:
        return None if self._n == 0 else self._total / self._n


def grid_interval(
    m: FloatArray, log_up: FloatArray, log_down: FloatArray, threshold: float, lo: float, hi: float
) -> tuple[float, float]:
    """The interval from the capitals on a sorted grid m of [0, 1]: the neighbours of the first
    and last candidates whose capitals are both below e^threshold; with none, the neighbours of
    the candidate with the smallest capital (ville's rule)."""
    log_k = np.maximum(log_up, log_down)
    inside = np.flatnonzero(log_k < threshold)
    if inside.size:
        first, last = int(inside[0]), int(inside[-1])
    else:
        first = last = int(np.argmin(log_k))
    a, b = m[max(first - 1, 0)], m[min(last + 1, m.size - 1)]
    return lo + (hi - lo) * float(a), lo + (hi - lo) * float(b)


def discordant_log_evalues(
    above: npt.ArrayLike, below: npt.ArrayLike, *, prior: float | Sequence[float] = KT_PRIOR
) -> tuple[FloatArray, FloatArray]:
    """log E⁺ and log E⁻ of the discordant-pairs mixture for b pairs favouring the candidate
    (`above`) and c the baseline (`below`), elementwise; several priors average their e-values.
    A one-sided e-value that underflows is 0 (log −inf): no evidence that way."""
    b = np.asarray(above, dtype=np.float64)
    c = np.asarray(below, dtype=np.float64)
    priors = _check_priors(prior)
    if len(priors) == 1:
        a = priors[0]
        base = (b + c + 1.0) * math.log(2.0) + special.betaln(a + b, a + c) - special.betaln(a, a)
        with np.errstate(divide="ignore"):
            up = base + np.log(special.betainc(a + c, a + b, 0.5))
            down = base + np.log(special.betainc(a + b, a + c, 0.5))
        return np.asarray(up, dtype=np.float64), np.asarray(down, dtype=np.float64)
    ups, downs = [], []
    for a in priors:
        base = (b + c + 1.0) * math.log(2.0) + special.betaln(a + b, a + c) - special.betaln(a, a)
        with np.errstate(divide="ignore"):
            ups.append(base + np.log(special.betainc(a + c, a + b, 0.5)))
            downs.append(base + np.log(special.betainc(a + b, a + c, 0.5)))
    return _mean_log(ups), _mean_log(downs)


def _check_priors(prior: float | Sequence[float]) -> tuple[float, ...]:
    values = (prior,) if isinstance(prior, int | float) else tuple(prior)
    if not values or any(not (math.isfinite(a) and a > 0) for a in values):
        raise InputError(
            f"a Beta prior's parameter must be positive, got {prior!r}", parameters=["prior"]
        )
    return tuple(float(a) for a in values)


class DiscordantTest:
    """The exact sequential test of paired pass/fail outcomes on their discordant pairs (Robbins'
    mixture, module docstring). `update(sign)`: +1 when only the candidate passed, −1 when only
    the baseline did, 0 for a concordant pair (no evidence either way). O(1) per pair."""

    def __init__(self, *, prior: float | Sequence[float] = KT_PRIOR) -> None:
        self.prior = _check_priors(prior)
        self.above = 0  # b: pairs the candidate alone passed
        self.below = 0  # c: pairs the baseline alone passed
        self.n = 0
        self._max_up = self._max_down = 0.0
        self._log_up = self._log_down = 0.0

    def update(self, sign: int) -> None:
        if sign not in (-1, 0, 1):
            raise InputError(f"a pair's sign must be -1, 0 or 1, got {sign!r}")
        self.n += 1
        if sign == 0:
            return
        if sign > 0:
            self.above += 1
        else:
            self.below += 1
        up, down = discordant_log_evalues(self.above, self.below, prior=self.prior)
        self._log_up, self._log_down = float(up), float(down)
        self._max_up = max(self._max_up, self._log_up)
        self._max_down = max(self._max_down, self._log_down)

    def update_many(self, signs: npt.ArrayLike) -> None:
        s = np.atleast_1d(np.asarray(signs))
        if s.size == 0:
            return
        if not np.all(np.isin(s, (-1, 0, 1))):
            raise InputError("a pair's sign must be -1, 0 or 1")
        b = self.above + np.cumsum(s > 0)
        c = self.below + np.cumsum(s < 0)
        up, down = discordant_log_evalues(b, c, prior=self.prior)
        moved = s != 0
        if moved.any():
            self._max_up = max(self._max_up, float(np.max(up[moved])))
            self._max_down = max(self._max_down, float(np.max(down[moved])))
            self._log_up, self._log_down = float(up[-1]), float(down[-1])
        self.above, self.below = int(b[-1]), int(c[-1])
        self.n += int(s.size)

    @property
    def log_e_value_above(self) -> float:
        """log E⁺: the evidence that the candidate passes more often."""
        return self._log_up

    @property
    def log_e_value_below(self) -> float:
        return self._log_down

    @property
    def p_value_above(self) -> float:
        """Anytime-valid p of "the candidate is no better": min(1, 1/max_{k≤n} E⁺ₖ)."""
        return min(1.0, math.exp(-self._max_up))

    @property
    def p_value_below(self) -> float:
        return min(1.0, math.exp(-self._max_down))
