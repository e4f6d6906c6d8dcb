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
from dataclasses import dataclass
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
from calipers.verdicts.compare import compare_staged
from calipers.verdicts.gates import DEFAULT_THRESHOLD
from calipers.verdicts.persample import RunArrays, StagedScores, summarize_run

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


@dataclass(frozen=True)
class Outcome:
    verdict: str  # the roll-up over pairs
    pairs: list[PairOutcome]


@cache
def _parameters(fn: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(fn).parameters)


def _options(fn: Callable[..., Any], grouped: bool, method: str = "auto") -> dict[str, Any]:
    """The new keyword options `fn` takes, with the values the harness wants."""
    params = _parameters(fn)
    wanted: dict[str, Any] = {
        "interval": method,
        "cluster": "group" if grouped else "sample_id",
        "min_effect": None,
    }
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
) -> Outcome:
    """`compare_staged` of control "A" against `treatments` (with a margin: its decisions)."""
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
        **_options(compare_staged, grouped, method),
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
            )
        )
    return Outcome(result.verdict.value, pairs)


def summarize(
    staged: StagedScores,
    run: str,
    *,
    grouped: bool,
    method: str = "auto",
    confidence_level: float,
    n_resamples: int,
    seed: int,
) -> Interval:
    """One run's composite mean and its interval (`summarize_run`)."""
    options = _options(summarize_run, grouped, method)
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
    composite = summary.composite
    interval = composite.interval
    if interval is None:
        return Interval(composite.mean, None, None)
    return Interval(composite.mean, float(interval.low), float(interval.high))


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
