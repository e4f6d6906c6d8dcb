"""A paired verdict from the summary table (docs/scale.md): the difference, its interval, the exact
and analytic tests, the MDE, pass@k and the cluster bootstrap, all from
`calipers.stats.summary_stats`, and the decision by the engine's own rules — `gates.decide`,
`Thresholds`, `decide_margin` — on a `PairedComparison` built from them. Whatever the summaries
cannot give (the betting interval, which reads the units in order; Newcombe's interval with
epochs, which reads each epoch's pairing; saturation; missingness; flips) is said so, in
`not_from_summaries`, and a decision that needs it raises `NotSummarizable` so the caller can
read the rows instead."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from calipers.data.metric_scales import declared_bounds, parse_bounds
from calipers.errors import DataError, InputError
from calipers.stats._rng import DEFAULT_SEED
from calipers.stats.saturation import SaturationResult, confidence_for
from calipers.stats.summary_bootstrap import cluster_bootstrap, distinct_units
from calipers.stats.summary_stats import (
    NotSummarizable,
    SummaryTable,
    Units,
    build_summaries,
    clustered_standard_error,
    cr1_variance,
    mcnemar,
    paired_means,
    paired_t,
    pass_at_k_of,
    sign_test,
    units_of,
)
from calipers.verdicts.base import Comparison
from calipers.verdicts.difference import Difference, decided_by, mcnemar_refusal, significant
from calipers.verdicts.gates import (
    MIN_EFFECT_FRACTION,
    TRIVIAL_FRACTION,
    Decision,
    Thresholds,
    Verdict,
    decide,
)
from calipers.verdicts.margin import MarginDecision, decide_margin, parse_margin
from calipers.verdicts.paired import PairedComparison
from calipers.verdicts.persample import StagedScores
from calipers.verdicts.run_summary import ComponentSummary, RunSummary
from calipers.verdicts.summary_intervals import summary_detectable, summary_difference

if TYPE_CHECKING:
    import pandas as pd

SUMMARY_SCHEMA_VERSION = "1"

NOT_FROM_SUMMARIES = [
    {"statistic": "the betting interval",
     "why": "its capital is a product over the units in the order they were written",
     "instead": "read the rows: calipers compare FILE --scheme metric (all rows in memory)"},
    {"statistic": "Newcombe's score interval with several epochs per item",
     "why": "its 2×2 table counts epochs that pass in both runs; the summaries keep each side's "
            "epochs apart",
     "instead": "from the summaries: the t interval on the items' mean differences; from the "
                "rows: calipers compare"},
    {"statistic": "saturation over epochs",
     "why": "it reads the epochs in order (widths after 1, 2, … epochs)",
     "instead": "calipers compare on the rows"},
    {"statistic": "missingness and the missing outcomes' bounds",
     "why": "items with a value in one run only are outside the table of pairs",
     "instead": "calipers compare on the rows"},
    {"statistic": "flips (which samples changed) and medians or rank statistics",
     "why": "they name or order single samples; a summary keeps only sums",
     "instead": "calipers compare on the rows (flips, to_frame('sample'))"},
]  # fmt: skip


@dataclass(repr=False)
class SummaryComparison(Comparison):
    """The verdict of one pair from its summaries, and everything it was made from."""

    scheme: str
    origin: str
    engine: str
    parameters: dict[str, Any]
    control: str
    treatment: str
    pair: PairedComparison
    decision: Decision
    margin: MarginDecision | None
    summary: dict[str, Any]
    bootstrap: dict[str, Any] | None
    pass_at_k: dict[str, Any] | None
    tasks: dict[str, dict[str, Any]]
    not_from_summaries: list[dict[str, str]]
    notes: list[str] = field(default_factory=list)
    reason: str = ""  # the decision's

    def __post_init__(self) -> None:
        self.reason = self.decision.reason

    gates: ClassVar[tuple[str, ...]] = ("no-regress", "ship", "non-inferior", "none")

    @property
    def verdict(self) -> Verdict:
        return self.decision.verdict

    @property
    def verdict_text(self) -> str:
        return self.decision.verdict.value

    def gate_failure(self, gate: str) -> str | None:
        if gate == "no-regress" and self.verdict is Verdict.REGRESS:
            return "the verdict is REGRESS (gate no-regress)"
        if gate == "ship" and self.verdict is not Verdict.PROGRESS:
            return f"the verdict is {self.verdict.value}, not PROGRESS (gate ship)"
        if gate == "non-inferior":
            if self.margin is None:
                raise InputError("--gate non-inferior needs a margin",
                                 hint="Add --margin M (on the compared quantity's scale).",
                                 parameters=["margin"])  # fmt: skip
            if not self.margin.passes:
                return f"{self.treatment} is {self.margin.decision} at the margin"
        if gate not in self.gates:
            raise InputError(f"unknown gate '{gate}' for a comparison from summaries",
                             hint="Gates: " + ", ".join(self.gates) + ".")  # fmt: skip
        return None

    def to_frame(self, level: str = "pair") -> pd.DataFrame:
        import pandas as pd

        if level == "task":
            return pd.DataFrame([{"task": k, **v} for k, v in self.tasks.items()])
        if level != "pair":
            raise InputError(f"unknown level '{level}' of a comparison from summaries",
                             hint="Levels: pair, task.")  # fmt: skip
        d = self.pair.composite
        return pd.DataFrame([{"control": self.control, "treatment": self.treatment,
                              "verdict": self.verdict_text, "n_pairs": d.n_pairs,
                              "estimate": d.estimate, "low": d.low, "high": d.high}])  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        pair = self.pair
        return {
            "schema_version": SUMMARY_SCHEMA_VERSION,
            "kind": "summary-compare",
            "scheme": self.scheme,
            "source": self.origin,
            "engine": self.engine,
            "parameters": self.parameters,
            "control": self.control,
            "treatment": self.treatment,
            "verdict": self.verdict_text,
            "reason": self.reason,
            "seed": self.parameters["seed"],
            "n_resamples": self.parameters["n_resamples"],
            "summary": self.summary,
            "difference": pair.composite.to_dict(),
            "mde": None if pair.mde is None or math.isinf(pair.mde) else pair.mde,
            "margin": None if self.margin is None else self.margin.to_dict(),
            "decision": None if self.margin is None else self.margin.decision,
            "tests": pair.tests,
            "bootstrap": self.bootstrap,
            "pass_at_k": self.pass_at_k,
            "tasks": self.tasks,
            "not_from_summaries": self.not_from_summaries,
            "notes": self.notes,
        }


def _tests(d: Difference, units: Units, binary: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"decided_by": decided_by(d)}
    if binary and units.g == units.observations:
        out["mcnemar"] = mcnemar(units).to_dict()
    else:
        out["mcnemar"] = None
        out["mcnemar_refusal"] = mcnemar_refusal(binary)
    out["sign"] = sign_test(units).to_dict()
    test = paired_t(units)
    out["paired_t"] = None if test is None else test.to_dict()
    test = clustered_standard_error(units)
    out["clustered_se"] = None if test is None else test.to_dict()
    return out


def _run(name: str, mean: float, units: Units) -> RunSummary:
    """What `decide` reads of a run: no judges, no CV, no saturation (the summaries keep no epoch
    order)."""
    n = round(units.items)
    return RunSummary(
        run=name, n_samples=n, n_observations=units.observations, missing=0,
        composite=ComponentSummary(mean, units.observations, None), components={},
        layers_used={}, gate_passed=None, judge_pearson=None, judge_alpha=None,
        human_pearson=None, cv_median=None,
        saturation=SaturationResult([], [], None, confidence_for(n), n,
                                    ["the summaries keep no epoch order"]),
    )  # fmt: skip


def _task_table(table: SummaryTable) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for task in sorted(set(table.task.tolist())):
        units = units_of(table.select(table.task == task))
        means = paired_means(units)
        out[task] = {"control": means.control, "treatment": means.treatment,
                     "diff": means.difference, "n_items": round(means.n_items),
                     "n_units": means.n_units}  # fmt: skip
    return out


def compare_summaries(
    table: SummaryTable,
    *,
    control: str,
    treatment: str,
    origin: str,
    engine: str,
    metric: str,
    cluster: str = "sample_id",
    cluster_reason: str = "--cluster sample_id",
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = DEFAULT_SEED,
    interval: str = "auto",
    bounds: str | tuple[float, float] | None = None,
    min_effect: float | None = None,
    trivial_diff: float | None = None,
    margin: str | float | None = None,
    equivalence: bool = False,
    bootstrap: bool = True,
    notes: list[str] | None = None,
) -> SummaryComparison:
    """The verdict of `treatment` against `control` from their summary table."""
    margin_spec = None if margin is None else parse_margin(margin)
    if equivalence and margin_spec is None:
        raise InputError("--equivalence needs a margin", hint="Add --margin M.",
                         parameters=["margin"])  # fmt: skip
    units = units_of(table)
    if units.g == 0:
        raise DataError(f"the summaries of {origin} hold no paired item",
                        hint="Both runs need a value on the same items.")  # fmt: skip
    binary = table.binary
    declared, scale_source = declared_bounds(metric, parse_bounds(bounds), all_binary=binary)
    binary = binary and (declared is None or declared == (0.0, 1.0))
    _check_bounds(units, declared, scale_source, metric)
    span = None if declared is None else declared[1] - declared[0]
    alpha = 1.0 - confidence_level
    d = summary_difference(
        table, units, confidence_level=confidence_level, n_resamples=n_resamples, seed=seed,
        method=interval, bounds=declared, binary=binary,
    )  # fmt: skip
    d.significant = significant(d, alpha)
    run_notes = list(notes or [])
    mde, why = summary_detectable(d, units, alpha, declared)
    run_notes += [why] if why else []
    pair = PairedComparison(
        control=control, treatment=treatment, confidence_level=confidence_level,
        n_pairs=units.g, n_observation_pairs=units.observations, unpaired_control=0,
        unpaired_treatment=0, composite=d, components={}, mde=mde, hotelling=None,
        cluster=cluster, tests=_tests(d, units, binary),
    )  # fmt: skip
    limits = Thresholds(
        min_effect=min_effect if min_effect is not None
        else None if span is None else MIN_EFFECT_FRACTION * span,
        trivial_diff=trivial_diff if trivial_diff is not None
        else 0.0 if span is None else TRIVIAL_FRACTION * span,
        threshold=None, span=span, use_cv=False,
    )  # fmt: skip
    means = paired_means(units)
    decision = decide(
        pair, _run(control, means.control, units), _run(treatment, means.treatment, units),
        gated=False, limits=limits, label=metric,
    )  # fmt: skip
    if margin_spec is not None and margin_spec.percent and span is None:
        raise InputError(f"a margin in % ({margin_spec}) needs the scale's width, and "
                         f"{scale_source}", parameters=["margin", "bounds"])  # fmt: skip
    held = None
    if margin_spec is not None:
        held = decide_margin(
            d, margin_spec.on_scale(span or 0.0), given=str(margin_spec),
            equivalence=equivalence, confidence_level=confidence_level,
        )  # fmt: skip
    boot = _bootstrap(units, n_resamples, confidence_level, seed) if bootstrap else None
    passes, pass_note = _pass_at_k(table)
    not_from = [dict(x) for x in NOT_FROM_SUMMARIES]
    if pass_note is not None:
        not_from.append(pass_note)
    parameters = {
        "metric": metric, "confidence_level": confidence_level, "n_resamples": n_resamples,
        "seed": seed, "interval": interval, "cluster": cluster, "cluster_reason": cluster_reason,
        "bounds": None if declared is None else list(declared), "scale_span": span,
        "scale_source": scale_source, "trivial_diff": limits.trivial_diff,
        "min_effect": limits.min_effect,
        "margin": None if margin_spec is None else margin_spec.on_scale(span or 0.0),
        "margin_given": None if margin_spec is None else str(margin_spec),
        "equivalence": equivalence, "policy": "gates",
    }  # fmt: skip
    return SummaryComparison(
        "metric", origin, engine, parameters, control, treatment, pair, decision, held,
        _describe(table, units, binary), boot, passes, _task_table(table), not_from, run_notes,
    )  # fmt: skip


def _check_bounds(
    units: Units, bounds: tuple[float, float] | None, source: str, metric: str
) -> None:
    """Each unit's mean of each side lies in the declared bounds (a mean outside them means a
    value outside them)."""
    if bounds is None:
        return
    lo, hi = bounds
    tol = 1e-9 * max(1.0, abs(lo), abs(hi))
    for side, total in (("control", units.a), ("candidate", units.b)):
        mean = total / units.m
        bad = (mean < lo - tol) | (mean > hi + tol)
        if bad.any():
            raise InputError(
                f"{int(bad.sum())} unit(s) of the {side} have a mean of '{metric}' outside its "
                f"bounds [{lo:g}, {hi:g}] ({source}); the first: {float(mean[bad][0]):g}",
                hint="Declare the metric's true bounds with --bounds LOW,HIGH.",
                parameters=["bounds"],
            )


def _bootstrap(
    units: Units, n_resamples: int, confidence_level: float, seed: int
) -> dict[str, Any] | None:
    """The cluster bootstrap of the difference, beside the interval that decides, with the
    analytic standard errors it should agree with (CR0, Miller's; CR1 the t interval's)."""
    if units.g < 2:
        return None
    started = time.perf_counter()
    result = cluster_bootstrap(units, n_resamples=n_resamples, confidence_level=confidence_level,
                               rng=seed)  # fmt: skip
    seconds = time.perf_counter() - started
    theta = paired_means(units).difference
    cr1 = math.sqrt(max(cr1_variance(units, theta), 0.0))
    g = units.g
    return {
        **result.to_dict(),
        # CR0 (no G/(G − 1)): what the bootstrap's standard error estimates
        "analytic_standard_error": cr1 * math.sqrt((g - 1) / g),
        "cr1_standard_error": cr1,
        "distinct_units": int(distinct_units(units)[0].size),
        "seconds": seconds,
    }


def _pass_at_k(table: SummaryTable) -> tuple[dict[str, Any] | None, dict[str, str] | None]:
    try:
        a, b = pass_at_k_of(table, "a"), pass_at_k_of(table, "b")
    except NotSummarizable as why:
        if not table.binary:
            return None, None  # pass@k is for pass/fail outcomes: nothing withheld
        return None, {"statistic": "pass@k", "why": why.message, "instead": why.hint or ""}

    def by_kind(found: list[Any], kind: str) -> list[dict[str, Any]]:
        return [e.to_dict() for e in found if e.kind == kind]

    return {
        "control": {"pass@k": by_kind(a, "pass@k"), "pass^k": by_kind(a, "pass^k")},
        "treatment": {"pass@k": by_kind(b, "pass@k"), "pass^k": by_kind(b, "pass^k")},
    }, None


def _describe(table: SummaryTable, units: Units, binary: bool) -> dict[str, Any]:
    epochs_a = table.n_a / table.items
    epochs_b = table.n_b / table.items
    return {
        "rows": table.rows,
        "units": units.g,
        "items": round(units.items),
        "observations": {"control": round(float(table.count @ table.n_a)),
                         "treatment": round(float(table.count @ table.n_b))},
        "tasks": len(set(table.task.tolist())),
        "epochs": {"min": float(min(epochs_a.min(), epochs_b.min())),
                   "max": float(max(epochs_a.max(), epochs_b.max()))},
        "binary": binary,
        "single_epoch": table.single_epoch,
        "collapsed": bool(np.all([u is None for u in table.unit])),
    }  # fmt: skip


def summaries_from_staged(
    staged: StagedScores, control: str, treatment: str, *, cluster: str = "sample_id"
) -> SummaryTable:
    """The summary table of two staged runs (`stage_rows` → `StagedScores`), built in memory by
    the same definition as the SQL: the in-memory engine, and the reference the others are
    tested against."""
    c_run, t_run = staged.fetch(control), staged.fetch(treatment)
    k = int(max(c_run.sid.max(initial=-1), t_run.sid.max(initial=-1))) + 1
    item_task = np.zeros(k, dtype=np.int64)
    item_task[c_run.sid] = c_run.task_code
    item_task[t_run.sid] = t_run.task_code
    item_unit: np.ndarray[Any, Any] | None = None
    if cluster == "task":
        item_unit = item_task.copy()
    elif cluster == "group":
        item_unit = np.full(k, -1, dtype=np.int64)
        for run in (c_run, t_run):
            if run.group is None or (run.group < 0).any():
                raise InputError(f"`cluster` group: samples of run '{run.run}' have no `group`",
                                 parameters=["cluster"])  # fmt: skip
            item_unit[run.sid] = run.group
    elif cluster != "sample_id":
        raise InputError(f"unknown `cluster` '{cluster}'", parameters=["cluster"])
    return build_summaries(
        tasks=staged.tasks, item_task=item_task,
        item=np.concatenate([c_run.sid, t_run.sid]),
        side=np.r_[np.zeros(c_run.sid.size, bool), np.ones(t_run.sid.size, bool)],
        values=np.concatenate([staged.composite(control), staged.composite(treatment)]),
        item_unit=item_unit,
    )  # fmt: skip
