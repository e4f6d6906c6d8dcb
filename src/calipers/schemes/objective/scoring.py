"""Objective / judge / cost composite (seed 002): one score in [0, 1] per (run, task).

Per sample (one row: run, task, sample_id, epoch):

    obj01    passed / total of its assertions, unweighted (1.0 when it has none)
    judge01  mean of its overall judgments (dimension null, no error), each rescaled
             (s − min)/(max − min) from its scale (default 0–1); absent when there is none
    base     (w_obj · obj01 + w_judge · judge01) / (w_obj + w_judge_eff), w_judge_eff = 0 when
             judge01 is absent, so the objective alone decides

Per task, over its samples: the mean of obj01 and of base, and the mean of each cost metric over
the samples that report it — each sample's epochs averaged first, so every sample weighs the same
however many epochs it was scored in (the estimand, docs/statistics.md). The cost adjustment
compares a task's cost metrics with the baseline run's for the same task (DESIGN.md, from the
method's reference code):

    cost_adj  = cost_weight · clamp(1 − mean_k(actual_k / ref_k), −1, 1)
                over the metrics k both runs report among cost_usd, tokens (in + out),
                tool_calls, steps, latency_s; ref_k ≤ 0 gives ratio 2 if actual_k > 0, else 1
    composite = clamp(base + cost_adj, 0, 1)          (the baseline's own adjustment is 0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from calipers.data.sampleset import SampleSet
from calipers.errors import DataError, InputError
from calipers.schemes.base import SchemeResult

if TYPE_CHECKING:
    import pandas as pd

    from calipers.verdicts.cost_leaderboard import LeaderboardCost


FloatArray = npt.NDArray[np.float64]

W_OBJ = 0.6
W_JUDGE = 0.4
COST_WEIGHT = 0.1
COST_METRICS = ("cost_usd", "tokens", "tool_calls", "steps", "latency_s")
JUDGE_SCALE = (0.0, 1.0)

_STAGE_SQL = """
SELECT run, task, sample_id, epoch,
    coalesce(len(assertions), 0) AS n_checks,
    coalesce(len(list_filter(assertions, lambda a: a.passed)), 0) AS n_passed,
    coalesce(list_bool_or(list_transform(assertions, lambda a: a.passed IS NULL)), false)
        AS unjudged,
    list_transform(
        list_filter(judgments, lambda j: j.dimension IS NULL AND j.error IS NULL
                                         AND j.score IS NOT NULL),
        lambda j: [j.score, coalesce(j.scale_min, {lo}), coalesce(j.scale_max, {hi})]
    ) AS overall,
    coalesce(len(list_filter(judgments, lambda j: j.dimension IS NULL AND j.error IS NOT NULL)),
             0) AS failed_judgments,
    cost_usd,
    CASE WHEN tokens_in IS NULL AND tokens_out IS NULL THEN NULL
         ELSE coalesce(tokens_in, 0) + coalesce(tokens_out, 0) END AS tokens,
    tool_calls, steps, latency_s
FROM {relation} {where}
ORDER BY run, task, sample_id, epoch
"""


@dataclass(frozen=True)
class Weights:
    """The composite's weights (seed 002's constants by default)."""

    w_obj: float = W_OBJ
    w_judge: float = W_JUDGE
    cost_weight: float = COST_WEIGHT

    def __post_init__(self) -> None:
        for name in ("w_obj", "w_judge", "cost_weight"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise InputError(f"objective: {name} must be a finite number ≥ 0, got {value}")
        if self.w_obj == 0:
            raise InputError(
                "objective: w_obj must be > 0", hint="The objective checks carry the composite."
            )


@dataclass
class TaskSamples:
    """One run's samples of one task, as arrays: one entry per sample, its epochs averaged (a
    metric over the epochs that report it; the judge over the judged epochs)."""

    objective: FloatArray
    judge: FloatArray  # judge01, meaningful where `has_judge`
    has_judge: npt.NDArray[np.bool_]
    base: FloatArray
    failed_judgments: int
    cost: dict[str, FloatArray]  # NaN where the sample does not report the metric
    n_observations: int = 0  # sample × epoch rows behind the entries
    # A task with one sample scored in several epochs keeps its epochs (uncollapsed): the
    # bootstrap then has only the epochs' spread — how much a re-run moves the score — to draw on.
    epochs: TaskSamples | None = None

    @property
    def n(self) -> int:
        return len(self.base)


def cost_adjustment(
    actual: Mapping[str, FloatArray], reference: Mapping[str, FloatArray], cost_weight: float
) -> FloatArray:
    """cost_weight · clamp(1 − mean_k(actual_k/ref_k), −1, 1), elementwise over arrays of task
    means (one entry per bootstrap resample, or one). A metric counts where both sides have a
    value; where none does, the adjustment is 0."""
    total: FloatArray | None = None
    count: FloatArray | None = None
    for metric in COST_METRICS:
        if metric not in actual or metric not in reference:
            continue
        act, ref = np.asarray(actual[metric]), np.asarray(reference[metric])
        present = ~np.isnan(act) & ~np.isnan(ref)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(
                ref > 0, act / np.where(ref > 0, ref, 1.0), np.where(act > 0, 2.0, 1.0)
            )
        ratio = np.where(present, ratio, 0.0)
        total = ratio if total is None else total + ratio
        count = present.astype(np.float64) if count is None else count + present
    if total is None or count is None:
        return np.zeros(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_ratio = np.where(count > 0, total / np.maximum(count, 1), 1.0)
    return np.asarray(cost_weight * np.clip(1.0 - mean_ratio, -1.0, 1.0), dtype=np.float64)


def metric_means(samples: TaskSamples) -> dict[str, FloatArray]:
    """Each cost metric's mean over the samples reporting it (absent when none does)."""
    out = {}
    for metric, values in samples.cost.items():
        present = ~np.isnan(values)
        if present.any():
            out[metric] = np.array([values[present].mean()])
    return out


@dataclass
class TaskScore:
    """One run's score on one task."""

    run: str
    task: str
    n: int
    objective: float
    judge: float | None
    judged: int
    base: float
    cost: dict[str, float]
    cost_metrics: list[str]  # the metrics the adjustment used (those both runs report)
    cost_adjustment: float
    composite: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def score_task(
    run: str,
    task: str,
    mine: TaskSamples,
    reference: TaskSamples | None,
    weights: Weights,
) -> TaskScore:
    """The task's composite; `reference` is the baseline run's samples of the task (None for the
    baseline itself, whose adjustment is 0)."""
    base = float(mine.base.mean())
    means = metric_means(mine)
    adjustment, used = 0.0, []
    if reference is not None:
        ref_means = metric_means(reference)
        used = [k for k in COST_METRICS if k in means and k in ref_means]
        adjustment = float(cost_adjustment(means, ref_means, weights.cost_weight)[0])
    judged = mine.judge[mine.has_judge]
    return TaskScore(
        run=run,
        task=task,
        n=mine.n_observations,
        objective=float(mine.objective.mean()),
        judge=float(judged.mean()) if judged.size else None,
        judged=int(judged.size),
        base=base,
        cost={k: float(v[0]) for k, v in means.items()},
        cost_metrics=used,
        cost_adjustment=adjustment,
        composite=float(np.clip(base + adjustment, 0.0, 1.0)),
    )


def stage_tasks(
    samples: SampleSet, runs: list[str], weights: Weights
) -> tuple[dict[str, dict[str, TaskSamples]], list[str]]:
    """Per run and task, the samples' obj01, base and cost metrics; and notes."""
    rows = staged_rows(samples, runs)
    grouped: dict[str, dict[str, list[tuple[Any, ...]]]] = {r: {} for r in runs}
    for row in rows:
        grouped[row[0]].setdefault(row[1], []).append(row)
    staged: dict[str, dict[str, TaskSamples]] = {}
    failed = 0
    for run, tasks in grouped.items():
        staged[run] = {}
        for task, task_rows in tasks.items():
            staged[run][task] = _task_samples(task_rows, weights, samples.origin)
            failed += staged[run][task].failed_judgments
    notes = []
    if failed:
        notes.append(
            f"{failed} overall judgment(s) failed (recorded with an error); they count as absent "
            "and the judge weight is re-normalised out where a sample has no other"
        )
    return staged, notes


def _where(row: tuple[Any, ...]) -> str:
    return f"(run={row[0]}, task={row[1]}, sample_id={row[2]}, epoch={row[3]})"


def staged_rows(samples: SampleSet, runs: list[str]) -> list[tuple[Any, ...]]:
    """One row per observation of `runs` (run, task, sample_id, epoch, then what scoring reads),
    ordered by run, task, sample_id, epoch."""
    placeholders = ", ".join("?" for _ in runs)
    sql = _STAGE_SQL.format(
        relation=samples.relation,
        where=f"WHERE run IN ({placeholders})",
        lo=JUDGE_SCALE[0],
        hi=JUDGE_SCALE[1],
    )
    return samples.con.execute(sql, runs).fetchall()


def row_scores(
    rows: list[tuple[Any, ...]], weights: Weights, origin: str
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_], FloatArray, int, dict[str, FloatArray]]:
    """Each row (of `staged_rows`) scored: obj01, judge01 (where judged), whether judged, base,
    the failed judgments, and the cost metrics (NaN where absent)."""
    n = len(rows)
    objective, judge, base = np.empty(n), np.zeros(n), np.empty(n)
    has_judge = np.zeros(n, dtype=bool)
    cost = {m: np.full(n, np.nan) for m in COST_METRICS}
    failed = 0
    for i, row in enumerate(rows):
        n_checks, n_passed, unjudged, overall, n_failed = row[4:9]
        if unjudged:
            raise InputError(
                f"{origin}: sample {_where(row)} has assertions without a result (`passed`)",
                hint="Grade them first: `calipers grade`.",
            )
        objective[i] = n_passed / n_checks if n_checks else 1.0
        failed += int(n_failed)
        judge01 = _judge01(row, overall or [], origin)
        if judge01 is not None and weights.w_judge > 0:
            judge[i], has_judge[i] = judge01, True
            base[i] = (weights.w_obj * objective[i] + weights.w_judge * judge01) / (
                weights.w_obj + weights.w_judge
            )
        else:
            base[i] = objective[i]
        for metric, value in zip(COST_METRICS, row[9:], strict=True):
            if value is not None:
                cost[metric][i] = float(value)
    return objective, judge, has_judge, base, failed, cost


def _task_samples(rows: list[tuple[Any, ...]], weights: Weights, origin: str) -> TaskSamples:
    """The rows (ordered by sample_id, epoch) scored, then each sample's epochs averaged."""
    objective, judge, has_judge, base, failed, cost = row_scores(rows, weights, origin)
    n = len(rows)
    ids = [row[2] for row in rows]
    codes = np.cumsum([True] + [a != b for a, b in zip(ids[1:], ids[:-1], strict=True)]) - 1
    judged = np.bincount(codes, weights=has_judge.astype(np.float64)) > 0
    epochs = None
    if codes[-1] == 0 and n > 1:
        epochs = TaskSamples(objective, judge, has_judge, base, failed, cost, n_observations=n)
    return TaskSamples(
        _per_sample(objective, codes),
        np.where(judged, _per_sample(judge, codes, has_judge), 0.0),
        judged,
        _per_sample(base, codes),
        failed,
        {m: _per_sample(v, codes, ~np.isnan(v)) for m, v in cost.items()},
        n_observations=n,
        epochs=epochs,
    )


def _per_sample(
    values: FloatArray,
    codes: npt.NDArray[np.intp],
    present: npt.NDArray[np.bool_] | None = None,
) -> FloatArray:
    """Each sample's mean over its epochs that are `present` (all by default; NaN when none
    is). A non-finite value among them stays non-finite: the comparator reads it as a hard
    regression."""
    keep = np.ones(values.size, dtype=bool) if present is None else present
    counts = np.bincount(codes, weights=keep.astype(np.float64))
    with np.errstate(invalid="ignore"):
        sums = np.bincount(codes[keep], weights=values[keep], minlength=counts.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(counts > 0, sums / np.maximum(counts, 1), np.nan))


def _judge01(row: tuple[Any, ...], overall: list[list[float]], origin: str) -> float | None:
    """Mean of the sample's overall judgments rescaled to 0–1; None when there is none. A
    non-finite score passes through (the comparator treats it as a hard regression)."""
    values = []
    for score, lo, hi in overall:
        if not np.isfinite(score):
            values.append(float(score))
            continue
        if not hi > lo:
            raise InputError(
                f"{origin}: sample {_where(row)}: a judgment's scale {lo:g}–{hi:g} is empty",
                hint="scale_max must be greater than scale_min.",
            )
        if not lo <= score <= hi:
            raise InputError(
                f"{origin}: sample {_where(row)}: judge score {score:g} is outside its scale "
                f"{lo:g}–{hi:g}",
                hint="The objective scheme reads judges on 0–1; give scale_min and scale_max "
                "for another scale (e.g. 1 and 5).",
            )
        values.append((score - lo) / (hi - lo))
    return float(np.mean(values)) if values else None


@dataclass(repr=False)  # the readable repr of the base class
class ObjectiveResult(SchemeResult):
    """Every run's task scores; cost adjustments against `parameters["baseline"]` when given."""

    tasks: dict[str, dict[str, TaskScore]] = field(default_factory=dict)  # run → task → score
    # cost per unit of base beside the composite (`costs.objective_cost`); None: not made
    cost: LeaderboardCost | None = None

    def to_dict(self) -> dict[str, Any]:
        body = self.header()
        body["runs"] = {
            run: {
                "n_tasks": len(tasks),
                "mean_composite": float(np.mean([t.composite for t in tasks.values()])),
                "mean_base": float(np.mean([t.base for t in tasks.values()])),
                "tasks": [t.to_dict() for t in tasks.values()],
            }
            for run, tasks in self.tasks.items()
        }
        if self.cost is not None:
            body["cost"] = self.cost.to_dict()
        return body

    def to_frame(self, level: str = "task") -> pd.DataFrame:
        """Levels: "task" (one row per run and task)."""
        import pandas as pd

        if level != "task":
            raise InputError(f"unknown level '{level}' (task)")
        rows = []
        for tasks in self.tasks.values():
            for t in tasks.values():
                row = {k: v for k, v in t.to_dict().items() if k not in ("cost", "cost_metrics")}
                row.update({f"cost_{k}" if k != "cost_usd" else k: v for k, v in t.cost.items()})
                rows.append(row)
        return pd.DataFrame(rows)


def score_runs(
    staged: Mapping[str, Mapping[str, TaskSamples]], *, baseline: str | None, weights: Weights
) -> dict[str, dict[str, TaskScore]]:
    """Task scores of every staged run (cost against `baseline`'s task where it has the task)."""
    out: dict[str, dict[str, TaskScore]] = {}
    reference = staged.get(baseline, {}) if baseline is not None else {}
    for run, tasks in staged.items():
        out[run] = {
            task: score_task(
                run, task, mine, None if run == baseline else reference.get(task), weights
            )
            for task, mine in sorted(tasks.items())
        }
    return out


def score_samples(samples: SampleSet, options: Any, *, name: str) -> ObjectiveResult:
    """The scores of every run in `samples` (options checked by the scheme's declaration)."""
    baseline = options.baseline
    w_obj = options.w_obj
    w_judge = options.w_judge
    cost_weight = options.cost_weight
    weights = Weights(w_obj, w_judge, cost_weight)
    runs = samples.runs()
    if not runs:
        raise DataError(f"{samples.origin} has no sample to score")
    if baseline is not None and baseline not in runs:
        raise InputError(
            f"baseline run '{baseline}' is not in {samples.origin}",
            hint=f"Runs: {', '.join(runs)}.",
        )
    staged, notes = stage_tasks(samples, runs, weights)
    if baseline is None:
        notes.append("no baseline run given: cost adjustments are 0 (give --baseline RUN)")
    parameters: dict[str, Any] = {"baseline": baseline, **weights.__dict__}
    return ObjectiveResult(
        name,
        parameters,
        samples.origin,
        notes,
        score_runs(staged, baseline=baseline, weights=weights),
    )
