"""The paired comparison of two runs: samples matched by (task, sample_id, epoch); the independent
unit a sample (its epochs together), a group or a task; an interval on the difference of the
composite — made from the layers both sides have — and of each component, chosen by the kind of
data (`calipers.stats.estimate`); which quantities go missing more in one run; the evidence on
each layer gate; the minimum detectable effect; Hotelling's T² on the component differences."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import DataError, InputError
from calipers.stats.bootstrap import dense_codes
from calipers.stats.estimate import mean_interval
from calipers.stats.interval_parts import (
    NoInterval,
    cluster_means,
    sign_test,
    weighted_mean,
)
from calipers.stats.multivariate import HotellingResult, hotelling_t2
from calipers.verdicts.by_task import task_differences
from calipers.verdicts.difference import (
    Difference,
    detectable_difference,
    holm_significance,
    pair_weights,
    paired_difference,
    paired_tests,
    significant,
)
from calipers.verdicts.missing_bounds import FilledDifference, MissingBounds, bound_missing
from calipers.verdicts.persample import FloatArray, RunArrays, StagedScores, cluster_labels
from calipers.verdicts.repeats import PairedRepeats, paired_repeats

IntArray = npt.NDArray[np.int64]


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
    composite.significant = significant(composite, alpha)
    components: dict[str, Difference] = {}
    gates: dict[str, GateEvidence] = {}
    if staged.gated:
        components = {n: difference(c_vals[n], t_vals[n]) for n in comps}
        holm_significance(components, alpha)
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
        return FilledDifference.of(d, significant(d, alpha))

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
