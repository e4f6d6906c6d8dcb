"""Cost beside the objective scores (docs/objective.md, "Cost beside the composite"): each run's
cost per unit of `base` — the composite before its cost adjustment, objective checks and judge
only, on [0, 1] — with its interval, per run and per task, and with a margin the
cheapest-acceptable labels (`calipers.verdicts.cost_leaderboard`).

Not per unit of the composite: the composite already holds a cost adjustment (against the
baseline's cost), so dividing cost by it would count cost twice, and it is made per task, not
per sample. `base` is made per observation by the scoring's own `row_scores` (no second copy)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from calipers.data.sampleset import SampleSet
from calipers.schemes.objective.scoring import Weights, row_scores, staged_rows
from calipers.verdicts.cost_leaderboard import LeaderboardCost, leaderboard_cost
from calipers.verdicts.persample import FloatArray, StagedScores, stage_rows

LABEL = "base score"
OUTCOME = (
    "base: (w_obj·obj01 + w_judge·judge01)/(w_obj + w_judge) per observation (obj01 alone "
    "where unjudged), on [0, 1]: the composite before its cost adjustment; each sample's epochs "
    "as its mean"
)
INCLUDES_COST = {
    "composite": (
        "includes cost: base plus the cost adjustment against the baseline run's cost metrics "
        "(cost_weight · clamp(1 − mean cost ratio, −1, 1)); 0 for the baseline and without one"
    ),
    "cost adjustment": "is the cost part of the composite (relative to the baseline, no interval)",
    "base": "does not include cost (objective checks and judge only)",
    "cost per unit of base score": (
        "the system's cost_usd per unit of base, with its interval: not per unit of the "
        "composite, which would count cost twice"
    ),
}


def _value(values: Mapping[str, FloatArray]) -> FloatArray:
    return values["value"]


def stage_base(samples: SampleSet, runs: list[str], weights: Weights) -> StagedScores:
    """Each observation's base, on the sample codes of `stage_rows` (pairs match on them)."""
    scored = staged_rows(samples, runs)
    base = row_scores(scored, weights, samples.origin)[3]
    by_key = {(str(r[0]), str(r[1]), str(r[2]), int(r[3])): float(b)
              for r, b in zip(scored, base, strict=True)}  # fmt: skip
    rows = stage_rows(samples, runs, {"task_name": "task", "sample_name": "sample_id"})
    value = np.full(rows.columns["sid"].size, np.nan)
    tasks, names, epochs = rows.columns["task_name"], rows.columns["sample_name"], rows.columns[
        "epoch"]  # fmt: skip
    for run, span in rows.spans.items():
        for i in range(span.start, span.stop):
            value[i] = by_key.get((run, str(tasks[i]), str(names[i]), int(epochs[i])), np.nan)
    return StagedScores(
        runs=rows.run_arrays({"value": value}), tasks=rows.tasks, components=("value",),
        combine=_value, raw_combine=_value, gated=False, bounds=(0.0, 1.0),
        bounds_source="the objective scheme: base on [0, 1]", names=rows.names,
    )  # fmt: skip


def objective_cost(
    samples: SampleSet, runs: list[str], weights: Weights, *, margin: float | None, seed: int
) -> LeaderboardCost:
    """The cost section of the objective scores of `runs` (all ranked together)."""
    return leaderboard_cost(
        lambda: stage_base(samples, runs, weights), samples, runs, groups=[list(runs)],
        label=LABEL, outcome_source=OUTCOME, includes_cost=INCLUDES_COST, margin=margin,
        seed=seed,
    )  # fmt: skip
