"""Rank intervals for a score's runs (layered, metric): each run's mean over the samples every run
has, each sample's epochs averaged first (the estimand), the samples resampled together for all
runs, and the rank intervals and tie groups of `calipers.stats.rankings` (docs/rankings.md: the
marginal method covered the true rank ≥ 0.978 of the time in every simulated cell)."""

from __future__ import annotations

from typing import Any

import numpy as np

from calipers.stats.rankings import mean_rank_intervals
from calipers.verdicts.persample import StagedScores

RANK_RESAMPLES = 1_000  # as in the rankings calibration
MAX_RANKED_SAMPLES = 200_000  # resamples × samples gathers; beyond, the ranking is left out


def rank_runs(
    staged: StagedScores, runs: list[str], *, confidence_level: float, seed: int
) -> tuple[dict[str, Any] | None, str | None]:
    """(the ranking's JSON body, None) or (None, why there is none)."""
    if len(runs) < 2:
        return None, None
    width = 1 + max(int(staged.fetch(r).sid.max(initial=-1)) for r in runs)
    means, present = [], np.ones(width, dtype=bool)
    for run in runs:
        values, sid = staged.composite(run), staged.fetch(run).sid
        keep = np.isfinite(values)
        n = np.bincount(sid[keep], minlength=width)
        total = np.bincount(sid[keep], weights=values[keep], minlength=width)
        present &= n > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            means.append(total / np.maximum(n, 1))
    shared = int(present.sum())
    if shared < 2:
        return None, f"rank intervals need at least 2 samples every run has ({shared})"
    if shared > MAX_RANKED_SAMPLES:
        return None, (
            f"rank intervals left out: {shared:,} shared samples (above {MAX_RANKED_SAMPLES:,}, "
            "the bootstrap would take minutes); calipers.stats.rankings computes them"
        )
    per_run = {run: m[present] for run, m in zip(runs, means, strict=True)}
    result, used_seed = mean_rank_intervals(
        per_run, n_resamples=RANK_RESAMPLES, confidence_level=confidence_level, rng=seed
    )
    return {**result.to_dict(), "seed": used_seed, "n_samples": shared}, None
