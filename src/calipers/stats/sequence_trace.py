"""The confidence sequence's interval after each of many n, on `CapitalGrid`'s grid of candidate
means (`interval_trace`): the path a report plots over a whole run.

The numbers. A look's interval is the grid's: the neighbours of the first and last candidates
both of whose capitals (the mixture over the horizons) are below 2/α (`grid_interval`). The
capitals are running sums of log(1 ± λᵢ(zᵢ − m)), and their last bits depend on how the sums are
taken, so this module keeps the one summation every earlier version took: the units in blocks
of BLOCK_CELLS / (candidates × horizons), each block summed between the looks in it (a run of
terms summed as numpy's `add.reduceat` does: its first term plus the pairwise sum of the rest),
the runs added up in order, each block's total added to the capital before it. The terms of a
run are made in a buffer that stays in the cache, run by run (`calipers.stats.betting.pairwise`
reproduces numpy's pairwise halves): tests/test_sequential_staging.py holds the path to the
straightforward computation, bit for bit.

Live candidates. Over a long run most candidates are far outside the sequence for most of it:
on 2 × 500,000 units with 44 candidates, after ~10,000 units only the five or so next to the
estimate can still be an end. A candidate's capital is monotone in m — K⁺(m) falls and K⁻(m)
rises with m, term by term (λ·(z − m) and (c/m)(z − m) both fall with m) — so where a
candidate a has log K⁺(a) ≥ 2/α, every candidate below a has too, and is outside. The trace
therefore stops computing the candidates beyond a "wall" on each side: a candidate whose capital
is DROP nats above both the threshold and the least capital at a block's end. At every later
look the walls' capitals, computed exactly, must still show everything beyond them outside
(above the threshold, and above the least capital where no candidate is inside) by more than
the rounding of two sums of n terms (`_slack`: a bound on the rounding of any order of summation,
and of each term); a look that cannot show it (a wall's capital that fell) starts the trace again
with every candidate (`_Doubt`). The path is then the one every candidate gives, bit for bit,
and an undecided pair of 500,000 units computes ~5 candidates for ~98% of its units instead of
44."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from calipers.stats.betting import pairwise
from calipers.stats.sequential import (
    SEQUENCE_TRUNCATION,
    CapitalGrid,
    _check_bounds,
    _mean_log,
    bet_sizes_each,
    grid_interval,
)

FloatArray = npt.NDArray[np.float64]
BLOCK_CELLS = 2_000_000  # units × candidates × horizons of a block: fixes the sums (above)
RUN_CELLS = 65_536  # sides × horizons × candidates × units of one run's terms: 512 KB, cached
# How far (in nats) above max(threshold, least capital) a candidate's capital must be for the
# candidates beyond it to be left: far enough that a wall's capital, which grows about linearly
# with n away from the mean, is not expected to fall back (a fall costs a second trace)
DROP = 16.0
_UNIT = 2.0**-53  # the unit roundoff of a double


class _Doubt(Exception):
    """The computed candidates cannot decide a look: trace again with every candidate."""


def interval_trace(
    values: npt.ArrayLike,
    at: npt.ArrayLike,
    *,
    bounds: tuple[float, float],
    alpha: float = 0.05,
    truncation: float = SEQUENCE_TRUNCATION,
    horizon: int | Sequence[int] | None = None,
    points: int = 1001,
    extra: Sequence[float] = (),
) -> tuple[FloatArray, FloatArray]:
    """The confidence sequence's interval after each of the first n values for every n in `at`
    (increasing, 1-based), on `CapitalGrid`'s grid: the same ends a grid updated value by value
    would give, computed in blocks of values × candidates (for plotting a whole run)."""
    lo, hi = _check_bounds(bounds)
    x = np.asarray(values, dtype=np.float64)
    ns = np.asarray(at, dtype=np.int64)
    grid = CapitalGrid(
        bounds=bounds, alpha=alpha, truncation=truncation, horizon=horizon, points=points,
        extra=extra,
    )  # fmt: skip
    if ns.size == 0:
        return np.empty(0), np.empty(0)
    z = (x[: int(ns.max())] - lo) / (hi - lo)
    bets = bet_sizes_each(z[None, :], alpha=alpha, horizons=grid.horizons or (None,))
    trace = _Trace(z, [b[0] for b in bets], grid.m, ns, alpha, truncation, (lo, hi))
    try:
        return trace.run(live=True)
    except _Doubt:
        return trace.run(live=False)


class _Trace:
    def __init__(self, z: FloatArray, bets: list[FloatArray], m: FloatArray,
                 ns: npt.NDArray[np.int64], alpha: float, truncation: float,
                 bounds: tuple[float, float]) -> None:  # fmt: skip
        self.z, self.bets, self.m, self.ns, self.bounds = z, bets, m, ns, bounds
        with np.errstate(divide="ignore"):
            self.caps = np.stack((truncation / m, truncation / (1.0 - m)))  # up, down
        self.bets_matrix = np.stack(bets)  # horizons × units
        self.threshold = math.log(2.0 / alpha)
        # bounds on |a term| and |λ(z − m)| for the rounding slack: a bet times a step lies in
        # [−c, max λ], so its log1p in [log(1 − c), log(1 + max λ)]
        most = max((float(b.max()) for b in bets if b.size), default=0.0)
        self.term_bound = max(-math.log1p(-truncation), math.log1p(most))
        self.step_bound = max(truncation, most)
        self.slope = 1.0 / (1.0 - truncation)  # log1p's largest slope on [−c, ∞)

    def run(self, *, live: bool) -> tuple[FloatArray, FloatArray]:
        z, m, ns = self.z, self.m, self.ns
        count, width = m.size, len(self.bets)
        lows, highs = np.empty(ns.size), np.empty(ns.size)
        capital = np.zeros((2, width, count))  # log K± per horizon, at the last block's end
        first, last = 0, count - 1  # the candidates computed: m[first:last + 1]
        block = max(1, BLOCK_CELLS // (count * width))
        done = 0
        for start in range(0, z.size, block):
            stop = min(z.size, start + block)
            ends = ns[done:][ns[done:] <= stop] - start
            cuts = np.unique(np.concatenate((ends, [stop - start])))
            starts = np.concatenate(([0], cuts[:-1]))
            sums = np.stack([self._run(start + a, start + b, first, last)
                             for a, b in zip(starts, cuts, strict=True)])  # fmt: skip
            # the capital after each run: the block's runs added up in order, then the capital
            # before the block added (as `was + cumsum`)
            after = capital[None, :, :, first : last + 1] + np.cumsum(sums, axis=0)
            while done < ns.size and ns[done] <= stop:
                row = int(np.searchsorted(cuts, int(ns[done]) - start))
                lows[done], highs[done] = self._look(after[row], first, last, int(ns[done]))
                done += 1
            capital[:, :, first : last + 1] = after[-1]
            if live:
                first, last = self._walls(after[-1], first, last)
        return lows, highs

    def _run(self, a: int, b: int, first: int, last: int) -> FloatArray:
        """The sum of the terms of units a..b−1 (absolute) for the candidates first..last, as
        `np.add.reduceat` sums a run: the first term plus the pairwise sum of the rest.
        Returns sides × horizons × candidates."""
        leaf = max(128, RUN_CELLS // (2 * len(self.bets) * (last - first + 1)))
        if b - a - 1 <= leaf:
            return self._terms(a, b, first, last, split=True)
        head = self._terms(a, a + 1, first, last, split=True)
        rest = pairwise(lambda s, e: self._terms(s, e, first, last, split=False), a + 1,
                        b - a - 1, leaf)  # fmt: skip
        return np.asarray(head + rest, dtype=np.float64)

    def _terms(self, a: int, b: int, first: int, last: int, *, split: bool) -> FloatArray:
        """Per side, horizon and candidate: the pairwise sum of log(1 ± min(λ, cap)(z − m)) over
        units a..b−1 — or, `split`, the first term plus the pairwise sum of the others. One
        array of sides × horizons × candidates × units (the minimum taken everywhere: where a
        bet is below the cap it is the bet)."""
        up_step = np.subtract(self.z[None, a:b], self.m[first : last + 1, None])
        steps = np.stack((up_step, np.negative(up_step)))[:, None]  # sides × 1 × cands × units
        work = np.minimum(self.bets_matrix[None, :, None, a:b],
                          self.caps[:, None, first : last + 1, None])  # fmt: skip
        np.multiply(work, steps, out=work)
        np.log1p(work, out=work)
        if not split:
            return np.asarray(np.sum(work, axis=-1), dtype=np.float64)
        if b - a > 1:
            return np.asarray(work[..., 0] + np.sum(work[..., 1:], axis=-1), dtype=np.float64)
        return np.asarray(work[..., 0], dtype=np.float64)

    def _mixture(self, capital: FloatArray) -> tuple[FloatArray, FloatArray]:
        """log of the mixture's capital, each side, for each computed candidate (horizons ×
        candidates, two candidates at least: the sum over the horizons is per candidate)."""
        return _mean_log(capital[0], axis=0), _mean_log(capital[1], axis=0)

    def _look(self, capital: FloatArray, first: int, last: int, n: int) -> tuple[float, float]:
        """The grid's interval at a look from the computed candidates' capitals (sides ×
        horizons × candidates first..last); `_Doubt` where the candidates left out could
        change it."""
        lo, hi = self.bounds
        up, down = self._mixture(capital)
        count = self.m.size
        if first == 0 and last == count - 1:
            return grid_interval(self.m, up, down, self.threshold, lo, hi)
        log_k = np.maximum(up, down)
        # every candidate below `first` has log K⁺ at least the wall's less the rounding, and
        # every one above `last` log K⁻ at least that wall's
        left = float(up[0]) - self._slack(n, float(up[0])) if first > 0 else math.inf
        right = float(down[-1]) - self._slack(n, float(down[-1])) if last < count - 1 else math.inf
        if not (left >= self.threshold and right >= self.threshold):
            raise _Doubt
        inside = np.flatnonzero(log_k < self.threshold)
        if inside.size:
            low_end, high_end = first + int(inside[0]), first + int(inside[-1])
        else:  # none inside: the least capital's neighbours, if it is surely the least
            least = int(np.argmin(log_k))
            if not (float(log_k[least]) < left and float(log_k[least]) < right):
                raise _Doubt
            low_end = high_end = first + least
        a, b = self.m[max(low_end - 1, 0)], self.m[min(high_end + 1, count - 1)]
        return lo + (hi - lo) * float(a), lo + (hi - lo) * float(b)

    def _slack(self, n: int, value: float) -> float:
        """A bound on how far the computed mixtures of two candidates over n units can be from
        their exact order: twice the rounding of a sum of n terms — in any order each term goes
        through at most n additions (n·u·Σ|terms|), and each term has its own: a few u of its
        value, and 3u of λ(z − m) through log1p's slope — four times over, plus the mixture's
        log-sum-exp."""
        per_term = 8 * self.term_bound + 4 * self.slope * self.step_bound
        column = 4 * _UNIT * n * ((n + 4) * self.term_bound + per_term)
        return 2 * column + 1e-9 * (1.0 + abs(value))

    def _walls(self, capital: FloatArray, first: int, last: int) -> tuple[int, int]:
        """The candidates to compute from the next block on: those between the walls, each the
        last candidate (from outside in) whose capital is DROP above both the threshold and
        the least capital; at least two."""
        up, down = self._mixture(capital)
        log_k = np.maximum(up, down)
        if not np.all(np.isfinite(log_k)):
            return first, last
        base = max(self.threshold, float(log_k.min())) + DROP
        left = np.flatnonzero(up >= base)
        new_first = first + int(left[-1]) if left.size else first
        right = np.flatnonzero(down[new_first - first :] >= base)
        new_last = new_first + int(right[0]) if right.size else last
        if new_last == new_first:  # two candidates at least: the mixture's sums stay per column
            if new_last < last:
                new_last += 1
            else:
                new_first -= 1
        return new_first, new_last
