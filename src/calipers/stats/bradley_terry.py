"""Bradley–Terry strengths from pairwise outcomes, with bootstrap intervals and rank intervals.

Model: P(i beats j) = π_i / (π_i + π_j). Strengths are reported as log-strengths θ = log π,
identified by the constraint mean(θ) = 0 over the runs ranked (a run of average strength has
θ = 0; θ_i − θ_j is the log-odds that i beats j).

Ties count as half a win for each side (the "half-win" rule of evaluica and of chess ratings): an
outcome is a score s ∈ [0, 1] for the first run of the pair (1 won, ½ tie, 0 lost) and adds s to
its wins over the other run and 1 − s to the other's. The log-likelihood is then
Σ w_ij log(π_i / (π_i + π_j)) over ordered pairs. Davidson's (1970) ties model has its own tie
parameter; we do not use it because a pairwise judge's ties mostly come from judging both orders
and disagreeing (docs/rankings.md): one order for each side, which is exactly half a win each.

`prior` adds that many virtual ties to every pair of runs that was compared (default 1): it keeps
the strengths finite when a run won (or lost) all its comparisons — where the plain MLE does not
exist — and shrinks them slightly towards equality. `prior=0` is the plain maximum-likelihood
estimate, refused (with the runs named) when it does not exist.

The MLE is found by the MM algorithm of Hunter (2004, "MM algorithms for generalized
Bradley–Terry models", Ann. Statist. 32(1)), π_i ← W_i / Σ_j N_ij / (π_i + π_j), which increases
the likelihood at every step and converges to the MLE whenever it exists; it runs on all
bootstrap resamples at once. Checked against `choix` (tests/test_bradley_terry.py).

Bootstrap: the units resampled are the compared items (one sample's comparisons of every pair
of runs are drawn together), with replacement, the seed recorded; percentile intervals for each
θ, and rank intervals and tie groups by `calipers.stats.rankings`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats._rng import resolve_rng
from calipers.stats.rankings import RankIntervals, RankMethod, rank_intervals

FloatArray = npt.NDArray[np.float64]
TOLERANCE = 1e-10  # largest change of any log-strength in a step, at convergence
MAX_ITERATIONS = 100_000


class NotEstimable(InputError):
    """The comparisons do not determine finite strengths (with prior=0, or disconnected runs)."""


@dataclass(frozen=True)
class Comparisons:
    """Pairwise outcomes as per-unit win matrices: wins[u, i, j] is what run i scored against
    run j within unit u (ties as ½ each)."""

    runs: tuple[str, ...]
    units: tuple[Hashable, ...]
    wins: FloatArray = field(repr=False)  # (units, runs, runs)

    @property
    def total(self) -> FloatArray:
        return np.asarray(self.wins.sum(axis=0), dtype=np.float64)

    @property
    def n_comparisons(self) -> float:
        return float(self.wins.sum())


def comparisons(
    outcomes: Iterable[tuple[str, str, float, Hashable]], *, runs: Sequence[str] | None = None
) -> Comparisons:
    """Collect outcomes (run_a, run_b, score of run_a in [0, 1], unit) into win matrices. The unit
    is what the bootstrap resamples (the sample compared); `runs` fixes the order (default: by
    name)."""
    rows = list(outcomes)
    names = list(runs) if runs is not None else sorted({r for a, b, *_ in rows for r in (a, b)})
    index = {name: i for i, name in enumerate(names)}
    units: dict[Hashable, int] = {}
    cells: list[tuple[int, int, int, float]] = []
    for a, b, score, unit in rows:
        if a == b:
            raise InputError(f"a run cannot be compared with itself: {a!r}")
        if a not in index or b not in index:
            continue
        s = float(score)
        if not 0.0 <= s <= 1.0:
            raise InputError(f"an outcome must be a score in [0, 1] for the first run, got {s}")
        u = units.setdefault(unit, len(units))
        cells.append((u, index[a], index[b], s))
    wins = np.zeros((len(units), len(names), len(names)))
    for u, i, j, s in cells:
        wins[u, i, j] += s
        wins[u, j, i] += 1.0 - s
    return Comparisons(tuple(names), tuple(units), wins)


def _prior_matrix(total: FloatArray, prior: float) -> FloatArray:
    compared = (total + total.T) > 0
    return np.where(compared, prior / 2.0, 0.0)


def _components(graph: Any, **options: Any) -> tuple[int, Any]:
    # scipy.sparse.csgraph costs 0.3 s to import: only when a fit needs it, not for every
    # command that imports this module
    from scipy.sparse.csgraph import connected_components

    n, labels = connected_components(graph, **options)
    return int(n), labels


def _check_estimable(runs: Sequence[str], total: FloatArray, prior: float) -> None:
    both = (total + total.T) > 0
    n_parts, labels = _components(both, directed=False)
    if n_parts > 1:
        parts = [sorted(runs[int(i)] for i in np.flatnonzero(labels == p)) for p in range(n_parts)]
        raise NotEstimable(
            "the runs fall into groups never compared with each other: "
            + " | ".join(", ".join(p) for p in parts),
            hint="Compare at least one run of each group with a run of another.",
        )
    if prior > 0:
        return
    n_strong, strong = _components(total > 0, directed=True, connection="strong")
    if n_strong > 1:
        # a set of runs that never lost a comparison to the others (or never won one)
        sizes = [sorted(runs[int(i)] for i in np.flatnonzero(strong == p)) for p in range(n_strong)]
        raise NotEstimable(
            "the maximum-likelihood strengths are infinite: some runs won (or lost) every "
            "comparison with the rest (" + " | ".join(", ".join(s) for s in sizes) + ")",
            hint="Use a prior > 0 (virtual ties per compared pair, e.g. 1).",
        )


def fit_mm(
    wins: FloatArray, *, tol: float = TOLERANCE, max_iter: int = MAX_ITERATIONS
) -> FloatArray:
    """Log-strengths (mean 0) maximising the Bradley–Terry likelihood of win matrices
    (..., k, k) by Hunter's MM iteration, for a whole stack of matrices at once. The MLE must
    exist for each (the wins graph strongly connected)."""
    w = np.asarray(wins, dtype=np.float64)
    n = w + np.swapaxes(w, -1, -2)
    won = w.sum(axis=-1)
    theta = np.zeros(won.shape)
    for _ in range(max_iter):
        pi = np.exp(theta)
        denominator = (n / (pi[..., :, None] + pi[..., None, :])).sum(axis=-1)
        new = np.log(won) - np.log(denominator)
        new -= new.mean(axis=-1, keepdims=True)
        step = float(np.max(np.abs(new - theta))) if new.size else 0.0
        theta = new
        if step < tol:
            return np.asarray(theta, dtype=np.float64)
    raise NotEstimable(f"the Bradley–Terry fit did not converge in {max_iter} iterations")


def log_likelihood(theta: FloatArray, wins: FloatArray) -> float:
    diff = theta[:, None] - theta[None, :]
    return float(-(wins * np.logaddexp(0.0, -diff)).sum())


@dataclass(frozen=True)
class Strength:
    run: str
    theta: float  # log-strength, mean 0 over the runs ranked
    low: float
    high: float
    wins: float  # total score against the others (ties as ½), without the prior
    comparisons: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run, "strength": self.theta, "low": self.low, "high": self.high,
            "wins": self.wins, "comparisons": self.comparisons,
        }  # fmt: skip


@dataclass(frozen=True)
class BradleyTerryResult:
    strengths: tuple[Strength, ...]  # in rank order
    ranking: RankIntervals
    n_units: int
    n_comparisons: float
    prior: float
    n_resamples: int
    seed: int
    confidence_level: float
    distribution: FloatArray = field(repr=False)  # (resamples, runs) log-strengths, run order

    def by_run(self) -> dict[str, Strength]:
        return {s.run: s for s in self.strengths}

    def win_probability(self, a: str, b: str) -> float:
        """P(a beats b) under the fitted strengths."""
        s = self.by_run()
        return float(1.0 / (1.0 + np.exp(s[b].theta - s[a].theta)))

    def to_dict(self) -> dict[str, Any]:
        ranked = self.ranking.by_run()

        def entry(s: Strength) -> dict[str, Any]:
            rank = ranked[s.run].to_dict()
            return {
                **s.to_dict(),
                **{k: v for k, v in rank.items() if k not in ("run", "estimate")},
            }

        return {
            "model": "bradley-terry, ties as half a win each, mean log-strength 0",
            "prior": self.prior,
            "n_units": self.n_units,
            "n_comparisons": self.n_comparisons,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "confidence_level": self.confidence_level,
            "rank_method": self.ranking.method,
            "runs": [entry(s) for s in self.strengths],
            "groups": [list(g) for g in self.ranking.groups],
        }


def bradley_terry(
    data: Comparisons,
    *,
    prior: float = 1.0,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    rank_method: RankMethod = "marginal",
    rng: int | np.random.Generator | None = None,
) -> BradleyTerryResult:
    """Strengths with percentile intervals, rank intervals and tie groups (see the module)."""
    if len(data.runs) < 2:
        raise InputError(f"Bradley–Terry needs at least 2 runs, got {len(data.runs)}")
    if len(data.units) < 2:
        raise InputError(f"need at least 2 compared items to resample, got {len(data.units)}")
    if not (np.isfinite(prior) and prior >= 0):
        raise InputError(f"prior must be ≥ 0, got {prior}")
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 1:
        raise InputError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0.0 < confidence_level < 1.0:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level}")
    total = data.total
    _check_estimable(data.runs, total, prior)
    extra = _prior_matrix(total, prior)
    theta = fit_mm(total + extra)
    generator, seed = resolve_rng(rng)
    draws = _resampled(data.wins, extra, n_resamples, generator, prior)
    alpha = 1.0 - confidence_level
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2], axis=0)
    names = data.runs
    ranking = rank_intervals(
        dict(zip(names, theta.tolist(), strict=True)),
        {name: draws[:, i] for i, name in enumerate(names)},
        confidence_level=confidence_level,
        method=rank_method,
    )
    index = {name: i for i, name in enumerate(names)}
    strengths = tuple(
        Strength(r.run, float(theta[index[r.run]]), float(low[index[r.run]]),
                 float(high[index[r.run]]), float(total[index[r.run]].sum()),
                 float(total[index[r.run]].sum() + total[:, index[r.run]].sum()))
        for r in ranking.runs
    )  # fmt: skip
    return BradleyTerryResult(
        strengths, ranking, len(data.units), data.n_comparisons, prior, int(n_resamples), seed,
        confidence_level, draws,
    )  # fmt: skip


def _resampled(
    wins: FloatArray, extra: FloatArray, n_resamples: int, rng: np.random.Generator, prior: float
) -> FloatArray:
    """Log-strengths of each resample of the units (all fitted at once, in chunks)."""
    units, k, _ = wins.shape
    flat = wins.reshape(units, k * k)
    out = np.empty((n_resamples, k))
    chunk = max(1, min(n_resamples, (1 << 21) // max(units, k * k)))
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        counts = rng.multinomial(units, np.full(units, 1.0 / units), size=stop - start)
        stack = (counts @ flat).reshape(stop - start, k, k) + extra
        if prior == 0:
            for b in range(stop - start):
                n_strong, _ = _components(stack[b] > 0, connection="strong")
                if n_strong > 1:
                    raise NotEstimable(
                        "some bootstrap resamples have infinite maximum-likelihood strengths "
                        "(a run won or lost every comparison drawn)",
                        hint="Use a prior > 0 (virtual ties per compared pair, e.g. 1).",
                    )
        out[start:stop] = fit_mm(stack)
    return out
