"""Cost beside a scheme's own leaderboard (objective, reasonscore; docs/cost.md): per run the cost
per solved item (or per unit of a score that starts at 0) with its interval, from
`calipers.verdicts.cost` (no second copy), and — with a margin, for each group of runs ranked
together — the labels of `calipers rank --cost` (`calipers.verdicts.cost_ranking`): cheapest
acceptable, acceptable, not shown within the margin, dominated.

The system's cost is `cost_usd`; the graders' (`grader_cost_usd`) is reported apart and never
counted. A run with a scored observation lacking a cost gets no cost figure and no label, and
the section says why: a missing cost is never 0. The scheme says what its outcome is, and which
of its own numbers already fold cost in (`includes_cost`), so that no reader takes one for the
other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from calipers.data.sampleset import SampleSet
from calipers.errors import InputError
from calipers.verdicts.cost import cost_runs, has_cost
from calipers.verdicts.cost_figures import RunCost
from calipers.verdicts.cost_ranking import rank_by_cost
from calipers.verdicts.persample import StagedScores, resolve_cluster

# resamples of the simultaneous bounds behind the labels (`rank --cost`'s default), recorded
COST_RESAMPLES = 2_000
NO_COST = "no observation of these runs has a cost (cost_usd)"


@dataclass
class GroupLabels:
    """The cheapest-acceptable labels of one group of runs ranked together, or why none."""

    runs: list[str]
    ranking: dict[str, Any] | None  # `CostRanking.to_dict()` (schema cost-rank)
    refusal: str | None = None
    left_out: dict[str, str] = field(default_factory=dict)  # run → why it has no label

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "ranking": self.ranking, "refusal": self.refusal,
                "left_out": self.left_out}  # fmt: skip


@dataclass
class LeaderboardCost:
    """The cost section of a leaderboard (`report["cost"]`)."""

    outcome: str  # "solved item" or "unit of <score>"
    outcome_source: str  # what the outcome is, in words
    includes_cost: dict[str, str]  # the leaderboard's numbers → whether and how they fold cost in
    confidence_level: float
    cluster: str
    cluster_reason: str
    margin: float | None
    runs: dict[str, RunCost]
    missing_cost: dict[str, int]
    groups: list[GroupLabels]
    refusal: str | None = None  # no cost figure at all (no observation has a cost)
    notes: list[str] = field(default_factory=list)

    def labels(self) -> dict[str, dict[str, Any]]:
        """run → its row of the group's cost ranking (label, lower bound, dominated by, …)."""
        out = {}
        for g in self.groups:
            for row in (g.ranking or {}).get("runs") or []:
                out[row["run"]] = row
        return out

    def to_dict(self) -> dict[str, Any]:
        labels = self.labels()
        runs = {}
        for name, c in self.runs.items():
            row = labels.get(name) or {}
            runs[name] = {
                **c.to_dict(),
                "missing_cost": self.missing_cost.get(name, 0),
                "label": row.get("label"),
                "lower_bound_vs_best": row.get("lower_bound_vs_best"),
                "dominated_by": row.get("dominated_by") or [],
            }
        return {
            "outcome": self.outcome,
            "outcome_source": self.outcome_source,
            "includes_cost": self.includes_cost,
            "system_cost": "cost_usd",
            "grader_cost": "grader_cost_usd (reported apart, never counted as the system's)",
            "confidence_level": self.confidence_level,
            "cluster": self.cluster,
            "cluster_reason": self.cluster_reason,
            "margin": self.margin,
            "refusal": self.refusal,
            "runs": runs,
            "groups": [g.to_dict() for g in self.groups],
            "notes": self.notes,
        }


def leaderboard_cost(
    stage: Callable[[], StagedScores],
    samples: SampleSet,
    runs: list[str],
    *,
    groups: list[list[str]],
    label: str,
    outcome_source: str,
    includes_cost: dict[str, str],
    margin: float | None = None,
    seed: int = 0,
    confidence_level: float = 0.95,
    cluster: str = "auto",
) -> LeaderboardCost:
    """Cost per solved item (per unit of `label`) of each of `runs` on the outcome `stage()`
    makes (staged only when some observation has a cost), and with `margin` the
    cheapest-acceptable labels of each of `groups` (runs ranked together) of two runs or more.
    Refusals are said, never raised: the leaderboard is shown either way."""
    if not has_cost(samples, runs):
        return LeaderboardCost(
            "solved item", outcome_source, includes_cost, confidence_level, cluster, "no cost",
            margin, {r: RunCost(r, None, NO_COST, None, 0) for r in runs}, {}, [],
            refusal=NO_COST,
        )  # fmt: skip
    staged = stage()
    choice = resolve_cluster(staged, cluster)
    made = cost_runs(staged, samples, runs, cluster=choice.cluster,
                     confidence_level=confidence_level, label=label, seed=seed)  # fmt: skip
    notes = list(made.notes) + ([choice.note] if choice.note else [])
    if any(a.grader_rows for a in made.arms.values()):
        notes.append(
            "grader cost (grader_cost_usd: judges, model-graded scorers) is reported apart and "
            "never counted in the system's cost"
        )
    missing = {r: a.missing_cost for r, a in made.arms.items() if a.missing_cost}
    found = LeaderboardCost(
        made.outcome, outcome_source, includes_cost, confidence_level, choice.cluster,
        choice.reason, margin, made.runs, missing, [], notes=notes,
    )  # fmt: skip
    if margin is None:
        return found
    for group in groups:
        if len(group) > 1:
            found.groups.append(
                _group_labels(
                    staged,
                    samples,
                    group,
                    made.runs,
                    margin=margin,
                    label=label,
                    seed=seed,
                    confidence_level=confidence_level,
                    cluster=choice.cluster,
                )
            )
    return found


def _group_labels(
    staged: StagedScores,
    samples: SampleSet,
    group: list[str],
    costs: dict[str, RunCost],
    *,
    margin: float,
    label: str,
    seed: int,
    confidence_level: float,
    cluster: str,
) -> GroupLabels:
    """`rank --cost` on the group's runs that have every cost; the others are left out, saying
    why (a missing cost is not 0, so such a run can be neither acceptable nor dominated)."""
    left_out = {r: str(costs[r].refusal) for r in group if costs[r].refusal}
    ranked = sorted(r for r in group if r not in left_out)  # as `rank --cost` orders them
    if len(ranked) < 2:
        why = "fewer than 2 runs of the group have every cost (cost_usd): no run is labelled"
        return GroupLabels(group, None, why, left_out)
    try:
        made = rank_by_cost(
            staged, samples, ranked, margin=margin, metric=label, cluster=cluster,
            confidence_level=confidence_level, n_resamples=COST_RESAMPLES, seed=seed,
            source=str(samples.origin),
        )  # fmt: skip
    except InputError as exc:
        return GroupLabels(group, None, f"no labels: {exc.message}", left_out)
    return GroupLabels(group, made.to_dict(), None, left_out)
