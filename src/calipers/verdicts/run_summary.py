"""What one run scored: its composite with an interval, each component (with its gate), the
layers its composites used, the judges' agreement, the spread between epochs, saturation, each
task's means and the repeats — made from the rows a comparable scheme staged
(`calipers.verdicts.persample`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import DataError
from calipers.stats.agreement_intervals import AgreementInterval, RunAgreement, run_agreement
from calipers.stats.estimate import mean_interval
from calipers.stats.interval_parts import Interval, NoInterval, weighted_mean
from calipers.stats.saturation import SaturationResult, saturation
from calipers.verdicts.persample import (
    FloatArray,
    RunArrays,
    StagedScores,
    cluster_labels,
    resolve_cluster,
)
from calipers.verdicts.repeats import RunRepeats, run_repeats

# seed 000: judges that correlate below this disagree strongly; at or above AGREE they agree.
JUDGE_DISAGREE = 0.4
JUDGE_AGREE = 0.7
HUMAN_ALIGNED = 0.7
CV_LIMIT = 0.15


@dataclass
class ComponentSummary:
    mean: float | None
    n: int  # observations where the component is present
    interval: Interval | None
    gate: bool | None = None  # mean ≥ threshold (None when ungated)
    refusal: str | None = None  # why there is no interval, when one was asked for
    # outcomes missing from the run whose worst/best cases the interval was widened to cover
    missing_widened: int = 0

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"mean": self.mean, "n": self.n}
        if self.interval is not None:
            body.update(
                low=self.interval.low, high=self.interval.high, method=self.interval.formula
            )
        if self.missing_widened:
            body["missing_widened"] = self.missing_widened
        if self.refusal is not None:
            body["refusal"] = self.refusal
        if self.gate is not None:
            body["gate"] = self.gate
        return body


@dataclass
class RunSummary:
    """What one run scored: composite with its interval, each component, and its reliability."""

    run: str
    n_samples: int  # distinct samples (clusters)
    n_observations: int
    missing: int  # observations without a composite
    composite: ComponentSummary
    components: dict[str, ComponentSummary]
    layers_used: dict[str, int]  # "fact+judge" → observations whose composite used those layers
    gate_passed: bool | None  # every present component ≥ threshold (None when ungated)
    judge_pearson: float | None
    judge_alpha: float | None
    human_pearson: float | None
    cv_median: float | None
    saturation: SaturationResult
    tasks: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    repeats: RunRepeats | None = None  # when some sample was scored in several epochs
    agreement: RunAgreement | None = None  # the three figures above with their intervals

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "n_samples": self.n_samples,
            "n_observations": self.n_observations,
            "missing": self.missing,
            "composite": self.composite.to_dict(),
            "components": {k: v.to_dict() for k, v in self.components.items()},
            "layers_used": self.layers_used,
            "gate_passed": self.gate_passed,
            "judge_pearson": self.judge_pearson,
            "judge_krippendorff_alpha": self.judge_alpha,
            "human_pearson": self.human_pearson,
            "cv_median": self.cv_median,
            "saturation": self.saturation.to_dict(),
            "tasks": self.tasks,
            "repeats": None if self.repeats is None else self.repeats.to_dict(),
            "agreement": None if self.agreement is None else self.agreement.to_dict(),
        }


def summarize_run(
    staged: StagedScores,
    arrays: RunArrays,
    *,
    threshold: float,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    z: float,
    component_intervals: bool = True,
    interval: str = "auto",
    cluster: str = "auto",
) -> RunSummary:
    """A run's scores. `component_intervals=False` skips the interval of each component (a
    comparison reads their paired differences instead). `interval` is the method
    (`calipers.stats.estimate`), `cluster` the independent unit: sample_id, group or task, or
    auto (`resolve_cluster` on this run; callers with several runs resolve over all of them)."""
    if cluster == "auto":
        cluster = resolve_cluster(arrays, cluster).cluster
    composite = staged.composite(arrays.run)
    present = np.isfinite(composite)
    if not present.any():
        if staged.gated:  # layered: perhaps a harness's scores, which the metric scheme reads
            raise DataError(
                f"run '{arrays.run}' has no sample with a score",
                hint="Every sample lacks every layer (assertions, judgments); for a harness's "
                "per-sample scores (accuracy, f1, …) use the metric scheme: `scheme` metric with "
                "`metric` NAME (`calipers runs` lists each run's metrics).",
                parameters=["scheme", "metric"],
            )
        raise DataError(
            f"run '{arrays.run}' has no sample with a score",
            hint="Every sample lacks every component; check the assertions, judgments or metric.",
        )
    clusters = cluster_labels(arrays, np.arange(arrays.sid.size), cluster)

    def component(values: FloatArray, units: npt.NDArray[np.int64] | None) -> ComponentSummary:
        return _component(
            values, arrays, units, confidence_level=confidence_level,
            n_resamples=n_resamples, seed=seed, method=interval, bounds=staged.bounds,
        )  # fmt: skip

    comp = component(composite, clusters)
    if staged.bounds is not None and comp.interval is not None and not present.all():
        comp = _widened_for_missing(comp, composite, component, clusters, staged.bounds)
    components = {}
    for name in staged.components:
        summary = component(arrays.values[name], clusters if component_intervals else None)
        if staged.gated and summary.mean is not None:
            summary.gate = summary.mean >= threshold
        components[name] = summary
    gate_passed = None
    if staged.gated:
        gates = [c.gate for c in components.values() if c.gate is not None]
        gate_passed = bool(gates) and all(gates)
    agreement = run_agreement(  # on per-sample means, the intervals over the clusters
        arrays.judges, arrays.cluster, units=clusters, unit=cluster,
        judge_layer=arrays.values.get("judge"), human=arrays.human,
        confidence_level=confidence_level, n_resamples=n_resamples, rng=seed,
    )  # fmt: skip
    return RunSummary(
        run=arrays.run,
        n_samples=int(arrays.cluster[-1]) + 1 if arrays.cluster.size else 0,
        n_observations=int(composite.size),
        missing=int((~present).sum()),
        composite=comp,
        components=components,
        layers_used=_layers_used(arrays.values, staged.components) if staged.gated else {},
        gate_passed=gate_passed,
        judge_pearson=_estimate(agreement.judge_pearson),
        judge_alpha=_estimate(agreement.judge_alpha),
        human_pearson=_estimate(agreement.human_pearson),
        agreement=None if agreement.empty else agreement,
        cv_median=_cv_median(staged.composite(arrays.run, raw=True), arrays.cluster),
        saturation=saturation(composite, arrays.cluster, arrays.epoch, z=z),
        tasks=_task_means(composite, arrays),
        repeats=run_repeats(
            composite,
            arrays.sid,
            arrays.task_code,
            arrays.tasks,
            judge_repeats=arrays.judge_repeats,
            units=None if cluster == "sample_id" else clusters,
            names=staged.names,
            confidence_level=confidence_level,
            z=z,
        ),
    )


def _task_means(
    composite: FloatArray, arrays: RunArrays
) -> dict[str, dict[str, float | int | None]]:
    """Mean composite per task the run has — the mean of its samples' epoch means — (None when
    none of its samples has a composite); n counts observations."""
    keep = np.isfinite(composite)
    k = len(arrays.tasks)
    present = np.bincount(arrays.task_code, minlength=k) > 0
    codes = arrays.task_code[keep]
    w = arrays.weights(keep)
    n = np.bincount(codes, minlength=k)
    weight = np.bincount(codes, weights=w, minlength=k)
    sums = np.bincount(codes, weights=w * composite[keep], minlength=k)
    return {
        arrays.tasks[i]: {"mean": float(sums[i] / weight[i]) if n[i] else None, "n": int(n[i])}
        for i in np.flatnonzero(present)
    }


def _component(
    values: FloatArray,
    arrays: RunArrays,
    clusters: npt.NDArray[np.int64] | None,
    *,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    method: str,
    bounds: tuple[float, float] | None = None,
) -> ComponentSummary:
    """A component's mean over its samples (each sample's epochs averaged first, so a sample
    weighs the same however many epochs were scored), and its interval when `clusters` are
    given (None: no interval). `bounds`: the scale's declared bounds (every component of a
    scheme shares its composite's scale)."""
    keep = np.isfinite(values)
    n = int(keep.sum())
    if n == 0:
        return ComponentSummary(None, 0, None)
    x = values[keep]
    w = arrays.weights(keep)
    mean = weighted_mean(x, w)
    if clusters is None:
        return ComponentSummary(mean, n, None)
    try:
        interval = mean_interval(
            x, clusters=clusters[keep], weights=w, method=method,
            confidence_level=confidence_level, n_resamples=n_resamples, rng=seed, bounds=bounds,
        )  # fmt: skip
    except NoInterval as why:
        return ComponentSummary(mean, n, None, refusal=why.reason)
    return ComponentSummary(mean, n, interval)


def _widened_for_missing(
    comp: ComponentSummary,
    composite: FloatArray,
    component: Callable[[FloatArray, npt.NDArray[np.int64] | None], ComponentSummary],
    clusters: npt.NDArray[np.int64],
    bounds: tuple[float, float],
) -> ComponentSummary:
    """A run whose samples lack some outcomes (errors, failed judges on every layer): the mean
    over the samples scored is what it is, but the interval must hold for the run's mean over all
    its samples whatever the missing outcomes were — it reaches from the low end of the interval
    with them at the scale's worst to the high end with them at its best (Manski). Outcomes lost
    on a run's own bad draws left the interval of the scored samples at 0.52–0.90 coverage
    (docs/calibration.md, the `mnar` cells)."""
    assert comp.interval is not None
    missing = int(np.sum(~np.isfinite(composite)))
    worst = component(np.where(np.isfinite(composite), composite, bounds[0]), clusters).interval
    best = component(np.where(np.isfinite(composite), composite, bounds[1]), clusters).interval
    if worst is None or best is None:
        return comp
    why = (
        f"widened for {missing} missing outcome(s): from their worst ({bounds[0]:g}) to their "
        f"best ({bounds[1]:g})"
    )
    interval = replace(
        comp.interval,
        low=min(comp.interval.low, worst.low),
        high=max(comp.interval.high, best.high),
        reason=f"{comp.interval.reason}; {why}" if comp.interval.reason else why,
    )
    return ComponentSummary(comp.mean, comp.n, interval, comp.gate, comp.refusal, missing)


def _layers_used(values: Mapping[str, FloatArray], names: tuple[str, ...]) -> dict[str, int]:
    present = np.column_stack([np.isfinite(values[n]) for n in names])
    codes = present @ (1 << np.arange(len(names)))
    counts = np.bincount(codes, minlength=1 << len(names))
    used = {}
    for code in np.flatnonzero(counts):
        label = "+".join(n for i, n in enumerate(names) if code >> i & 1) or "none"
        used[label] = int(counts[code])
    return used


def _estimate(found: AgreementInterval | None) -> float | None:
    return None if found is None else found.estimate


def _cv_median(composite: FloatArray, cluster: npt.NDArray[np.int64]) -> float | None:
    """Median over samples with ≥ 2 epochs of sd/mean of the composite across epochs."""
    keep = np.isfinite(composite)
    x, c = composite[keep], cluster[keep]
    if x.size == 0:
        return None
    n = np.bincount(c).astype(float)
    s1 = np.bincount(c, weights=x)
    s2 = np.bincount(c, weights=x * x)
    ok = n >= 2
    if not ok.any():
        return None
    mean = s1[ok] / n[ok]
    var = np.maximum(s2[ok] - n[ok] * mean**2, 0.0) / (n[ok] - 1)
    positive = mean > 0
    if not positive.any():
        return None
    return float(np.median(np.sqrt(var[positive]) / mean[positive]))
