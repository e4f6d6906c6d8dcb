"""Rubric scoring (seed 001): seven dimensions on 1–10, a weighted composite, red-flag deductions,
bonuses, a letter grade, and (see `calipers.schemes.rubric.history`) a flag when a dimension
strays from its history.

For each evaluation (one sample: run, task, sample_id, epoch), in the seed's order:

    dimension   mean of its judgments (several judges or repeats), rescaled to 1–10 from their
                scale; else the sample's `scores{dimension}`; missing or off-scale: input error
    composite   Σ dimension × weight, rounded half up to two decimals
    deductions  0.5 per unique red flag, at most 2.0; then floor 1.0
    bonuses     0.25 per unique bonus, at most 1.0; then ceiling 10.0
    grade       from the seed's table, lower bound inclusive (A+ includes 10.00)

Arithmetic is decimal, not binary floating point: 8.995 rounds to 9.00 and grades A.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import TYPE_CHECKING, Any

import numpy as np

from calipers.data.sampleset import SampleSet
from calipers.errors import InputError
from calipers.schemes.base import SchemeResult
from calipers.schemes.rubric.definition import DIMENSIONS, Rubric, RubricRules, load_rubric
from calipers.stats.estimate import mean_interval
from calipers.stats.interval_parts import NoInterval, sample_weights, weighted_mean

if TYPE_CHECKING:
    import pandas as pd


CENT = Decimal("0.01")
RED_FLAG_DEDUCTION = Decimal("0.5")
MAX_DEDUCTION = Decimal("2.0")
BONUS = Decimal("0.25")
MAX_BONUS = Decimal("1.0")
FLOOR, CEILING = Decimal("1.0"), Decimal("10.0")
SCALE = (1.0, 10.0)

# (lower bound, grade, label): lower bound inclusive, upper exclusive; A+ includes 10.00.
GRADES = (
    (Decimal("9.50"), "A+", "Exceptional"),
    (Decimal("9.00"), "A", "Excellent"),
    (Decimal("8.50"), "A-", "Very Good"),
    (Decimal("8.00"), "B+", "Good"),
    (Decimal("7.50"), "B", "Above Average"),
    (Decimal("7.00"), "B-", "Satisfactory"),
    (Decimal("6.50"), "C+", "Adequate"),
    (Decimal("6.00"), "C", "Mediocre"),
    (Decimal("5.50"), "C-", "Below Average"),
    (Decimal("5.00"), "D+", "Poor"),
    (Decimal("4.00"), "D", "Very Poor"),
    (Decimal("1.00"), "F", "Failing"),
)


def grade_for(score: Decimal) -> tuple[str, str]:
    """The grade and label of a final score (two decimals, 1.00–10.00)."""
    for lower, grade, label in GRADES:
        if score >= lower:
            return grade, label
    return GRADES[-1][1], GRADES[-1][2]


def round_half_up(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def as_decimal(value: float | int | str | Decimal) -> Decimal:
    """A number as the decimal it was written as: repr() of a float is its shortest round-trip
    form, so 8.7 becomes Decimal('8.7'), not 8.699999999999999289…"""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(value)


@dataclass
class Adjustment:
    """A red flag or bonus: its id, why, and what it changed (0 beyond the cap)."""

    id: str
    explanation: str
    amount: Decimal
    capped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "explanation": self.explanation,
            "amount": float(self.amount),
            "capped": self.capped,
        }


@dataclass
class HistoryFlag:
    """A dimension more than 2 SD from its mean over the task's last earlier evaluations."""

    dimension: str
    score: float
    mean: float
    sd: float
    n_history: int
    deviation_sd: float | None  # |score − mean| / sd (None when sd is 0)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Evaluation:
    run: str
    task: str
    sample_id: str
    epoch: int
    domain: str | None
    dimensions: dict[str, Decimal]
    composite: Decimal
    red_flags: list[Adjustment]
    bonuses: list[Adjustment]
    deduction_total: Decimal
    bonus_total: Decimal
    final: Decimal
    grade: str
    label: str
    history_flags: list[HistoryFlag] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.run, self.task, self.sample_id, self.epoch)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "task": self.task,
            "sample_id": self.sample_id,
            "epoch": self.epoch,
            "domain": self.domain,
            "dimensions": {d: float(v) for d, v in self.dimensions.items()},
            "composite": float(self.composite),
            "deductions": {
                "items": [a.to_dict() for a in self.red_flags],
                "total": float(self.deduction_total),
            },
            "bonuses": {
                "items": [a.to_dict() for a in self.bonuses],
                "total": float(self.bonus_total),
            },
            "final": float(self.final),
            "grade": self.grade,
            "label": self.label,
            "history_flags": [f.to_dict() for f in self.history_flags],
        }


def _adjustments(
    ids: list[str], listed: Mapping[str, str], step: Decimal, cap: Decimal
) -> tuple[list[Adjustment], Decimal]:
    items, total = [], Decimal(0)
    for flag in ids:
        amount = min(step, cap - total)
        items.append(
            Adjustment(
                flag, listed.get(flag) or "(not described in the rubric)", amount, amount < step
            )
        )
        total += amount
    return items, total


def evaluate(
    key: tuple[str, str, str, int],
    dimensions: Mapping[str, Decimal],
    red_flags: list[str],
    bonuses: list[str],
    rules: RubricRules,
) -> Evaluation:
    """One evaluation through the seed's pipeline (dimensions already 1–10; flag ids unique)."""
    with localcontext() as ctx:
        ctx.prec = 50
        raw = sum((dimensions[d] * rules.weights[d] for d in DIMENSIONS), Decimal(0))
        composite = round_half_up(raw)
        deductions, deduction_total = _adjustments(
            red_flags, rules.red_flags, RED_FLAG_DEDUCTION, MAX_DEDUCTION
        )
        after = max(FLOOR, composite - deduction_total)
        extras, bonus_total = _adjustments(bonuses, rules.bonuses, BONUS, MAX_BONUS)
        final = round_half_up(min(CEILING, after + bonus_total))
    grade, label = grade_for(final)
    run, task, sample_id, epoch = key
    return Evaluation(
        run, task, sample_id, epoch, rules.domain, dict(dimensions), composite,
        deductions, extras, deduction_total, bonus_total, final, grade, label,
    )  # fmt: skip


def _where(key: tuple[str, str, str, int]) -> str:
    return f"(run={key[0]}, task={key[1]}, sample_id={key[2]}, epoch={key[3]})"


def _dimension_scores(
    key: tuple[str, str, str, int],
    judgments: list[dict[str, Any]],
    scores: Mapping[str, float] | None,
    origin: str,
) -> dict[str, Decimal]:
    by_dimension: dict[str, list[Decimal]] = {d: [] for d in DIMENSIONS}
    for j in judgments:
        d = j.get("dimension")
        if d not in by_dimension or j.get("error") is not None or j.get("score") is None:
            continue
        score = float(j["score"])
        lo = float(j["scale_min"]) if j.get("scale_min") is not None else SCALE[0]
        hi = float(j["scale_max"]) if j.get("scale_max") is not None else SCALE[1]
        if not np.isfinite(score) or not lo <= score <= hi:
            raise InputError(
                f"{origin}: sample {_where(key)}: judge score {score} for dimension '{d}' is "
                f"outside its scale {lo:g}–{hi:g}",
                hint="Dimension scores are 1–10; give scale_min and scale_max for another scale.",
            )
        value = as_decimal(score)
        if (lo, hi) != SCALE:
            value = 1 + 9 * (value - as_decimal(lo)) / (as_decimal(hi) - as_decimal(lo))
        by_dimension[d].append(value)
    out = {}
    for d, values in by_dimension.items():
        if values:
            out[d] = sum(values, Decimal(0)) / len(values)
            continue
        fallback = (scores or {}).get(d)
        if fallback is None:
            raise InputError(
                f"{origin}: sample {_where(key)} has no score for dimension '{d}'",
                hint="Give a judgment with that dimension, or scores{" + d + "} on the sample.",
            )
        if not (np.isfinite(fallback) and SCALE[0] <= fallback <= SCALE[1]):
            raise InputError(
                f"{origin}: sample {_where(key)}: scores{{{d}}} = {fallback} is outside 1–10",
                hint="Dimension scores are on a 1–10 scale.",
            )
        out[d] = as_decimal(float(fallback))
    return out


def _unique_ids(
    key: tuple[str, str, str, int],
    judgments: list[dict[str, Any]],
    what: str,
    listed: Mapping[str, str],
    origin: str,
) -> list[str]:
    ids: list[str] = []
    for j in judgments:
        if j.get("error") is not None:
            continue  # a failed judgment's flags are not evidence
        for item in j.get(what) or []:
            if item not in ids:
                ids.append(item)
    if listed:
        unknown = [i for i in ids if i not in listed]
        if unknown:
            raise InputError(
                f"{origin}: sample {_where(key)}: {what} {', '.join(unknown)} not in the rubric",
                hint=f"The rubric lists: {', '.join(listed)}.",
            )
    return ids


def score_evaluations(samples: SampleSet, rubric: Rubric) -> tuple[list[Evaluation], list[str]]:
    """Every sample of `samples` through the rubric, ordered by (run, task, sample_id, epoch)."""
    rows = samples.con.execute(
        f"SELECT run, task, sample_id, epoch, judgments, scores FROM {samples.relation} "
        "ORDER BY run, task, sample_id, epoch"
    ).fetchall()
    evaluations, other_dimensions = [], set()
    for run, task, sample_id, epoch, judgments, scores in rows:
        key = (run, task, sample_id, int(epoch))
        judgments = judgments or []
        other_dimensions |= {
            j["dimension"] for j in judgments if j.get("dimension") not in (None, *DIMENSIONS)
        }
        rules = rubric.rules_for(task)
        dims = _dimension_scores(key, judgments, scores, samples.origin)
        flags = _unique_ids(key, judgments, "red_flags", rules.red_flags, samples.origin)
        extras = _unique_ids(key, judgments, "bonuses", rules.bonuses, samples.origin)
        evaluations.append(evaluate(key, dims, flags, extras, rules))
    notes = []
    if other_dimensions:
        notes.append(
            f"judgments on other dimensions were not used: {', '.join(sorted(other_dimensions))}"
        )
    return evaluations, notes


@dataclass
class RunGrades:
    run: str
    n: int
    mean_final: float
    interval: tuple[float, float] | None
    grades: dict[str, int]
    method: str | None = None  # the interval's formula (docs/statistics.md)
    refusal: str | None = None  # why there is no interval

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval if self.interval else (None, None)
        return {
            "run": self.run,
            "n": self.n,
            "mean_final": self.mean_final,
            "low": low,
            "high": high,
            "method": self.method,
            "refusal": self.refusal,
            "grades": self.grades,
        }


@dataclass(repr=False)  # the readable repr of the base class
class RubricResult(SchemeResult):
    rubric: dict[str, Any] = field(default_factory=dict)
    evaluations: list[Evaluation] = field(default_factory=list)
    runs: dict[str, RunGrades] = field(default_factory=dict)
    # per task, its recent evaluations from the store's history with the flags' band (when the
    # history was recorded; see calipers.schemes.rubric.history.history_series)
    history: dict[str, list[dict[str, Any]]] | None = None

    def to_dict(self) -> dict[str, Any]:
        body = self.header()
        body["rubric"] = self.rubric
        body["runs"] = {name: r.to_dict() for name, r in self.runs.items()}
        body["evaluations"] = [e.to_dict() for e in self.evaluations]
        if self.history is not None:
            body["history"] = self.history
        return body

    def to_frame(self, level: str = "evaluation") -> pd.DataFrame:
        """Levels: "evaluation" (one row each, dimensions as columns), "task" (per run and task:
        samples and the mean final score, of each sample's epoch mean) and "run"."""
        import pandas as pd

        if level == "task":
            frame = self.to_frame("evaluation")
            if frame.empty:
                return pd.DataFrame(columns=["run", "task", "n_samples", "mean_final"])
            keys = ["run", "task", "sample_id"]
            per_sample = frame.groupby(keys, sort=True)["final"].mean().reset_index()
            return (
                per_sample.groupby(["run", "task"], sort=True)
                .agg(n_samples=("final", "size"), mean_final=("final", "mean"))
                .reset_index()
            )

        if level == "evaluation":
            rows = []
            for e in self.evaluations:
                row: dict[str, Any] = {
                    k: v for k, v in zip(("run", "task", "sample_id", "epoch"), e.key, strict=True)
                }
                row.update({d: float(v) for d, v in e.dimensions.items()})
                row.update(
                    composite=float(e.composite), deductions=float(e.deduction_total),
                    bonuses=float(e.bonus_total), final=float(e.final), grade=e.grade,
                    history_flags=len(e.history_flags),
                )  # fmt: skip
                rows.append(row)
            return pd.DataFrame(rows)
        if level == "run":
            return pd.DataFrame([r.to_dict() for r in self.runs.values()])
        raise InputError(f"unknown level '{level}' (evaluation, task or run)")


def summarize_runs(
    evaluations: list[Evaluation], *, confidence_level: float, n_resamples: int, seed: int
) -> dict[str, RunGrades]:
    """Per run: mean final score — of per-sample epoch means, so every sample weighs the same —
    with the interval the paired engine's `auto` picks on the final scores' bounds (1–10): the t
    interval where it can be shown to hold, else the distribution-free betting interval (a
    percentile bootstrap from 2 samples covered 89% at 10, issue 33), or the reason there is
    none; and how many evaluations got each grade."""
    out = {}
    for run in sorted({e.run for e in evaluations}):
        mine = [e for e in evaluations if e.run == run]
        finals = np.array([float(e.final) for e in mine])
        clusters = np.array([f"{e.task}\x1f{e.sample_id}" for e in mine])
        weights = sample_weights(clusters)
        interval, method, refusal = None, None, None
        try:
            made = mean_interval(
                finals, clusters=clusters, weights=weights, confidence_level=confidence_level,
                n_resamples=n_resamples, rng=seed, bounds=SCALE,
            )  # fmt: skip
            interval, method = (made.low, made.high), made.formula
        except NoInterval as why:
            refusal = why.reason
        grades = {g: 0 for _, g, _ in GRADES}
        for e in mine:
            grades[e.grade] += 1
        out[run] = RunGrades(
            run, len(mine), weighted_mean(finals, weights), interval, grades, method, refusal
        )
    return out


def score_samples(samples: SampleSet, options: Any, *, name: str) -> RubricResult:
    """The scores of every run in `samples` (options checked by the scheme's declaration)."""
    rubric = options.rubric
    confidence_level = options.confidence_level
    n_resamples = options.n_resamples
    seed = options.seed
    spec = rubric if isinstance(rubric, Rubric) else load_rubric(rubric)
    evaluations, notes = score_evaluations(samples, spec)
    if not evaluations:
        raise InputError(f"{samples.origin} has no sample to score")
    parameters = {
        "rubric": spec.origin,
        "rubric_sha256": spec.sha256,
        "confidence_level": confidence_level,
        "n_resamples": n_resamples,
        "seed": seed,
    }
    runs = summarize_runs(
        evaluations, confidence_level=confidence_level, n_resamples=n_resamples, seed=seed
    )
    result = RubricResult(
        name, parameters, samples.origin, notes, spec.to_dict(), evaluations, runs
    )
    result.parameters["history"] = None
    return result
