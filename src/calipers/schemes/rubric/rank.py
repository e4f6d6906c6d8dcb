"""Ranking rubric evaluations (seed 001, "Tie-Breaking Rules"): by final score, then nine
tie-break levels in the seed's order; evaluations equal on every level are equivalent.

Each task (skill) is ranked on its own: outputs of different skills are not comparable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from calipers.schemes.base import SCHEMA_VERSION
from calipers.schemes.rubric.scoring import Evaluation

# (level, what wins): higher dimension scores, then fewer red flags, then more bonuses.
TIE_BREAKS: tuple[tuple[str, str], ...] = (
    ("correctness", "higher correctness"),
    ("safety", "higher safety"),
    ("completeness", "higher completeness"),
    ("actionability", "higher actionability"),
    ("adherence", "higher adherence"),
    ("efficiency", "higher efficiency"),
    ("consistency", "higher consistency"),
    ("red_flags", "fewer red flags"),
    ("bonuses", "more bonuses"),
)


def _levels(e: Evaluation) -> tuple[Decimal, ...]:
    """Larger is better on every level, so one descending sort orders them."""
    dims = tuple(e.dimensions[level] for level, _ in TIE_BREAKS[:7])
    return (e.final, *dims, Decimal(-len(e.red_flags)), Decimal(len(e.bonuses)))


def deciding_level(a: Evaluation, b: Evaluation) -> str | None:
    """The first tie-break level on which two evaluations with the same final score differ (None:
    equivalent)."""
    for (level, _), x, y in zip(TIE_BREAKS, _levels(a)[1:], _levels(b)[1:], strict=True):
        if x != y:
            return level
    return None


@dataclass
class RankEntry:
    position: int  # 1-based; equivalent evaluations share one
    evaluation: Evaluation
    tie_break: str | None = None  # the level that put it below the previous entry with its score
    equivalent_to_previous: bool = False

    def to_dict(self) -> dict[str, Any]:
        e = self.evaluation
        return {
            "position": self.position,
            "run": e.run,
            "sample_id": e.sample_id,
            "epoch": e.epoch,
            "final": float(e.final),
            "grade": e.grade,
            "tie_break": self.tie_break,
            "equivalent_to_previous": self.equivalent_to_previous,
        }


@dataclass
class TaskRanking:
    task: str
    entries: list[RankEntry]

    @property
    def all_equivalent(self) -> bool:
        return len(self.entries) > 1 and all(e.position == 1 for e in self.entries)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "all_equivalent": self.all_equivalent,
            "entries": [e.to_dict() for e in self.entries],
        }


@dataclass
class RankResult:
    origin: str
    parameters: dict[str, Any]
    rankings: list[TaskRanking] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "rank",
            "scheme": "rubric",
            "source": self.origin,
            "parameters": self.parameters,
            "tie_break_order": [f"{level}: {wins}" for level, wins in TIE_BREAKS],
            "rankings": [r.to_dict() for r in self.rankings],
        }


def rank_task(evaluations: list[Evaluation]) -> list[RankEntry]:
    """One task's evaluations, best first."""
    ordered = sorted(
        sorted(evaluations, key=lambda e: e.key),  # equivalent ones in a stable, readable order
        key=_levels,
        reverse=True,
    )
    entries: list[RankEntry] = []
    for i, e in enumerate(ordered):
        if not entries:
            entries.append(RankEntry(1, e))
            continue
        previous = entries[-1]
        if previous.evaluation.final != e.final:
            entries.append(RankEntry(i + 1, e))
            continue
        level = deciding_level(previous.evaluation, e)
        if level is None:
            entries.append(RankEntry(previous.position, e, None, True))
        else:
            entries.append(RankEntry(i + 1, e, level))
    return entries


def rank(evaluations: list[Evaluation], *, origin: str, parameters: dict[str, Any]) -> RankResult:
    tasks = sorted({e.task for e in evaluations})
    rankings = [rank_task([e for e in evaluations if e.task == t]) for t in tasks]
    return RankResult(
        origin, parameters, [TaskRanking(t, r) for t, r in zip(tasks, rankings, strict=True)]
    )
