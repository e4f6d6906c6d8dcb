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
from calipers.stats.rankings import rank_intervals

RESAMPLES = 1_000
MAX_SAMPLES = 50_000  # per group: each resample rescores every run in Python


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


def run_draws(
    samples: SampleSet,
    run: str,
    *,
    rescore: Any,
    counts_type: Any,
    default: str,
    n_resamples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """score/token of `run` on each resample (NaN where it is undefined)."""
    cells = _cells(samples, run, default)
    sums = {}
    for key, x in cells.items():
        n = x.shape[0]
        draws = rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples)  # resamples × n
        tokens = np.nan_to_num(x[:, 3])
        has_tokens = np.isfinite(x[:, 3]).astype(np.float64)
        sums[key] = (
            n,
            draws @ x[:, 0], draws @ x[:, 1], draws @ x[:, 2], draws @ tokens, draws @ has_tokens,
        )  # fmt: skip
    out = np.full(n_resamples, np.nan)
    for b in range(n_resamples):
        rows = [
            counts_type(run, tier, task, point, n, round(float(c[b])), float(g[b]),
                        round(float(t[b])), 0, 0, float(tok[b]), round(float(tn[b])))
            for (tier, task, point), (n, c, g, t, tok, tn) in sums.items()
        ]  # fmt: skip
        score = rescore(run, rows)
        if score is not None:
            out[b] = score
    return out


def group_ranks(
    samples: SampleSet,
    runs: list[Any],
    *,
    rescore: Any,
    counts_type: Any,
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
    draws = {
        r.run: run_draws(samples, r.run, rescore=rescore, counts_type=counts_type,
                         default=default, n_resamples=RESAMPLES, rng=generator)
        for r in ranked
    }  # fmt: skip
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
