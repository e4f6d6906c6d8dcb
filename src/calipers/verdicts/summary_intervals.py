"""The interval of a paired difference from its summary table, chosen as `auto` chooses it on
the rows (`calipers.stats.estimate`), and the MDE as `calipers.verdicts.paired` makes it: the
summaries' side of `paired_difference` and `detectable_difference`. What `auto` would take from
the rows' order (the betting interval) or from each epoch's pairing (Newcombe's interval with
epochs) raises `NotSummarizable`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from calipers.errors import InputError
from calipers.stats.estimate import MIN_STUDENTIZED_UNITS, STUDENTIZED_RESAMPLES
from calipers.stats.interval_parts import Interval, NoInterval
from calipers.stats.power import sign_test_detectable
from calipers.stats.summary_bootstrap import bootstrap_interval, distinct_units, rounding_key
from calipers.stats.summary_stats import (
    NotSummarizable,
    SummaryTable,
    Units,
    cr1_variance,
    newcombe_interval,
    paired_means,
    sign_test,
    t_adequacy_counts,
    t_interval,
)
from calipers.verdicts.difference import Difference, binary_detectable, interval_p_value

# Above this many units the MDE's simulation (250 resamples of every unit) is not run: the t rule
# then holds on its resamples unless the skewness is extreme, and the closed form is what the
# simulation returns (`simulated_detectable` → None).
SIMULATION_UNITS = 50_000


def summary_difference(
    table: SummaryTable,
    units: Units,
    *,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    method: str,
    bounds: tuple[float, float] | None,
    binary: bool,
) -> Difference:
    """The paired difference, its interval as `auto` (or `method`) would choose it on the rows,
    and its p-values: `difference.paired_difference` from the units."""
    means = paired_means(units)
    exact_p = sign_test(units).p_value
    try:
        interval = _interval(
            table, units, method=method, confidence_level=confidence_level,
            n_resamples=n_resamples, seed=seed, bounds=bounds, binary=binary,
        )  # fmt: skip
    except NoInterval as why:
        unit_d = units.unit_differences
        return Difference(
            means.difference, units.g, None, why.reason, exact_p, exact_p,
            control_mean=means.control, treatment_mean=means.treatment,
            n_observations=means.n_observations,
            constant=units.g >= 2 and bool(np.ptp(unit_d) == 0) and bool(unit_d[0] != 0),
            unchanged=units.g >= 2 and not np.any(unit_d),
        )  # fmt: skip
    return Difference(
        interval.estimate, units.g, interval, None, interval_p_value(interval), exact_p,
        control_mean=means.control, treatment_mean=means.treatment,
        n_observations=means.n_observations,
    )  # fmt: skip


def _interval(
    table: SummaryTable,
    units: Units,
    *,
    method: str,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    bounds: tuple[float, float] | None,
    binary: bool,
) -> Interval:
    if units.g < 2:
        raise NoInterval(f"{units.g} independent unit(s): an interval needs at least 2")
    single = table.single_epoch
    if method == "auto" and binary and single:
        method = "score"
    if method == "score":
        if not binary:
            raise InputError("the score interval is for paired 0/1 outcomes; these values are "
                             "not all 0 or 1", hint="Use --interval t (or auto).",
                             parameters=["interval"])  # fmt: skip
        if not single:
            raise NotSummarizable(
                "Newcombe's score interval with several epochs per item counts the epochs that "
                "pass in both runs, which the summaries do not keep",
                hint="Use --interval t (or auto) on the summaries, or compare the rows.",
                parameters=["interval"],
            )
        return newcombe_interval(units, confidence_level)
    if method == "auto":
        # each item's mean is a bounded score: `estimate._choose` on the units' mean differences
        unit_d = units.unit_differences
        if np.ptp(unit_d) == 0:
            return t_interval(units, confidence_level, skew_corrected=False)  # raises: no spread
        rule = t_adequacy_counts(unit_d, units.mult)
        if bounds is None:
            raise NoInterval(
                "no bounds are declared for these differences, and without bounds no interval "
                "holds for every distribution (a heavy tail the sample has not shown can move the "
                "mean anywhere): declare the metric's bounds (--bounds LOW,HIGH) for the "
                "distribution-free interval, or name an interval that assumes light tails "
                f"(--interval t or studentized; the t rule: {rule.reason})"
            )
        if not rule.holds:
            raise NotSummarizable(
                f"auto chooses the betting interval here ({rule.reason}), and its capital "
                "reads the units in the order they were written, which the summaries do not keep",
                hint="Compare the rows (calipers compare FILE --scheme metric), or ask for the t "
                "interval by name (--interval t).",
                parameters=["interval"],
            )
        return t_interval(units, confidence_level, skew_corrected=True, reason=rule.reason)
    if method == "t":
        return t_interval(units, confidence_level, skew_corrected=False)
    if method in ("percentile", "bca"):
        return bootstrap_interval(units, method=method, confidence_level=confidence_level,
                                  n_resamples=n_resamples, rng=seed, binary=binary)  # fmt: skip
    if method == "studentized":
        return _studentized(units, confidence_level, seed)
    raise NotSummarizable(
        "the betting interval reads the units in the order they were written, which the "
        "summaries do not keep",
        hint="Compare the rows (calipers compare FILE --scheme metric --interval betting).",
        parameters=["interval"],
    )


def _studentized(units: Units, confidence_level: float, seed: int) -> Interval:
    """The studentized bootstrap (`estimate._distribution_free`) over the units, in the canonical
    order of `distinct_units` (the same distribution as the engine's draws, not the same draws)."""
    from calipers.stats.studentized import studentized_interval

    g = units.g
    if g < MIN_STUDENTIZED_UNITS:
        raise NoInterval(
            f"{g} independent units of a metric without declared bounds: the studentized "
            f"bootstrap needs at least {MIN_STUDENTIZED_UNITS}; declare the metric's bounds "
            "(--bounds LOW,HIGH) for an interval that holds at any n"
        )
    theta = paired_means(units).difference
    se = math.sqrt(max(cr1_variance(units, theta), 0.0))
    if se <= 0:
        raise NoInterval(f"all {g} units have the same value: no spread to make an interval from")
    d, m, mult = distinct_units(units)
    reps = mult.astype(np.int64)
    made = studentized_interval(
        np.repeat(d, reps), np.repeat(m, reps), confidence_level=confidence_level,
        n_resamples=STUDENTIZED_RESAMPLES, rng=seed,
    )  # fmt: skip
    if not (math.isfinite(made.low) and math.isfinite(made.high)):
        raise NoInterval(f"the studentized bootstrap of {g} units is unbounded")
    obs = units.observations
    return Interval(
        made.estimate, made.low, made.high, "studentized", "bootstrap-t", confidence_level, se,
        None, g, obs, float(obs), None, None, made.p_value, None, made.seed,
    )  # fmt: skip


def summary_detectable(
    d: Difference, units: Units, alpha: float, bounds: tuple[float, float] | None
) -> tuple[float | None, str | None]:
    """`difference.detectable_difference` from the units, and a note where it differs."""
    from calipers.stats.detectable import simulated_detectable

    interval = d.interval
    if interval is None:
        return None, None
    chosen = interval.reason is not None and interval.method in ("t", "betting")
    if bounds is not None and (chosen or interval.method == "betting"):
        if units.g > SIMULATION_UNITS:
            return interval.detectable_effect(), (
                f"MDE: the closed form of the t interval (the simulation of `auto` is not run "
                f"above {SIMULATION_UNITS:,} units, where the t rule holds on its resamples)"
            )
        # every unit, in a canonical order (the engine's is the samples'): the same law of
        # resamples, not the same draws
        # keyed as `distinct_units` keys them: sums equal but for rounding (a cluster's item
        # means added in another order by another engine) sort as equals, so every engine's
        # table gives the same order, hence the same draws
        order = np.lexsort((rounding_key(units.a), units.m, rounding_key(units.d)))
        reps = units.mult[order].astype(np.int64)

        def each(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
            return np.repeat(x[order], reps)

        found = simulated_detectable(
            each(units.unit_differences), control=each(units.a / units.m), scale=bounds,
            weights=each(units.m), auto=chosen, confidence_level=interval.confidence_level,
        )  # fmt: skip
        if found is not None:
            return found, None
    mde = interval.detectable_effect()
    if interval.formula != "newcombe-cc":
        return mde, None
    # one epoch per item: each item's (b − a)² is its discordance
    psi0 = float(units.mult @ (units.aa + units.bb - 2 * units.ab)) / units.observations
    mde = binary_detectable(psi0, interval)
    if interval.n_units < interval.n_observations:
        return mde, None
    unit_d = units.unit_differences
    moved = unit_d != 0
    n_moved = float(units.mult[moved].sum())
    step = float(units.mult[moved] @ np.abs(unit_d[moved])) / n_moved if n_moved else 1.0
    exact = sign_test_detectable(units.g, n_moved / units.g, step, alpha=alpha)
    return (mde if exact is None else max(mde, exact)), None
