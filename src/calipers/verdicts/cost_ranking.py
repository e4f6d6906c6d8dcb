"""`calipers rank --cost --margin Δ`: the cheapest run that is good enough. Per run: accuracy
(the mean outcome) and cost per solved item with their intervals (`calipers.verdicts.cost`), the
simultaneous lower bound of its accuracy against the best run's (multiple comparisons with the
best, `calipers.stats.cost_selection`), and one label — cheapest acceptable, acceptable, not shown
within the margin, or dominated; for the undecided runs, how many items the planner says would
decide them; and the frontier through confident dominance only. docs/cost.md, "The cheapest run
that is good enough"; the wrong-choice rate is measured in docs/calibration.md, "Cost".

The system's cost is `cost_usd` (the graders' is reported apart, never counted); a scored
observation without a cost refuses the ranking (a missing cost is never 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calipers.data.sampleset import SampleSet
from calipers.errors import InputError
from calipers.stats.cost_selection import Selection, frontier, select_within_margin
from calipers.stats.estimate import mean_interval
from calipers.stats.interval_parts import NoInterval
from calipers.verdicts.cost import cost_runs, has_cost
from calipers.verdicts.cost_figures import MIN_COST_UNITS, WARN_COST_UNITS, RunCost
from calipers.verdicts.persample import StagedScores, resolve_cluster
from calipers.verdicts.planning import Design, Goal, plan

PLAN_POWER = 0.8
SCHEMA_VERSION = "1"


@dataclass
class CostRanking:
    """The report of `rank --cost` and what it was computed from."""

    selection: Selection
    costs: dict[str, RunCost]
    accuracy_intervals: dict[str, dict[str, Any]]
    plans: dict[str, dict[str, Any]]
    outcome: str
    metric: str
    cluster: str
    cluster_reason: str
    source: str
    n_samples: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        s = self.selection
        rows = []
        key = s.cost_per_solved if s.order_by == "cost per solved" else s.cost_per_item
        for i in sorted(range(len(s.runs)), key=lambda i: (key[i], s.runs[i])):
            run = s.runs[i]
            rows.append({
                "run": run,
                "label": s.labels[i],
                "accuracy": float(s.accuracy[i]),
                "accuracy_interval": self.accuracy_intervals[run],
                "cost_per_item": float(s.cost_per_item[i]),
                "cost_per_solved": self.costs[run].to_dict(),
                "lower_bound_vs_best": float(s.lower[i]),
                "within_margin_shown": bool(s.lower[i] > -s.margin),
                "dominated_by": list(s.dominated_by[i]),
                "plan": self.plans.get(run),
            })  # fmt: skip
        dominance = [
            {"dominated": s.runs[i], "by": s.runs[j],
             "p_more_accurate": float(s.p_better[i, j]), "p_cheaper": float(s.p_cheaper[i, j])}
            for i in range(len(s.runs)) for j in range(len(s.runs))
            if s.runs[j] in s.dominated_by[i]
        ]  # fmt: skip
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "cost-rank",
            "source": self.source,
            "metric": self.metric,
            "outcome": self.outcome,
            "cluster": self.cluster,
            "cluster_reason": self.cluster_reason,
            "n_samples": self.n_samples,
            **s.to_dict(),
            "best": s.runs[int(np.argmax(s.accuracy))],
            "system_cost": "cost_usd",
            "grader_cost": "grader_cost_usd (reported apart, never counted as the system's)",
            "runs": rows,
            "frontier": frontier(s),
            "dominance": dominance,
            "meaning": meaning(s),
            "notes": self.notes,
        }


def meaning(s: Selection) -> dict[str, str]:
    """What each number and label claims, in words (shown in every output)."""
    level = f"{s.confidence_level:.0%}"
    return {
        "lower_bound_vs_best": (
            f"a {level} simultaneous lower bound of (this run's accuracy − the best other run's), "
            "holding for every run at once (multiple comparisons with the best, Hsu; critical "
            f"value {s.critical_value:.3f} from {s.n_resamples:,} paired bootstrap resamples of "
            f"the units, seed {s.seed})"
        ),
        "acceptable": (
            f"the lower bound is above −{s.margin:g}: shown within the margin of the best; the "
            f"cheapest such run is really {s.margin:g} or more worse than the best in at most "
            f"{1 - s.confidence_level:.0%} of evaluations (measured: docs/calibration.md, Cost)"
        ),
        "dominated": (
            "another run is confidently both more accurate and cheaper per item: both one-sided "
            f"paired tests (accuracy: {s.accuracy_test}; cost: paired t) significant, Holm over "
            f"all {len(s.runs) * (len(s.runs) - 1)} ordered pairs (no run falsely called "
            f"dominated with probability ≥ {s.confidence_level:.0%})"
        ),
        "frontier": (
            "the runs no other run confidently dominates, cheapest first: a run off it is "
            "confidently beaten on both; a run on it is not shown beaten (not shown best)"
        ),
        "cheapest": f"among the acceptable runs, the lowest {s.order_by} (point estimate)",
    }


def rank_by_cost(
    staged: StagedScores,
    samples: SampleSet,
    runs: list[str],
    *,
    margin: float,
    metric: str,
    cluster: str = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 2_000,
    seed: int = 0,
    source: str = "",
) -> CostRanking:
    """Label each of `runs` (see the module's docstring). Refuses (InputError) when a run lacks a
    cost, the outcome has no bounded scale, or fewer than MIN_COST_UNITS units are shared."""
    if len(runs) < 2:
        raise InputError(f"rank --cost needs at least 2 runs, got {len(runs)}",
                         parameters=["run"])  # fmt: skip
    if staged.bounds is None:
        raise InputError(
            f"'{metric}' has no bounded scale: rank --cost takes pass/fail outcomes or bounded "
            "metrics (a margin in points needs a scale)",
            hint="Declare the metric's bounds with --bounds LOW,HIGH.",
            parameters=["bounds"],
        )
    if not has_cost(samples, runs):
        raise InputError("no observation of these runs has a cost (cost_usd): nothing to rank by "
                         "cost", parameters=["cost"])  # fmt: skip
    choice = resolve_cluster(staged, cluster)
    made = cost_runs(staged, samples, runs, cluster=choice.cluster,
                     confidence_level=confidence_level, label=metric, seed=seed)  # fmt: skip
    missing = [c.refusal for c in made.runs.values() if c.refusal]
    if missing:
        raise InputError(
            "rank --cost refused: " + "; ".join(missing),
            hint="Add the missing costs, or leave the run out (--run NAME for each run to rank).",
        )
    arms = made.arms
    shared = arms[runs[0]].sid
    for run in runs[1:]:
        shared = np.intersect1d(shared, arms[run].sid, assume_unique=True)
    notes = list(made.notes)
    if choice.note:
        notes.append(choice.note)
    widest = max(a.sid.size for a in arms.values())
    if shared.size < widest:
        notes.append(f"{widest - shared.size} sample(s) not scored in every run are left out of "
                     f"the comparison ({shared.size} shared)")  # fmt: skip
    first = arms[runs[0]]
    at = np.searchsorted(first.sid, shared)
    codes, units = np.unique(first.unit[at], return_inverse=True)
    g = codes.size
    if g < MIN_COST_UNITS:
        raise InputError(
            f"rank --cost refused: {g} shared units, fewer than {MIN_COST_UNITS} (the "
            "wrong-choice rate was not measured below 100 items; docs/calibration.md, Cost)"
        )
    if g < WARN_COST_UNITS:
        notes.append(f"{g} units, fewer than {WARN_COST_UNITS}: see docs/calibration.md (Cost) "
                     "for the wrong-choice rate measured at small n")  # fmt: skip
    weight = first.weight[at]
    sizes = np.bincount(units, weights=weight, minlength=g)
    outcome_sums = np.empty((g, len(runs)))
    cost_sums = np.empty((g, len(runs)))
    for k, run in enumerate(runs):
        arm = arms[run]
        idx = np.searchsorted(arm.sid, shared)
        outcome_sums[:, k] = np.bincount(units, weights=weight * arm.outcome[idx], minlength=g)
        cost_sums[:, k] = np.bincount(units, weights=weight * arm.cost[idx], minlength=g)
    low, high = staged.bounds
    selection = select_within_margin(
        outcome_sums, cost_sums, sizes, runs=runs, margin=margin,
        confidence_level=confidence_level, n_resamples=n_resamples, rng=seed,
        span=high - low, cost_per_solved=made.per_solved,
    )  # fmt: skip
    intervals = {
        run: _accuracy_interval(outcome_sums[:, k], sizes, confidence_level, staged.bounds, seed)
        for k, run in enumerate(runs)
    }
    plans = _plans(staged, selection, cluster=choice.cluster, span=high - low)
    return CostRanking(
        selection, made.runs, intervals, plans, made.outcome, metric, choice.cluster,
        choice.reason, source, int(shared.size), notes,
    )  # fmt: skip


def _accuracy_interval(sums: Any, sizes: Any, confidence_level: float,
                       bounds: tuple[float, float], seed: int) -> dict[str, Any]:  # fmt: skip
    """The run's mean outcome with the engine's interval on the same units (its own rules:
    Wilson for 0/1 items, `auto` otherwise), two-sided at `confidence_level`."""
    try:
        made = mean_interval(sums / sizes, weights=sizes, confidence_level=confidence_level,
                             bounds=bounds, rng=seed)  # fmt: skip
    except NoInterval as exc:
        return {"low": None, "high": None, "method": None, "refusal": exc.reason}
    return {"low": made.low, "high": made.high, "method": made.method, "refusal": None}


def _plans(
    staged: StagedScores, s: Selection, *, cluster: str, span: float
) -> dict[str, dict[str, Any]]:
    """For each run not shown within the margin and not dominated: the items the planner says a
    paired non-inferiority comparison with the best would need to show it within Δ, if the
    observed difference is the truth (one-sided α/(K − 1), 80% power)."""
    k = len(s.runs)
    order = np.argsort(-s.accuracy, kind="stable")
    out: dict[str, dict[str, Any]] = {}
    for i, label in enumerate(s.labels):
        if label != "not shown within margin":
            continue
        best = int(order[0]) if int(order[0]) != i else int(order[1])
        truth = float(s.accuracy[i] - s.accuracy[best])
        entry: dict[str, Any] = {"against": s.runs[best], "observed_difference": truth,
                                 "items": None, "units": None, "assumption": None}  # fmt: skip
        if truth <= -s.margin:
            entry["reason"] = (
                f"its observed difference from {s.runs[best]} ({truth:+.3g}) is beyond the "
                f"margin: if that is the truth, no number of items shows it within {s.margin:g}"
            )
            out[s.runs[i]] = entry
            continue
        goal = Goal(margin=s.margin, truth=truth, power=PLAN_POWER,
                    alpha=2 * (1 - s.confidence_level), treatments=k - 1)  # fmt: skip
        try:
            design = Design.from_runs(staged, s.runs[best], s.runs[i], cluster=cluster,
                                      scale=span)  # fmt: skip
            made = plan(design, goal)
        except InputError as exc:
            entry["reason"] = f"not planned: {exc}"
            out[s.runs[i]] = entry
            continue
        entry.update({
            "items": made.items, "units": made.units, "power": PLAN_POWER,
            "assumption": (
                f"the observed difference from {s.runs[best]} ({truth:+.3g}) is the truth; "
                f"{made.assumption}; a paired non-inferiority comparison at margin {s.margin:g}, "
                f"one-sided α {1 - s.confidence_level:g}/{k - 1} (Bonferroni, a little more "
                "than the simultaneous bound needs), 80% power (calipers plan)"
            ),
            "reason": made.reason,
        })  # fmt: skip
        out[s.runs[i]] = entry
    return out
