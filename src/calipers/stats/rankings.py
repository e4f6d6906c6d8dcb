"""Rank intervals and tie groups for any leaderboard, from bootstrap distributions of its score.

Input: each run's point estimate and its bootstrap distribution, the resamples aligned by index
(resample b of every run comes from the same draw when the runs share samples — a paired
bootstrap — or from independent draws when they do not). In every resample the runs are ranked
(1 = best); a run's rank interval says which ranks the data allow it.

Three methods (docs/rankings.md gives their measured coverage):

    marginal       (default) Klein, Wright & Wieczorek (2020, "A joint confidence region for an
                   overall ranking of populations", JRSS C) with a bootstrap max-t band in place
                   of Bonferroni: for run i, a band over its K − 1 differences x_j − x_i that
                   holds with probability 1 − α; j is surely ahead of i when x̂_j − x̂_i exceeds
                   the band's critical value times the bootstrap SE of the difference, surely
                   behind when below minus it. Run i's interval is [1 + #surely ahead,
                   K − #surely behind]: it covers i's true rank with probability ≥ 1 − α.
    simultaneous   the same with one band over all K(K−1)/2 differences: every run's interval
                   holds at once with probability ≥ 1 − α. Wider.
    percentile     for each run, the α/2 and 1 − α/2 quantiles of its rank across resamples (a
                   run tied in a resample spans the tied ranks). Narrowest, but it under-covers
                   when several runs are nearly equal (the bootstrap ranks centre on the observed
                   rank, not the true one): measured 0.85 for the worst run, so not the default.

Tie groups: runs whose rank intervals overlap, directly or through a chain of overlapping runs,
cannot be put in order by the data; each group is a maximal such set (the connected components
of overlapping intervals, on the line of ranks).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats._rng import resolve_rng

RankMethod = Literal["marginal", "simultaneous", "percentile"]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class RankedRun:
    run: str
    estimate: float
    rank: int  # by the point estimate, 1 = best; equal estimates share the best of their ranks
    low: int  # rank interval: best rank the data allow
    high: int  # worst rank the data allow
    group: int  # tie group, 1 = the top group

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run, "estimate": self.estimate, "rank": self.rank,
            "rank_low": self.low, "rank_high": self.high, "group": self.group,
        }  # fmt: skip


@dataclass(frozen=True)
class RankIntervals:
    runs: tuple[RankedRun, ...]  # in rank order (then by name)
    groups: tuple[tuple[str, ...], ...]  # tie groups, best first, runs in rank order
    method: str
    confidence_level: float
    n_resamples: int
    higher_is_better: bool

    def by_run(self) -> dict[str, RankedRun]:
        return {r.run: r for r in self.runs}

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "confidence_level": self.confidence_level,
            "n_resamples": self.n_resamples,
            "higher_is_better": self.higher_is_better,
            "runs": [r.to_dict() for r in self.runs],
            "groups": [list(g) for g in self.groups],
        }


def _matrix(
    estimates: Mapping[str, float], distributions: Mapping[str, npt.ArrayLike]
) -> tuple[list[str], FloatArray, FloatArray]:
    names = list(estimates)
    if set(names) != set(distributions):
        raise InputError("estimates and distributions must name the same runs")
    if len(names) < 2:
        raise InputError(f"ranking needs at least 2 runs, got {len(names)}")
    point = np.array([float(estimates[n]) for n in names], dtype=np.float64)
    columns = [np.asarray(distributions[n], dtype=np.float64).ravel() for n in names]
    sizes = {c.size for c in columns}
    if len(sizes) != 1 or 0 in sizes:
        raise InputError(
            "every run needs a bootstrap distribution of the same length (resample b of each "
            f"run from draw b); got lengths {sorted(sizes)}"
        )
    draws = np.column_stack(columns)
    if not (np.all(np.isfinite(point)) and np.all(np.isfinite(draws))):
        raise InputError("estimates and bootstrap distributions must be finite")
    return names, point, draws


def _ranks(x: FloatArray) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Per row of x (resamples × runs, higher = better): each run's best and worst rank among
    runs with equal values — 1 + #strictly ahead and #ahead or equal."""
    ahead = np.empty(x.shape, dtype=np.int64)
    ahead_or_equal = np.empty(x.shape, dtype=np.int64)
    k = x.shape[1]
    step = max(1, (1 << 24) // (k * k))  # bounds the comparison cube at 16 MB
    for start in range(0, x.shape[0], step):
        rows = x[start : start + step]
        # [b, i, j]: run j's value against run i's
        ahead[start : start + step] = (rows[:, None, :] > rows[:, :, None]).sum(axis=2)
        ahead_or_equal[start : start + step] = (rows[:, None, :] >= rows[:, :, None]).sum(axis=2)
    return ahead + 1, ahead_or_equal


def _quantile_rank(ranks: npt.NDArray[np.int64], q: float) -> int:
    """The smallest rank r with P(rank ≤ r) ≥ q (the inverted-CDF quantile)."""
    return int(np.quantile(ranks, q, method="inverted_cdf"))


def _groups(low: Sequence[int], high: Sequence[int], order: Sequence[int]) -> list[list[int]]:
    """Connected components of overlapping [low, high] intervals, as lists of indices in `order`
    (rank order); components listed best first."""
    by_low = sorted(range(len(low)), key=lambda i: (low[i], high[i]))
    components: list[list[int]] = []
    reach = -1
    for i in by_low:
        if not components or low[i] > reach:
            components.append([i])
            reach = high[i]
        else:
            components[-1].append(i)
            reach = max(reach, high[i])
    position = {i: p for p, i in enumerate(order)}
    ordered = [sorted(c, key=position.__getitem__) for c in components]
    return sorted(ordered, key=lambda c: position[c[0]])


def rank_intervals(
    estimates: Mapping[str, float],
    distributions: Mapping[str, npt.ArrayLike],
    *,
    higher_is_better: bool = True,
    confidence_level: float = 0.95,
    method: RankMethod = "marginal",
) -> RankIntervals:
    """Rank intervals and tie groups of the runs, from their point estimates and their bootstrap
    distributions (aligned by resample; see the module's docstring)."""
    if not 0.0 < confidence_level < 1.0:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level}")
    if method not in ("marginal", "simultaneous", "percentile"):
        raise InputError(
            f"method must be 'marginal', 'simultaneous' or 'percentile', got {method!r}"
        )
    names, point, draws = _matrix(estimates, distributions)
    sign = 1.0 if higher_is_better else -1.0
    point, draws = sign * point, sign * draws
    alpha = 1.0 - confidence_level
    best, _ = _ranks(point[None, :])
    rank = best[0]
    if method == "percentile":
        lows, highs = _ranks(draws)
        low = [_quantile_rank(lows[:, i], alpha / 2) for i in range(len(names))]
        high = [_quantile_rank(highs[:, i], 1 - alpha / 2) for i in range(len(names))]
    else:
        low, high = _band_intervals(point, draws, alpha, joint=method == "simultaneous")
    order = sorted(range(len(names)), key=lambda i: (rank[i], names[i]))
    groups = _groups(low, high, order)
    group_of = {i: g + 1 for g, members in enumerate(groups) for i in members}
    runs = tuple(
        RankedRun(names[i], float(sign * point[i]), int(rank[i]), low[i], high[i], group_of[i])
        for i in order
    )
    return RankIntervals(
        runs,
        tuple(tuple(names[i] for i in g) for g in groups),
        method,
        confidence_level,
        int(draws.shape[0]),
        higher_is_better,
    )


def _band_intervals(
    point: FloatArray, draws: FloatArray, alpha: float, *, joint: bool
) -> tuple[list[int], list[int]]:
    """Rank intervals [1 + #surely ahead, K − #surely behind] from a bootstrap max-t band over
    pairwise differences (higher = better): one band over all K(K−1)/2 pairs (`joint`), or for
    each run one band over its own K − 1 differences. Run j is surely ahead of run i when
    x̂_j − x̂_i exceeds the band's critical value times the bootstrap SE of the difference."""
    k = point.size
    diff_hat = point[:, None] - point[None, :]  # [i, j] = x̂_i − x̂_j
    cov = np.atleast_2d(np.cov(draws, rowvar=False, ddof=1))
    var = np.diag(cov)
    se = np.sqrt(np.maximum(var[:, None] + var[None, :] - 2.0 * cov, 0.0))
    varies = se > 1e-12 * (1.0 + np.abs(diff_hat))
    scale = np.where(varies, se, np.inf)  # a pair that never varies adds nothing to the max
    worst = np.empty((draws.shape[0], k))  # per resample and run: max over its pairs
    step = max(1, (1 << 21) // (k * k))
    for start in range(0, draws.shape[0], step):
        rows = draws[start : start + step]
        t = np.abs(rows[:, :, None] - rows[:, None, :] - diff_hat) / scale
        worst[start : start + step] = t.max(axis=2)
    if joint:
        critical = np.full(k, float(np.quantile(worst.max(axis=1), 1 - alpha)))
    else:
        critical = np.quantile(worst, 1 - alpha, axis=0)  # per run, over its pairs
    # a pair whose difference never varies is separated exactly when it is not 0
    margin = np.where(varies, critical[:, None] * se, 0.0)
    ahead_of = diff_hat < -margin  # [i, j]: j surely ahead of i
    behind = diff_hat > margin  # [i, j]: j surely behind i
    low = [1 + int(ahead_of[i].sum()) for i in range(k)]
    high = [k - int(behind[i].sum()) for i in range(k)]
    return low, high


def paired_mean_draws(
    values: Mapping[str, npt.ArrayLike],
    *,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = None,
) -> tuple[dict[str, float], dict[str, FloatArray], int]:
    """Each run's mean over the same items and its bootstrap distribution, the items resampled
    together for all runs: (estimates, distributions, seed). `values[run][i]` is the run's value
    on item i (one per item: average an item's epochs first)."""
    names = list(values)
    columns = [np.asarray(values[n], dtype=np.float64).ravel() for n in names]
    if len({c.size for c in columns}) != 1:
        raise InputError("every run needs a value on the same items (equal lengths)")
    x = np.column_stack(columns) if columns else np.empty((0, 0))
    if x.shape[0] < 2:
        raise InputError(f"need at least 2 items, got {x.shape[0]}")
    if not np.all(np.isfinite(x)):
        raise InputError("values must be finite (leave out items a run has no value on)")
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise InputError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    generator, seed = resolve_rng(rng)
    n = x.shape[0]
    means = np.empty((n_resamples, len(names)))
    start = 0
    for counts in _resample_counts(generator, seed, n, n_resamples):
        stop = start + counts.shape[0]
        means[start:stop] = counts.astype(np.int64, copy=False) @ x / n
        start = stop
    point = x.mean(axis=0)
    estimates = dict(zip(names, point.tolist(), strict=True))
    return estimates, {name: means[:, i] for i, name in enumerate(names)}, seed


# The resamples' counts depend only on (seed, items, resamples): kept, the next ranking over as
# many items (another metric of the same runs, in a long-lived process such as `calipers view`)
# skips the multinomial draws, 0.75 s of a ranking of 100 runs × 10,000 items.
_KEPT_COUNTS: OrderedDict[tuple[int, int, int], list[npt.NDArray[Any]]] = OrderedDict()
_KEPT_LOCK = threading.Lock()
KEPT_COUNTS_BYTES = 64 << 20  # at most, over every set kept


def _resample_counts(
    generator: np.random.Generator, seed: int, n: int, n_resamples: int
) -> list[npt.NDArray[Any]]:
    """The multinomial counts of `n_resamples` resamples of `n` items from `generator` (built
    from `seed`), in chunks of the same rows as ever (so the products are the same to the bit)."""
    key = (seed, n, n_resamples)
    with _KEPT_LOCK:
        if key in _KEPT_COUNTS:
            _KEPT_COUNTS.move_to_end(key)
            return _KEPT_COUNTS[key]
    chunk = max(1, (1 << 22) // n)
    drawn = [
        generator.multinomial(n, np.full(n, 1.0 / n), size=min(n_resamples, start + chunk) - start)
        for start in range(0, n_resamples, chunk)
    ]
    if n * n_resamples <= KEPT_COUNTS_BYTES:  # kept as the smallest integers that hold them
        top = max(int(c.max(initial=0)) for c in drawn)
        small = np.uint8 if top <= 255 else np.uint16 if top <= 65_535 else None
        if small is not None:
            kept = [c.astype(small) for c in drawn]
            with _KEPT_LOCK:
                _KEPT_COUNTS[key] = kept
                while sum(c.nbytes for v in _KEPT_COUNTS.values() for c in v) > KEPT_COUNTS_BYTES:
                    _KEPT_COUNTS.popitem(last=False)
    return drawn


def mean_rank_intervals(
    values: Mapping[str, npt.ArrayLike],
    *,
    higher_is_better: bool = True,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    method: RankMethod = "marginal",
    rng: int | np.random.Generator | None = None,
) -> tuple[RankIntervals, int]:
    """Rank intervals of runs by their mean over the same items (`paired_mean_draws`). Returns
    the intervals and the seed that reproduces them."""
    estimates, draws, seed = paired_mean_draws(values, n_resamples=n_resamples, rng=rng)
    result = rank_intervals(
        estimates, draws, higher_is_better=higher_is_better,
        confidence_level=confidence_level, method=method,
    )  # fmt: skip
    return result, seed
