"""Rank intervals for the ReasonScore leaderboard: within each group of comparable runs, each
run's score/token recomputed on bootstrap resamples of its samples — drawn within each (tier,
task, point), as the seed's counts are made — and the rank intervals and tie groups of
`calipers.stats.rankings` over those distributions. Runs are resampled independently (a run's
samples need not be the others'); with the same items in every run that is conservative.

What the intervals are about: the rank of each run's score/token in the limit of unlimited
samples (the Wilson margin → 0, the center → the adjusted share), not of the finite-sample
score/token. The optimistic margin — about 2 standard errors added to every task's share, while
the noise averages out over tasks — is larger for a less accurate run (and for one with fewer
samples), so that intervals centred on the finite-sample score/token ranked a cheaper, less
accurate run confidently ahead of a truly better one (measured: worst-run coverage 0.91–0.93,
and 0.74 when the less accurate run answered a quarter of the questions; docs/rankings.md). So
each run's estimate and resamples are the plug-in limit — the same rules with the adjusted share
clipped to [0, 1] in place of center + margin — while the leaderboard still ranks by the
scheme's score/token; a note says when a run's leaderboard rank lies outside its interval."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from calipers.data.sampleset import SampleSet
from calipers.stats._rng import resolve_rng
from calipers.stats.intervals import wilson_interval
from calipers.stats.rankings import RankIntervals, rank_intervals

Estimand = Literal["limit", "score"]
RESAMPLES = 1_000
MAX_SAMPLES = 500_000  # per group: resamples × samples multinomial draws


def _cells(samples: SampleSet, run: str, default: str) -> dict[tuple[str, str, str], Any]:
    """The scored samples of `run` per (tier, task, point): correct, guess, truncated, tokens."""
    rows = samples.con.execute(
        f"""
        SELECT coalesce(tier, ?) AS tier, task, coalesce(point, ?) AS point,
               correct::DOUBLE, coalesce(guess_chance, 0.0), coalesce(truncated, false)::DOUBLE,
               tokens_out::DOUBLE
        FROM {samples.relation} WHERE run = ? AND correct IS NOT NULL
        ORDER BY 1, 2, 3, sample_id, epoch
        """,
        [default, default, run],
    ).fetchall()
    cells: dict[tuple[str, str, str], list[tuple[float, ...]]] = {}
    for tier, task, point, *values in rows:
        cells.setdefault((str(tier), str(task), str(point)), []).append(
            tuple(np.nan if v is None else float(v) for v in values)
        )
    return {key: np.array(v, dtype=np.float64) for key, v in cells.items()}


def _share(adj_s: Any, adj_n: Any, z: float | None) -> Any:
    """Wilson's center + margin on the adjusted counts, or with `z` None their limit: the
    adjusted share clipped to [0, 1] (NaN where adj_n ≤ 0, as Wilson's)."""
    if z is not None:
        center, margin = wilson_interval(adj_s, adj_n, z=z)
        return center + margin
    n = np.asarray(adj_n, dtype=np.float64)
    safe = np.where(n > 0, n, 1.0)
    return np.where(n > 0, np.clip(np.asarray(adj_s, dtype=np.float64), 0.0, safe) / safe, np.nan)


def per_token(
    cells: dict[tuple[str, str, str], np.ndarray], counts: Any, *, z: float | None, floor: float
) -> np.ndarray:
    """score/token for each row of `counts` (resamples × samples of each cell, how often each
    sample is drawn), by the seed's rules, vectorised over resamples: per task, Wilson on the
    summed guess-corrected counts of its points less the truncated share, floored; per tier,
    1000 · the geometric mean of its tasks; the run, the mean of tier scores over the mean of the
    tiers' average output tokens. With `z` None, each task's Wilson center + margin is replaced by
    its limit (`_share`): score/token's plug-in limit. NaN where a figure is undefined."""
    tasks: dict[tuple[str, str], list[np.ndarray]] = {}
    tier_tokens: dict[str, list[np.ndarray]] = {}
    for (tier, task, _), x in cells.items():
        d = counts[(tier, task, _)]
        n = float(x.shape[0])
        correct, guess, truncated = d @ x[:, 0], d @ x[:, 1], d @ x[:, 2]
        tokens, has_tokens = d @ np.nan_to_num(x[:, 3]), d @ np.isfinite(x[:, 3])
        sums = tasks.setdefault((tier, task), [0.0, 0.0, 0.0, 0.0])  # type: ignore[list-item]
        sums[0] = sums[0] + (correct - guess)
        sums[1] = sums[1] + (n - guess)
        sums[2] = sums[2] + truncated
        sums[3] = sums[3] + n
        tok = tier_tokens.setdefault(tier, [0.0, 0.0])  # type: ignore[list-item]
        tok[0], tok[1] = tok[0] + tokens, tok[1] + has_tokens
    logs: dict[str, list[np.ndarray]] = {}
    for (tier, _), (adj_s, adj_n, truncated, total) in tasks.items():
        raw = _share(adj_s, adj_n, z) - truncated / total
        logs.setdefault(tier, []).append(np.log(np.maximum(floor, raw)))  # NaN stays NaN
    scores = [1000.0 * np.exp(np.mean(v, axis=0)) for v in logs.values()]
    with np.errstate(invalid="ignore", divide="ignore"):
        tokens = [t[0] / t[1] for t in tier_tokens.values()]
        avg_score, avg_tokens = np.mean(scores, axis=0), np.mean(tokens, axis=0)
        return np.asarray(np.where(avg_tokens > 0, avg_score / avg_tokens, np.nan))


def run_draws(
    samples: SampleSet,
    run: str,
    *,
    z: float,
    floor: float,
    default: str,
    n_resamples: int,
    rng: np.random.Generator,
    estimand: Estimand = "limit",
) -> tuple[np.ndarray, float, float]:
    """(the estimand on each resample of `run` (NaN where undefined), the estimand on the data,
    score/token on the data by the scheme's rules). `estimand`: "limit", score/token's plug-in
    limit (`per_token` with z None), or "score", score/token itself."""
    cells = _cells(samples, run, default)
    draws = {
        key: rng.multinomial(x.shape[0], np.full(x.shape[0], 1.0 / x.shape[0]), size=n_resamples)
        for key, x in cells.items()
    }
    observed = {key: np.ones((1, x.shape[0])) for key, x in cells.items()}
    score = float(per_token(cells, observed, z=z, floor=floor)[0])
    of = None if estimand == "limit" else z
    point = score if of is not None else float(per_token(cells, observed, z=of, floor=floor)[0])
    return per_token(cells, draws, z=of, floor=floor), point, score


def group_ranks(
    samples: SampleSet,
    runs: list[Any],
    *,
    z: float,
    floor: float,
    default: str,
    seed: int | None,
    confidence_level: float = 0.95,
    estimand: Estimand = "limit",
) -> tuple[dict[str, Any] | None, str | None]:
    """(the group's rank intervals as JSON, a note or None) or (None, why there are none).
    `estimand` "score" ranks the finite-sample score/token instead of its limit: only for the
    calibration study, which measures why the limit is the default (docs/rankings.md)."""
    ranked = [r for r in runs if r.score_per_token is not None]
    if len(ranked) < 2:
        return None, None
    if sum(r.samples for r in ranked) > MAX_SAMPLES:
        return None, (
            f"rank intervals left out: {sum(r.samples for r in ranked):,} samples in the group "
            f"(above {MAX_SAMPLES:,}, the rescoring bootstrap would take minutes)"
        )
    generator, used = resolve_rng(seed)
    draws, estimates = {}, {}
    for r in ranked:
        draws[r.run], estimates[r.run], score = run_draws(
            samples, r.run, z=z, floor=floor, default=default, n_resamples=RESAMPLES,
            rng=generator, estimand=estimand,
        )  # fmt: skip
        # the vectorised rules must give the scheme's own score/token on the data itself; if
        # they ever do not, no interval is better than one of another quantity
        if not np.isclose(score, float(r.score_per_token), rtol=1e-9):
            return None, (
                f"rank intervals left out: the resampled score/token of {r.run} does not "
                f"reproduce its own ({score:.6g} vs {r.score_per_token:.6g}); please report it"
            )
    undefined = [name for name, d in draws.items() if np.isnan(d).any()]
    if undefined:
        return None, (
            f"rank intervals left out: score/token is undefined on some resamples of "
            f"{', '.join(undefined)} (a tier or task with no trial above chance)"
        )
    result = rank_intervals(estimates, draws, confidence_level=confidence_level)
    return {**result.to_dict(), "estimand": estimand, "seed": used}, _outside(ranked, result)


def _outside(ranked: list[Any], result: RankIntervals) -> str | None:
    """A note naming the runs whose leaderboard rank (by score/token, ties sharing the best) is
    outside their rank interval: the margin's optimism reorders them, the data do not."""
    bounds = result.by_run()
    outside = []
    for r in ranked:
        rank = 1 + sum(o.score_per_token > r.score_per_token for o in ranked)
        b = bounds[r.run]
        if not b.low <= rank <= b.high:
            span = str(b.low) if b.low == b.high else f"{b.low}–{b.high}"
            outside.append(f"{r.run} (rank {rank}, interval {span})")
    if not outside:
        return None
    return (
        f"rank intervals are for score/token's limit with unlimited samples; by score/token "
        f"itself {', '.join(outside)} rank outside it: its Wilson margin, larger at lower "
        "accuracy or fewer samples, moves it (docs/rankings.md)"
    )


__all__ = ["group_ranks"]
