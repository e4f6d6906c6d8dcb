"""The objective scheme's comparator (seed 002): per-task deltas, hard regressions, the net gain,
improved / neutral / regressed, and the fail-closed promotion decision.

    regressions  objective_drop   a task's mean obj01 fell (when objective_drop_is_regression)
                 composite_drop   a task's composite fell by more than regression_composite_drop
                 dropped_task     a baseline task the candidate does not have
                 non_finite       a task's composite is NaN or infinite on either side
    net_gain     Σ over the tasks both runs have (finite) of candidate − baseline composite
    verdict      regressed   any hard regression, or net_gain ≤ −min_composite_gain
                 improved    net_gain > min_composite_gain
                 neutral     otherwise
    promote      improved and no hard regression: ambiguity never promotes

Thresholds are compared with a 1e-9 tolerance so that a delta written as 0.01 is 0.01 and not
0.010000000000000009 (composites live in [0, 1]; nothing meaningful is that small).

Beyond the seed: when a task has several samples or epochs, a bootstrap interval on the net gain,
resampling each run's samples within each task (tasks are the strata and are never resampled). It
is reported beside the verdict and does not change it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_snake

from calipers.data import configfile
from calipers.data.sampleset import SampleSet
from calipers.errors import DataError, InputError
from calipers.schemes.base import SCHEMA_VERSION
from calipers.schemes.objective.scoring import (
    COST_WEIGHT,
    W_JUDGE,
    W_OBJ,
    FloatArray,
    TaskSamples,
    TaskScore,
    Weights,
    cost_adjustment,
    score_runs,
    stage_tasks,
)
from calipers.stats import DEFAULT_SEED
from calipers.verdicts.base import Comparison

if TYPE_CHECKING:
    import pandas as pd

TOLERANCE = 1e-9


class Settings(BaseModel):
    """Thresholds and weights of an objective comparison; a config file holds any of them, in
    snake_case or the seed's camelCase (minCompositeGain). Strict: a number is not "0.1", a
    flag not "yes"."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    min_composite_gain: float = Field(default=0.01, ge=0, allow_inf_nan=False)
    regression_composite_drop: float = Field(default=0.05, ge=0, allow_inf_nan=False)
    objective_drop_is_regression: bool = True
    w_obj: float = Field(default=W_OBJ, gt=0, allow_inf_nan=False)
    w_judge: float = Field(default=W_JUDGE, ge=0, allow_inf_nan=False)
    cost_weight: float = Field(default=COST_WEIGHT, ge=0, allow_inf_nan=False)

    @property
    def weights(self) -> Weights:
        return Weights(self.w_obj, self.w_judge, self.cost_weight)


def load_settings(path: Path | None, **overrides: Any) -> Settings:
    """Settings from a YAML or JSON file (if given), then the non-None `overrides` on top."""
    raw: dict[str, Any] = {}
    doc = configfile.Document("options", None)
    keys: dict[str, Any] = {}  # a setting's name in the file → the key as written there
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the config file {path}: {exc}") from exc
        doc = configfile.parse(text, str(path), json=path.suffix == ".json")
        loaded = {} if doc.data is None else doc.data
        if not isinstance(loaded, dict):
            raise InputError(f"{path}: expected a mapping of settings, got {type(loaded).__name__}")
        for key, value in loaded.items():
            name = to_snake(str(key)).replace("-", "_")
            if name in keys:  # min_composite_gain and minCompositeGain: which one holds?
                line = doc.line_of([key])
                raise InputError(
                    f"{path}{f', line {line}' if line else ''}: '{key}' and '{keys[name]}' are "
                    f"the same setting ({name})",
                    hint="Give each setting once.",
                )
            keys[name] = key
            raw[name] = value
    raw.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        setting = str(loc[0]) if loc else None
        given = {k for k, v in overrides.items() if v is not None}
        in_file = setting in keys and setting not in given
        lines = {n: line for n, k in keys.items() if (line := doc.line_of([k])) is not None}
        origin = doc.origin if in_file else "options"
        where = configfile.Document(origin, raw, {id(raw): lines} if in_file else {})
        error = configfile.invalid(
            exc,
            where,
            hint="Settings: " + ", ".join(Settings.model_fields) + " (or their camelCase); "
            "numbers are written as numbers, flags as true or false.",
        )
        if in_file and setting is not None and keys[setting] != setting:  # as the file spells it
            spelled = f"'{keys[setting]}'"
            error = InputError(error.message.replace(f"'{setting}'", spelled), hint=error.hint)
        raise error from None


class ObjectiveVerdict(StrEnum):
    IMPROVED = "improved"
    NEUTRAL = "neutral"
    REGRESSED = "regressed"


@dataclass(frozen=True)
class Regression:
    task: str
    kind: str  # objective_drop, composite_drop, dropped_task, non_finite
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class TaskDelta:
    task: str
    baseline: float | None
    candidate: float | None
    delta: float | None
    objective_before: float | None
    objective_after: float | None
    cost_adjustment: float | None
    cost_metrics: list[str]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class NetGainInterval:
    low: float
    high: float
    confidence_level: float
    n_resamples: int
    seed: int
    distribution: FloatArray = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "low": self.low,
            "high": self.high,
            "confidence_level": self.confidence_level,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "method": "percentile bootstrap, samples resampled within each task and run",
        }


@dataclass(repr=False)  # the readable repr of the base class
class ObjectiveComparison(Comparison):
    baseline: str
    candidate: str
    settings: Settings
    origin: str
    tasks: list[TaskDelta]
    regressions: list[Regression]
    net_gain: float
    verdict: ObjectiveVerdict
    promote: bool
    reason: str
    interval: NetGainInterval | None
    scores: dict[str, dict[str, TaskScore]]
    notes: list[str] = field(default_factory=list)

    scheme = "objective"

    @property
    def verdict_text(self) -> str:
        return f"{self.verdict.value} · {'promote' if self.promote else 'do not promote'}"

    def gate_failure(self, gate: str) -> str | None:
        """no-regress fails on regressed; ship fails unless the candidate is promoted."""
        if gate == "worth-it":
            raise InputError(
                "--gate worth-it weighs the net benefit of the metric and layered schemes; the "
                "objective scheme puts cost into its composite instead",
                hint="Use --gate ship, or compare with --scheme metric --value-per-solved V.",
                parameters=["gate"],
            )
        if gate == "no-regress" and self.verdict is ObjectiveVerdict.REGRESSED:
            return "the verdict is regressed (gate no-regress)"
        if gate == "ship" and not self.promote:
            return f"the candidate is not promoted: the verdict is {self.verdict.value} (gate ship)"
        return None

    def to_frame(self, level: str = "task") -> pd.DataFrame:
        """level "task" (or "pair"): one row per task with both composites and the delta;
        "run": one row per run and task with its objective, judge, cost adjustment, composite."""
        import pandas as pd

        if level in ("task", "pair"):
            return pd.DataFrame([t.to_dict() for t in self.tasks])
        if level == "run":
            return pd.DataFrame(
                [
                    {"run": run, **t.to_dict()}
                    for run, ts in self.scores.items()
                    for t in ts.values()
                ]
            )
        raise InputError(f"unknown level '{level}' (task or run)", parameters=["level"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "objective-compare",
            "scheme": "objective",
            "source": self.origin,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "parameters": self.settings.model_dump(),
            "verdict": self.verdict.value,
            "promote": self.promote,
            "reason": self.reason,
            "net_gain": self.net_gain,
            "net_gain_interval": self.interval.to_dict() if self.interval else None,
            "tasks": [t.to_dict() for t in self.tasks],
            "regressions": [r.to_dict() for r in self.regressions],
            "scores": {
                run: [t.to_dict() for t in tasks.values()] for run, tasks in self.scores.items()
            },
            "notes": list(self.notes),
        }


def decide(
    baseline: dict[str, TaskScore], candidate: dict[str, TaskScore], settings: Settings
) -> tuple[list[TaskDelta], list[Regression], float, ObjectiveVerdict, str]:
    """The seed's comparator on two runs' task scores: deltas, regressions, net gain, verdict."""
    deltas, regressions, net = [], [], 0.0
    for task in sorted(baseline.keys() | candidate.keys()):
        before, after = baseline.get(task), candidate.get(task)
        if before is None:
            assert after is not None
            deltas.append(
                TaskDelta(task, None, after.composite, None, None, after.objective, None, [])
            )
            continue
        if after is None:
            regressions.append(Regression(task, "dropped_task", "not in the candidate run"))
            deltas.append(
                TaskDelta(task, before.composite, None, None, before.objective, None, None, [])
            )
            continue
        finite = math.isfinite(before.composite) and math.isfinite(after.composite)
        delta = after.composite - before.composite if finite else None
        deltas.append(
            TaskDelta(
                task, before.composite, after.composite, delta, before.objective,
                after.objective, after.cost_adjustment, after.cost_metrics,
            )
        )  # fmt: skip
        if not finite:
            side = "baseline" if not math.isfinite(before.composite) else "candidate"
            regressions.append(
                Regression(task, "non_finite", f"the {side} composite is not finite")
            )
            continue
        net += after.composite - before.composite
        if settings.objective_drop_is_regression and (
            after.objective < before.objective - TOLERANCE
        ):
            regressions.append(
                Regression(
                    task,
                    "objective_drop",
                    f"objective checks passed fell from {before.objective:.4g} to "
                    f"{after.objective:.4g}",
                )
            )
        if after.composite - before.composite < -settings.regression_composite_drop - TOLERANCE:
            regressions.append(
                Regression(
                    task,
                    "composite_drop",
                    f"composite fell by {before.composite - after.composite:.4g}, more than "
                    f"{settings.regression_composite_drop:g}",
                )
            )
    gain = settings.min_composite_gain
    if regressions:
        kinds = sorted({r.kind for r in regressions})
        verdict = ObjectiveVerdict.REGRESSED
        reason = f"{len(regressions)} hard regression(s): {', '.join(kinds)}"
    elif net <= -gain + TOLERANCE:
        verdict = ObjectiveVerdict.REGRESSED
        reason = f"net gain {net:+.4g} ≤ −{gain:g}"
    elif net > gain + TOLERANCE:
        verdict = ObjectiveVerdict.IMPROVED
        reason = f"net gain {net:+.4g} > {gain:g} with no hard regression"
    else:
        verdict = ObjectiveVerdict.NEUTRAL
        reason = f"net gain {net:+.4g} within ±{gain:g}"
    return deltas, regressions, net, verdict, reason


def net_gain_interval(
    baseline: dict[str, TaskSamples],
    candidate: dict[str, TaskSamples],
    tasks: list[str],
    settings: Settings,
    *,
    confidence_level: float,
    n_resamples: int,
    seed: int,
) -> NetGainInterval | None:
    """Percentile bootstrap of the net gain over `tasks`: each run's samples of a task are drawn
    with replacement, a sample with its epochs averaged (a task with one sample on a side draws
    its epochs, or keeps it when it has one); None when nothing varies."""
    baseline = {t: _drawn(baseline[t]) for t in tasks}
    candidate = {t: _drawn(candidate[t]) for t in tasks}
    if not any(baseline[t].n > 1 or candidate[t].n > 1 for t in tasks):
        return None
    rng = np.random.default_rng(seed)
    net = np.zeros(n_resamples)
    for task in tasks:
        before = _resampled(baseline[task], rng, n_resamples)
        after = _resampled(candidate[task], rng, n_resamples)
        adjustment = cost_adjustment(after[1], before[1], settings.cost_weight)
        net += np.clip(after[0] + adjustment, 0, 1) - np.clip(before[0], 0, 1)
    alpha = 1 - confidence_level
    low, high = np.quantile(net, [alpha / 2, 1 - alpha / 2])
    return NetGainInterval(float(low), float(high), confidence_level, n_resamples, seed, net)


def _drawn(samples: TaskSamples) -> TaskSamples:
    """What the bootstrap draws from: the samples, or one sample's epochs."""
    return samples.epochs if samples.n == 1 and samples.epochs is not None else samples


def _resampled(
    samples: TaskSamples, rng: np.random.Generator, n_resamples: int
) -> tuple[FloatArray, dict[str, FloatArray]]:
    """Bootstrap means of base and of each cost metric (NaN where a resample has no value)."""
    n = samples.n
    if n == 1:
        idx = np.zeros((n_resamples, 1), dtype=np.int64)
    else:
        idx = rng.integers(0, n, size=(n_resamples, n))
    base = samples.base[idx].mean(axis=1)
    cost = {}
    for metric, values in samples.cost.items():
        if np.isnan(values).all():
            continue
        drawn = values[idx]
        present = ~np.isnan(drawn)
        counts = present.sum(axis=1)
        sums = np.where(present, drawn, 0.0).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cost[metric] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return base, cost


def compare_objective(
    samples: SampleSet,
    *,
    baseline: str,
    candidate: str,
    settings: Settings | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = DEFAULT_SEED,
) -> ObjectiveComparison:
    """Score `baseline` and `candidate` with the objective scheme and apply the seed's verdict."""
    settings = settings or Settings()
    runs = samples.runs()
    for role, run in (("baseline", baseline), ("candidate", candidate)):
        if run not in runs:
            raise InputError(
                f"the {role} run '{run}' is not in {samples.origin}",
                hint=f"Runs: {', '.join(runs) or '(none)'}.",
            )
    if baseline == candidate:
        raise InputError(f"the baseline and the candidate are the same run '{baseline}'")
    staged, notes = stage_tasks(samples, [baseline, candidate], settings.weights)
    scores = score_runs(staged, baseline=baseline, weights=settings.weights)
    deltas, regressions, net, verdict, reason = decide(
        scores[baseline], scores[candidate], settings
    )
    common = [d.task for d in deltas if d.delta is not None]
    if not common:
        raise DataError(
            f"the runs '{baseline}' and '{candidate}' share no task with a finite score",
            hint="Check the run names and that the candidate ran the baseline's tasks.",
        )
    new = [d.task for d in deltas if d.baseline is None]
    if new:
        notes.append(
            f"{len(new)} task(s) only in the candidate, not in the net gain: {', '.join(new)}"
        )
    interval = net_gain_interval(
        staged[baseline], staged[candidate], common, settings,
        confidence_level=confidence_level, n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    improved = verdict is ObjectiveVerdict.IMPROVED
    if interval is not None and improved and interval.low <= settings.min_composite_gain:
        notes.append(
            f"the net gain's {confidence_level:.0%} interval [{interval.low:.3g}, "
            f"{interval.high:.3g}] reaches below min_composite_gain: the improvement may be "
            "run-to-run noise"
        )
    return ObjectiveComparison(
        baseline, candidate, settings, samples.origin, deltas, regressions, net, verdict,
        verdict is ObjectiveVerdict.IMPROVED and not regressions, reason, interval, scores, notes,
    )  # fmt: skip
