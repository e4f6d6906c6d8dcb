"""Cost beside the ReasonScore leaderboard (docs/reasonscore.md, "Cost beside the leaderboard"):
each run's cost per solved item with its interval and, with a margin, the cheapest-acceptable
labels within each group of comparable runs (`calipers.verdicts.cost_leaderboard`).

The outcome is each sample's `correct` as recorded — not guessing-corrected and without the
truncation penalty — so that "per solved item" means what it says; score/token is ReasonScore's
own cost-aware number (in output tokens, not dollars) and is left as it is."""

from __future__ import annotations

from calipers.data.sampleset import SampleSet
from calipers.verdicts.cost import cost_expressions
from calipers.verdicts.cost_leaderboard import LeaderboardCost, leaderboard_cost
from calipers.verdicts.persample import StagedScores

OUTCOME = (
    "correct: each sample's recorded outcome (1 solved, 0 not), each sample's epochs as its mean; "
    "not guessing-corrected and without the truncation penalty"
)
INCLUDES_COST = {
    "score/token": (
        "includes cost, in output tokens: the mean tier ReasonScore divided by the mean output "
        "tokens per sample (tokens_out); no dollars, no interval"
    ),
    "tier ReasonScores": "do not include cost (ReasonScore per tier, 10–1000)",
    "cost per solved item": (
        "the system's cost_usd per solved item (correct), with its interval; no ReasonScore and "
        "no token count in it"
    ),
}


def reasonscore_cost(
    samples: SampleSet, groups: list[list[str]], *, margin: float | None, seed: int
) -> LeaderboardCost:
    """The cost section of the leaderboard of `groups` (runs ranked together, best first)."""
    runs = sorted(r for g in groups for r in g)

    def stage() -> StagedScores:
        from calipers.schemes.metric import stage_metric

        # the cost columns read with the outcome's rows: one pass over the rows, not two
        return stage_metric(samples, runs, metric="correct", bounds=(0.0, 1.0),
                            extra=cost_expressions(samples))  # fmt: skip

    return leaderboard_cost(
        stage, samples, runs, groups=groups, label="correct", outcome_source=OUTCOME,
        includes_cost=INCLUDES_COST, margin=margin, seed=seed,
    )  # fmt: skip
