"""ReasonScore (seed 003): Wilson intervals on guessing-corrected counts, a truncation penalty,
a geometric mean over tasks, and score per token.

    point  adj_s = correct − Σ guess_chance,  adj_n = total − Σ guess_chance
           score = center + margin − truncated/total        (Wilson on adj_s, adj_n)
    task   the same over the sums of its points' adjusted counts, clamped to ≥ 0.01
    tier   1000 · geometric mean of its task scores
    run    score/token = mean of tier scores / mean of the tiers' average output tokens per sample

Adjusted counts are summed as they are (a point can have a negative adjusted success count when a
model does worse than guessing); they are clipped to [0, adj_n] only inside the Wilson interval.

Edge cases (docs/reasonscore.md):
- A sample without `correct` (the pipeline failed) is not a trial; it is counted as missing and
  reported, never scored as wrong or right.
- `guess_chance` absent means no guessing correction for that sample (counted in the notes);
  `truncated` absent means not truncated; `tier` or `point` absent groups under "default".
- adj_n ≤ 0 happens only when every trial is a certain guess (guess_chance = 1): the interval is
  undefined, so the point or task score is null with a note, and so is everything built on it —
  a tier with a null task, and score/token with a null tier. Nothing is silently set to 0.
- score/token is null when no sample of a tier reports `tokens_out`, or when the tiers' mean
  token count is 0.

Tiers are in one order for the whole result (`ordering`: given, vocabulary, numeric or observed),
and runs are ranked only within groups that cover the same (tier, task) pairs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from calipers.data.sampleset import SampleSet
from calipers.errors import DataError, InputError
from calipers.schemes.base import SchemeResult
from calipers.schemes.reasonscore.ordering import (
    Shared,
    describe_shared,
    natural_key,
    order_tiers,
)
from calipers.stats import geometric_mean, wilson_interval

if TYPE_CHECKING:
    import pandas as pd

    from calipers.verdicts.cost_leaderboard import LeaderboardCost

TASK_FLOOR = 0.01
DEFAULT_LABEL = "default"


@dataclass
class PointScore:
    point: str
    total: int  # samples with a known outcome
    correct: int
    guess_sum: float
    truncated: int
    missing: int  # samples without `correct`
    adjusted_successes: float
    adjusted_trials: float
    center: float | None
    margin: float | None
    truncated_ratio: float | None
    score: float | None


@dataclass
class TaskScore:
    task: str
    total: int
    truncated: int
    adjusted_successes: float
    adjusted_trials: float
    center: float | None
    margin: float | None
    truncated_ratio: float | None
    raw_score: float | None  # before the 0.01 floor
    score: float | None
    points: list[PointScore] = field(default_factory=list)


@dataclass
class TierScore:
    tier: str
    score: float | None  # 1000 · geometric mean of the task scores
    avg_tokens: float | None  # mean output tokens per sample in the tier
    tasks: dict[str, TaskScore] = field(default_factory=dict)


@dataclass
class RunScore:
    run: str
    samples: int
    missing: int
    avg_score: float | None
    avg_tokens: float | None
    score_per_token: float | None
    tiers: dict[str, TierScore] = field(default_factory=dict)


def _by_score_per_token(runs: list[RunScore]) -> list[RunScore]:
    """Best score/token first; runs without one last, by name."""
    return sorted(
        runs, key=lambda r: (r.score_per_token is None, -(r.score_per_token or 0.0), r.run)
    )


def _pareto(runs: list[RunScore]) -> list[str]:
    known = [
        (r.avg_tokens, r.avg_score, r.run)
        for r in runs
        if r.avg_score is not None and r.avg_tokens is not None
    ]
    return [
        run
        for tokens, score, run in sorted(known)
        if not any(s >= score and t <= tokens and (s > score or t < tokens) for t, s, _ in known)
    ]


@dataclass
class RunGroup:
    """Runs that cover exactly the same (tier, task) pairs: the only runs ranked together."""

    shared: Shared
    runs: list[RunScore]  # best score/token first
    ranks: dict[str, Any] | None = None  # rank intervals and tie groups (`ranks.group_ranks`)

    @property
    def ranked(self) -> bool:
        """A run alone in its group is shown, not ranked."""
        return len(self.runs) > 1

    def pareto_frontier(self) -> list[str]:
        """Runs of the group no other run of it beats on both axes: at least the same mean
        ReasonScore with at most the same mean output tokens, and strictly better on one. By
        tokens, fewest first; runs without both numbers are left out."""
        return _pareto(self.runs)

    def heading(self, *, limit: int | None = 8) -> str:
        """What the group shares, as plain text (escape it where it is shown)."""
        s = self.shared
        return describe_shared(s.tiers, s.tasks, dict(s.pairs), limit=limit)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tiers": list(self.shared.tiers),
            "tasks": list(self.shared.tasks),
            "pairs": {tier: list(tasks) for tier, tasks in self.shared.pairs},
            "ranked": self.ranked,
            "ranking": [r.run for r in self.runs],
            "pareto_frontier": self.pareto_frontier(),
            "rank_intervals": self.ranks,
        }


@dataclass(repr=False)  # the readable repr of the base class
class ReasonScoreResult(SchemeResult):
    runs: dict[str, RunScore] = field(default_factory=dict)
    tier_order: list[str] = field(default_factory=list)  # easiest first
    tier_order_rule: str = "vocabulary"  # given, vocabulary, numeric or observed
    # each group's rank intervals, by its runs' names (sorted)
    group_ranks: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)
    # cost per solved item beside the leaderboard (`costs.reasonscore_cost`); None: not made
    cost: LeaderboardCost | None = None

    def groups(self) -> list[RunGroup]:
        """The runs in groups of comparable runs (the same (tier, task) pairs), each ranked by
        score/token. Groups with more runs first, then with more pairs, then by run name."""
        by_pairs: dict[frozenset[tuple[str, str]], list[RunScore]] = {}
        for r in self.runs.values():
            pairs = frozenset((t.tier, task) for t in r.tiers.values() for task in t.tasks)
            by_pairs.setdefault(pairs, []).append(r)
        groups = [
            RunGroup(
                Shared.of(pairs, self.tier_order),
                _by_score_per_token(runs),
                self.group_ranks.get(tuple(sorted(r.run for r in runs))),
            )
            for pairs, runs in by_pairs.items()
        ]
        return sorted(
            groups,
            key=lambda g: (
                -len(g.runs),
                -sum(len(tasks) for _, tasks in g.shared.pairs),
                min(r.run for r in g.runs),
            ),
        )

    def _one_group(self, what: str) -> RunGroup:
        groups = self.groups()
        if len(groups) != 1:
            raise DataError(
                f"no {what} across runs that do not cover the same (tier, task) pairs: "
                f"these runs form {len(groups)} groups",
                hint="Use result.groups(): each group has its own ranking and Pareto frontier.",
            )
        return groups[0]

    def ranked(self) -> list[RunScore]:
        """Runs by score/token, best first; runs without one last, by name. Only when every run
        covers the same (tier, task) pairs (a `DataError` otherwise: see `groups()`)."""
        return self._one_group("ranking").runs if self.runs else []

    def pareto_frontier(self) -> list[str]:
        """The Pareto frontier of the runs (see `RunGroup.pareto_frontier`), when every run
        covers the same (tier, task) pairs (a `DataError` otherwise: see `groups()`)."""
        return self._one_group("Pareto frontier").pareto_frontier() if self.runs else []

    def to_dict(self) -> dict[str, Any]:
        body = self.header()
        body["runs"] = {
            name: {
                "samples": r.samples,
                "missing": r.missing,
                "avg_score": r.avg_score,
                "avg_tokens": r.avg_tokens,
                "score_per_token": r.score_per_token,
                "tiers": {
                    t.tier: {
                        "score": t.score,
                        "avg_tokens": t.avg_tokens,
                        "tasks": {
                            k.task: {
                                **{
                                    f: v
                                    for f, v in asdict(k).items()
                                    if f not in ("task", "points")
                                },
                                "points": [asdict(p) for p in k.points],
                            }
                            for k in t.tasks.values()
                        },
                    }
                    for t in r.tiers.values()
                },
            }
            for name, r in self.runs.items()
        }
        body["tier_order"] = list(self.tier_order)
        body["tier_order_rule"] = self.tier_order_rule
        body["groups"] = [g.to_dict() for g in self.groups()]
        if self.cost is not None:
            body["cost"] = self.cost.to_dict()
        return body

    def to_frame(self, level: str = "task") -> pd.DataFrame:
        """Levels: "run", "tier", "task", "point". The run level adds each run's `group` (1 = the
        first of `groups()`) and its `rank` in it (None for a run alone in its group)."""
        import pandas as pd  # lazily: only for callers who want a DataFrame

        rows: list[dict[str, Any]] = []
        place: dict[str, dict[str, int | None]] = {}
        if level == "run":
            for number, group in enumerate(self.groups(), start=1):
                for rank, run in enumerate(group.runs, start=1):
                    place[run.run] = {"group": number, "rank": rank if group.ranked else None}
        for r in self.runs.values():
            if level == "run":
                row = {k: v for k, v in asdict(r).items() if k != "tiers"}
                rows.append({**row, **place.get(r.run, {})})
                continue
            for t in r.tiers.values():
                if level == "tier":
                    rows.append(
                        {
                            "run": r.run,
                            "tier": t.tier,
                            "score": t.score,
                            "avg_tokens": t.avg_tokens,
                            "tasks": len(t.tasks),
                        }
                    )
                    continue
                for k in t.tasks.values():
                    if level == "task":
                        row = {f: v for f, v in asdict(k).items() if f != "points"}
                        rows.append({"run": r.run, "tier": t.tier, **row})
                    elif level == "point":
                        rows.extend(
                            {"run": r.run, "tier": t.tier, "task": k.task, **asdict(p)}
                            for p in k.points
                        )
                    else:
                        raise InputError(f"unknown level '{level}' (run, tier, task or point)")
        frame = pd.DataFrame(rows)
        if level == "run" and "rank" in frame:
            frame["rank"] = frame["rank"].astype("Int64")  # None for a run alone: <NA>, not NaN
        return frame  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _Counts:
    """Counts of one (run, tier, task, point), straight from SQL."""

    run: str
    tier: str
    task: str
    point: str
    total: int
    correct: int
    guess_sum: float
    truncated: int
    missing: int
    no_guess: int
    tokens_sum: float
    tokens_n: int


def _point_counts(samples: SampleSet) -> list[_Counts]:
    rows = samples.con.execute(
        f"""
        SELECT run,
               coalesce(tier, '{DEFAULT_LABEL}') AS tier,
               task,
               coalesce(point, '{DEFAULT_LABEL}') AS point,
               count(*) FILTER (WHERE correct IS NOT NULL) AS total,
               count(*) FILTER (WHERE correct) AS correct,
               coalesce(sum(guess_chance) FILTER (WHERE correct IS NOT NULL), 0.0) AS guess_sum,
               count(*) FILTER (WHERE correct IS NOT NULL AND truncated) AS truncated,
               count(*) FILTER (WHERE correct IS NULL) AS missing,
               count(*) FILTER (WHERE correct IS NOT NULL AND guess_chance IS NULL) AS no_guess,
               coalesce(sum(tokens_out), 0)::DOUBLE AS tokens_sum,
               count(tokens_out) AS tokens_n
        FROM {samples.relation}
        GROUP BY ALL
        ORDER BY run, tier, task, point
        """
    ).fetchall()
    return [
        _Counts(
            str(r[0]),
            str(r[1]),
            str(r[2]),
            str(r[3]),
            int(r[4]),
            int(r[5]),
            float(r[6]),
            int(r[7]),
            int(r[8]),
            int(r[9]),
            float(r[10]),
            int(r[11]),
        )
        for r in rows
    ]


def _opt(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def _group(items: list[_Counts], key: str) -> dict[str, list[_Counts]]:
    out: dict[str, list[_Counts]] = {}
    for item in items:
        out.setdefault(getattr(item, key), []).append(item)
    return out


def _score_point(c: _Counts, z: float) -> PointScore:
    adj_s = c.correct - c.guess_sum
    adj_n = c.total - c.guess_sum
    center, margin = wilson_interval(adj_s, adj_n, z=z)
    trunc = c.truncated / c.total if c.total else math.nan
    return PointScore(
        point=c.point,
        total=c.total,
        correct=c.correct,
        guess_sum=c.guess_sum,
        truncated=c.truncated,
        missing=c.missing,
        adjusted_successes=adj_s,
        adjusted_trials=adj_n,
        center=_opt(center),
        margin=_opt(margin),
        truncated_ratio=_opt(trunc),
        score=_opt(center + margin - trunc),
    )


def _score_task(task: str, rows: list[_Counts], z: float) -> TaskScore:
    points = [_score_point(c, z) for c in rows]
    # adjusted counts are summed as they are; Wilson clips them into [0, adj_n] itself
    adj_s = sum(p.adjusted_successes for p in points)
    adj_n = sum(p.adjusted_trials for p in points)
    total = sum(c.total for c in rows)
    truncated = sum(c.truncated for c in rows)
    center, margin = wilson_interval(adj_s, adj_n, z=z)
    trunc = truncated / total if total else math.nan
    raw = _opt(center + margin - trunc)
    return TaskScore(
        task=task,
        total=total,
        truncated=truncated,
        adjusted_successes=adj_s,
        adjusted_trials=adj_n,
        center=_opt(center),
        margin=_opt(margin),
        truncated_ratio=_opt(trunc),
        raw_score=raw,
        score=None if raw is None else max(TASK_FLOOR, raw),
        points=points,
    )


def score_samples(samples: SampleSet, options: Any, *, name: str) -> ReasonScoreResult:
    """The scores of every run in `samples` (options checked by the scheme's declaration)."""
    z = options.z
    if not (math.isfinite(z) and z > 0):
        raise InputError(f"`z` must be a positive number, got {z}", parameters=["z"])
    counts = _point_counts(samples)
    given = getattr(options, "tier_order", None)
    parameters: dict[str, Any] = {"z": z}
    if given:
        parameters["tier_order"] = list(given)
    result = ReasonScoreResult(scheme=name, parameters=parameters, origin=samples.origin)
    if sum(c.total for c in counts) == 0:
        raise DataError(
            f"nothing to score in {samples.origin}: reasonscore needs samples with `correct`",
            hint="Each sample needs `correct` (true/false), and ideally `tier`, `point`, "
            "`guess_chance`, `truncated` and `tokens_out`.",
        )
    _add_notes(result, counts)
    for run_name, run_rows in sorted(_group(counts, "run").items()):
        result.runs[run_name] = _score_run(run_name, run_rows, z, result.notes)
    _order_tiers(result, given)
    groups = result.groups()
    _rank_groups(samples, result, groups, z, getattr(options, "seed", None))
    from calipers.schemes.reasonscore.costs import reasonscore_cost

    margin = getattr(options, "margin", None)
    result.cost = reasonscore_cost(
        samples, [[r.run for r in g.runs] for g in groups], margin=margin,
        seed=int(getattr(options, "seed", None) or 0),
    )  # fmt: skip
    if margin is not None:
        parameters["margin"] = margin
    if len(groups) > 1:
        result.notes.append(
            f"runs do not all cover the same (tier, task) pairs: they are ranked in {len(groups)} "
            "groups of comparable runs, never across groups"
        )
    return result


def _rank_groups(
    samples: SampleSet,
    result: ReasonScoreResult,
    groups: list[RunGroup],
    z: float,
    seed: int | None,
) -> None:
    """Rank intervals within each group of two runs or more (`ranks.group_ranks`)."""
    from calipers.schemes.reasonscore.ranks import group_ranks

    for group in groups:
        found, why = group_ranks(
            samples, group.runs, z=z, floor=TASK_FLOOR, default=DEFAULT_LABEL, seed=seed
        )
        if found is not None:
            result.group_ranks[tuple(sorted(r.run for r in group.runs))] = found
        if why:
            result.notes.append(why)
    if result.group_ranks:
        result.parameters["seed"] = next(iter(result.group_ranks.values()))["seed"]


def _order_tiers(result: ReasonScoreResult, given: tuple[str, ...] | None) -> None:
    """One tier order for every run (`ordering.order_tiers`), applied to each run's tiers."""
    scores: dict[str, list[float | None]] = {}
    for r in result.runs.values():
        for t in r.tiers.values():
            scores.setdefault(t.tier, []).append(t.score)
    order = order_tiers(sorted(scores, key=natural_key), scores, given)
    result.tier_order, result.tier_order_rule = list(order.tiers), order.rule
    result.notes.extend(order.notes)
    for r in result.runs.values():
        r.tiers = {t: r.tiers[t] for t in order.tiers if t in r.tiers}


def _add_notes(result: ReasonScoreResult, counts: list[_Counts]) -> None:
    missing = sum(c.missing for c in counts)
    if missing:
        result.notes.append(
            f"{missing} sample(s) without `correct` were not scored (counted as missing)"
        )
    no_guess = sum(c.no_guess for c in counts)
    if no_guess:
        result.notes.append(
            f"{no_guess} sample(s) without `guess_chance`: no guessing correction applied"
        )


def _score_run(run: str, rows: list[_Counts], z: float, notes: list[str]) -> RunScore:
    tiers: dict[str, TierScore] = {}
    by_tier = _group(rows, "tier")
    for tier_name in sorted(by_tier, key=natural_key):
        tier_rows = by_tier[tier_name]
        tasks = {
            task: _score_task(task, task_rows, z)
            for task, task_rows in sorted(_group(tier_rows, "task").items())
        }
        defined = [t.score for t in tasks.values() if t.score is not None]
        tier_score: float | None = None
        if len(defined) == len(tasks):
            tier_score = 1000.0 * geometric_mean(defined)
        else:
            undefined = [t.task for t in tasks.values() if t.score is None]
            notes.append(
                f"{run}/{tier_name}: no trials above chance in {', '.join(undefined)}; "
                "the tier score is undefined"
            )
        tokens_n = sum(c.tokens_n for c in tier_rows)
        avg_tokens = sum(c.tokens_sum for c in tier_rows) / tokens_n if tokens_n else None
        tiers[tier_name] = TierScore(tier_name, tier_score, avg_tokens, tasks)
    scores = [t.score for t in tiers.values() if t.score is not None]
    tokens = [t.avg_tokens for t in tiers.values() if t.avg_tokens is not None]
    avg_score = sum(scores) / len(scores) if len(scores) == len(tiers) else None
    avg_tokens = sum(tokens) / len(tokens) if len(tokens) == len(tiers) else None
    if avg_tokens is None:
        notes.append(f"{run}: some tier has no `tokens_out`; score/token is undefined")
    per_token = None
    if avg_score is not None and avg_tokens is not None:
        if avg_tokens > 0:
            per_token = avg_score / avg_tokens
        else:
            notes.append(f"{run}: mean output tokens is 0; score/token is undefined")
    return RunScore(
        run=run,
        samples=sum(c.total for c in rows),
        missing=sum(c.missing for c in rows),
        avg_score=avg_score,
        avg_tokens=avg_tokens,
        score_per_token=per_token,
        tiers=tiers,
    )
