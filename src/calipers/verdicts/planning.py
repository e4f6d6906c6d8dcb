"""How many items a comparison needs: the planner behind `calipers plan`.

A planned comparison is described by the variance of one unit's paired difference, split the way
the engine's interval sees it (Miller 2024, "Adding Error Bars to Evals", §3): a unit is an item,
or a group of `cluster_size` items when the comparison clusters by group, and an item's difference
is the mean of its epochs' differences, so

    var(unit difference) = σ²_group + (σ²_item + σ²_epoch / epochs) / cluster_size

The components come from numbers (`Design.from_numbers`) or are measured on data
(`Design.from_runs`): a pilot comparison of two runs measures them directly; one baseline run
gives each run's components, and two runs' differences have twice their within-item part and
2(1 − ρ) times their between-item parts, ρ the correlation of the two systems' item means
(unknown from one run: 0 unless given, which over-plans).

Power is that of the decision the engine makes at n units, with α/K for K treatments:

    scores, or clustered   noncentral t on G − 1 df (the paired and cluster-robust t intervals)
    0/1, one per item      the normal approximation of Newcombe's continuity-corrected interval
                           (the exact McNemar test it must agree with matters below ~30
                           discordant pairs, where the planner refuses to promise)

For 0/1 outcomes the discordance moves with the effect: two systems drawing independently given
an item's difficulty disagree at ψ = E[p(1 − p′) + p′(1 − p)], so a gain δ at pass rate p̄
changes it by about δ(1 − 2p̄). calibration checks that the planned n gives the promised power.

All of this assumes the effect spreads over the units the way the pilot varies. An effect
concentrated on a share S of the units (`effect_share`, `--effect-share`) adds δ²(1/S − 1) to a
unit's variance, and for scores the power is the t statistic's averaged over the number of units
moved (`calipers.verdicts.plan_effects`, where the derivations are). Every plan states its
assumption (`Plan.assumption`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats.bootstrap import dense_codes
from calipers.stats.intervals import z_from_confidence
from calipers.stats.shape import t_rule_floor
from calipers.verdicts.persample import StagedScores, resolve_cluster
from calipers.verdicts.plan_effects import (
    concentrated_added,
    concentrated_discordance,
    concentrated_t_power,
    describe_effect,
    largest_concentrated,
    spread_discordance,
)
from calipers.verdicts.plan_pilot import components, paired_difference, unit_skewness

FloatArray = npt.NDArray[np.float64]
Outcome = Literal["binary", "scores"]
MAX_UNITS = 10_000_000
EPOCH_CHOICES = (1, 2, 3, 5, 10)
MIN_DISCORDANT = 30  # below: the exact McNemar test, not the normal approximation, decides


@dataclass(frozen=True)
class Design:
    """The variance components of one item's paired difference, and how items are grouped."""

    outcome: Outcome
    item_var: float  # σ²_item: between items (within groups) of the item-mean difference
    epoch_var: float = 0.0  # σ²_epoch: of one epoch's difference around its item's mean
    group_var: float = 0.0  # σ²_group: between groups
    cluster_size: int = 1  # items per group (1: items are the units)
    epochs: int = 1  # planned epochs per item
    pass_rate: float | None = None  # 0/1: the baseline's pass rate
    discordance: float | None = None  # 0/1: share of (item, epoch) pairs that differ, no effect
    scale: float = 1.0  # the width of the compared quantity's scale (margins in %)
    source: str = "given"
    notes: tuple[str, ...] = ()
    observed_units: int | None = None  # measured on data: its units (items, or groups)
    # How a true difference is realised (`calipers.verdicts.plan_effects`): 1 — spread over the
    # units the way the pilot varies; S < 1 — a share S of the units each moved by δ/S.
    effect_share: float = 1.0
    cluster: str = "sample_id"  # the unit: sample_id (items) or group
    cluster_reason: str | None = None  # why (measured on data: `resolve_cluster`)
    # scores: the skewness of the units' differences (the pilot's), which sets how many units the
    # t interval needs before `auto` gives it (`calipers.stats.shape`)
    skewness: float = 0.0

    def unit_var(self, epochs: int | None = None) -> float:
        e = self.epochs if epochs is None else epochs
        return self.group_var + (self.item_var + self.epoch_var / e) / self.cluster_size

    @property
    def clustered(self) -> bool:
        return self.cluster_size > 1 or self.epochs > 1

    @functools.lru_cache(maxsize=64)  # noqa: B019 — frozen and hashable; called per bound
    def discordance_at(self, delta: float) -> float | None:
        """0/1: the share of (item, epoch) pairs that differ under a true difference `delta`."""
        if self.outcome != "binary" or self.discordance is None or self.pass_rate is None:
            return None
        if self.effect_share < 1.0:
            psi = concentrated_discordance(self.pass_rate, self.discordance, delta,
                                           self.effect_share)  # fmt: skip
        else:
            psi = spread_discordance(self.pass_rate, self.discordance, delta)
        return min(1.0, max(abs(delta), psi))

    def at_effect(self, delta: float) -> float:
        """The unit variance under a true difference `delta` (0/1: discordance moves with it;
        concentrated on a share of the units: `plan_effects.concentrated_added` on top)."""
        v = self.unit_var()
        if self.effect_share < 1.0:
            binary = self.outcome == "binary" and self.pass_rate is not None
            return v + concentrated_added(
                delta, self.effect_share, pass_rate=self.pass_rate if binary else None,
                per_unit=self.cluster_size * self.epochs,
            )  # fmt: skip
        psi1 = self.discordance_at(delta)
        if psi1 is None or self.discordance is None:
            return v
        return v * max(psi1 - delta * delta, 1e-12) / max(self.discordance, 1e-12)

    def largest_effect(self, sign: float = 1.0) -> float:
        """The largest |δ| the design can carry: the scale's width, or with an effect share S
        what S of the units can carry moving by at most the width each."""
        binary = self.outcome == "binary" and self.pass_rate is not None
        return largest_concentrated(
            self.effect_share, self.scale, self.pass_rate if binary else None, sign
        )

    def assumption(self, delta: float) -> str:
        """How the plan assumes a true difference `delta` moves the units, in words."""
        binary = self.outcome == "binary" and self.discordance is not None
        return describe_effect(
            delta, self.effect_share, groups=self.cluster_size > 1,
            pilot=self.observed_units is not None, unit_var=self.unit_var(),
            discordance=(self.discordance, self.discordance_at(delta)) if binary else None,
        )  # fmt: skip

    @classmethod
    def from_numbers(
        cls,
        *,
        sd: float | None = None,
        pass_rate: float | None = None,
        discordance: float | None = None,
        correlation: float = 0.0,
        icc: float = 0.0,
        cluster_size: int = 1,
        epochs: int = 1,
        scale: float | None = None,
    ) -> Design:
        """From a score SD (`sd`, of one observation) or a pass rate, or a 0/1 discordance, with
        the two systems' correlation on an item, and an intra-group correlation `icc` of the
        differences for groups of `cluster_size` items."""
        _check_fraction("correlation", correlation, low=-1.0, high=1.0)
        _check_fraction("icc", icc)
        if cluster_size < 1 or epochs < 1:
            raise InputError("--cluster-size and --epochs must be at least 1")
        if sd is not None and (discordance is not None or pass_rate is not None):
            # scores and 0/1 outcomes are different designs: one of them would be ignored
            raise InputError(
                "--sd describes scores, --pass-rate and --discordance 0/1 outcomes: give one kind",
                parameters=["sd"],
            )
        if discordance is not None:
            _check_fraction("discordance", discordance, low=0.0, high=1.0, open_low=True)
            var, outcome = discordance, "binary"
            how = f"0/1 outcomes, discordance {discordance:g}"
        elif pass_rate is not None:
            _check_fraction("pass rate", pass_rate, open_low=True, open_high=True)
            var = 2.0 * pass_rate * (1.0 - pass_rate) * (1.0 - correlation)
            outcome, discordance = "binary", var
            how = f"0/1 outcomes, pass rate {pass_rate:g}, correlation {correlation:g}"
        elif sd is not None:
            if not math.isfinite(sd) or sd <= 0:
                raise InputError(f"--sd must be a positive number, got {sd}", parameters=["sd"])
            var, outcome = 2.0 * sd * sd * (1.0 - correlation), "scores"
            how = f"scores, sd {sd:g}, correlation {correlation:g}"
        else:
            raise InputError(
                "nothing to plan from",
                hint="Give a baseline (FILE --baseline RUN, or the store) or numbers: --sd S, "
                "--pass-rate P or --discordance D.",
            )
        # A difference's variance split by the intra-group correlation of the differences.
        group_var = icc * var if cluster_size > 1 else 0.0
        return cls(
            outcome,  # type: ignore[arg-type]
            item_var=var - group_var,
            group_var=group_var,
            cluster_size=cluster_size,
            epochs=epochs,
            pass_rate=pass_rate,
            discordance=discordance,
            scale=1.0 if scale is None else scale,
            source=how
            + (f", groups of {cluster_size} with icc {icc:g}" if cluster_size > 1 else ""),
            cluster="group" if cluster_size > 1 else "sample_id",
        )

    @classmethod
    def from_runs(
        cls,
        staged: StagedScores,
        baseline: str,
        candidate: str | None = None,
        *,
        cluster: str = "auto",
        correlation: float = 0.0,
        epochs: int | None = None,
        scale: float,
    ) -> Design:
        """Measured on data: the paired differences of `candidate` − `baseline` (a pilot
        comparison), or the baseline alone with an assumed `correlation` between systems.
        `cluster` is the unit the comparison will resample: auto (`resolve_cluster`: by group
        when every sample of the runs names one), sample_id or group."""
        _check_fraction("correlation", correlation, low=-1.0, high=1.0)
        choice = resolve_cluster([staged.fetch(r) for r in (baseline, candidate) if r], cluster)
        cluster = choice.cluster
        base = staged.fetch(baseline)
        values = staged.composite(baseline)
        keep = np.isfinite(values)
        sid, epoch = base.sid[keep], base.epoch[keep]
        group = base.group[keep] if base.group is not None else None
        if cluster == "group" and group is None:
            raise InputError(
                "--cluster group needs a `group` field on the samples", parameters=["cluster"]
            )
        if int(keep.sum()) < 2:
            raise InputError(
                f"run {baseline!r} has fewer than 2 values to plan from",
                hint="Check the run name and --metric (or the scheme's layers).",
            )
        notes: list[str] = []
        # 0/1 outcomes when every value of the runs is 0 or 1 (not when differences are small
        # integers: 1–5 scores that differ by at most 1 are scores)
        binary = bool(np.all((values[keep] == 0) | (values[keep] == 1)))
        if candidate is not None:
            other = staged.fetch(candidate)
            theirs = staged.composite(candidate)
            finite = theirs[np.isfinite(theirs)]
            binary = binary and bool(np.all((finite == 0) | (finite == 1)))
            diff = paired_difference(sid, epoch, values[keep], other.sid, other.epoch, theirs)
            paired = np.isfinite(diff)
            if paired.sum() < 2:
                raise InputError(
                    f"runs {baseline!r} and {candidate!r} share fewer than 2 samples",
                    hint="A pilot comparison needs the same sample_ids in both runs.",
                )
            x, sid, epoch = diff[paired], sid[paired], epoch[paired]
            group = group[paired] if group is not None else None
            within_factor, between_factor = 1.0, 1.0
            source = f"pilot comparison {candidate} − {baseline}"
        else:
            x = values[keep]
            within_factor, between_factor = 2.0, 2.0 * (1.0 - correlation)
            source = f"baseline {baseline}, correlation between systems {correlation:g}"
            if correlation == 0.0:
                notes.append(
                    "one run cannot show how the two systems correlate on an item: planned "
                    "with none, an upper bound (give --correlation, or a pilot --candidate)"
                )
        epoch_var, item_var, group_var, k, e_pilot = components(
            x, sid, group if cluster == "group" else None
        )
        if e_pilot == 1 and candidate is None and not binary:
            notes.append("one epoch per item: between- and within-item variance are not separable")
        pass_rate = discordance = None
        if binary:
            pass_rate = float(values[keep].mean())
            discordance = (
                float(np.mean(x != 0))
                if candidate is not None
                else 2.0 * pass_rate * (1.0 - pass_rate) * (1.0 - correlation)
            )
        unit_of = group if cluster == "group" and group is not None else sid
        n_units = int(dense_codes(unit_of).max()) + 1
        skewness = 0.0 if binary else unit_skewness(x, sid, unit_of)
        return cls(
            "binary" if binary else "scores",
            item_var=between_factor * item_var,
            epoch_var=within_factor * epoch_var,
            group_var=between_factor * group_var,
            cluster_size=k,
            epochs=epochs or e_pilot,
            pass_rate=pass_rate,
            discordance=discordance,
            scale=scale,
            source=source + f" ({x.size} observations)",
            notes=tuple(notes + ([choice.note] if choice.note else [])),
            observed_units=n_units,
            skewness=skewness,
            cluster=cluster,
            cluster_reason=choice.reason,
        )


def _check_fraction(
    name: str,
    value: float,
    *,
    low: float = 0.0,
    high: float = 1.0,
    open_low: bool = False,
    open_high: bool = False,
) -> None:
    ok = (value > low if open_low else value >= low) and (
        value < high if open_high else value <= high
    )
    if not (math.isfinite(value) and ok):
        raise InputError(f"{name} must lie in {'(' if open_low else '['}{low:g}, {high:g}"
                         f"{')' if open_high else ']'}, got {value}")  # fmt: skip


@dataclass(frozen=True)
class Goal:
    """What the comparison must show: a difference `effect` (superiority), or non-inferiority
    (equivalence) at `margin` when the true difference is `truth`."""

    effect: float | None = None
    margin: float | None = None
    equivalence: bool = False
    truth: float = 0.0
    power: float = 0.8
    alpha: float = 0.05
    treatments: int = 1

    def __post_init__(self) -> None:
        if (self.effect is None) == (self.margin is None):
            raise InputError("give one of --effect E or --margin M")
        for name, v in (("effect", self.effect), ("margin", self.margin)):
            if v is not None and not (math.isfinite(v) and v > 0):
                raise InputError(f"--{name} must be a positive number, got {v}")
        _check_fraction("power", self.power, open_low=True, open_high=True)
        _check_fraction("alpha", self.alpha, open_low=True, open_high=True)
        if self.treatments < 1:
            raise InputError("--treatments must be at least 1")

    @property
    def pair_alpha(self) -> float:
        return self.alpha / self.treatments


@dataclass(frozen=True)
class Plan:
    design: Design
    goal: Goal
    units: int | None  # items, or groups when clustered; None: not reachable
    items: int | None
    power: float | None  # achieved at `units`
    formula: str
    reason: str
    curve: list[dict[str, float]] = field(default_factory=list)  # power at other n
    # measured on data: at the data's own n, the power and the smallest effect (or margin) that
    # reaches the goal's power — the MDE of the comparison already run, on the goal's scale
    at_observed: dict[str, float] | None = None
    # with a within-item (epoch) variance: items and pipeline runs needed at each epoch count
    by_epochs: list[dict[str, int]] = field(default_factory=list)
    # how the effect is assumed to move the units (`Design.assumption`): the power holds for it
    assumption: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self.design)
        d["notes"] = list(self.design.notes)
        return {
            "design": d,
            "goal": asdict(self.goal),
            "units": self.units,
            "items": self.items,
            "epochs": self.design.epochs,
            "power": self.power,
            "formula": self.formula,
            "reason": self.reason,
            "curve": self.curve,
            "at_observed": self.at_observed,
            "by_epochs": self.by_epochs,
            "assumption": self.assumption,
        }


def power_at(design: Design, goal: Goal, units: int) -> float:
    """The probability that a comparison of `units` units reaches the goal's decision."""
    from scipy.special import nctdtr, ndtr, stdtrit

    if units < 2:
        return 0.0
    df = units - 1
    # Each bound the decision needs, as the distance of the truth past it: superiority L > 0;
    # non-inferiority L > −M; equivalence also H < M.
    if goal.effect is not None:
        delta, distances = goal.effect, [goal.effect]
    else:
        assert goal.margin is not None
        delta, distances = goal.truth, [goal.truth + goal.margin]
        if goal.equivalence:
            distances.append(goal.margin - goal.truth)
    se = math.sqrt(design.at_effect(delta) / units)
    if se <= 0:
        return 1.0
    probs = []
    if design.outcome == "binary" and design.discordance is not None:
        # The interval the engine will give, from the expected 2×2 table: est − L and H − est.
        widths = _newcombe_widths(design, goal, units, delta)
        for distance, width in zip(distances, widths, strict=False):
            probs.append(float(ndtr((distance - width) / se)))
    else:
        crit = float(stdtrit(df, 1 - goal.pair_alpha / 2))
        if design.effect_share < 1.0 and delta != 0:  # K ~ Bin(n, S) units moved by δ/S
            offset = 0.0 if goal.margin is None else goal.margin
            for sign in (1.0, -1.0)[: len(distances)]:  # L > −M, and H < M for equivalence
                probs.append(concentrated_t_power(
                    units, design.unit_var(), delta, design.effect_share, offset=offset,
                    sign=sign, crit=crit,
                ))  # fmt: skip
        else:
            for distance in distances:
                probs.append(1.0 - float(nctdtr(df, distance / se, crit)))
    return max(0.0, sum(probs) - (len(probs) - 1))


def _newcombe_widths(design: Design, goal: Goal, units: int, delta: float) -> tuple[float, float]:
    """Newcombe's method 11 on the expected table at `units` units, with the engine's effective
    n for clusters and epochs (n / design effect, times (z/t_{G−1})², Korn & Graubard)."""
    from calipers.stats.interval_parts import newcombe_half_widths, t_quantile

    assert design.pass_rate is not None
    psi1 = design.discordance_at(delta)
    assert psi1 is not None
    z = _z(goal)
    per_unit = design.cluster_size * design.epochs
    n_obs = float(units * per_unit)
    n_eff = n_obs
    if per_unit > 1:
        v_obs = max(psi1 - delta * delta, 1e-12)
        effect = per_unit * design.at_effect(delta) / v_obs  # the design effect
        n_eff = min(n_obs, max(float(units), n_obs / max(effect, 1e-12)))
        n_eff *= (z / t_quantile(1 - goal.pair_alpha / 2, units - 1)) ** 2
    t_only, c_only = (psi1 + delta) / 2.0, (psi1 - delta) / 2.0
    both = max(0.0, design.pass_rate - c_only)
    neither = max(0.0, 1.0 - both - t_only - c_only)
    return newcombe_half_widths(both * n_eff, t_only * n_eff, c_only * n_eff, neither * n_eff, z)


def _z(goal: Goal) -> float:
    return z_from_confidence(1 - goal.pair_alpha)


def plan(design: Design, goal: Goal, *, effect_share: float | None = None) -> Plan:
    """The fewest units whose power reaches `goal.power` (bisection on a monotone power).
    `effect_share` S (0 < S ≤ 1) plans for the effect realised on a share S of the units, each
    moved by δ/S (`calipers.verdicts.plan_effects`); None keeps the design's (1: spread)."""
    if effect_share is not None:
        _check_fraction("--effect-share", effect_share, open_low=True)
        design = replace(design, effect_share=float(effect_share))
    binary = design.outcome == "binary" and design.discordance is not None
    formula = "newcombe-cc expected" if binary else "noncentral t"
    if not binary and design.effect_share < 1.0:
        formula = "t over the units moved"  # plan_effects.concentrated_t_power
    if goal.effect is not None and goal.effect >= design.scale:
        raise InputError(f"--effect {goal.effect:g} is the whole scale ({design.scale:g}) or more")
    delta = goal.effect if goal.effect is not None else goal.truth
    if design.effect_share < 1.0 and abs(delta) > design.largest_effect(delta):
        s = design.effect_share
        raise InputError(
            f"an effect of {delta:g} on a share {s:g} of the units moves each by {abs(delta) / s:g}"
            f", more than the scale allows ({design.largest_effect(delta) / s:g})",
            hint=f"A share of at least {abs(delta) / design.largest_effect(delta) * s:.3g} can "
            "carry it: raise --effect-share, or plan for a smaller effect.",
            parameters=["effect_share"],
        )
    assumption = design.assumption(delta)
    found = _fewest_units(design, goal)
    if found is None:
        too_many = f"more than {MAX_UNITS:,} units would be needed"
        return Plan(design, goal, None, None, None, formula, too_many, assumption=assumption)
    units = found
    if not binary:
        # where the t rule may still fail, `auto` gives a wider interval than the power assumes
        floor = t_rule_floor(design.skewness)
        if units < floor:
            units = floor
            design = replace(design, notes=(*design.notes, (
                f"raised to {floor} units: below that the t interval the power assumes holds "
                f"(calipers' t rule, skewness {design.skewness:+.2f}) in fewer than 99% of runs"
            )))  # fmt: skip
    items = units * design.cluster_size
    reason = _reason(design, goal, units, items)
    if binary and not design.clustered and design.discordance is not None:
        discordant = units * design.discordance
        if discordant < MIN_DISCORDANT:
            design = replace(design, notes=(*design.notes, (
                f"only ~{discordant:.0f} discordant pairs expected: the exact McNemar test the "
                "verdict requires may need more items than planned"
            )))  # fmt: skip
    curve = [
        {"units": u, "items": u * design.cluster_size, "power": power_at(design, goal, u)}
        for u in sorted({max(2, units // 2), units, units * 2})
    ]
    at_observed = None
    if design.observed_units is not None:
        n = design.observed_units
        at_observed = {
            "units": n,
            "items": n * design.cluster_size,
            "power": power_at(design, goal, n),
            "detectable": smallest_detectable(design, goal, n),
        }
    by_epochs: list[dict[str, int]] = []
    if design.epoch_var > 0:  # repeats average out the within-item part: what each would cost
        for e in EPOCH_CHOICES:
            needed = _fewest_units(replace(design, epochs=e), goal)
            if needed is not None:
                by_epochs.append({"epochs": e, "items": needed * design.cluster_size,
                                  "runs": needed * design.cluster_size * e})  # fmt: skip
    return Plan(
        design, goal, units, items, power_at(design, goal, units), formula, reason, curve,
        at_observed, by_epochs, assumption,
    )  # fmt: skip


def _fewest_units(design: Design, goal: Goal) -> int | None:
    """The smallest number of units whose power reaches the goal's (None beyond MAX_UNITS)."""
    low, high = 2, 4
    while power_at(design, goal, high) < goal.power:
        low, high = high, high * 2
        if high > MAX_UNITS:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if power_at(design, goal, mid) < goal.power else (low, mid)
    return high


def smallest_detectable(design: Design, goal: Goal, units: int) -> float:
    """The smallest effect (or margin, for a margin goal) that `units` units reach with the
    goal's power: bisection on the monotone power (inf when even the whole scale is not)."""

    def with_size(size: float) -> Goal:
        return replace(goal, effect=size) if goal.effect is not None else replace(goal, margin=size)

    low, high = 0.0, design.scale
    if goal.effect is not None:  # an effect on a share of the units: what that share can carry
        high = min(high, design.largest_effect())
    if power_at(design, with_size(high), units) < goal.power:
        return math.inf
    while high - low > 1e-7 * design.scale:  # ~23 halvings: far below any reported digit
        mid = (low + high) / 2
        low, high = (
            (mid, high) if power_at(design, with_size(mid), units) < goal.power else (low, mid)
        )
    return high


def _reason(design: Design, goal: Goal, units: int, items: int) -> str:
    what = (
        f"detect a difference of {goal.effect:g}"
        if goal.effect is not None
        else f"show {'equivalence' if goal.equivalence else 'non-inferiority'} at margin "
        f"{goal.margin:g} when the true difference is {goal.truth:+g}"
    )
    size = f"{items:,} items" + (
        f" in {units:,} groups of {design.cluster_size}" if design.cluster_size > 1 else ""
    )
    if design.epochs > 1:
        size += f" × {design.epochs} epochs"
    k = f", α/{goal.treatments} for {goal.treatments} treatments" if goal.treatments > 1 else ""
    return f"{size} to {what} with {goal.power:.0%} power (α {goal.alpha:g}{k})"
