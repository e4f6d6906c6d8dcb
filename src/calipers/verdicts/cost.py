"""Cost in the comparison: each run's cost per solved item (per unit of score) and, per compared
pair, the cost per additional solved item and the net benefit at a stated value per solved item,
with the rules that say when an interval is refused or comes with a warning (measured in
docs/calibration.md, "Cost"; decided in docs/cost.md).

The system's cost is `cost_usd`; the graders' (`grader_cost_usd`: a judge's or a model-graded
scorer's) is reported beside it and never counted as the system's. A scored observation without
a cost is never a cost of 0: the run's cost figures are refused, saying how many lack one.

Where the telemetry has them, the system's tokens (`tokens_in + tokens_out`) and seconds
(`latency_s`) per solved item are given beside the cost, by the same figures and intervals (one
mechanism: `_figures`); the graders' tokens (`grader_tokens_*`) are never the system's, and a
missing count is never 0 either.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from calipers.data.sampleset import SampleSet
from calipers.errors import InputError
from calipers.stats._rng import DEFAULT_SEED
from calipers.stats.cost import (
    Moments,
    cost_per_additional,
    log_spread,
    net_benefit,
    per_solved_intervals,
    probability_positive,
    unit_moments,
    value_grid,
)
from calipers.stats.interval_parts import NoInterval
from calipers.verdicts.cost_figures import (
    MIN_COST_UNITS,
    USAGE,
    CostComparison,
    CostFigures,
    PairCost,
    RunCost,
    UsageCost,
    interval_warnings,
)
from calipers.verdicts.persample import StagedScores, as_floats, cluster_labels, stage_rows

FloatArray = npt.NDArray[np.float64]


def _columns(samples: SampleSet) -> list[str]:
    query = samples.con.execute(f"SELECT * FROM {samples.relation} LIMIT 0")
    return [d[0] for d in query.description]


def cost_expressions(samples: SampleSet) -> dict[str, str]:
    """The columns `cost_runs` reads per observation, as SQL (NULL where a field is missing:
    never 0): the system's cost, the graders' and the usage (USAGE) the samples have. A scheme
    that stages its rows with these (`stage_metric(extra=...)`) spares `cost_runs` a second pass
    over every row (a third of ReasonScore's time on 100 runs × 10,000 samples)."""
    fields = _columns(samples)
    expressions = {"cost": "cost_usd::DOUBLE"}
    if "grader_cost_usd" in fields:
        expressions["grader"] = "grader_cost_usd::DOUBLE"
    for measure, (sql, needs) in USAGE.items():
        if all(f in fields for f in needs):
            expressions[measure] = f"({sql})::DOUBLE"
    return expressions


def has_cost(samples: SampleSet, runs: list[str]) -> bool:
    """Whether any observation of `runs` has a system cost."""
    from calipers.data.files import sql_literal

    where = ", ".join(sql_literal(r) for r in runs)
    if "cost_usd" not in _columns(samples):
        return False
    found = samples.con.execute(
        f"SELECT 1 FROM {samples.relation} WHERE run IN ({where}) AND cost_usd IS NOT NULL LIMIT 1"
    ).fetchall()
    return bool(found)


@dataclass
class _Arm:
    """One run's per-sample means (over its scored epochs), aligned on sample codes."""

    sid: npt.NDArray[np.int64]
    task: npt.NDArray[np.int64]
    unit: npt.NDArray[np.int64]
    cost: FloatArray  # NaN: some scored epoch lacks a cost
    outcome: FloatArray
    weight: FloatArray
    missing_cost: int  # scored observations without a cost
    unscored_with_cost: int
    grader_cost: float | None
    grader_rows: int
    usage: dict[str, FloatArray] = field(default_factory=dict)  # per-sample means, as `cost`
    missing_usage: dict[str, int] = field(default_factory=dict)


def _arm(staged: StagedScores, run: str, cost: FloatArray, grader: FloatArray, cluster: str,
         usage: dict[str, FloatArray]) -> _Arm:  # fmt: skip
    arrays = staged.fetch(run)
    outcome_rows = staged.composite(run, raw=True)
    scored = np.isfinite(outcome_rows)
    rows = np.flatnonzero(scored)
    missing = int(np.sum(scored & ~np.isfinite(cost)))
    unscored = int(np.sum(~scored & np.isfinite(cost)))
    graded = np.isfinite(grader)
    sid_rows = arrays.sid[rows]
    codes, first = np.unique(sid_rows, return_index=True)
    inverse = np.searchsorted(codes, sid_rows)
    count = np.bincount(inverse).astype(np.float64)

    def per_sample(values: FloatArray) -> FloatArray:  # NaN when any scored epoch lacks one
        return np.asarray(np.bincount(inverse, weights=values[rows]) / count, dtype=np.float64)

    weight = (
        np.ones(codes.size)
        if arrays.weight is None
        else np.bincount(inverse, weights=arrays.weight[rows]) / count
    )
    units = cluster_labels(arrays, rows, cluster)[first]
    return _Arm(
        codes, arrays.task_code[rows][first], units, per_sample(cost), per_sample(outcome_rows),
        weight, missing, unscored, float(grader[graded].sum()) if graded.any() else None,
        int(graded.sum()), {k: per_sample(v) for k, v in usage.items()},
        {k: int(np.sum(scored & ~np.isfinite(v))) for k, v in usage.items()},
    )  # fmt: skip


# a figure whose interval waits for the one batched bootstrap of `cost_runs`, and what it counts
_Pending = list[tuple[CostFigures, Moments, str]]


def _figures(values: FloatArray, arm: _Arm, keep: npt.NDArray[np.bool_], per_solved: bool,
             pending: _Pending, what: str) -> CostFigures:  # fmt: skip
    """The figures of `values` (the per-sample cost, tokens or seconds of `arm`) on the samples
    `keep`; its interval is made later for every figure at once (`_finish`)."""
    cost, outcome = values[keep], arm.outcome[keep]
    units = arm.unit[keep]
    w = arm.weight[keep]
    n = int(cost.size)
    g = _n_distinct(units)
    mean_cost = float(np.sum(w * cost) / w.sum()) if n else None  # not BLAS: `stats.cost._dot`
    mean_outcome = float(np.sum(w * outcome) / w.sum()) if n else None
    total = float(cost.sum()) if n else None
    figures = CostFigures(n, g, mean_cost, mean_outcome, total, None)
    if not per_solved:
        return figures
    try:
        pending.append((figures, unit_moments(cost, outcome, clusters=units, weights=w), what))
    except NoInterval as exc:
        figures.refusal = exc.reason
    return figures


def _n_distinct(labels: npt.NDArray[np.int64]) -> int:
    """How many distinct labels: by counting where they are small non-negative codes (what the
    staging hands in; a hash per figure was a third of a 100-run leaderboard's cost figures)."""
    if labels.size and labels.dtype.kind in "iu" and labels.min() >= 0 \
            and labels.max() < max(4 * labels.size, 1 << 20):  # fmt: skip
        return int(np.count_nonzero(np.bincount(labels)))
    return int(np.unique(labels).size)


def _finish(pending: _Pending, confidence_level: float, seed: int) -> None:
    """Every pending figure's interval from one call (`per_solved_intervals`: one draw of units
    per number of units, the seed recorded), then its refusal or warnings."""
    made = per_solved_intervals([m for _, m, _ in pending], confidence_level=confidence_level,
                                rng=seed)  # fmt: skip
    for (figures, m, what), interval in zip(pending, made, strict=True):
        figures.interval = interval
        g = m.n_units
        if g < MIN_COST_UNITS:
            figures.refusal = (
                f"{g} units, fewer than {MIN_COST_UNITS}: at 30 units cost-per-solved intervals "
                "covered as little as 89% in simulation, and fewer were not measured "
                '(docs/calibration.md, "Cost")'
            )
            continue
        solved_units = int(np.sum(m.denominator_sums > 0))  # outcomes ≥ 0, weights > 0
        spread = log_spread(m.numerator_sums / m.sizes)
        figures.warnings = interval_warnings(g, solved_units=solved_units, spread=spread,
                                             what=what)  # fmt: skip


def analyse_cost(
    staged: StagedScores,
    samples: SampleSet,
    *,
    control: str,
    treatments: list[str],
    cluster: str,
    confidence_level: float,
    pair_confidence_level: float,
    value_per_solved: float | None = None,
    label: str = "composite",
    seed: int = DEFAULT_SEED,
) -> CostComparison | None:
    """The cost section of a comparison of `control` with `treatments` on the staged outcomes
    (None when no compared observation has a cost and no value per solved was given); `seed`:
    the bootstrap's of the cost-per-solved intervals (recorded in each)."""
    runs = [control, *treatments]
    if not has_cost(samples, runs):
        if value_per_solved is None:
            return None
        return CostComparison(
            _outcome_name(staged, runs, label), value_per_solved, confidence_level, cluster,
            {r: RunCost(r, None, "no observation has a cost (cost_usd)", None, 0) for r in runs},
            [
                PairCost(control, t, 0, None, None, None, None, [],
                         refusal="no observation has a cost (cost_usd)")
                for t in treatments
            ],
            ["no compared observation has a cost_usd: nothing to weigh the gain against"],
        )  # fmt: skip
    made = cost_runs(staged, samples, runs, cluster=cluster, confidence_level=confidence_level,
                     label=label, seed=seed)  # fmt: skip
    arms, result, notes, outcome = made.arms, made.runs, made.notes, made.outcome
    pairs = [
        _pair(arms[control], arms[t], control, t, result, pair_confidence_level,
              value_per_solved)
        for t in treatments
    ]  # fmt: skip
    if any(a.grader_rows for a in arms.values()):
        notes.append(
            "grader cost (grader_cost_usd: judges, model-graded scorers) is reported apart and "
            "never counted in the system's cost"
        )
    return CostComparison(outcome, value_per_solved, confidence_level, cluster, result, pairs,
                          notes)  # fmt: skip


def _nan(a: FloatArray) -> FloatArray:
    return np.where(np.isfinite(a), a, np.nan)


def _outcome_name(staged: StagedScores, runs: list[str], label: str) -> str:
    values = np.concatenate([staged.composite(r, raw=True) for r in runs])
    finite = values[np.isfinite(values)]
    if finite.size and bool(np.all((finite == 0) | (finite == 1))):
        return "solved item"
    return f"unit of {label}"


def _per_solved_meaning(staged: StagedScores, runs: list[str], label: str) -> tuple[bool, str]:
    """Whether cost per unit of the outcome means something: its scale starts at 0."""
    values = np.concatenate([staged.composite(r, raw=True) for r in runs])
    finite = values[np.isfinite(values)]
    if finite.size and float(finite.min()) < 0:
        return False, (f"cost per unit of {label} is not given: the {label} takes negative values")
    if staged.bounds is not None and staged.bounds[0] != 0:
        return False, (
            f"cost per unit of {label} is not given: its scale [{staged.bounds[0]:g}, "
            f"{staged.bounds[1]:g}] does not start at 0 (the cost per additional point and the "
            "net benefit are)"
        )
    return True, ""


def _pair(
    c: _Arm,
    t: _Arm,
    control: str,
    treatment: str,
    runs: dict[str, RunCost],
    confidence_level: float,
    value: float | None,
) -> PairCost:
    refused = runs[control].refusal or runs[treatment].refusal
    if refused:
        return PairCost(control, treatment, 0, None, None, None, None, [], refusal=refused)
    common, ci, ti = np.intersect1d(c.sid, t.sid, assume_unique=True, return_indices=True)
    n = int(common.size)
    if n == 0:
        return PairCost(control, treatment, 0, None, None, None, None, [],
                        refusal="the runs share no scored sample")  # fmt: skip
    cc, tc, ca, ta = c.cost[ci], t.cost[ti], c.outcome[ci], t.outcome[ti]
    units = c.unit[ci]
    w = c.weight[ci]
    d_cost = float(np.sum(w * (tc - cc)) / w.sum())  # not BLAS: `stats.cost._dot`
    d_out = float(np.sum(w * (ta - ca)) / w.sum())
    pair = PairCost(control, treatment, n, d_cost, d_out, None, None, [])
    try:
        pair.per_additional = cost_per_additional(
            cc, tc, ca, ta, clusters=units, weights=w, confidence_level=confidence_level
        )
    except NoInterval as exc:
        pair.refusal = exc.reason
        return pair
    g = pair.per_additional.moments.n_units
    if g < MIN_COST_UNITS:
        pair.refusal = pair.net_refusal = (
            f"{g} units, fewer than {MIN_COST_UNITS}: at 30 units the net benefit's interval "
            "covered as little as 89% in simulation, and fewer were not measured "
            '(docs/calibration.md, "Cost")'
        )
        pair.per_additional = None
        return pair
    pair.warnings = interval_warnings(g)
    moments = pair.per_additional.moments
    grid = value_grid(moments, value)
    probability = probability_positive(moments, grid)
    pair.curve = [(float(v), float(p)) for v, p in zip(grid, probability, strict=True)]
    if value is not None:
        try:
            pair.net = net_benefit(cc, tc, ca, ta, value=value, clusters=units, weights=w,
                                   confidence_level=confidence_level)  # fmt: skip
        except NoInterval as exc:
            pair.net_refusal = exc.reason
    return pair


@dataclass
class CostRuns:
    """Each run's aligned per-sample costs and outcomes (`_Arm`) and cost figures."""

    outcome: str  # "solved item" or "unit of <metric>"
    per_solved: bool  # whether cost per unit of the outcome means something (scale from 0)
    arms: dict[str, _Arm]
    runs: dict[str, RunCost]
    notes: list[str]


def cost_runs(
    staged: StagedScores,
    samples: SampleSet,
    runs: list[str],
    *,
    cluster: str,
    confidence_level: float,
    label: str = "composite",
    seed: int = DEFAULT_SEED,
) -> CostRuns:
    """Each run's per-sample cost and outcome and its cost per solved item (refused, saying how
    many, when a scored observation has no cost_usd); its tokens and seconds per solved item
    where some compared observation has them (USAGE). Every interval from one batched
    bootstrap with `seed` (`_finish`)."""
    expressions = cost_expressions(samples)
    kept = staged.rows  # the scheme's own staging, when it read these columns with its rows
    rows = (
        kept
        if kept is not None and kept.runs == list(runs) and set(expressions) <= set(kept.columns)
        else stage_rows(samples, runs, expressions)
    )
    outcome = _outcome_name(staged, runs, label)
    per_solved, why_not = _per_solved_meaning(staged, runs, label)
    notes = [] if per_solved else [why_not]
    # a measure is reported where some compared observation has it
    # each column as floats once (NULL → NaN, never 0), then sliced per run
    floats = {k: as_floats(rows.columns[k]) for k in ("cost", "grader", *USAGE)
              if k in rows.columns}  # fmt: skip
    measures = [m for m in USAGE if m in floats and bool(np.isfinite(floats[m]).any())]
    arms: dict[str, _Arm] = {}
    result: dict[str, RunCost] = {}
    pending: _Pending = []
    for run in runs:
        span = rows.spans[run]
        arrays = staged.fetch(run)
        if not (np.array_equal(rows.columns["sid"][span], arrays.sid)
                and np.array_equal(rows.columns["epoch"][span], arrays.epoch)):  # fmt: skip
            raise InputError(
                f"the cost rows of run '{run}' do not line up with its scored rows",
                hint="Report this as a bug in calipers, with the command.",
            )
        cost = floats["cost"][span]
        grader = floats["grader"][span] if "grader" in floats else np.full(cost.size, np.nan)
        usage = {m: _nan(floats[m][span]) for m in measures}
        arm = _arm(staged, run, _nan(cost), _nan(grader), cluster, usage)
        arms[run] = arm
        refusal = None
        if arm.missing_cost:
            refusal = (
                f"{arm.missing_cost} scored observation(s) of '{run}' have no cost_usd: a "
                "missing cost is not 0, so no cost figure is given (add the cost, or leave "
                "those samples out of the run)"
            )
        if arm.unscored_with_cost:
            notes.append(
                f"{run}: {arm.unscored_with_cost} observation(s) with a cost but no outcome are "
                "left out of both sums (a missing outcome is not a failure)"
            )
        figures, tasks = (None, {}) if refusal else _run_figures(
            staged, arm, arm.cost, per_solved, pending, "costs"
        )  # fmt: skip
        made = RunCost(run, figures, refusal, arm.grader_cost, arm.grader_rows, tasks)
        for m in measures:
            if arm.missing_usage[m]:  # a missing count is not 0
                made.usage[m] = UsageCost(m, None, (
                    f"{arm.missing_usage[m]} scored observation(s) of '{run}' lack "
                    f"{USAGE[m][0]}: a missing count is not 0, so no {m} per {outcome} is given"
                ))  # fmt: skip
            else:
                found, per_task = _run_figures(staged, arm, arm.usage[m], per_solved, pending,
                                               m)  # fmt: skip
                made.usage[m] = UsageCost(m, found, None, per_task)
        result[run] = made
    _finish(pending, confidence_level, seed)
    return CostRuns(outcome, per_solved, arms, result, notes)


def _run_figures(staged: StagedScores, arm: _Arm, values: FloatArray, per_solved: bool,
                 pending: _Pending,
                 what: str) -> tuple[CostFigures, dict[str, CostFigures]]:  # fmt: skip
    """A run's figures of `values` over all its samples and, with several tasks, per task."""
    every = np.ones(arm.sid.size, dtype=bool)
    figures = _figures(values, arm, every, per_solved, pending, what)
    tasks: dict[str, CostFigures] = {}
    if len(staged.tasks) > 1:
        for code, name in enumerate(staged.tasks):
            keep = arm.task == code
            if keep.any():
                tasks[name] = _figures(values, arm, keep, per_solved, pending, what)
    return figures, tasks
