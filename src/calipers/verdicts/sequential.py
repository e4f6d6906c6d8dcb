"""Decide as the data arrive: comparisons that may be looked at after every unit and stop at the
first decisive look, with the false-verdict rate held at α however often they are looked at.

The caller's contract. A **unit** is what the fixed-n engine treats as independent: an item (its
epochs averaged into one value per arm: an item's epochs enter together, as its mean) or a
cluster of items (their mean). A unit counts only when both arms have it, and units are fed in
the order fixed before the run (the items' seeded random order), whatever order the calls
finish in: a reorder buffer holds a finished unit until every unit before it is in. A betting
sequence is a martingale only when the next unit's order cannot depend on its outcome; if slow
calls were counted as they finish, a system that fails slowly would look better early
(docs/calibration.md, "Sequential designs": the completion-order stress cells).

The designs, their tests and decision rules: `calipers.verdicts.sequential_rules`; the numerics:
`calipers.stats.sequential` and `calipers.stats.group_sequential`; methods and measured
figures: docs/sequential.md. The engine draws nothing at random, so the same units in the same
order give the same stop (the order's seed is the caller's).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats.sequential import CapitalGrid, confidence_sequence, discordant_log_evalues
from calipers.verdicts.margin import Margin, parse_margin
from calipers.verdicts.sequential_results import (
    PairDecision,
    PairOutcome,
    SequentialLook,
    SequentialResult,
    e_value,
    roll_up,
)
from calipers.verdicts.sequential_rules import (
    GROUP_KINDS,
    MARGINS,
    VERDICTS,
    Evidence,
    Plan,
    SequenceEnd,
    SequentialDesign,
    classify_one,
    final_evidence,
    final_test,
    gains_of,
    group_look,
    interval_evidence,
    make_plan,
    replay,
    sequence_end,
    sequence_threshold,
)
from calipers.verdicts.sequential_trace import GRID_POINTS, oriented, outcome

FloatArray = npt.NDArray[np.float64]
MIXTURE_GRID_POINTS = 401  # … with the five horizons of an open-ended sequence (the cost ∝ both)

__all__ = [
    "PairDecision",
    "PairOutcome",
    "PairedUnits",
    "SequentialDesign",
    "SequentialLook",
    "SequentialMonitor",
    "SequentialResult",
    "decide_sequentially",
    "parse_design",
]

_DESIGN = re.compile(r"^\s*([a-z-]+)\s*(?::\s*([0-9]+))?\s*$")
_ALIASES = {"obf": "obrien-fleming", "o'brien-fleming": "obrien-fleming"}


def parse_design(text: str, *, n_planned: int | None) -> SequentialDesign:
    """A design from its name: "hybrid", "sequence", "obf" / "obrien-fleming", "pocock", a group
    design's looks after a colon ("pocock:5"), or "auto" (hybrid when N is known, else
    sequence)."""
    match = _DESIGN.match(str(text).lower())
    name = _ALIASES.get(match.group(1), match.group(1)) if match else None
    if name == "auto":
        name = "hybrid" if n_planned is not None else "sequence"
    if match is None or name not in ("hybrid", "sequence", "obrien-fleming", "pocock"):
        raise InputError(
            f"unknown sequential design {text!r}",
            hint="Designs: hybrid (the default when N is known), sequence (open-ended runs), "
            "obf or pocock with a number of looks (obf:5).",
            parameters=["design"],
        )
    looks = match.group(2)
    if looks is not None and name not in GROUP_KINDS:
        raise InputError(
            f"the {name} design looks after every unit: it takes no number of looks ({text!r})",
            parameters=["design"],
        )
    return SequentialDesign(
        name,  # type: ignore[arg-type]
        n_planned=n_planned,
        looks=5 if looks is None else int(looks),
    )


@dataclass(frozen=True)
class PairedUnits:
    """One compared pair (one treatment, optionally one task), its units in arrival order: each
    unit's mean per arm (a unit is a cluster: an item, its epochs averaged). `binary`: every unit
    is one pass/fail outcome (0 or 1: one epoch); epoch means of pass/fail are scores in [0, 1]."""

    control: str
    treatment: str
    task: str | None
    baseline: FloatArray
    candidate: FloatArray
    bounds: tuple[float, float]
    binary: bool
    unit_ids: tuple[str, ...] = ()


def _reason(plan: Plan, verdict: str, margin: str | None, low: float, high: float, *,
            n: int, confidence: float, what: str) -> str:  # fmt: skip
    """The decision in words, on the gain scale."""
    ends = f"[{low:+.4g}, {high:+.4g}]"
    of = "" if plan.end is None else f" of {plan.end}"
    head = f"the {what} {100 * confidence:.4g}% interval of the gain {ends} at n = {n}{of}"
    d = plan.min_effect
    if margin is not None and margin != "undecided":
        m = plan.margin or 0.0
        words = {
            "superior": f"lies above {'+' + format(m, '.4g') if plan.equivalence else '0'}",
            "equivalent": f"lies within ±{m:.4g}",
            "non-inferior": f"lies above the margin −{m:.4g}",
            "inferior": f"lies below the margin −{m:.4g}",
            "futile": f"lies below {d:.4g}: the improvement sought cannot be there",
        }
        return f"{head} {words[margin]} ({margin})"
    if verdict == "PROGRESS":
        return f"{head} lies above 0"
    if verdict == "REGRESS":
        return f"{head} lies below 0"
    if verdict == "NOISE":
        return f"{head} lies within ±{d:.4g}: no difference worth detecting either way"
    if verdict == "UNDERPOWERED":
        return f"{head} contains 0 and reaches past ±{d:.4g}: the data did not decide"
    return f"{head} contains 0: no decision yet"


def _decide(
    plan: Plan,
    meta: tuple[str, str, str | None],
    n: int,
    ev: Evidence,
    *,
    final: bool,
    gain: tuple[float, float, float],  # estimate, low, high on the gain scale
    kind: str,
    confidence: float,
    extra: dict[str, Any],
) -> PairDecision:
    decisive, v, mg = classify_one(plan, ev, final=final)
    verdict = VERDICTS[int(v)]
    margin = None if plan.margin is None else MARGINS[int(mg)]
    what = {"sequence": "anytime-valid", "repeated": "repeated", "fixed": "fixed-n"}[kind]
    estimate, low, high = gain
    reason = _reason(plan, verdict, margin, low, high, n=n, confidence=confidence, what=what)
    o_low, o_high = oriented(plan, low, high)
    return PairDecision(
        meta[0], meta[1], meta[2], n, verdict, bool(decisive), final, reason,
        estimate if plan.higher_is_better else -estimate, o_low, o_high, confidence, kind,
        margin, bool(ev.below[plan.min_effect]), **extra,
    )  # fmt: skip


def _discordant(baseline: FloatArray, candidate: FloatArray) -> dict[str, float]:
    b, c = int(np.sum(candidate > baseline)), int(np.sum(baseline > candidate))
    up, down = discordant_log_evalues(b, c)
    return {
        "candidate_only": b, "baseline_only": c,
        "e_value_above": e_value(float(up)), "e_value_below": e_value(float(down)),
    }  # fmt: skip


class _Pair:
    """One pair's running state in a monitor: the capitals of a grid of candidate gains that
    includes every null the decisions test (one update per unit serves both the decisions and
    the look's interval), the discordant counts, the units (for the fixed test at N and the
    group looks)."""

    def __init__(self, plan: Plan, meta: tuple[str, str, str | None]) -> None:
        self.plan, self.meta = plan, meta
        self.base: list[float] = []
        self.cand: list[float] = []
        self.n_seen = 0
        self.frozen: PairDecision | None = None
        self.looked = 0  # group designs: looks evaluated
        self.last_group: PairDecision | None = None
        self.above = self.below = 0  # discordant pairs (pass/fail)
        # the running maxima of log K± at 0 over the looks: the anytime p-value (over the looks
        # rather than every unit: a max over fewer times, so never smaller than it should be)
        self.max_up = self.max_down = 0.0
        span = plan.span
        self.grid: CapitalGrid | None = None
        if plan.sequence_alpha > 0:
            mixture = isinstance(plan.horizon, tuple) and len(plan.horizon) > 1
            self.grid = CapitalGrid(
                bounds=(-span, span), alpha=plan.sequence_alpha, truncation=plan.truncation,
                horizon=plan.horizon, points=MIXTURE_GRID_POINTS if mixture else GRID_POINTS,
                extra=plan.nulls,
            )  # fmt: skip

    @property
    def n(self) -> int:
        return len(self.base)

    def add(self, baseline: float, candidate: float) -> None:
        self.n_seen += 1
        end = self.plan.end
        if end is not None and self.n >= end:
            return  # the design ended at N
        self.base.append(baseline)
        self.cand.append(candidate)
        self.above += candidate > baseline
        self.below += baseline > candidate
        if self.grid is not None:
            self.grid.update(
                candidate - baseline if self.plan.higher_is_better else baseline - candidate
            )
            up, down = self.grid.log_capitals_at((0.0,))
            self.max_up = max(self.max_up, float(up[0]))
            self.max_down = max(self.max_down, float(down[0]))

    def look(self) -> PairDecision:
        if self.frozen is not None:
            return self.frozen
        if self.plan.design.kind in GROUP_KINDS:
            return self._group_look()
        assert self.grid is not None
        ups, downs = self.grid.log_capitals_at(self.plan.nulls)
        zero = self.plan.nulls.index(0.0)
        self.max_up = max(self.max_up, float(ups[zero]))
        self.max_down = max(self.max_down, float(downs[zero]))
        low, high = self.grid.interval()
        made = _sequence_decision(
            self.plan, self.meta, self.n, ups, downs, (self.grid.estimate or 0.0, low, high),
            (self.max_up, self.max_down), (self.above, self.below),
        )  # fmt: skip
        end = self.plan.end
        if not made.decisive and end is not None and self.n == end:
            made = _final_decision(self.plan, self.meta, np.array(self.base), np.array(self.cand))
        elif made.decisive:
            # the decision is exact (the nulls are points of the grid); the interval it reports
            # is on the grid: once, at the stop, its ends are made exact, as a replay gives them
            exact, _ = _decision_at(self.plan, self.meta, np.array(self.base),
                                    np.array(self.cand), self.n, False)  # fmt: skip
            if exact.verdict == made.verdict and exact.margin == made.margin:
                made = exact
        if made.decisive:
            self.frozen = made
        return made

    def _group_look(self) -> PairDecision:
        plan = self.plan
        while self.looked < len(plan.looks_at) and plan.looks_at[self.looked] <= self.n:
            k = self.looked
            self.looked += 1
            made = _group_decision(plan, self.meta, np.array(self.base), np.array(self.cand), k)
            self.last_group = made
            if made.decisive:
                self.frozen = made
                return made
        if self.last_group is not None:
            return self.last_group
        return _nothing_yet(plan, self.meta, self.n, "repeated", 1.0 - plan.pair_alpha)


def _nothing_yet(
    plan: Plan, meta: tuple[str, str, str | None], n: int, kind: str, confidence: float
) -> PairDecision:
    return _decide(
        plan, meta, n, Evidence({v: False for v in plan.nulls}, {v: False for v in plan.nulls}),
        final=False, gain=(0.0, -plan.span, plan.span), kind=kind, confidence=confidence,
        extra={},
    )  # fmt: skip


def _sequence_decision(
    plan: Plan,
    meta: tuple[str, str, str | None],
    n: int,
    ups: FloatArray,
    downs: FloatArray,
    gain: tuple[float, float, float],
    running: tuple[float, float],
    discordant: tuple[int, int],
) -> PairDecision:
    """A sequence look at unit n: the capitals at the plan's nulls (in `plan.nulls` order), the
    interval of the gain, the running maxima of the capitals at 0, the discordant counts."""
    if n == 0:
        return _nothing_yet(plan, meta, 0, "sequence", plan.confidence_level)
    thr = sequence_threshold(plan)
    ev = Evidence(
        {v: bool(u >= thr) for v, u in zip(plan.nulls, ups, strict=True)},
        {v: bool(d >= thr) for v, d in zip(plan.nulls, downs, strict=True)},
    )
    zero = plan.nulls.index(0.0)
    extra: dict[str, Any] = {
        "e_value_above": e_value(float(ups[zero])),
        "e_value_below": e_value(float(downs[zero])),
        "p_value": min(1.0, 2.0 * math.exp(-max(running))),
    }
    if plan.binary:
        b, c = discordant
        up, down = discordant_log_evalues(b, c)
        extra["discordant"] = {
            "candidate_only": b, "baseline_only": c,
            "e_value_above": e_value(float(up)), "e_value_below": e_value(float(down)),
        }  # fmt: skip
    return _decide(
        plan, meta, n, ev, final=False, gain=gain, kind="sequence",
        confidence=plan.confidence_level, extra=extra,
    )  # fmt: skip


def _group_decision(
    plan: Plan, meta: tuple[str, str, str | None], base: FloatArray, cand: FloatArray, k: int
) -> PairDecision:
    gains = gains_of(plan, base, cand)
    mean, low, high = (float(a[0]) for a in group_look(plan, gains, k))
    n = plan.looks_at[k]
    return _decide(
        plan, meta, n, interval_evidence(plan, low, high), final=k == len(plan.looks_at) - 1,
        gain=(mean, low, high), kind="repeated", confidence=1.0 - plan.pair_alpha,
        extra={"discordant": _discordant(base[:n], cand[:n]) if plan.binary else None},
    )  # fmt: skip


def _final_decision(
    plan: Plan, meta: tuple[str, str, str | None], base: FloatArray, cand: FloatArray
) -> PairDecision:
    test = final_test(plan, base, cand)
    span = plan.span
    low = -span if test.low is None else test.low
    high = span if test.high is None else test.high
    return _decide(
        plan, meta, int(base.size), final_evidence(plan, test), final=True,
        gain=(test.estimate, low, high), kind="fixed", confidence=1.0 - plan.fixed_alpha,
        extra={"p_value": test.p_value,
               "discordant": _discordant(base, cand) if plan.binary else None},
    )  # fmt: skip


def _check_units(baseline: FloatArray, candidate: FloatArray, bounds: tuple[float, float],
                 binary: bool, what: str) -> None:  # fmt: skip
    lo, hi = bounds
    for name, x in (("baseline", baseline), ("candidate", candidate)):
        if not np.all(np.isfinite(x)):
            raise InputError(f"{what}: the {name}'s unit values must be finite numbers")
        if np.any((x < lo) | (x > hi)):
            raise InputError(
                f"{what}: a {name} unit lies outside the bounds [{lo:g}, {hi:g}]",
                hint="Declare the metric's true bounds (--bounds LOW,HIGH).",
                parameters=["bounds"],
            )
        if binary and not np.all((x == 0) | (x == 1)):
            raise InputError(
                f"{what}: `binary` units must be 0 or 1",
                hint="With several epochs per item a unit is the mean of its pass/fail outcomes: "
                "pass binary=False (a score in [0, 1]).",
                parameters=["binary"],
            )


class SequentialMonitor:
    """The decisions of `run --stop`, unit by unit: `add` one unit of one pair (both arms in,
    in the order fixed before the run), `look` whenever a decision is wanted — after every unit
    if you like. A pair's decision is frozen at its first decisive look; a look costs O(nulls +
    grid) per pair, not O(n)."""

    def __init__(
        self,
        pairs_meta: Sequence[tuple[str, str, str | None]],
        *,
        bounds: tuple[float, float],
        binary: bool,
        design: SequentialDesign,
        margin: Margin | str | float | None = None,
        higher_is_better: bool = True,
        equivalence: bool = False,
        min_effect: float | None = None,
    ) -> None:
        if not pairs_meta:
            raise InputError("a monitor needs at least one pair", parameters=["pairs_meta"])
        self.design = design
        self.bounds = (float(bounds[0]), float(bounds[1]))
        self.binary = binary
        self.margin_spec = None if margin is None else parse_margin(margin)
        span = self.bounds[1] - self.bounds[0]
        self.plan = make_plan(
            design, n_pairs=len(pairs_meta), bounds=self.bounds, binary=binary,
            higher_is_better=higher_is_better, equivalence=equivalence, min_effect=min_effect,
            margin=None if self.margin_spec is None else self.margin_spec.on_scale(span),
        )  # fmt: skip
        self._pairs = [_Pair(self.plan, (m[0], m[1], m[2])) for m in pairs_meta]

    def add(self, index: int, baseline: float, candidate: float) -> None:
        if not 0 <= index < len(self._pairs):
            raise InputError(f"no pair {index}: the monitor has {len(self._pairs)}")
        b, c = float(baseline), float(candidate)
        lo, hi = self.bounds
        if not (lo <= b <= hi and lo <= c <= hi) or (self.binary and not {b, c} <= {0.0, 1.0}):
            _check_units(np.array([b]), np.array([c]), self.bounds, self.binary, "a unit")
        self._pairs[index].add(b, c)

    def look(self) -> SequentialLook:
        decisions = tuple(p.look() for p in self._pairs)
        return SequentialLook(
            tuple(p.n_seen for p in self._pairs), decisions, roll_up(decisions),
            all(d.decisive for d in decisions),
        )  # fmt: skip

    @property
    def stopped(self) -> bool:
        """A decisive look reached for every pair (as of the last `look`)."""
        return all(p.frozen is not None for p in self._pairs)

    def result(self, *, every: int = 1) -> SequentialResult:
        """The full result of what was added (the exact intervals and the traced sequence), with
        each pair's decision as the monitor's looks made it."""
        self.look()
        outcomes = [
            outcome(self.plan, p.meta, np.array(p.base), np.array(p.cand), p.look(), p.n_seen)
            for p in self._pairs
        ]
        return _result(self.design, self.plan, outcomes, self.margin_spec, every)


def decide_sequentially(
    pairs: Sequence[PairedUnits],
    *,
    design: SequentialDesign,
    margin: Margin | str | float | None = None,
    higher_is_better: bool = True,
    every: int = 1,
    equivalence: bool = False,
    min_effect: float | None = None,
) -> SequentialResult:
    """Replay each pair's units in order, looking after every `every` units (and at the last;
    a group design at its planned looks), and stop each pair at its first decisive look. α is
    split over the pairs (Bonferroni: treatments × tasks). `min_effect`: the improvement sought
    on the metric's scale (default: 5% of the scale's width, as `compare`'s)."""
    if not pairs:
        raise InputError("nothing to decide: no pairs given", parameters=["pairs"])
    spec = None if margin is None else parse_margin(margin)
    outcomes, notes = [], []
    plan: Plan | None = None
    for pair in pairs:
        base = np.asarray(pair.baseline, dtype=np.float64)
        cand = np.asarray(pair.candidate, dtype=np.float64)
        what = f"{pair.treatment} vs {pair.control}" + (f" ({pair.task})" if pair.task else "")
        if base.shape != cand.shape or base.ndim != 1:
            raise InputError(f"{what}: baseline and candidate need one value per unit each")
        _check_units(base, cand, pair.bounds, pair.binary, what)
        span = float(pair.bounds[1]) - float(pair.bounds[0])
        plan = make_plan(
            design, n_pairs=len(pairs), bounds=pair.bounds, binary=pair.binary,
            higher_is_better=higher_is_better, equivalence=equivalence, min_effect=min_effect,
            margin=None if spec is None else spec.on_scale(span),
        )  # fmt: skip
        meta = (pair.control, pair.treatment, pair.task)
        if plan.end is not None and base.size > plan.end:
            notes.append(f"{what}: {base.size} units given, the design ends at N = {plan.end}")
        outcomes.append(_replayed(plan, meta, base, cand, every))
    assert plan is not None
    return _result(design, plan, outcomes, spec, every, notes)


def _replayed(plan: Plan, meta: tuple[str, str, str | None], base: FloatArray,
              cand: FloatArray, every: int) -> PairOutcome:  # fmt: skip
    seen = int(base.size)
    end = seen if plan.end is None else min(seen, plan.end)
    base, cand = base[:end], cand[:end]
    if end == 0:
        return outcome(plan, meta, base, cand, _Pair(plan, meta).look(), seen)
    run = replay(plan, base[None, :], cand[None, :], every=every)
    stop = int(run.stop[0])
    decision, made = _decision_at(plan, meta, base, cand, stop if stop else end,
                                  bool(run.final[0]), run.end)  # fmt: skip
    # undecided at the last unit: the sequence's exact interval there is the report's last one
    # (computed once — over 500,000 units each computation is a pass per root-finding step)
    last = oriented(plan, made[0], made[1]) if made is not None and not stop else None
    return outcome(plan, meta, base, cand, decision, seen, last=last)


def _decision_at(plan: Plan, meta: tuple[str, str, str | None], base: FloatArray,
                 cand: FloatArray, n: int, final: bool, replayed: SequenceEnd | None = None,
                 ) -> tuple[PairDecision, tuple[float, float] | None]:  # fmt: skip
    """The decision a look at unit n makes (the replay found where), and the sequence's exact
    interval of the gain there (unoriented) where the look computed it. `replayed`: the end of
    the sequence the replay computed, used where it is the end after these n units (the same
    computation on the same units)."""
    if plan.design.kind in GROUP_KINDS:
        k = max((i for i, at in enumerate(plan.looks_at) if at <= n), default=None)
        if k is None:
            return _nothing_yet(plan, meta, n, "repeated", 1.0 - plan.pair_alpha), None
        return _group_decision(plan, meta, base, cand, k), None
    if final:
        return _final_decision(plan, meta, base[:n], cand[:n]), None
    # what a monitor would hold after n units, from the paths the replay computes, and the
    # interval's ends exact rather than on the grid
    gains = gains_of(plan, base[:n], cand[:n])
    seq = replayed if replayed is not None and replayed.n == n else sequence_end(plan, gains)
    ups, downs, running = seq.ups, seq.downs, seq.running
    span = plan.span
    made = confidence_sequence(
        gains, bounds=(-span, span), confidence_level=1.0 - plan.sequence_alpha,
        horizon=plan.horizon, truncation=plan.truncation,
    )  # fmt: skip
    counts = (int(np.sum(cand[:n] > base[:n])), int(np.sum(base[:n] > cand[:n])))
    decision = _sequence_decision(
        plan, meta, n, ups, downs, (made.estimate, made.low, made.high), running, counts
    )
    return decision, (made.low, made.high)


def _result(design: SequentialDesign, plan: Plan, outcomes: list[PairOutcome],
            margin: Margin | None, every: int, notes: list[str] | None = None,
            ) -> SequentialResult:  # fmt: skip
    return SequentialResult(
        design, design.alpha, plan.pair_alpha, None if margin is None else str(margin),
        plan.higher_is_better, every, outcomes, roll_up([o.decision for o in outcomes]),
        list(notes or []),
    )  # fmt: skip
