"""Rank intervals for the ReasonScore leaderboard: within each group of comparable runs, each
run's score/token recomputed on bootstrap resamples of its samples — drawn within each (tier,
task, point), as the seed's counts are made — and the rank intervals and tie groups of
`calipers.stats.rankings` over those distributions. Runs are resampled independently (a run's
samples need not be the others'); with the same items in every run that is conservative."""

from __future__ import annotations

from typing import Any

import numpy as np

from calipers.data.sampleset import SampleSet
from calipers.stats._rng import resolve_rng
from calipers.stats.intervals import wilson_interval
from calipers.stats.rankings import rank_intervals

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


def per_token(
    cells: dict[tuple[str, str, str], np.ndarray], counts: Any, *, z: float, floor: float
) -> np.ndarray:
    """score/token for each row of `counts` (resamples × samples of each cell, how often each
    sample is drawn), by the seed's rules, vectorised over resamples: per task, Wilson on the
    summed guess-corrected counts of its points less the truncated share, floored; per tier,
    1000 · the geometric mean of its tasks; the run, the mean of tier scores over the mean of the
    tiers' average output tokens. NaN where a figure is undefined."""
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
        center, margin = wilson_interval(adj_s, adj_n, z=z)
        raw = center + margin - truncated / total
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
) -> tuple[np.ndarray, float]:
    """score/token of `run` on each resample (NaN where undefined), and on the data itself."""
    cells = _cells(samples, run, default)
    draws = {
        key: rng.multinomial(x.shape[0], np.full(x.shape[0], 1.0 / x.shape[0]), size=n_resamples)
        for key, x in cells.items()
    }
    observed = {key: np.ones((1, x.shape[0])) for key, x in cells.items()}
    point = float(per_token(cells, observed, z=z, floor=floor)[0])
    return per_token(cells, draws, z=z, floor=floor), point


def group_ranks(
    samples: SampleSet,
    runs: list[Any],
    *,
    z: float,
    floor: float,
    default: str,
    seed: int | None,
    confidence_level: float = 0.95,
) -> tuple[dict[str, Any] | None, str | None]:
    """(the group's rank intervals as JSON, None) or (None, why there are none)."""
    ranked = [r for r in runs if r.score_per_token is not None]
    if len(ranked) < 2:
        return None, None
    if sum(r.samples for r in ranked) > MAX_SAMPLES:
        return None, (
            f"rank intervals left out: {sum(r.samples for r in ranked):,} samples in the group "
            f"(above {MAX_SAMPLES:,}, the rescoring bootstrap would take minutes)"
        )
    generator, used = resolve_rng(seed)
    draws = {}
    for r in ranked:
        draws[r.run], point = run_draws(samples, r.run, z=z, floor=floor, default=default,
                                        n_resamples=RESAMPLES, rng=generator)  # fmt: skip
        # the vectorised rules must give the scheme's own score/token on the data itself; if
        # they ever do not, no interval is better than one of another quantity
        if not np.isclose(point, float(r.score_per_token), rtol=1e-9):
            return None, (
                f"rank intervals left out: the resampled score/token of {r.run} does not "
                f"reproduce its own ({point:.6g} vs {r.score_per_token:.6g}); please report it"
            )
    undefined = [name for name, d in draws.items() if np.isnan(d).any()]
    if undefined:
        return None, (
            f"rank intervals left out: score/token is undefined on some resamples of "
            f"{', '.join(undefined)} (a tier or task with no trial above chance)"
        )
    result = rank_intervals(
        {r.run: float(r.score_per_token) for r in ranked}, draws,
        confidence_level=confidence_level,
    )  # fmt: skip
    return {**result.to_dict(), "seed": used}, None


__all__ = ["group_ranks"]
