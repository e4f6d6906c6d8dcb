"""The paired comparison of two runs: samples matched by (task, sample_id, epoch), a sample's epochs
resampled together, a bootstrap interval on the difference of the composite and of each component,
the minimum detectable effect, and Hotelling's T² on the vector of component differences."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import DataError, InputError
from calipers.stats import BootstrapResult, minimum_detectable_effect, paired_bootstrap
from calipers.stats.multivariate import HotellingResult, hotelling_t2
from calipers.verdicts.persample import FloatArray, StagedScores, dense_sorted


@dataclass
class Difference:
    """treatment − control for one quantity, with its interval."""

    estimate: float | None
    n_pairs: int  # samples (clusters) with the quantity on both sides
    interval: BootstrapResult | None  # None with fewer than 2 pairs

    @property
    def low(self) -> float | None:
        return self.interval.low if self.interval else None

    @property
    def high(self) -> float | None:
        return self.interval.high if self.interval else None

    @property
    def significant(self) -> bool:
        """The interval excludes 0."""
        return self.interval is not None and not self.interval.contains(0.0)

    @property
    def below_zero(self) -> bool:
        return self.interval is not None and self.interval.high < 0.0

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
            "monte_carlo_uncertain": self.monte_carlo_uncertain,
        }


@dataclass
class PairedComparison:
    control: str
    treatment: str
    confidence_level: float
    n_pairs: int  # samples paired with a composite on both sides
    n_observation_pairs: int
    unpaired_control: int  # observations of control with no partner in treatment
    unpaired_treatment: int
    composite: Difference
    components: dict[str, Difference]
    mde: float | None
    hotelling: HotellingResult | None
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def compare_pair(
    staged: StagedScores,
    control: str,
    treatment: str,
    *,
    confidence_level: float,
    n_resamples: int,
    seed: int,
) -> PairedComparison:
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
    n_rows = ic.size
    if n_rows == 0:
        raise DataError(
            f"runs '{control}' and '{treatment}' share no sample",
            hint="A comparison pairs samples by (task, sample_id, epoch); check that both runs "
            "were evaluated on the same inputs.",
        )
    cluster = dense_sorted(c_run.sid[ic])
    c_vals = {n: c_run.values[n][ic] for n in comps}
    t_vals = {n: t_run.values[n][it] for n in comps}

    def difference(c: FloatArray, t: FloatArray) -> Difference:
        return _difference(c, t, cluster, confidence_level, n_resamples, seed)

    composite_c = staged.composite(control)[ic]
    composite_t = staged.composite(treatment)[it]
    composite = difference(composite_c, composite_t)
    components = {n: difference(c_vals[n], t_vals[n]) for n in comps} if staged.gated else {}
    diff = composite_t - composite_c
    per_cluster = _cluster_means(diff, cluster)
    alpha = 1.0 - confidence_level
    mde = None
    if per_cluster.size >= 2:
        mde = minimum_detectable_effect(
            float(np.std(per_cluster, ddof=1)), per_cluster.size, alpha=alpha
        )
    notes: list[str] = []
    hotelling = _hotelling(c_vals, t_vals, cluster, comps, notes) if staged.gated else None
    tasks = _task_table(c_run.task_code[ic], staged.tasks, composite_c, composite_t)
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
        tasks=tasks,
        notes=notes,
    )


def _difference(
    c: FloatArray,
    t: FloatArray,
    cluster: npt.NDArray[np.int64],
    confidence_level: float,
    n_resamples: int,
    seed: int,
) -> Difference:
    both = np.isfinite(c) & np.isfinite(t)
    groups = cluster[both]
    n_pairs = int(np.count_nonzero(np.bincount(groups))) if groups.size else 0
    if n_pairs == 0:
        return Difference(None, 0, None)
    estimate = float(np.mean(t[both] - c[both]))
    if n_pairs < 2:
        return Difference(estimate, n_pairs, None)
    clustered = n_pairs < groups.size  # some sample has several epochs
    interval = paired_bootstrap(
        c[both],
        t[both],
        clusters=groups if clustered else None,
        n_resamples=n_resamples,
        confidence_level=confidence_level,
        rng=seed,
    )
    return Difference(interval.estimate, n_pairs, interval)


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
) -> dict[str, dict[str, Any]]:
    codes = task_code
    both = np.isfinite(composite_c) & np.isfinite(composite_t)
    k = len(names)
    n = np.bincount(codes[both], minlength=k)
    c_sum = np.bincount(codes[both], weights=composite_c[both], minlength=k)
    t_sum = np.bincount(codes[both], weights=composite_t[both], minlength=k)
    present = np.bincount(codes, minlength=k) > 0
    table: dict[str, dict[str, Any]] = {}
    for code in np.flatnonzero(present):
        name = names[code]
        if n[code] == 0:
            table[name] = {"control": None, "treatment": None, "diff": None, "n": 0}
            continue
        c_mean, t_mean = c_sum[code] / n[code], t_sum[code] / n[code]
        table[name] = {
            "control": float(c_mean),
            "treatment": float(t_mean),
            "diff": float(t_mean - c_mean),
            "n": int(n[code]),
        }
    return table
