"""Rank intervals against known truth: simulated leaderboards whose true order is known.

    python -m calipers.calibration.rankings [--sims N] [--resamples B] [--seed S] [--only TEXT]
        [--json benchmarks/results/rank_calibration.json] [--estimand limit|score]

Three kinds of leaderboard, each cell `default_rng([seed, cell number])`:

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
    reasonscore K runs answer the same generated questions, T tiers × J tasks × 2 points × m
            questions, with guessing, truncation and output tokens, and are scored by the
            reasonscore scheme; its rank intervals (`group_ranks`: 1,000 resamples, the marginal
            method) are measured against the ranks of score/token's infinite-sample limit
            (`reasonscore_ranks`, which says how the truth is computed). Near-tie pairs a
            relative `gap` apart, pairs a factor 2 apart; with `fewer`, the less accurate run of
            each pair answers only that share of the questions. `--estimand score` measures instead
            intervals centred on the finite-sample score/token (what calipers did before: it
            under-covers, docs/rankings.md).

Measured per cell: marginal coverage (share of (simulation, run) whose true rank lies in its
interval; and the worst run's share), joint coverage (share of simulations where every run's
interval holds), the mean interval width in ranks, for both the marginal and the simultaneous
method (reasonscore cells: the marginal method the scheme uses, only). `--json` writes the
figures (benchmarks/results/rank_calibration.json), from which docs/calibration.md's "Rank
intervals" section is made (`calipers.calibration.studies`).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.calibration import reasonscore_ranks
from calipers.schemes.reasonscore.ranks import RESAMPLES as REASONSCORE_RESAMPLES
from calipers.schemes.reasonscore.ranks import Estimand
from calipers.stats.bradley_terry import Comparisons
from calipers.stats.bradley_terry import bradley_terry as fit_bt
from calipers.stats.rankings import RankIntervals, paired_mean_draws, rank_intervals

TARGET = 0.93  # marginal coverage of a nominal 95% interval, every cell


@dataclass(frozen=True)
class RankCell:
    kind: str  # "means", "bt" or "reasonscore"
    runs: int
    items: int  # reasonscore: questions per (tier, task, point)
    gap: float = 0.0  # means: logit gap between neighbours; reasonscore: within a near-tie pair
    spread: float = 0.0  # bt: θ_max − θ_min
    ties: float = 0.0  # bt: probability of a tie
    sigma: float = 0.5  # bt: per-item spread of a run's quality
    tiers: int = 0  # reasonscore
    tasks: int = 0  # reasonscore: per tier
    fewer: float = 1.0  # reasonscore: share of the questions the less accurate runs answer

    @property
    def id(self) -> str:
        if self.kind == "means":
            return f"means K={self.runs} n={self.items} gap={self.gap:g}"
        if self.kind == "reasonscore":
            fewer = f" fewer={self.fewer:g}" if self.fewer != 1.0 else ""
            return (
                f"reasonscore K={self.runs} {self.tiers}×{self.tasks}×2×{self.items} "
                f"gap={self.gap:g}{fewer}"
            )
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
    # appended, so that the cells above keep their numbers (their seeds)
    RankCell("reasonscore", 4, 16, gap=0.05, tiers=3, tasks=6),
    RankCell("reasonscore", 4, 32, gap=0.05, tiers=3, tasks=6, fewer=0.25),
    RankCell("reasonscore", 8, 16, gap=0.05, tiers=3, tasks=4),
)


@dataclass
class Tally:
    covered: npt.NDArray[np.int64]  # per run
    joint: int = 0
    width: float = 0.0

    def add(self, spans: Mapping[str, tuple[int, int]], true_rank: dict[str, set[int]]) -> None:
        """One leaderboard's rank intervals, run name → (low, high)."""
        hits = {
            name: bool(true_rank[name] & set(range(lo, hi + 1))) for name, (lo, hi) in spans.items()
        }
        for name, hit in hits.items():
            self.covered[int(name)] += hit
        self.joint += all(hits.values())
        self.width += float(np.mean([hi - lo + 1 for lo, hi in spans.values()]))


def _spans(ranking: RankIntervals) -> dict[str, tuple[int, int]]:
    return {r.run: (r.low, r.high) for r in ranking.runs}


def _true_ranks(values: Sequence[float]) -> dict[str, set[int]]:
    """Run name (its index) → its true rank(s); equal true values share every rank they span
    (equal to 1e-9: a computed truth, such as a ReasonScore limit, carries rounding)."""
    out: dict[str, set[int]] = {}
    for i, v in enumerate(values):
        level = sum(1 for w in values if math.isclose(w, v, rel_tol=1e-9, abs_tol=1e-12))
        ahead = sum(1 for w in values if w > v) - sum(
            1 for w in values if w > v and math.isclose(w, v, rel_tol=1e-9, abs_tol=1e-12)
        )
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


def _design(cell: RankCell) -> reasonscore_ranks.Design:
    return reasonscore_ranks.Design(
        cell.runs, cell.tiers, cell.tasks, cell.items, cell.gap, cell.fewer
    )


def run_cell(
    cell: RankCell,
    *,
    sims: int,
    resamples: int,
    seed: int,
    key: int,
    estimand: Estimand = "limit",
) -> dict[str, Any]:
    """The cell's figures; a reasonscore cell's intervals are the scheme's own (marginal, with
    its 1,000 resamples: `resamples` does not apply), the other methods None."""
    rng = np.random.default_rng([seed, key])
    reasonscore = cell.kind == "reasonscore"
    methods = ("marginal",) if reasonscore else METHODS
    tallies = {m: Tally(np.zeros(cell.runs, dtype=np.int64)) for m in methods}
    strength_hits: list[bool] = []
    start = time.perf_counter()
    if reasonscore:
        design = _design(cell)
        _, limits = reasonscore_ranks.leaderboard(design)
        truth = _true_ranks(limits)
        for _ in range(sims):
            spans = reasonscore_ranks.rank_spans(design, rng, estimand=estimand)
            tallies["marginal"].add(spans, truth)
    else:
        simulate = _means if cell.kind == "means" else _bt
        for _ in range(sims):
            estimates, draws, truth, hits = simulate(cell, rng, resamples)
            for method, tally in tallies.items():
                ranking = rank_intervals(estimates, draws, method=method)  # type: ignore[arg-type]
                tally.add(_spans(ranking), truth)
            strength_hits += hits or []
    out: dict[str, Any] = {
        "cell": cell.id, "kind": cell.kind, "runs": cell.runs, "sims": sims,
        "resamples": REASONSCORE_RESAMPLES if reasonscore else resamples,
        "estimand": estimand if reasonscore else None, "parameters": asdict(cell),
    }  # fmt: skip
    if reasonscore:
        out["truth"] = list(limits)
    for method in METHODS:
        t = tallies.get(method)
        out[method] = (
            None
            if t is None
            else {
                "coverage": float(t.covered.sum() / (sims * cell.runs)),
                "worst_run": float(t.covered.min() / sims),
                "joint": t.joint / sims,
                "width": t.width / sims,
            }
        )
    out["strength_coverage"] = float(np.mean(strength_hits)) if strength_hits else None
    out["seconds"] = time.perf_counter() - start
    return out


def table(results: Sequence[dict[str, Any]]) -> str:
    """Coverage (worst run's) · joint coverage · mean width in ranks, per method ("–" where a
    cell does not measure a method)."""
    head = " | ".join(f"{m}: coverage (worst run) · joint · width" for m in METHODS)
    lines = [f"| cell | {head} | strength CI |", "|---" * (len(METHODS) + 2) + "|"]
    for r in results:
        parts = [
            "–"
            if r[m] is None
            else f"{r[m]['coverage']:.3f} ({r[m]['worst_run']:.3f}) · {r[m]['joint']:.3f} · "
            f"{r[m]['width']:.2f}"
            for m in METHODS
        ]
        strength = f"{r['strength_coverage']:.3f}" if r["strength_coverage"] is not None else ""
        lines.append(f"| {r['cell']} | " + " | ".join(parts) + f" | {strength} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calipers.calibration.rankings")
    parser.add_argument("--sims", type=int, default=500, help="simulations per cell")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--only", help="only cells whose id contains this text")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--estimand", choices=("limit", "score"), default="limit",
        help="reasonscore cells: the scheme's intervals (limit), or intervals centred on the "
        "finite-sample score/token (score: what calipers did before)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    results = []
    start = time.perf_counter()
    for key, cell in enumerate(GRID):
        if args.only and args.only not in cell.id:
            continue
        results.append(run_cell(cell, sims=args.sims, resamples=args.resamples,
                                seed=args.seed, key=key, estimand=args.estimand))  # fmt: skip
        print(f"{cell.id}: {results[-1]['seconds']:.1f} s", flush=True)
    wall = time.perf_counter() - start
    print(f"\n{args.sims} simulations per cell, {args.resamples} resamples, seed {args.seed}\n")
    print(table(results))
    if args.json:
        body = {
            "kind": "rank-calibration", "seed": args.seed, "sims": args.sims,
            "resamples": args.resamples, "estimand": args.estimand, "target": TARGET,
            "wall_s": wall, "cells": results,
        }  # fmt: skip
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
    low = [r["cell"] for r in results if r["marginal"]["worst_run"] < TARGET]
    print("\nmarginal: every run ≥ 0.93 in every cell" if not low
          else f"\nmarginal below 0.93 for some run: {', '.join(low)}")  # fmt: skip
    return 1 if low else 0


if __name__ == "__main__":
    raise SystemExit(main())
