"""The rules of the sequential designs, on arrays: what each design tests at a look, how a look's
evidence becomes a decision, and the replay of many paired runs at once (rows × units) that
`decide_sequentially` runs on one row and the calibration harness on thousands.

Everything is on the **gain** scale: g = candidate − baseline when higher is better, else
baseline − candidate, so that a gain is always good; a unit's gain lies in [−w, w], w the width
of the metric's scale. Each pair's α is the family α over the pairs (Bonferroni, as the fixed-n
engine splits it over treatments; per-task pairs count each task).

Tests at a look, by design (`SequentialDesign.kind`):

- **sequence**: the betting e-processes of the gains at the nulls 0, −M, +M (a margin M) and
  ±δ (δ the improvement sought), at the pair's α — α/2 a side, the capital against 1/(α/2).
  Tuned at half the planned N when one is given, else the mixture over horizons.
- **hybrid**: the same sequence at α·share before N, then at N the fixed-n engine's own test at
  the remaining α: exact McNemar and Newcombe's interval on pass/fail units, the `auto` paired
  interval (t where the shape rule holds, else the betting interval) on scores. Why that test
  and not the betting interval of the whole sample: it is what `calipers compare` would report
  at N, measured there to hold its level, and more powerful — the hybrid then loses only what
  moving α·share to the sequence costs (docs/sequential.md).
- **obrien-fleming, pocock**: the z statistic of the gains at equally spaced looks against the
  α-spending boundaries, and the repeated confidence interval mean ± c_k·se (asymptotic: the
  plug-in standard error; the grid measures it).

A look's evidence → decision (first match, `classify`): without a margin, PROGRESS (0 rejected
from below), REGRESS (from above), or NOISE when the interval lies within ±δ (no effect worth
detecting either way) stop the pair. With a margin: superior, equivalent (with equivalence),
non-inferior, inferior stop it; "futile" (the interval's top below δ: the improvement sought
cannot be there) is reported and does not stop a margin question it does not answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import special

from calipers.errors import InputError
from calipers.stats.estimate import paired_interval
from calipers.stats.group_sequential import Spending, group_sequential_bounds
from calipers.stats.interval_parts import NoInterval
from calipers.stats.paired_tests import mcnemar_exact
from calipers.stats.sequence_capitals import Block, NullCapitals, mixture_at, reaches
from calipers.stats.sequential import (
    HORIZON_MIXTURE,
    SEQUENCE_TRUNCATION,
    bet_sizes,
    log_capital_paths,
)
from calipers.verdicts.gates import MIN_EFFECT_FRACTION

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
DesignKind = Literal["hybrid", "sequence", "obrien-fleming", "pocock"]
DESIGN_KINDS: tuple[str, ...] = ("hybrid", "sequence", "obrien-fleming", "pocock")
GROUP_KINDS = ("obrien-fleming", "pocock")
HORIZON_SHARE = 0.5  # with N planned, the sequence's bets are tuned at N/2 (docs/sequential.md)

# Verdict and margin codes of the replay arrays
CONTINUE, PROGRESS, REGRESS, NOISE, UNDERPOWERED = 0, 1, 2, 3, 4
VERDICTS = ("continue", "PROGRESS", "REGRESS", "NOISE", "UNDERPOWERED")
UNDECIDED, SUPERIOR, EQUIVALENT, NON_INFERIOR, INFERIOR, FUTILE = 0, 1, 2, 3, 4, 5
MARGINS = ("undecided", "superior", "equivalent", "non-inferior", "inferior", "futile")


@dataclass(frozen=True)
class SequentialDesign:
    """How a comparison may stop. `n_planned`: the total units N (required for hybrid and the
    group designs; for `sequence` it tunes the bets, and the sequence goes on past it). `alpha`:
    the family α, two-sided, split over the compared pairs as the fixed-n engine does.
    `sequence_share`: the hybrid's share of α spent by the sequence checked at every unit.
    `looks`: the group designs' equally spaced looks."""

    kind: DesignKind
    n_planned: int | None = None
    alpha: float = 0.05
    sequence_share: float = 0.2
    looks: int = 5

    def __post_init__(self) -> None:
        if self.kind not in DESIGN_KINDS:
            raise InputError(
                f"unknown sequential design '{self.kind}'",
                hint="Designs: hybrid, sequence, obrien-fleming (obf), pocock.",
                parameters=["design"],
            )
        if self.n_planned is not None and (
            isinstance(self.n_planned, bool) or int(self.n_planned) != self.n_planned
            or self.n_planned < 1
        ):  # fmt: skip
            raise InputError(
                f"`n_planned` must be a positive whole number of units, got {self.n_planned!r}",
                parameters=["n_planned"],
            )
        if self.n_planned is None and self.kind != "sequence":
            raise InputError(
                f"the {self.kind} design needs the total number of units N (`n_planned`)",
                hint="Give the planned number of items (the suite's size), or use the design "
                "'sequence', which needs none.",
                parameters=["n_planned", "design"],
            )
        if not 0.0 < self.alpha <= 0.5:
            raise InputError(
                f"`alpha` must lie in (0, 0.5], got {self.alpha}", parameters=["alpha"]
            )
        if not 0.0 < self.sequence_share < 1.0:
            raise InputError(
                f"`sequence_share` must lie in (0, 1), got {self.sequence_share}",
                hint="The share of α the hybrid spends on the sequence checked at every unit "
                "(0.2: 0.01 of 0.05); the rest goes to the fixed test at N.",
                parameters=["sequence_share"],
            )
        if self.kind in GROUP_KINDS and not 1 <= self.looks <= (self.n_planned or 0):
            raise InputError(
                f"a group design needs 1 to N looks, got {self.looks} for N = {self.n_planned}",
                parameters=["looks"],
            )

    def describe(self) -> str:
        n = "" if self.n_planned is None else f", N = {self.n_planned}"
        if self.kind == "hybrid":
            share = self.alpha * self.sequence_share
            return (
                f"hybrid: a betting confidence sequence at α = {share:.3g} checked at every "
                f"look, then the fixed test at N with α = {self.alpha - share:.3g}{n}"
            )
        if self.kind == "sequence":
            return f"betting confidence sequence at α = {self.alpha:g}{n} (open-ended)"
        return f"{self.kind} α-spending, {self.looks} equally spaced looks, α = {self.alpha:g}{n}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "n_planned": self.n_planned,
            "alpha": self.alpha,
            "sequence_share": self.sequence_share if self.kind == "hybrid" else None,
            "looks": self.looks if self.kind in GROUP_KINDS else None,
            "description": self.describe(),
        }


@dataclass(frozen=True)
class Plan:
    """One pair's tests, from the design and what is compared."""

    design: SequentialDesign
    pair_alpha: float  # the family α over the pairs
    sequence_alpha: float  # the sequence's two-sided α (0: no sequence)
    fixed_alpha: float  # the hybrid's final test (0: none)
    horizon: int | tuple[int, ...] | None
    bounds: tuple[float, float]  # the metric's scale
    binary: bool
    higher_is_better: bool
    margin: float | None  # on the metric's scale
    equivalence: bool
    min_effect: float  # δ, the improvement sought
    looks_at: tuple[int, ...] = ()  # group designs: units at each look
    z_bounds: tuple[float, ...] = ()
    truncation: float = SEQUENCE_TRUNCATION
    nulls: tuple[float, ...] = field(default=())

    @property
    def span(self) -> float:
        return self.bounds[1] - self.bounds[0]

    @property
    def end(self) -> int | None:
        """The unit at which the design ends (None: open-ended)."""
        return None if self.design.kind == "sequence" else self.design.n_planned

    @property
    def confidence_level(self) -> float:
        """The confidence of the interval the looks before the end report."""
        return 1.0 - (self.pair_alpha if self.sequence_alpha == 0 else self.sequence_alpha)


def make_plan(
    design: SequentialDesign,
    *,
    n_pairs: int,
    bounds: tuple[float, float],
    binary: bool,
    higher_is_better: bool = True,
    margin: float | None = None,
    equivalence: bool = False,
    min_effect: float | None = None,
) -> Plan:
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InputError(
            f"a sequential comparison needs the metric's finite bounds, got {bounds}",
            hint="Declare the bounds (--bounds LOW,HIGH): every anytime-valid interval here bets "
            "on values that cannot leave them.",
            parameters=["bounds"],
        )
    if binary and (lo, hi) != (0.0, 1.0):
        raise InputError("pass/fail units need the bounds (0, 1)", parameters=["bounds", "binary"])
    span = hi - lo
    if margin is not None and not 0 < margin < span:
        raise InputError(
            f"the margin {margin:g} must lie between 0 and the scale's width {span:g}",
            parameters=["margin"],
        )
    if equivalence and margin is None:
        raise InputError("equivalence needs a margin", parameters=["margin", "equivalence"])
    delta = MIN_EFFECT_FRACTION * span if min_effect is None else float(min_effect)
    if not 0 < delta < span:
        raise InputError(
            f"the improvement sought ({delta:g}) must lie between 0 and the scale's width",
            parameters=["min_effect"],
        )
    pair_alpha = design.alpha / max(1, n_pairs)
    seq_alpha, fixed_alpha = pair_alpha, 0.0
    if design.kind == "hybrid":
        seq_alpha = pair_alpha * design.sequence_share
        fixed_alpha = pair_alpha - seq_alpha
    horizon: int | tuple[int, ...] | None = HORIZON_MIXTURE
    if design.n_planned is not None:
        horizon = max(1, round(HORIZON_SHARE * design.n_planned))
    looks_at: tuple[int, ...] = ()
    z_bounds: tuple[float, ...] = ()
    if design.kind in GROUP_KINDS:
        n = int(design.n_planned or 0)
        looks_at = tuple(math.ceil(k * n / design.looks) for k in range(1, design.looks + 1))
        fractions = np.array(looks_at, dtype=np.float64) / n
        spending: Spending = "pocock" if design.kind == "pocock" else "obrien-fleming"
        made = group_sequential_bounds(fractions, alpha=pair_alpha, spending=spending, sides=2)
        z_bounds = tuple(float(c) for c in made)
        seq_alpha = 0.0
    nulls = tuple(sorted({0.0, -delta, delta, *(() if margin is None else (-margin, margin))}))
    return Plan(
        design, pair_alpha, seq_alpha, fixed_alpha, horizon, (lo, hi), binary, higher_is_better,
        margin, equivalence, delta, looks_at, z_bounds, nulls=nulls,
    )  # fmt: skip


@dataclass(frozen=True)
class Evidence:
    """Which nulls a look rejects, each side at the look's level (arrays over rows, or scalars):
    `above[m]`: the gain is shown > m; `below[m]`: shown < m."""

    above: dict[float, Any]
    below: dict[float, Any]


def classify(plan: Plan, ev: Evidence, *, final: bool) -> tuple[Any, Any, Any]:
    """(decisive, verdict code, margin code) of a look — elementwise on arrays. `final`: the
    design's last look (the hybrid's test at N, a group design's last look), always decisive."""
    d, m = plan.min_effect, plan.margin
    prog, regr = ev.above[0.0], ev.below[0.0]
    noise = np.logical_and(ev.above[-d], ev.below[d])
    verdict = np.where(prog, PROGRESS, np.where(regr, REGRESS, np.where(noise, NOISE, CONTINUE)))
    futile = ev.below[d]
    if m is None:
        margin = np.full(np.shape(prog), UNDECIDED)
        decisive = np.logical_or(np.logical_or(prog, regr), noise)
    else:
        superior = ev.above[m] if plan.equivalence else prog
        equivalent = (
            np.logical_and(ev.above[-m], ev.below[m])
            if plan.equivalence
            else np.zeros(np.shape(prog), dtype=bool)
        )
        ni, inferior = ev.above[-m], ev.below[-m]
        margin = np.select(
            [superior, equivalent, ni, inferior, futile],
            [SUPERIOR, EQUIVALENT, NON_INFERIOR, INFERIOR, FUTILE],
            UNDECIDED,
        )
        decisive = np.logical_or(
            np.logical_or(superior, inferior), equivalent if plan.equivalence else ni
        )
    if final:
        decisive = np.ones(np.shape(prog), dtype=bool)
        verdict = np.where(verdict == CONTINUE, UNDERPOWERED, verdict)
    else:
        # a margin stop does not answer "did it change?": the change is reported undecided
        verdict = np.where(np.logical_and(decisive, verdict == CONTINUE), UNDERPOWERED, verdict)
    return decisive, verdict, margin


def classify_one(plan: Plan, ev: Evidence, *, final: bool) -> tuple[bool, int, int]:
    """`classify` for one look of plain booleans, in plain Python (a look after every unit
    must cost microseconds; the tests hold the two to the same truth table)."""
    d, m = plan.min_effect, plan.margin
    prog, regr = bool(ev.above[0.0]), bool(ev.below[0.0])
    noise = bool(ev.above[-d]) and bool(ev.below[d])
    verdict = PROGRESS if prog else REGRESS if regr else NOISE if noise else CONTINUE
    margin = UNDECIDED
    if m is None:
        decisive = prog or regr or noise
    else:
        superior = bool(ev.above[m]) if plan.equivalence else prog
        equivalent = plan.equivalence and bool(ev.above[-m]) and bool(ev.below[m])
        ni, inferior = bool(ev.above[-m]), bool(ev.below[-m])
        for hit, code in ((superior, SUPERIOR), (equivalent, EQUIVALENT), (ni, NON_INFERIOR),
                          (inferior, INFERIOR), (bool(ev.below[d]), FUTILE)):  # fmt: skip
            if hit:
                margin = code
                break
        decisive = superior or inferior or (equivalent if plan.equivalence else ni)
    if final:
        decisive = True
    if decisive and verdict == CONTINUE:
        verdict = UNDERPOWERED
    return decisive, verdict, margin


def interval_evidence(plan: Plan, low: Any, high: Any) -> Evidence:
    """A look decided by an interval of the gain (the group designs' repeated interval, the
    hybrid's fixed test at N)."""
    return Evidence(
        {v: np.greater(low, v) for v in plan.nulls}, {v: np.less(high, v) for v in plan.nulls}
    )


def gains_of(plan: Plan, baseline: FloatArray, candidate: FloatArray) -> FloatArray:
    diff = np.asarray(candidate, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    return diff if plan.higher_is_better else -diff


def scaled(plan: Plan, gains: FloatArray) -> FloatArray:
    """Gains in [−w, w] scaled to [0, 1], as the betting processes take them."""
    return (np.asarray(gains, dtype=np.float64) + plan.span) / (2.0 * plan.span)


def null_scaled(plan: Plan, value: float) -> float:
    return (value + plan.span) / (2.0 * plan.span)


def sequence_paths(plan: Plan, gains: FloatArray) -> dict[float, tuple[FloatArray, FloatArray]]:
    """log K⁺ and log K⁻ at every null and every n, rows × n."""
    z = scaled(plan, np.atleast_2d(gains))
    horizons = plan.horizon if isinstance(plan.horizon, tuple) else (plan.horizon,)
    bets = [bet_sizes(z, alpha=plan.sequence_alpha, horizon=h) for h in horizons]
    return {
        v: log_capital_paths(
            z, null_scaled(plan, v), alpha=plan.sequence_alpha, truncation=plan.truncation,
            bets=bets,
        )
        for v in plan.nulls
    }  # fmt: skip


def sequence_threshold(plan: Plan) -> float:
    return math.log(2.0 / plan.sequence_alpha)


@dataclass(frozen=True)
class FinalTest:
    """The hybrid's fixed-n test at N, on the gain scale."""

    low: float | None
    high: float | None
    up: bool
    down: bool
    p_value: float | None
    method: str
    estimate: float


def final_test(plan: Plan, baseline: FloatArray, candidate: FloatArray) -> FinalTest:
    """The fixed-n engine's test at the hybrid's remaining α: for pass/fail units exact McNemar
    and Newcombe's interval must agree (as `calipers.verdicts.gates` asks), else the `auto`
    paired interval must exclude 0. No interval (no spread at all): not significant."""
    a = plan.fixed_alpha
    c, t = np.asarray(baseline, dtype=np.float64), np.asarray(candidate, dtype=np.float64)
    raw = float(np.mean(t - c))
    low: float | None = None
    high: float | None = None
    p: float | None = None
    method = "none"
    try:
        made = paired_interval(c, t, confidence_level=1.0 - a, bounds=plan.bounds)
        low, high, method, p = made.low, made.high, made.formula, made.p_value
    except NoInterval:
        pass
    up = low is not None and low > 0
    down = high is not None and high < 0
    if plan.binary:
        test = mcnemar_exact(int(np.sum(t > c)), int(np.sum(c > t)))
        p = test.p_value
        up, down = up and p <= a, down and p <= a
        method = f"mcnemar + {method}"
    if not plan.higher_is_better:
        up, down = down, up
        low, high = (None if high is None else -high), (None if low is None else -low)
        raw = -raw
    return FinalTest(low, high, up, down, p, method, raw)


def final_evidence(plan: Plan, test: FinalTest) -> Evidence:
    """The final test's evidence: 0 by the test itself, the other nulls by its interval (none:
    nothing rejected)."""
    low = -math.inf if test.low is None else test.low
    high = math.inf if test.high is None else test.high
    ev = interval_evidence(plan, low, high)
    ev.above[0.0], ev.below[0.0] = test.up, test.down
    return ev


@dataclass(frozen=True)
class SequenceEnd:
    """What a look after n units reads of one row's sequence: the mixture's log K⁺ and log K⁻ at
    each null (in `plan.nulls` order) after the n-th unit, and the running maxima of log K⁺ and
    log K⁻ at 0 over units 1..n (each at least 0) — as `sequence_paths` over the n units gives
    them (`paths[v][side][0, -1]`, `max(0, paths[0.0][side].max())`)."""

    n: int
    ups: FloatArray
    downs: FloatArray
    running: tuple[float, float]


@dataclass
class Replay:
    """Rows × (stop, verdict, margin): `stop` the unit at the first decisive look (0: none),
    `final` whether the stop was the design's last look."""

    stop: npt.NDArray[np.int64]
    verdict: npt.NDArray[np.int64]
    margin: npt.NDArray[np.int64]
    final: BoolArray
    n: int
    # where the replay of one row computed the sequence over every unit: what a look at the last
    # unit reads of it (an undecided pair of 500,000 units: a second pass over every unit × null
    # × horizon spared)
    end: SequenceEnd | None = None


def look_mask(n: int, every: int, end: int | None) -> BoolArray:
    """Looks after every `every` units and at the last unit (and never past the design's end)."""
    if every < 1:
        raise InputError(f"`every` must be at least 1, got {every}", parameters=["every"])
    mask = np.zeros(n, dtype=bool)
    mask[every - 1 :: every] = True
    if n:
        mask[n - 1] = True
    if end is not None and end <= n:
        mask[end - 1 :] = False
        mask[end - 1] = True
    return mask


def replay(
    plan: Plan,
    baseline: FloatArray,
    candidate: FloatArray,
    *,
    every: int = 1,
    looks: BoolArray | None = None,
) -> Replay:
    """Each row's first decisive look: rows × units of baseline and candidate values (units in
    arrival order). `looks` (rows × units, or units): where a look happens (default: after every
    `every` units and at the last); a group design looks at its planned units only."""
    base = np.atleast_2d(np.asarray(baseline, dtype=np.float64))
    cand = np.atleast_2d(np.asarray(candidate, dtype=np.float64))
    rows, n = base.shape
    end = plan.end
    if end is not None and n > end:
        base, cand, n = base[:, :end], cand[:, :end], end
    gains = gains_of(plan, base, cand)
    stop = np.zeros(rows, dtype=np.int64)
    verdict = np.zeros(rows, dtype=np.int64)
    margin = np.zeros(rows, dtype=np.int64)
    final = np.zeros(rows, dtype=bool)
    if plan.design.kind in GROUP_KINDS:
        _replay_group(plan, gains, stop, verdict, margin, final)
        return Replay(stop, verdict, margin, final, n)
    mask = np.broadcast_to(look_mask(n, every, end) if looks is None else looks, (rows, n))
    thr = sequence_threshold(plan)
    # The capitals block of units by block (`NullCapitals`), until every row has decided: a stop
    # early in a long run (2,651 of 500,000) costs its first block, not the run; each block's
    # sums continue the last's, so every look sees the numbers a pass over the whole run gives.
    capitals = _capitals(plan, gains)
    found = np.zeros(rows, dtype=bool)
    # the end of the sequence is kept for one row only (a pair's replay)
    follow = _Follow(plan) if rows == 1 else None
    while capitals.done < n and not found.all():
        block = capitals.advance(capitals.next_stop())
        ev = Evidence(
            {v: reaches(block.paths[k][0], thr) for k, v in enumerate(plan.nulls)},
            {v: reaches(block.paths[k][1], thr) for k, v in enumerate(plan.nulls)},
        )
        decisive, codes, margins = classify(plan, ev, final=False)
        hit = np.logical_and(decisive, mask[:, block.start : block.stop])
        first = np.argmax(hit, axis=1)
        idx = np.flatnonzero(~found & hit[np.arange(rows), first])
        stop[idx] = block.start + first[idx] + 1
        verdict[idx] = codes[idx, first[idx]]
        margin[idx] = margins[idx, first[idx]]
        found[idx] = True
        if follow is not None:
            follow.read(block)
    if plan.design.kind == "hybrid" and end is not None and n == end:
        for r in np.flatnonzero(~found):
            test = final_test(plan, base[r], cand[r])
            _, v, mg = classify(plan, final_evidence(plan, test), final=True)
            stop[r], verdict[r], margin[r], final[r] = end, int(v), int(mg), True
    made = follow.end(n) if follow is not None and capitals.done == n and n else None
    return Replay(stop, verdict, margin, final, n, made)


def sequence_end(plan: Plan, gains: FloatArray) -> SequenceEnd:
    """The sequence of one row of gains after its last unit, as a look there reads it."""
    capitals = _capitals(plan, gains)
    follow = _Follow(plan)
    while capitals.done < capitals.n:
        follow.read(capitals.advance(capitals.next_stop()))
    return follow.end(capitals.n)


def _capitals(plan: Plan, gains: FloatArray) -> NullCapitals:
    horizons = plan.horizon if isinstance(plan.horizon, tuple) else (plan.horizon,)
    return NullCapitals(
        scaled(plan, np.atleast_2d(gains)), [null_scaled(plan, v) for v in plan.nulls],
        alpha=plan.sequence_alpha, truncation=plan.truncation, horizons=horizons,
    )  # fmt: skip


class _Follow:
    """One row's running maxima of the mixture's log K± at 0 and its last block, block by block:
    the maxima compared only where a horizon's capital exceeds the maximum so far (the mixture
    never exceeds its largest horizon)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.zero = plan.nulls.index(0.0)
        self.running = [0.0, 0.0]
        self.last: Block | None = None

    def read(self, block: Block) -> None:
        for side in (0, 1):
            paths = block.paths[self.zero][side]
            top = paths[0][0].copy()
            for p in paths[1:]:
                np.maximum(top, p[0], out=top)
            above = np.flatnonzero(top > self.running[side])
            if above.size:
                values = mixture_at(paths, np.zeros(above.size, dtype=np.intp), above)
                self.running[side] = max(self.running[side], float(values.max()))
        self.last = block

    def end(self, n: int) -> SequenceEnd:
        block = self.last
        assert block is not None and block.stop == n
        at = (np.zeros(1, dtype=np.intp), np.array([n - 1 - block.start], dtype=np.intp))
        ups = np.array([float(mixture_at(block.paths[k][0], *at)[0])
                        for k in range(len(self.plan.nulls))])  # fmt: skip
        downs = np.array([float(mixture_at(block.paths[k][1], *at)[0])
                          for k in range(len(self.plan.nulls))])  # fmt: skip
        return SequenceEnd(n, ups, downs, (self.running[0], self.running[1]))


def group_look(plan: Plan, gains: FloatArray, k: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The repeated confidence interval (estimate, low, high) of rows of gains at look k:
    mean ± c_k·s/√n. Where every unit has the same gain (s = 0: no discordant pair yet, every
    item unchanged) a z-test has nothing to stand on, and the half-width is the exact bound the
    fixed-n engine uses for unchanged units, w·(1 − a^(1/n)) at the look's nominal level a."""
    n = plan.looks_at[k]
    g = np.atleast_2d(gains)[:, :n]
    mean = g.mean(axis=1)
    sd = g.std(axis=1, ddof=1) if n > 1 else np.zeros(g.shape[0])
    c = plan.z_bounds[k]
    nominal = 2.0 * float(special.ndtr(-c)) if math.isfinite(c) else 0.0
    flat = plan.span * (1.0 - nominal ** (1.0 / n))
    half = np.where(sd > 0, c * sd / math.sqrt(n), flat)
    return mean, mean - half, mean + half


def _replay_group(
    plan: Plan,
    gains: FloatArray,
    stop: npt.NDArray[np.int64],
    verdict: npt.NDArray[np.int64],
    margin: npt.NDArray[np.int64],
    final: BoolArray,
) -> None:
    open_ = np.ones(gains.shape[0], dtype=bool)
    last = len(plan.looks_at) - 1
    for k, n in enumerate(plan.looks_at):
        if n > gains.shape[1]:
            break
        _, low, high = group_look(plan, gains, k)
        decisive, codes, margins = classify(
            plan, interval_evidence(plan, low, high), final=k == last
        )
        now = open_ & decisive
        stop[now], verdict[now], margin[now] = n, codes[now], margins[now]
        final[now] = k == last
        open_ &= ~now
