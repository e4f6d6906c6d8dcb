"""Every call the harness makes into the engine, and the few fields it reads back.

The engine is growing keyword options (`interval`, `cluster`, `min_effect`, and `trivial_diff`
that may be None for "the default relative to the scale"). Each is passed only when the function's
signature has it, so the harness measures today's engine and picks the options up when they land;
`features()` records which were passed.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import cache
from typing import Any

import numpy as np

from calipers.schemes.robustness.scoring import (
    INVARIANCE_KINDS,
    SENSITIVITY_KINDS,
    CaseResult,
    case_interval,
)
from calipers.stats import z_from_confidence
from calipers.stats.repeats import summarize_repeats
from calipers.verdicts import planning
from calipers.verdicts.compare import compare_staged
from calipers.verdicts.gates import DEFAULT_THRESHOLD
from calipers.verdicts.persample import RunArrays, StagedScores
from calipers.verdicts.run_summary import summarize_run

# Passed only to an engine whose `trivial_diff` is required (it was 0.1, on every scale).
LEGACY_TRIVIAL_DIFF = 0.1


@dataclass(frozen=True)
class Interval:
    """A point estimate and its interval (low and high None when the engine gave none)."""

    estimate: float | None
    low: float | None
    high: float | None

    @property
    def reported(self) -> bool:
        return self.low is not None and self.high is not None

    def covers(self, truth: float) -> bool:
        return self.low is not None and self.high is not None and self.low <= truth <= self.high


@dataclass(frozen=True)
class PairOutcome:
    treatment: str
    verdict: str
    composite: Interval
    significant: bool
    mde: float | None
    margin_decision: str | None = None
    # the worst/best-case bounds over missing outcomes (`PairedComparison.missing_bounds`), when
    # the engine gives them and something is missing
    bounds: Interval | None = None


@dataclass(frozen=True)
class Outcome:
    verdict: str  # the roll-up over pairs
    pairs: list[PairOutcome]
    # each run's composite interval, as the comparison's run summaries give it (`summarize_run`
    # with the same options: what `summarize` below computes, without computing it twice)
    runs: dict[str, Interval]
    span: float | None = None  # the scale's width the verdict used (None: none, unbounded)


@cache
def _parameters(fn: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(fn).parameters)


def cluster_option(grouped: bool, default: bool = False) -> str | None:
    """The `cluster` the harness passes: group for grouped cells, sample_id otherwise, and none
    at all (`default`: the engine's own default is measured) for cells with named groups."""
    if default:
        return None
    return "group" if grouped else "sample_id"


def _options(
    fn: Callable[..., Any], grouped: bool, method: str = "auto", *, default_cluster: bool = False
) -> dict[str, Any]:
    """The new keyword options `fn` takes, with the values the harness wants (no `cluster` with
    `default_cluster`)."""
    params = _parameters(fn)
    wanted: dict[str, Any] = {"interval": method, "min_effect": None}
    cluster = cluster_option(grouped, default_cluster)
    if cluster is not None:
        wanted["cluster"] = cluster
    out = {k: v for k, v in wanted.items() if k in params}
    if "trivial_diff" in params:
        required = params["trivial_diff"].default is inspect.Parameter.empty
        out["trivial_diff"] = LEGACY_TRIVIAL_DIFF if required else None
    return out


def features() -> dict[str, dict[str, Any]]:
    """Per engine function, the optional keywords the harness passes (for grouped cells
    `cluster` is "group")."""
    return {
        "compare_staged": _options(compare_staged, False),
        "summarize_run": {
            k: v
            for k, v in _options(summarize_run, False).items()
            if k != "trivial_diff"  # not an option of a single run
        },
    }


def compare(
    staged: StagedScores,
    *,
    treatments: list[str],
    grouped: bool,
    method: str = "auto",
    confidence_level: float,
    n_resamples: int,
    seed: int,
    margin: float | None = None,
    default_cluster: bool = False,
) -> Outcome:
    """`compare_staged` of control "A" against `treatments` (with a margin: its decisions);
    `default_cluster`: no cluster option (the engine's default)."""
    extra: dict[str, Any] = {} if margin is None else {"margin": margin}
    result = compare_staged(
        staged,
        scheme="layered" if staged.gated else "metric",
        origin="simulation",
        control="A",
        treatments=treatments,
        scheme_options=None,
        threshold=DEFAULT_THRESHOLD if staged.gated else None,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        seed=seed,
        **_options(compare_staged, grouped, method, default_cluster=default_cluster),
        **extra,
    )
    pairs = []
    for pair in result.pairs:
        c = pair.comparison
        pairs.append(
            PairOutcome(
                treatment=c.treatment,
                verdict=pair.decision.verdict.value,
                composite=Interval(c.composite.estimate, c.composite.low, c.composite.high),
                significant=bool(c.composite.significant),
                mde=None if c.mde is None else float(c.mde),
                margin_decision=None if pair.margin is None else pair.margin.decision,
                bounds=missing_bounds(c),
            )
        )
    runs = {run: _composite(summary) for run, summary in result.variants.items()}
    span = result.parameters.get("scale_span")
    return Outcome(result.verdict.value, pairs, runs, None if span is None else float(span))


def _composite(summary: Any) -> Interval:
    composite = summary.composite
    interval = composite.interval
    if interval is None:
        return Interval(composite.mean, None, None)
    return Interval(composite.mean, float(interval.low), float(interval.high))


def missing_bounds(comparison: Any) -> Interval | None:
    """The worst/best-case bounds of the difference over missing outcomes, read when the engine
    has them (`PairedComparison.missing_bounds`, `.low`/`.high`; None when nothing is missing)."""
    found = getattr(comparison, "missing_bounds", None)
    if found is None:
        return None
    low, high = getattr(found, "low", None), getattr(found, "high", None)
    if low is None or high is None:
        return None
    return Interval(comparison.composite.estimate, float(low), float(high))


def summarize(
    staged: StagedScores,
    run: str,
    *,
    grouped: bool,
    method: str = "auto",
    confidence_level: float,
    n_resamples: int,
    seed: int,
    default_cluster: bool = False,
) -> Interval:
    """One run's composite mean and its interval (`summarize_run`)."""
    options = _options(summarize_run, grouped, method, default_cluster=default_cluster)
    options.pop("trivial_diff", None)
    if "component_intervals" in _parameters(summarize_run):
        options["component_intervals"] = False  # only the composite's interval is measured
    summary = summarize_run(
        staged,
        staged.fetch(run),
        threshold=DEFAULT_THRESHOLD if staged.gated else math.nan,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        seed=seed,
        z=z_from_confidence(confidence_level),
        **options,
    )
    return _composite(summary)


def repeats(
    arrays: RunArrays, *, ks: list[int], confidence_level: float
) -> dict[tuple[str, int], Interval]:
    """pass@k and pass^k of one run's 0/1 values (`summarize_repeats`), by (kind, k); with groups
    (`grouped` cells) the items' groups are the independent units, as `--cluster group` makes
    them."""
    item_clusters = None
    if arrays.group is not None:
        first = np.unique(arrays.sid, return_index=True)[1]
        item_clusters = arrays.group[first]
    found = summarize_repeats(
        arrays.values["value"], arrays.sid, ks=ks, item_clusters=item_clusters,
        confidence_level=confidence_level,
    )  # fmt: skip
    out = {}
    for kind, estimates in found.estimates.items():
        for e in estimates:
            low = None if e.interval is None else float(e.interval.low)
            high = None if e.interval is None else float(e.interval.high)
            out[(kind, e.k)] = Interval(e.estimate, low, high)
    return out


def robustness_interval(
    cases: list[CaseResult],
    *,
    invariance: bool,
    confidence_level: float,
    n_resamples: int,
    seed: int,
) -> Interval:
    """`case_interval` for invariance (1 − mean reorder/pad distance) or sensitivity (mean swap
    distance) over the cases."""
    result = case_interval(
        cases,
        INVARIANCE_KINDS if invariance else SENSITIVITY_KINDS,
        confidence_level=confidence_level,
        n_resamples=n_resamples,
        seed=seed,
        complement=invariance,
    )
    if result is None or isinstance(result, str):  # no variant of the kinds; a refusal (reason)
        return Interval(None, None, None)
    return Interval(float(result.estimate), float(result.low), float(result.high))


@dataclass(frozen=True)
class Planned:
    """A plan, the power it promises at a number of units, and whether the planner was told
    that the effect is concentrated on a share of the items (`effect_share`, when it has it)."""

    plan: planning.Plan
    goal: planning.Goal
    share_passed: bool
    power_options: dict[str, Any]

    def power_at(self, units: int) -> float:
        """The power promised at `units` units, on the plan's own design (which carries the
        effect share when the planner was told it)."""
        return planning.power_at(self.plan.design, self.goal, units, **self.power_options)


def plan(design: planning.Design, goal: planning.Goal, effect_share: float | None) -> Planned:
    """`planning.plan`, told the effect's share of items when it takes `effect_share` (a field
    of the goal, or a keyword of `plan` and `power_at`): the harness measures today's planner
    and picks the option up when it lands."""
    if effect_share is None:
        return Planned(planning.plan(design, goal), goal, False, {})
    if "effect_share" in {f.name for f in fields(planning.Goal)}:
        goal = replace(goal, effect_share=effect_share)  # type: ignore[call-arg]
        return Planned(planning.plan(design, goal), goal, True, {})
    if "effect_share" in _parameters(planning.plan):
        made = planning.plan(design, goal, effect_share=effect_share)  # type: ignore[call-arg]
        power = (
            {"effect_share": effect_share}
            if "effect_share" in _parameters(planning.power_at)
            else {}
        )
        return Planned(made, goal, True, power)
    return Planned(planning.plan(design, goal), goal, False, {})
