"""The paired comparison of two runs: samples matched by (task, sample_id, epoch); the independent
unit a sample (its epochs together), a group or a task; an interval on the difference of the
composite — made from the layers both sides have — and of each component, chosen by the kind of
data (`calipers.stats.estimate`); which quantities go missing more in one run; the evidence on
each layer gate; the minimum detectable effect; Hotelling's T² on the component differences."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import DataError, InputError
from calipers.stats import holm
from calipers.stats.bootstrap import dense_codes
from calipers.stats.detectable import simulated_detectable
from calipers.stats.estimate import (
    Interval,
    NoInterval,
    cluster_means,
    mean_interval,
    paired_interval,
    sample_weights,
    sd_allowance,
    sign_test,
    t_quantile,
    weighted_mean,
)
from calipers.stats.multivariate import HotellingResult, hotelling_t2
from calipers.stats.paired_tests import clustered_standard_error, mcnemar_exact, paired_t
from calipers.stats.paired_tests import sign_test as exact_sign_test
from calipers.stats.power import sign_test_detectable
from calipers.verdicts.by_task import task_differences
from calipers.verdicts.missing_bounds import FilledDifference, MissingBounds, bound_missing
from calipers.verdicts.persample import FloatArray, RunArrays, StagedScores, cluster_labels
from calipers.verdicts.repeats import PairedRepeats, paired_repeats

IntArray = npt.NDArray[np.int64]


@dataclass
class Difference:
    """treatment − control for one quantity over the pairs that have it on both sides, with its
    interval (or the reason there is none) and a two-sided p-value."""

    estimate: float | None
    n_pairs: int  # independent units (clusters) with the quantity on both sides
    interval: Interval | None
    refusal: str | None = None  # why there is no interval
    p_value: float | None = None  # of "no difference", from the interval's own method
    exact_p: float | None = None  # exact sign test over the units' differences
    control_mean: float | None = None  # both means over the same pairs as the difference
    treatment_mean: float | None = None
    n_observations: int = 0
    constant: bool = False  # every unit moved by the same nonzero amount (no interval)
    unchanged: bool = False  # every unit's difference is exactly 0 (no interval)
    significant: bool = False  # decided by `compare_pair` (exact agreement, multiplicity)

    @property
    def low(self) -> float | None:
        return self.interval.low if self.interval else None

    @property
    def high(self) -> float | None:
        return self.interval.high if self.interval else None

    @property
    def below_zero(self) -> bool:
        return self.significant and self.estimate is not None and self.estimate < 0

    @property
    def monte_carlo_uncertain(self) -> bool:
        return self.interval is not None and self.interval.within_monte_carlo_error(0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "significant": self.significant,
            "n_pairs": self.n_pairs,
            "n_observations": self.n_observations,
            "control_mean": self.control_mean,
            "treatment_mean": self.treatment_mean,
            "p_value": self.p_value,
            "exact_p": self.exact_p,
            "interval": self.interval.to_dict() if self.interval else None,
            "refusal": self.refusal,
            "monte_carlo_uncertain": self.monte_carlo_uncertain,
        }


@dataclass
class Missingness:
    """Observation pairs where a quantity is present in one run only: a judge that failed, an
    error, an assertion left out. Tested by the exact McNemar test on those pairs."""

    control_only: int
    treatment_only: int
    n_observation_pairs: int
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "control_only": self.control_only,
            "treatment_only": self.treatment_only,
            "n_observation_pairs": self.n_observation_pairs,
            "p_value": self.p_value,
        }


@dataclass
class GateEvidence:
    """A layer's gate in both runs: control's mean, and whether treatment fails it with evidence
    (its interval entirely below the threshold) after a drop that is significant."""

    control_mean: float | None
    treatment_mean: float | None
    treatment_high: float | None  # upper bound at 1 − α/L (None: no interval)
    dropped: bool  # the paired layer difference is significantly below 0 (Holm over layers)

    def broken(self, threshold: float) -> bool:
        return (
            self.control_mean is not None
            and self.control_mean >= threshold
            and self.treatment_high is not None
            and self.treatment_high < threshold
            and self.dropped
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "control_mean": self.control_mean,
            "treatment_mean": self.treatment_mean,
            "treatment_high": self.treatment_high,
            "dropped": self.dropped,
        }


@dataclass
class PairedComparison:
    control: str
    treatment: str
    confidence_level: float
    n_pairs: int  # units paired with a composite on both sides
    n_observation_pairs: int  # observations matched by (task, sample_id, epoch)
    unpaired_control: int  # observations of control with no partner in treatment
    unpaired_treatment: int
    composite: Difference
    components: dict[str, Difference]
    mde: float | None
    hotelling: HotellingResult | None
    missing: dict[str, Missingness] = field(default_factory=dict)  # "composite" and each layer
    gates: dict[str, GateEvidence] = field(default_factory=dict)
    cluster: str = "sample_id"
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    tests: dict[str, Any] = field(default_factory=dict)  # `paired_tests`
    task_adjust: str | None = None  # how the per-task p-values were adjusted (None: untested)
    repeats: PairedRepeats | None = None  # pass^k difference, with repeated 0/1 outcomes
    missing_bounds: MissingBounds | None = None  # worst/best-case bounds over missing outcomes

    @property
    def missing_differs(self) -> list[str]:
        """Quantities whose presence differs between the runs beyond chance (exact McNemar at
        the pair's α): a difference in failure rates is a finding, not noise."""
        alpha = 1.0 - self.confidence_level
        return [
            name for name, m in self.missing.items()
            if m.p_value <= alpha and m.control_only != m.treatment_only
        ]  # fmt: skip


@dataclass
class MatchedRows:
    """The observations of two runs matched by (task, sample_id, epoch): each one's row in the
    control run (`ic`) and in the treatment run (`it`), the components on each side, and each
    pair's composite made from the components present on BOTH sides."""

    ic: npt.NDArray[np.intp]
    it: npt.NDArray[np.intp]
    control_values: dict[str, FloatArray]
    treatment_values: dict[str, FloatArray]
    control: FloatArray  # the like-with-like composite
    treatment: FloatArray


def match_rows(staged: StagedScores, control: str, treatment: str) -> MatchedRows:
    """The pairs of observations of `control` and `treatment`, as every comparison reads them
    (the paired difference here, the flips in `calipers.verdicts.flips`)."""
    comps = staged.components
    c_run, t_run = staged.fetch(control), staged.fetch(treatment)
    # Both runs are sorted by (sid, epoch), so their keys are sorted and unique: an O(n) match.
    width = int(max(c_run.epoch.max(initial=0), t_run.epoch.max(initial=0))) + 1
    _, ic, it = np.intersect1d(
        c_run.sid * width + c_run.epoch,
        t_run.sid * width + t_run.epoch,
        assume_unique=True,
        return_indices=True,
    )
    c_vals = {n: c_run.values[n][ic] for n in comps}
    t_vals = {n: t_run.values[n][it] for n in comps}
    # Like with like: each pair's composite is made from the layers present on BOTH sides, so a
    # judge that failed in one run only changes which layers are averaged, never the difference.
    common = {n: np.isfinite(c_vals[n]) & np.isfinite(t_vals[n]) for n in comps}
    composite_c = staged.combine({n: np.where(common[n], c_vals[n], np.nan) for n in comps})
    composite_t = staged.combine({n: np.where(common[n], t_vals[n], np.nan) for n in comps})
    return MatchedRows(ic, it, c_vals, t_vals, composite_c, composite_t)


def compare_pair(
    staged: StagedScores,
    control: str,
    treatment: str,
    *,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    interval: str = "auto",
    cluster: str = "sample_id",
    threshold: float | None = None,
    by_task: bool | None = None,
    adjust: str = "holm",
    bounds: tuple[float, float] | None = None,
) -> PairedComparison:
    """`by_task`: test each task's difference (Holm or BH over the tasks, `adjust`); None does
    so when the runs have several tasks. `bounds`: the composite scale's declared bounds, which
    missing outcomes are filled with (`missing_bounds`; None: unbounded)."""
    comps = staged.components
    c_run, t_run = staged.fetch(control), staged.fetch(treatment)
    matched = match_rows(staged, control, treatment)
    ic, it = matched.ic, matched.it
    n_rows = ic.size
    if n_rows == 0:
        raise DataError(
            f"runs '{control}' and '{treatment}' share no sample",
            hint="A comparison pairs samples by (task, sample_id, epoch); check that both runs "
            "were evaluated on the same inputs.",
        )
    units = cluster_labels(c_run, ic, cluster)
    samples = c_run.sid[ic]
    # A pair weighs the mean of its two samples' weights (the same in both runs, as a
    # harness's weights belong to the test, not to the system).
    pair_weight = None
    if c_run.weight is not None or t_run.weight is not None:
        ones = np.ones(n_rows)
        c_w = c_run.weight[ic] if c_run.weight is not None else ones
        t_w = t_run.weight[it] if t_run.weight is not None else ones
        pair_weight = (c_w + t_w) / 2.0
    c_vals, t_vals = matched.control_values, matched.treatment_values
    composite_c, composite_t = matched.control, matched.treatment
    alpha = 1.0 - confidence_level

    def difference(c: FloatArray, t: FloatArray) -> Difference:
        return paired_difference(
            c, t, units, samples=samples, weight=pair_weight, confidence_level=confidence_level,
            n_resamples=n_resamples, seed=seed, method=interval, bounds=staged.bounds,
        )  # fmt: skip

    composite = difference(composite_c, composite_t)
    composite.significant = _significant(composite, alpha)
    components: dict[str, Difference] = {}
    gates: dict[str, GateEvidence] = {}
    if staged.gated:
        components = {n: difference(c_vals[n], t_vals[n]) for n in comps}
        _holm_significance(components, alpha)
        if threshold is not None:
            gates = _gate_evidence(
                c_run,
                t_run,
                components,
                cluster,
                alpha,
                interval,
                seed,
                threshold,
                bounds=staged.bounds,
            )
    missing = {"composite": _missingness(staged.composite(control)[ic],
                                         staged.composite(treatment)[it])}  # fmt: skip
    if staged.gated:
        missing.update({n: _missingness(c_vals[n], t_vals[n]) for n in comps})

    def filled(c: FloatArray, t: FloatArray) -> FilledDifference:
        d = difference(c, t)
        return FilledDifference.of(d, _significant(d, alpha))

    missing_bounds = bound_missing(
        staged, control, treatment, ic, it, composite_c, composite_t, bounds=bounds, estimate=filled
    )
    notes: list[str] = []
    hotelling = _hotelling(c_vals, t_vals, units, comps, notes) if staged.gated else None
    task_code = c_run.task_code[ic]
    if by_task is None:
        by_task = np.unique(task_code).size > 1
    if by_task:

        def on_rows(rows: npt.NDArray[np.intp]) -> Difference:
            # the task's rows alone: what the pair's rows masked to the task (NaN elsewhere)
            # give, as `paired_difference` keeps only the rows present on both sides
            return paired_difference(
                composite_c[rows], composite_t[rows], units[rows], samples=samples[rows],
                weight=None if pair_weight is None else pair_weight[rows],
                confidence_level=confidence_level, n_resamples=n_resamples, seed=seed,
                method=interval, bounds=staged.bounds,
            )  # fmt: skip

        tested = task_differences(
            task_code, staged.tasks, composite_c, composite_t, on_rows, alpha=alpha, adjust=adjust,
            samples=samples,
        )  # fmt: skip
        tasks = {name: t.to_dict() for name, t in tested.items()}
    else:
        tasks = _task_table(task_code, staged.tasks, composite_c, composite_t, samples, pair_weight)
    mde = detectable_difference(
        composite, composite_c, composite_t, units, alpha, samples, pair_weight, staged.bounds
    )
    tests = paired_tests(composite, composite_c, composite_t, units, samples, pair_weight)
    repeats = paired_repeats(
        composite_c, composite_t, samples,
        units=None if cluster == "sample_id" else units, confidence_level=confidence_level,
    )  # fmt: skip
    return PairedComparison(
        control=control,
        treatment=treatment,
        confidence_level=confidence_level,
        n_pairs=composite.n_pairs,
        n_observation_pairs=n_rows,
        unpaired_control=c_run.sid.size - n_rows,
        unpaired_treatment=t_run.sid.size - n_rows,
        composite=composite,
        components=components,
        mde=mde,
        hotelling=hotelling,
        missing=missing,
        gates=gates,
        cluster=cluster,
        tasks=tasks,
        notes=notes,
        tests=tests,
        task_adjust=adjust if by_task else None,
        repeats=repeats,
        missing_bounds=missing_bounds,
    )


def pair_weights(
    samples: IntArray | None, weight: FloatArray | None, rows: npt.NDArray[np.bool_]
) -> FloatArray | None:
    """The weights of `rows` in a mean of pairs: each sample weighs the same (its epochs
    averaged), times the pair's weight; None without samples (every row weighs 1)."""
    if samples is None:
        return None
    w = sample_weights(samples[rows])
    return w if weight is None else w * weight[rows]


def paired_tests(
    composite: Difference,
    c: FloatArray,
    t: FloatArray,
    units: IntArray,
    samples: IntArray,
    weight: FloatArray | None = None,
) -> dict[str, Any]:
    """The exact and analytic tests of the composite difference, each under its own name, and
    which of them (with the interval) decides significance."""
    both = np.isfinite(c) & np.isfinite(t)
    cb, tb = c[both], t[both]
    d = tb - cb
    codes = dense_codes(units[both])
    out: dict[str, Any] = {"decided_by": _decided_by(composite)}
    if not d.size:
        return out
    w = pair_weights(samples, weight, both)
    unit_d = cluster_means(d, codes, w)
    binary = bool(np.all((cb == 0) | (cb == 1)) and np.all((tb == 0) | (tb == 1)))
    if binary and unit_d.size == d.size:
        test: Any = mcnemar_exact(int(np.sum(tb > cb)), int(np.sum(cb > tb)))
        out["mcnemar"] = test.to_dict()
    else:
        out["mcnemar"] = None
        out["mcnemar_refusal"] = mcnemar_refusal(binary)
    out["sign"] = exact_sign_test(unit_d).to_dict()
    test = paired_t(unit_d)
    out["paired_t"] = None if test is None else test.to_dict()
    test = clustered_standard_error(d, codes, w)
    out["clustered_se"] = None if test is None else test.to_dict()
    return out


def mcnemar_refusal(binary: bool) -> str:
    """Why McNemar's test is not given (the summaries' report says it in the same words)."""
    if not binary:
        return "the values are not all 0/1"
    return (
        "units have several observations (epochs or clusters): the sign test on the units' "
        "mean differences is the exact test"
    )


def _decided_by(d: Difference) -> str:
    i = d.interval
    if i is None:
        return "the exact sign test (no interval: " + (d.refusal or "none") + ")"
    if i.formula == "newcombe-cc":
        if i.n_units == i.n_observations:
            return "Newcombe's interval, and the exact McNemar test must agree"
        return "Newcombe's interval on the effective sample size (clusters)"
    if i.formula in ("t", "hall-t"):
        return f"the paired t interval (cluster-robust standard error, {i.df:g} df)"
    if i.method == "betting":
        return "the betting interval (distribution-free on the declared bounds)"
    if i.method == "studentized":
        return "the studentized bootstrap interval (no bounds declared)"
    return f"the {i.formula} bootstrap interval"


def paired_difference(
    c: FloatArray,
    t: FloatArray,
    units: IntArray,
    *,
    samples: IntArray | None = None,
    weight: FloatArray | None = None,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    method: str,
    bounds: tuple[float, float] | None = None,
) -> Difference:
    """The difference over the rows present on both sides, its interval and p-values. With
    `samples` (each row's sample) every sample weighs the same: means and the interval are of
    per-sample epoch means (docs/statistics.md, the estimand). `bounds`: each side's declared
    bounds (the betting interval's; None: unbounded)."""
    both = np.isfinite(c) & np.isfinite(t)
    groups = units[both]
    n_pairs = int(np.count_nonzero(np.bincount(groups))) if groups.size else 0
    if n_pairs == 0:
        return Difference(None, 0, None, refusal="no pair has this quantity on both sides")
    cb, tb = c[both], t[both]
    d = tb - cb
    w = pair_weights(samples, weight, both)
    c_mean, t_mean = weighted_mean(cb, w), weighted_mean(tb, w)
    codes = dense_codes(groups)
    unit_d = cluster_means(d, codes, w)
    exact_p = sign_test(unit_d)
    try:
        interval = paired_interval(
            cb, tb, clusters=codes, weights=w, method=method,
            confidence_level=confidence_level, n_resamples=n_resamples, rng=seed, bounds=bounds,
        )  # fmt: skip
    except NoInterval as why:
        # Without spread the exact sign test is the only evidence: it stands in as the p-value.
        return Difference(
            weighted_mean(d, w), n_pairs, None, why.reason, exact_p, exact_p,
            control_mean=c_mean, treatment_mean=t_mean, n_observations=int(d.size),
            constant=n_pairs >= 2 and bool(np.ptp(unit_d) == 0) and bool(unit_d[0] != 0),
            unchanged=n_pairs >= 2 and not np.any(unit_d),
        )  # fmt: skip
    return Difference(
        interval.estimate, n_pairs, interval, None, interval_p_value(interval), exact_p,
        control_mean=c_mean, treatment_mean=t_mean, n_observations=int(d.size),
    )  # fmt: skip


def detectable_difference(
    d: Difference,
    c: FloatArray,
    t: FloatArray,
    units: IntArray,
    alpha: float,
    samples: IntArray | None = None,
    weight: FloatArray | None = None,
    bounds: tuple[float, float] | None = None,
) -> float | None:
    """The MDE at 80% power. On declared `bounds` where `auto` chose the interval, or for a
    betting interval, by simulating the procedure at the alternative (`simulated_detectable`:
    `auto` may choose another interval there, and the betting interval's width depends on the
    location and the path of the values); otherwise from the interval's standard error
    (noncentral t on its df); for paired 0/1 outcomes also from the exact McNemar test the verdict
    requires, whichever is larger — a handful of discordant pairs, not the standard error, limits
    what is detectable. inf when no difference is detectable; None without an interval."""
    if d.interval is None:
        return None
    chosen = d.interval.reason is not None and d.interval.method in ("t", "betting")
    if bounds is not None and (chosen or d.interval.method == "betting"):
        both = np.isfinite(c) & np.isfinite(t)
        w = pair_weights(samples, weight, both)
        codes = dense_codes(units[both])
        unit_w = np.bincount(codes, weights=w) if w is not None else np.bincount(codes)
        unit_c = cluster_means(c[both], codes, w)
        found = simulated_detectable(
            cluster_means(t[both], codes, w) - unit_c, control=unit_c, scale=bounds,
            weights=unit_w.astype(np.float64), auto=chosen,
            confidence_level=d.interval.confidence_level,
        )  # fmt: skip
        if found is not None:
            return found
    mde = d.interval.detectable_effect()
    if d.interval.formula != "newcombe-cc":
        return mde
    both = np.isfinite(c) & np.isfinite(t)
    mde = _binary_detectable(t[both] - c[both], d.interval)
    if d.interval.n_units < d.interval.n_observations:
        return mde  # with clusters the score interval alone decides (Korn–Graubard df)
    w = pair_weights(samples, weight, both)
    unit_d = cluster_means(t[both] - c[both], dense_codes(units[both]), w)
    moved = unit_d[unit_d != 0]
    step = float(np.mean(np.abs(moved))) if moved.size else 1.0
    exact = sign_test_detectable(unit_d.size, moved.size / unit_d.size, step, alpha=alpha)
    return mde if exact is None else max(mde, exact)


def _binary_detectable(diff: FloatArray, interval: Interval, power: float = 0.8) -> float:
    return binary_detectable(float(np.mean(diff != 0)), interval, power)


def binary_detectable(psi0: float, interval: Interval, power: float = 0.8) -> float:
    """δ = z₁₋α/₂·SE₀ + z_power·SE₁(δ): the null standard error from the interval, and under the
    alternative the variance of a paired 0/1 difference with the discordance it needs — an effect
    δ adds up to |δ| discordant pairs (ψ₁ = ψ₀ + δ), so its variance is ψ₁ − δ², not the null's.
    `psi0`: the share of discordant observation pairs (the summaries give it without the rows)."""
    z_crit = interval.critical_value()
    z_pow = NormalDist().inv_cdf(power)
    se0 = interval.standard_error
    n_alt = interval.n_effective
    clustered = interval.n_units < interval.n_observations
    if clustered:  # a clustered SE rests on G − 1 df
        se0 *= sd_allowance(interval.n_units - 1)
        z_pow = t_quantile(power, interval.n_units - 1)  # as the critical value is, via n_eff
        # The effect's own design effect is unknowable from the null data (near 0 or 1 they hardly
        # vary): plan on its worst case, every observation of a unit moving together (n_eff = G).
        g = interval.n_units
        n_alt = min(
            n_alt, g * (z_crit / t_quantile(1 - (1 - interval.confidence_level) / 2, g - 1)) ** 2
        )
    delta = (z_crit + z_pow) * se0
    for _ in range(60):
        psi1 = min(1.0, psi0 + delta)
        se1 = max(se0, math.sqrt(max(psi1 - delta * delta, 0.0) / n_alt))
        # A score interval's width is read from the data it is computed on: under the
        # alternative, from ψ₁ discordant pairs on about the same effective n (with rare
        # discordance at n = 10 × 3 epochs, the null's width promised 80% and delivered 60%).
        crit = max(se0, se0 * math.sqrt(psi1 / psi0)) if clustered and psi0 > 0 else se0
        nxt = min(1.0, z_crit * crit + z_pow * se1)
        if abs(nxt - delta) < 1e-12:
            break
        delta = nxt
    return delta


def interval_p_value(interval: Interval) -> float:
    """Two-sided p-value of 0 by the interval's own reference distribution."""
    if interval.p_value is not None:  # betting (1/capital at 0), studentized (its t* law)
        return interval.p_value
    if interval.bootstrap is not None:
        dist = interval.bootstrap.distribution
        below, above = float(np.mean(dist <= 0)), float(np.mean(dist >= 0))
        return min(1.0, 2.0 * min(below, above))
    if interval.standard_error <= 0:
        return 0.0 if interval.estimate != 0 else 1.0
    stat = abs(interval.estimate) / interval.standard_error
    if interval.df is not None:
        from scipy.special import stdtr

        return float(2 * stdtr(interval.df, -stat))
    return float(2 * NormalDist().cdf(-stat))


def _significant(d: Difference, alpha: float) -> bool:
    """The interval excludes 0 — and, for paired 0/1 outcomes one per unit, the exact McNemar test
    agrees: a score interval on a handful of discordant pairs is an approximation the exact test
    checks (with clusters, Korn–Graubard's df allowance in the score interval does that work).
    Differences without spread (every unit moved by the same amount) have no interval: the exact
    sign test alone decides (3 pairs all +1: p = 0.25, not significant; 40: p ≈ 2e-12)."""
    if d.interval is None:
        return d.constant and d.exact_p is not None and d.exact_p <= alpha
    if d.interval.contains(0.0):
        return False
    if d.interval.formula == "newcombe-cc" and d.interval.n_units == d.interval.n_observations:
        return d.exact_p is not None and d.exact_p <= alpha
    return True


def _holm_significance(components: dict[str, Difference], alpha: float) -> None:
    """Layers are tested together: a layer moved when its Holm-adjusted p-value is ≤ α."""
    tested = [n for n, d in components.items() if d.p_value is not None]
    if not tested:
        return
    adjusted = holm([components[n].p_value or 0.0 for n in tested])
    for name, p in zip(tested, adjusted, strict=True):
        d = components[name]
        d.significant = bool(p <= alpha) and _significant(d, alpha)


def _gate_evidence(
    c_run: RunArrays,
    t_run: RunArrays,
    components: dict[str, Difference],
    cluster: str,
    alpha: float,
    method: str,
    seed: int,
    threshold: float,
    *,
    bounds: tuple[float, float] | None = None,
) -> dict[str, GateEvidence]:
    """Per layer: control's mean, treatment's upper bound at 1 − α/L (Bonferroni over the
    layers), and whether the paired difference dropped (Holm, above)."""
    names = [n for n in components if np.isfinite(c_run.values[n]).any()]
    level = 1.0 - alpha / max(1, len(names))
    evidence = {}
    for name in names:
        c, t = c_run.values[name], t_run.values[name]
        c_keep, t_keep = np.isfinite(c), np.isfinite(t)
        c_mean = weighted_mean(c[c_keep], c_run.weights(c_keep))
        t_w = t_run.weights(t_keep)
        t_mean = weighted_mean(t[t_keep], t_w) if t_keep.any() else None
        high = None
        if t_keep.any():
            units = cluster_labels(t_run, np.flatnonzero(t_keep), cluster)
            try:
                high = mean_interval(
                    t[t_keep], clusters=units, weights=t_w, method=method,
                    confidence_level=level, rng=seed, bounds=bounds,
                ).high  # fmt: skip
            except NoInterval:
                # Every unit has the same layer mean: evidence that it is below the gate is
                # the exact sign test over the units (all below; p = 2·½^G).
                unit_means = cluster_means(t[t_keep], dense_codes(units), t_w)
                if sign_test(unit_means - threshold) <= 1.0 - level:
                    high = float(unit_means.max())
        d = components[name]
        evidence[name] = GateEvidence(c_mean, t_mean, high, d.below_zero)
    return evidence


def _missingness(c: FloatArray, t: FloatArray) -> Missingness:
    c_ok, t_ok = np.isfinite(c), np.isfinite(t)
    c_only = int(np.sum(c_ok & ~t_ok))
    t_only = int(np.sum(t_ok & ~c_ok))
    # Presence in treatment minus presence in control, over the discordant pairs.
    p = sign_test(np.r_[np.ones(t_only), -np.ones(c_only)])
    return Missingness(c_only, t_only, int(c.size), p)


def _cluster_means(x: FloatArray, cluster: npt.NDArray[np.int64]) -> FloatArray:
    keep = np.isfinite(x)
    n = np.bincount(cluster[keep])
    sums = np.bincount(cluster[keep], weights=x[keep])
    ok = n > 0
    return np.asarray(sums[ok] / n[ok], dtype=np.float64)


def _hotelling(
    c_vals: dict[str, FloatArray],
    t_vals: dict[str, FloatArray],
    cluster: npt.NDArray[np.int64],
    names: tuple[str, ...],
    notes: list[str],
) -> HotellingResult | None:
    """T² on per-sample mean layer differences, over the layers both runs have and the samples
    that have all of them."""
    k = int(cluster.max()) + 1
    columns = []
    used = []
    for name in names:
        d = t_vals[name] - c_vals[name]
        keep = np.isfinite(d)
        if not keep.any():
            continue
        n = np.bincount(cluster[keep], minlength=k)
        sums = np.bincount(cluster[keep], weights=d[keep], minlength=k)
        with np.errstate(invalid="ignore", divide="ignore"):
            columns.append(np.where(n > 0, sums / np.maximum(n, 1), np.nan))
        used.append(name)
    if len(used) < 2:
        notes.append("Hotelling T²: needs at least two layers present in both runs")
        return None
    matrix = np.column_stack(columns)
    matrix = matrix[np.all(np.isfinite(matrix), axis=1)]
    try:
        return hotelling_t2(matrix)
    except InputError as exc:
        notes.append(f"Hotelling T²: {exc.message}")
        return None


def _task_table(
    task_code: npt.NDArray[np.int64],
    names: list[str],
    composite_c: FloatArray,
    composite_t: FloatArray,
    samples: IntArray,
    weight: FloatArray | None = None,
) -> dict[str, dict[str, Any]]:
    """Each task's means over the pairs both sides have (of per-sample epoch means)."""
    codes = task_code
    both = np.isfinite(composite_c) & np.isfinite(composite_t)
    k = len(names)
    w = pair_weights(samples, weight, both)
    assert w is not None
    n = np.bincount(codes[both], minlength=k)
    total = np.bincount(codes[both], weights=w, minlength=k)
    c_sum = np.bincount(codes[both], weights=w * composite_c[both], minlength=k)
    t_sum = np.bincount(codes[both], weights=w * composite_t[both], minlength=k)
    present = np.bincount(codes, minlength=k) > 0
    table: dict[str, dict[str, Any]] = {}
    for code in np.flatnonzero(present):
        name = names[code]
        if n[code] == 0:
            table[name] = {"control": None, "treatment": None, "diff": None, "n": 0,
                           "n_samples": 0}  # fmt: skip
            continue
        c_mean, t_mean = c_sum[code] / total[code], t_sum[code] / total[code]
        table[name] = {
            "control": float(c_mean),
            "treatment": float(t_mean),
            "diff": float(t_mean - c_mean),
            "n": int(n[code]),
            "n_samples": int(np.unique(samples[both & (codes == code)]).size),
        }
    return table
