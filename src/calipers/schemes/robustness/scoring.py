"""Robustness (seed 004, compatible with kelvin): does the pipeline read evidence, not presentation?

Samples of one run: per case (`perturbation_of`, else `task`), a `baseline` sample (epoch 0; more
epochs are noise-floor replays) and perturbed variants (`sample_id` the variant id, `perturbation`
its kind), each with its `decision` or an `error`. Distances to the case's baseline decision are
kelvin's (`calipers.data.decision.distance`). As kelvin 0.3.0 computes them:

    invariance   1 − mean distance over every reorder and pad variant, pooled across cases
    sensitivity  mean distance over every swap variant, pooled across cases
    K            (1 − invariance) + (1 − sensitivity)
    by type      mean swap distance per governing type
    σ_c, η       a case's mean pairwise distance over its baseline replays; η the mean over cases
    calibrated   Inv_cal = max(0, (Inv − η)/(1 − η)), likewise Sens; none when η ≥ 1 − Inv
    condition    mean distance over swap_condition variants; content_effect = max(0, Sens − it)

Failed variants (an error, no decision) are left out of every mean and counted. Beyond kelvin:
an interval over cases (each case one independent unit; cluster-robust t on G − 1 df) for
invariance and sensitivity, refused below MIN_CASES cases.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np

from calipers.data.decision import distance, is_structured
from calipers.errors import DataError
from calipers.schemes.base import SchemeResult
from calipers.stats.estimate import mean_interval
from calipers.stats.interval_parts import Interval, NoInterval

if TYPE_CHECKING:
    import pandas as pd

    from calipers.data.sampleset import SampleSet

BASELINE = "baseline"
INVARIANCE_KINDS = ("reorder", "pad_length", "pad_content", "pad")  # "pad": kelvin 0.2's name
SENSITIVITY_KINDS = ("swap",)
CONDITION_KINDS = ("swap_condition",)
_GOVERNED = re.compile(r"^(?:swap|swap_condition)-(?P<type>.+)-\d+$")


def governing_type(variant_id: str) -> str:
    """The governing type in a kelvin swap variant id (`swap-gate_rule-01` → gate_rule)."""
    match = _GOVERNED.match(variant_id)
    return match.group("type") if match else "unknown"


@dataclass
class VariantResult:
    variant_id: str
    kind: str
    governing_type: str | None
    ok: bool
    error: str | None
    decision: Any
    distance: float | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass
class CaseResult:
    case: str
    baseline_ok: bool
    baseline_error: str | None
    baseline_decision: Any
    replays: list[Any] = field(default_factory=list)  # every baseline decision, epoch order
    variants: list[VariantResult] = field(default_factory=list)

    def distances(self, kinds: tuple[str, ...]) -> list[float]:
        return [v.distance for v in self.variants if v.kind in kinds and v.distance is not None]

    @property
    def sigma_c(self) -> float | None:
        """Mean pairwise distance over the baseline replays (None with fewer than 2)."""
        if len(self.replays) < 2:
            return None
        pairs = [distance(a, b) for a, b in combinations(self.replays, 2)]
        return sum(pairs) / len(pairs)

    def by_type(self) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for v in self.variants:
            if v.kind in SENSITIVITY_KINDS:
                out.setdefault(v.governing_type or "unknown", [])
                if v.distance is not None:
                    out[v.governing_type or "unknown"].append(v.distance)
        return out

    def scores(self) -> dict[str, Any]:
        inv, sens = self.distances(INVARIANCE_KINDS), self.distances(SENSITIVITY_KINDS)
        one_minus = _mean(inv)
        return {
            "invariance": None if one_minus is None else 1.0 - one_minus,
            "invariance_sample": len(inv),
            "sensitivity": _mean(sens),
            "sensitivity_sample": len(sens),
            "sensitivity_by_type": {
                t: {"mean": _mean(d), "sample": len(d)} for t, d in self.by_type().items()
            },
        }


def calibrate(
    invariance: float | None, sensitivity: float | None, eta: float | None
) -> tuple[float | None, float | None, float | None]:
    """kelvin's noise-floor calibration; all None when an input is missing or η ≥ 1 − Inv."""
    if eta is None or invariance is None or sensitivity is None:
        return None, None, None
    if eta <= 0:
        return invariance, sensitivity, (1.0 - invariance) + (1.0 - sensitivity)
    if eta >= 1.0 - invariance:
        return None, None, None
    inv = max(0.0, (invariance - eta) / (1.0 - eta))
    sens = max(0.0, (sensitivity - eta) / (1.0 - eta))
    return inv, sens, (1.0 - inv) + (1.0 - sens)


@dataclass
class RunRobustness:
    run: str
    cases: list[CaseResult]
    intervals: dict[str, Interval | str | None]  # a string: why there is no interval
    confidence_level: float

    def pooled(self, kinds: tuple[str, ...]) -> list[float]:
        return [d for c in self.cases for d in c.distances(kinds)]

    @property
    def invariance(self) -> float | None:
        mean = _mean(self.pooled(INVARIANCE_KINDS))
        return None if mean is None else 1.0 - mean

    @property
    def sensitivity(self) -> float | None:
        return _mean(self.pooled(SENSITIVITY_KINDS))

    @property
    def kelvin_score(self) -> float | None:
        inv, sens = self.invariance, self.sensitivity
        return None if inv is None or sens is None else (1.0 - inv) + (1.0 - sens)

    @property
    def eta(self) -> float | None:
        return _mean([s for c in self.cases if (s := c.sigma_c) is not None])

    def sensitivity_by_type(self) -> dict[str, dict[str, Any]]:
        merged: dict[str, list[float]] = {}
        for c in self.cases:
            for t, d in c.by_type().items():
                merged.setdefault(t, []).extend(d)
        # kelvin reports a mean of 0.0 for a type whose swaps all failed; null says it plainly.
        return {t: {"mean": _mean(d), "sample": len(d)} for t, d in merged.items()}

    def failed_variants(self) -> int:
        return sum(1 for c in self.cases for v in c.variants if not v.ok)

    def to_dict(self) -> dict[str, Any]:
        inv, sens = self.invariance, self.sensitivity
        body: dict[str, Any] = {
            "cases": {
                "run": [c.case for c in self.cases],
                "baseline_ok": [c.case for c in self.cases if c.baseline_ok],
                "baseline_failed": [
                    {"case": c.case, "error": c.baseline_error}
                    for c in self.cases
                    if not c.baseline_ok
                ],
            },
            "invariance": inv,
            "invariance_sample": len(self.pooled(INVARIANCE_KINDS)),
            "sensitivity": sens,
            "sensitivity_sample": len(self.pooled(SENSITIVITY_KINDS)),
            "kelvin_score": self.kelvin_score,
            "sensitivity_by_type": self.sensitivity_by_type(),
            "failed_variants": self.failed_variants(),
            "intervals": {k: _interval_dict(v) for k, v in self.intervals.items()},
        }
        eta = self.eta
        if eta is not None:
            inv_cal, sens_cal, k_cal = calibrate(inv, sens, eta)
            body.update(
                noise_floor_eta=eta, invariance_calibrated=inv_cal,
                sensitivity_calibrated=sens_cal, kelvin_score_calibrated=k_cal,
            )  # fmt: skip
        condition = self.pooled(CONDITION_KINDS)
        if condition:
            cond = _mean(condition)
            body.update(
                sensitivity_content=sens, sensitivity_content_sample=body["sensitivity_sample"],
                sensitivity_condition=cond, sensitivity_condition_sample=len(condition),
                content_effect=None if sens is None or cond is None else max(0.0, sens - cond),
            )  # fmt: skip
        return body


def _interval_dict(result: Interval | str | None) -> dict[str, Any] | None:
    if isinstance(result, str):
        return {"refusal": result}
    return None if result is None else result.to_dict()


@dataclass(repr=False)  # the readable repr of the base class
class RobustnessResult(SchemeResult):
    runs: dict[str, RunRobustness] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        body = self.header()
        body["runs"] = {name: r.to_dict() for name, r in self.runs.items()}
        body["cases"] = {
            name: [{"case": c.case, **c.scores()} for c in r.cases] for name, r in self.runs.items()
        }
        return body

    def to_frame(self, level: str = "case") -> pd.DataFrame:
        """Levels: "case" (one row per run and case) and "variant"."""
        import pandas as pd

        rows: list[dict[str, Any]] = []
        for name, r in self.runs.items():
            for c in r.cases:
                if level == "case":
                    scores = c.scores()
                    scores.pop("sensitivity_by_type")
                    rows.append({"run": name, "case": c.case, "sigma_c": c.sigma_c, **scores})
                elif level == "variant":
                    rows += [{"run": name, "case": c.case, **v.to_dict()} for v in c.variants]
                else:
                    raise DataError(f"unknown level '{level}' (case or variant)")
        return pd.DataFrame(rows)


def _decision(raw: str | None) -> tuple[bool, Any]:
    """(present, value) of a JSON decision column (SQL NULL: absent; JSON null: present)."""
    if raw is None:
        return False, None
    return True, json.loads(raw)


def read_cases(samples: SampleSet, run: str) -> tuple[list[CaseResult], list[str]]:
    """One run's cases with distances to their baselines, and notes."""
    rows = samples.con.execute(
        f"SELECT coalesce(perturbation_of, task), sample_id, epoch, perturbation, "
        f"CAST(decision AS VARCHAR), error FROM {samples.relation} WHERE run = ? "
        "ORDER BY 1, (perturbation = 'baseline') DESC, sample_id, epoch",
        [run],
    ).fetchall()
    cases: dict[str, CaseResult] = {}
    structured = False
    for case, sample_id, epoch, kind, raw, error in rows:
        present, value = _decision(raw)
        ok = error is None and present
        if kind == BASELINE:
            result = cases.setdefault(case, CaseResult(case, False, None, None))
            if epoch == 0:
                result.baseline_ok, result.baseline_decision = ok, value
                result.baseline_error = None if ok else (error or "no decision")
            if ok:
                result.replays.append(value)
            continue
        result = cases.setdefault(case, CaseResult(case, False, "no baseline sample", None))
        d = None
        if ok and result.baseline_ok:
            d = distance(result.baseline_decision, value)
            structured = (
                structured or is_structured(value) or is_structured(result.baseline_decision)
            )
        governed = (
            governing_type(sample_id) if kind in (*SENSITIVITY_KINDS, *CONDITION_KINDS) else None
        )
        result.variants.append(
            VariantResult(
                sample_id,
                kind or "unknown",
                governed,
                ok,
                None if ok else (error or "no decision"),
                value,
                d,
            )
        )
    notes = []
    if structured:
        notes.append(
            "some decisions are lists or objects: compared by equality of the whole value "
            "(kelvin refuses them)"
        )
    unknown = sorted(
        {v.kind for c in cases.values() for v in c.variants}
        - {*INVARIANCE_KINDS, *SENSITIVITY_KINDS, *CONDITION_KINDS}
    )
    if unknown:
        notes.append(f"perturbation kinds not scored: {', '.join(unknown)}")
    return list(cases.values()), notes


MIN_CASES = 3  # below this many cases no interval is shown (docs/calibration.md)


def case_interval(
    cases: list[CaseResult], kinds: tuple[str, ...], *, confidence_level: float, n_resamples: int,
    seed: int, complement: bool, method: str = "auto",
) -> Interval | str | None:  # fmt: skip
    """The pooled mean distance (1 − it when `complement`) over cases as the independent units,
    by the engine's `auto` on distances bounded by [0, 1]: a score interval when every distance is
    0 or 1, the cluster-robust t where the t rule holds, else the distribution-free betting
    interval; clipped to [0, 1]. None when no case has such a variant; a string (the reason) when
    there is no interval."""
    values: list[float] = []
    clusters: list[int] = []
    for i, c in enumerate(cases):
        d = c.distances(kinds)
        values += d
        clusters += [i] * len(d)
    if not values:
        return None
    n_cases = len(set(clusters))
    if n_cases < MIN_CASES:
        return f"{n_cases} case(s) with such variants: an interval needs at least {MIN_CASES}"
    try:
        result = mean_interval(
            np.array(values), clusters=np.array(clusters), method=method,
            confidence_level=confidence_level, n_resamples=n_resamples, rng=seed,
            bounds=(0.0, 1.0),  # kelvin's distance lies in [0, 1] by its definition
        )  # fmt: skip
    except NoInterval as why:
        return why.reason
    low, high = max(0.0, result.low), min(1.0, result.high)
    if not complement:
        return replace(result, low=low, high=high)
    return replace(result, estimate=1.0 - result.estimate, low=1.0 - high, high=1.0 - low)


def score_run(
    cases: list[CaseResult], run: str, *, confidence_level: float, n_resamples: int, seed: int
) -> RunRobustness:
    options: dict[str, Any] = {
        "confidence_level": confidence_level, "n_resamples": n_resamples, "seed": seed,
    }  # fmt: skip
    intervals = {
        "invariance": case_interval(cases, INVARIANCE_KINDS, complement=True, **options),
        "sensitivity": case_interval(cases, SENSITIVITY_KINDS, complement=False, **options),
    }
    return RunRobustness(run, cases, intervals, confidence_level)


def score_samples(samples: SampleSet, options: Any, *, name: str) -> RobustnessResult:
    """The scores of every run in `samples` (options checked by the scheme's declaration)."""
    confidence_level = options.confidence_level
    n_resamples = options.n_resamples
    seed = options.seed
    has = samples.con.execute(
        f"SELECT count(*) FROM {samples.relation} WHERE perturbation IS NOT NULL"
    ).fetchone()
    if not has or not has[0]:
        raise DataError(
            f"{samples.origin}: no sample has a `perturbation` (baseline, reorder, swap, …)",
            hint="Run `calipers check`, or import a kelvin directory: "
            "`calipers import --format kelvin DIR`.",
        )
    notes: list[str] = []
    runs = {}
    for run in samples.runs():
        cases, more = read_cases(samples, run)
        notes += [f"{run}: {n}" for n in more]
        runs[run] = score_run(
            cases, run, confidence_level=confidence_level, n_resamples=n_resamples, seed=seed
        )
    parameters = {
        "confidence_level": confidence_level,
        "n_resamples": n_resamples,
        "seed": seed,
    }
    return RobustnessResult(name, parameters, samples.origin, notes, runs)
