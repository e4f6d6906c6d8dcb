"""Rank intervals against known truth: simulated leaderboards whose true order is known.

    python -m calipers.calibration.rankings [--sims N] [--resamples B] [--seed S] [--only TEXT]

Two kinds of leaderboard, each cell `default_rng([seed, cell number])`:

    means   K runs answer the same n items; item i and run r: correct ~ Bernoulli(expit(a_i +
            b_r)), a_i ~ N(0, 1) shared by the runs (paired), b_r = gap·(K − 1 − r). The true mean
            of run r is increasing in b_r, so the true rank is r + 1. Rank intervals by
            `mean_rank_intervals` (items resampled together for all runs).
    bt      K runs compared pairwise on n items, every pair on every item: the item draws each
            run's latent quality u = θ_r + N(0, σ²) (σ = 0.5: an item's comparisons are
            correlated), θ_r equally spaced over `spread`; a pair's outcome is a tie with
            probability `ties`, else a win for i with probability expit(u_i − u_j). True rank:
            by θ. Rank intervals by `bradley_terry` (items resampled as units). With σ = 0 and no
            ties the model is exactly Bradley–Terry, and the strength intervals are measured
            against θ (centred) too.

Measured per cell: marginal coverage (share of (simulation, run) whose true rank lies in its
interval; and the worst run's share), joint coverage (share of simulations where every run's
interval holds), the mean interval width in ranks, for both the marginal and the simultaneous
method.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.stats.bradley_terry import Comparisons
from calipers.stats.bradley_terry import bradley_terry as fit_bt
from calipers.stats.rankings import RankIntervals, paired_mean_draws, rank_intervals

TARGET = 0.93  # marginal coverage of a nominal 95% interval, every cell


@dataclass(frozen=True)
class RankCell:
    kind: str  # "means" or "bt"
    runs: int
    items: int
    gap: float = 0.0  # means: logit gap between neighbours
    spread: float = 0.0  # bt: θ_max − θ_min
    ties: float = 0.0  # bt: probability of a tie
    sigma: float = 0.5  # bt: per-item spread of a run's quality

    @property
    def id(self) -> str:
        if self.kind == "means":
            return f"means K={self.runs} n={self.items} gap={self.gap:g}"
        return (
            f"bt K={self.runs} n={self.items} spread={self.spread:g} ties={self.ties:g} "
            f"σ={self.sigma:g}"
        )


GRID: tuple[RankCell, ...] = (
    RankCell("means", 3, 30, gap=0.1),
    RankCell("means", 5, 100, gap=0.03),  # nearly equal runs: where percentile fails
    RankCell("means", 5, 100, gap=0.12),
    RankCell("means", 5, 400, gap=0.3),
    RankCell("means", 10, 50, gap=0.05),
    RankCell("means", 10, 200, gap=0.1),
    RankCell("means", 10, 100, gap=0.0),  # all equal: every rank is true (see _true_ranks)
    RankCell("bt", 3, 30, spread=0.3, ties=0.3),
    RankCell("bt", 4, 40, spread=1.0, ties=0.7),  # a position-biased judge's share of ties
    RankCell("bt", 5, 50, spread=1.0, ties=0.0, sigma=0.0),  # exactly BT: strengths measured
    RankCell("bt", 5, 200, spread=1.0, ties=0.0, sigma=0.0),
    RankCell("bt", 8, 40, spread=0.2, ties=0.3),
    RankCell("bt", 8, 60, spread=2.0, ties=0.3),
    RankCell("bt", 8, 200, spread=0.5, ties=0.0),
)


@dataclass
class Tally:
    covered: npt.NDArray[np.int64]  # per run
    joint: int = 0
    width: float = 0.0

    def add(self, ranking: RankIntervals, true_rank: dict[str, set[int]]) -> None:
        hits = [bool(true_rank[r.run] & set(range(r.low, r.high + 1))) for r in ranking.runs]
        names = [r.run for r in ranking.runs]
        for name, hit in zip(names, hits, strict=True):
            self.covered[int(name)] += hit
        self.joint += all(hits)
        self.width += float(np.mean([r.high - r.low + 1 for r in ranking.runs]))


def _true_ranks(values: Sequence[float]) -> dict[str, set[int]]:
    """Run name (its index) → its true rank(s); equal true values share every rank they span."""
    out: dict[str, set[int]] = {}
    for i, v in enumerate(values):
        ahead = sum(1 for w in values if w > v)
        level = sum(1 for w in values if w == v)
        out[str(i)] = set(range(ahead + 1, ahead + level + 1))
    return out


METHODS = ("marginal", "simultaneous", "percentile")
Draws = tuple[dict[str, float], dict[str, Any], dict[str, set[int]], list[bool] | None]


def _means(cell: RankCell, rng: np.random.Generator, resamples: int) -> Draws:
    b = cell.gap * (cell.runs - 1 - np.arange(cell.runs))
    a = rng.normal(size=(cell.items, 1))
    p = 1.0 / (1.0 + np.exp(-(a + b[None, :])))
    x = (rng.random(p.shape) < p).astype(float)
    values = {str(r): x[:, r] for r in range(cell.runs)}
    estimates, draws, _ = paired_mean_draws(values, n_resamples=resamples, rng=rng)
    return estimates, draws, _true_ranks(b.tolist()), None


def _bt(cell: RankCell, rng: np.random.Generator, resamples: int) -> Draws:
    k = cell.runs
    theta = np.linspace(cell.spread / 2, -cell.spread / 2, k)
    i_idx, j_idx = np.triu_indices(k, 1)
    u = theta + rng.normal(scale=cell.sigma, size=(cell.items, k)) if cell.sigma else theta
    u = np.broadcast_to(u, (cell.items, k))
    p = 1.0 / (1.0 + np.exp(-(u[:, i_idx] - u[:, j_idx])))
    tie = rng.random(p.shape) < cell.ties
    win = rng.random(p.shape) < p
    score = np.where(tie, 0.5, win.astype(float))
    wins = np.zeros((cell.items, k, k))
    wins[:, i_idx, j_idx] = score
    wins[:, j_idx, i_idx] = 1.0 - score
    data = Comparisons(tuple(str(r) for r in range(k)), tuple(range(cell.items)), wins)
    fit = fit_bt(data, n_resamples=resamples, rng=rng)
    strength_hits = None
    if cell.sigma == 0 and cell.ties == 0:
        truth = theta - theta.mean()
        strength_hits = [s.low <= truth[int(s.run)] <= s.high for s in fit.strengths]
    estimates = {s.run: s.theta for s in fit.strengths}
    draws = {name: fit.distribution[:, i] for i, name in enumerate(data.runs)}
    return estimates, draws, _true_ranks(theta.tolist()), strength_hits


def run_cell(cell: RankCell, *, sims: int, resamples: int, seed: int, key: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, key])
    tallies = {m: Tally(np.zeros(cell.runs, dtype=np.int64)) for m in METHODS}
    strength_hits: list[bool] = []
    simulate = _means if cell.kind == "means" else _bt
    start = time.perf_counter()
    for _ in range(sims):
        estimates, draws, truth, hits = simulate(cell, rng, resamples)
        for method, tally in tallies.items():
            tally.add(rank_intervals(estimates, draws, method=method), truth)  # type: ignore[arg-type]
        strength_hits += hits or []
    out: dict[str, Any] = {"cell": cell.id, "sims": sims, "resamples": resamples}
    for method, t in tallies.items():
        out[method] = {
            "coverage": float(t.covered.sum() / (sims * cell.runs)),
            "worst_run": float(t.covered.min() / sims),
            "joint": t.joint / sims,
            "width": t.width / sims,
        }
    out["strength_coverage"] = float(np.mean(strength_hits)) if strength_hits else None
    out["seconds"] = time.perf_counter() - start
    return out


def table(results: Sequence[dict[str, Any]]) -> str:
    """Coverage (worst run's) · joint coverage · mean width in ranks, per method."""
    head = " | ".join(f"{m}: coverage (worst run) · joint · width" for m in METHODS)
    lines = [f"| cell | {head} | strength CI |", "|---" * (len(METHODS) + 2) + "|"]
    for r in results:
        parts = [
            f"{r[m]['coverage']:.3f} ({r[m]['worst_run']:.3f}) · {r[m]['joint']:.3f} · "
            f"{r[m]['width']:.2f}"
            for m in METHODS
        ]
        strength = f"{r['strength_coverage']:.3f}" if r["strength_coverage"] is not None else ""
        lines.append(f"| {r['cell']} | " + " | ".join(parts) + f" | {strength} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calipers.calibration.rankings")
    parser.add_argument("--sims", type=int, default=1000, help="simulations per cell")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--only", help="only cells whose id contains this text")
    args = parser.parse_args(argv)
    results = []
    for key, cell in enumerate(GRID):
        if args.only and args.only not in cell.id:
            continue
        results.append(run_cell(cell, sims=args.sims, resamples=args.resamples,
                                seed=args.seed, key=key))  # fmt: skip
        print(f"{cell.id}: {results[-1]['seconds']:.1f} s", flush=True)
    print(f"\n{args.sims} simulations per cell, {args.resamples} resamples, seed {args.seed}\n")
    print(table(results))
    low = [r["cell"] for r in results if r["marginal"]["worst_run"] < TARGET]
    print("\nmarginal: every run ≥ 0.93 in every cell" if not low
          else f"\nmarginal below 0.93 for some run: {', '.join(low)}")  # fmt: skip
    return 1 if low else 0


if __name__ == "__main__":
    raise SystemExit(main())
