"""Layered composite (seed 000): fact, behavior and judge layers on a 1–5 scale, and their mean.

    fact, behavior  1 + 4 · passed_weight / total_weight over the sample's assertions of that layer
                    (the layer of an assertion comes from its type: `calipers.data.model`)
    judge           mean over judges and repeats of the overall judgment (dimension null),
                    rescaled to 1–5 from its scale (1–5 when none is given); a failed judgment
                    (error set or score null) is missing, never 0
    composite       mean of the layers present (weighted with `weights`), after z-scoring each layer
                    over the compared samples when `standardize` is on

A sample without any layer has no composite: it is counted as missing, not scored.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from calipers.data.files import sql_literal
from calipers.data.model import FACT_ASSERTIONS, layer_case
from calipers.data.source import SampleSet
from calipers.errors import InputError
from calipers.schemes.base import ComparableScheme, SchemeResult, reject_options
from calipers.schemes.persample import (
    FloatArray,
    RunSummary,
    StagedScores,
    stage_table,
    summarize_run,
)
from calipers.schemes.registry import register
from calipers.stats import DEFAULT_SEED, z_from_confidence

if TYPE_CHECKING:
    import pandas as pd

LAYERS = ("fact", "behavior", "judge")
DEFAULT_THRESHOLD = 3.5
_staged_tables = itertools.count()


def parse_weights(text: str | Mapping[str, float] | None) -> dict[str, float]:
    """`fact=1,behavior=1,judge=2` (or a mapping) → weights; unnamed layers weigh 1."""
    if text is None:
        return dict.fromkeys(LAYERS, 1.0)
    items: Mapping[str, Any]
    if isinstance(text, str):
        parsed: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, sep, value = part.partition("=")
            if not sep:
                raise InputError(
                    f"--weights: '{part}' is not LAYER=NUMBER",
                    hint="e.g. fact=2,behavior=1,judge=1",
                )
            parsed[name.strip()] = value.strip()
        items = parsed
    else:
        items = text
    weights = dict.fromkeys(LAYERS, 1.0)
    for name, raw_value in items.items():
        if name not in LAYERS:
            raise InputError(
                f"--weights: unknown layer '{name}'", hint="Layers: fact, behavior, judge."
            )
        try:
            weight = float(raw_value)
        except (TypeError, ValueError):
            raise InputError(f"--weights: {name}={raw_value!r} is not a number") from None
        if not np.isfinite(weight) or weight < 0:
            raise InputError(f"--weights: {name}={raw_value} must be a finite number ≥ 0")
        weights[name] = weight
    if not any(weights.values()):
        raise InputError("--weights: at least one layer needs a positive weight")
    return weights


def weighted_mean(values: Mapping[str, FloatArray], weights: Mapping[str, float]) -> FloatArray:
    """Σ w·x / Σ w over the layers present in each sample; NaN where none is."""
    total = None
    weight_sum = None
    for name, w in weights.items():
        if w == 0 or name not in values:
            continue
        x = values[name]
        present = np.isfinite(x)
        part = np.where(present, x * w, 0.0)
        wpart = np.where(present, w, 0.0)
        total = part if total is None else total + part
        weight_sum = wpart if weight_sum is None else weight_sum + wpart
    if total is None or weight_sum is None:
        raise InputError("no layer has a positive weight")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight_sum > 0, total / weight_sum, np.nan)


def _judge_score(j: str) -> str:
    lo, hi = f"coalesce({j}.scale_min, 1.0)", f"coalesce({j}.scale_max, 5.0)"
    return f"1.0 + 4.0 * ({j}.score - {lo}) / ({hi} - {lo})"


_JUDGE_OK = "j.dimension IS NULL AND j.score IS NOT NULL AND j.error IS NULL"


def _weight_sum(*, fact_only: bool, passed: bool) -> str:
    # Every type is known by now (checked first), so behavior = all − fact: two cheap passes
    # instead of two per layer.
    conds = [f"a.type IN ({', '.join(repr(t) for t in FACT_ASSERTIONS)})"] if fact_only else []
    conds += ["a.passed"] if passed else []
    value = "coalesce(a.weight, 1.0)"
    body = f"CASE WHEN {' AND '.join(conds)} THEN {value} ELSE 0.0 END" if conds else value
    return f"list_sum(list_transform(assertions, lambda a: {body}))"


def _check(samples: SampleSet, where: str) -> None:
    """Ungraded assertion specs and judge scores off the default scale are input errors."""
    rel = samples.relation
    flagged = samples.con.execute(
        "SELECT count_if(list_bool_or(list_transform(assertions, lambda a: "
        f"{layer_case('a')} = 'unknown' OR a.passed IS NULL))), "
        f"count_if(list_bool_or(list_transform(judgments, lambda j: {_JUDGE_OK} AND "
        "(j.scale_min IS NULL OR j.scale_max IS NULL) AND "
        "(j.score < coalesce(j.scale_min, 1.0) OR j.score > coalesce(j.scale_max, 5.0))))) "
        f"FROM {rel} WHERE {where}"
    ).fetchall()[0]
    if not any(flagged):  # the common case: one scan, and the detailed queries never run
        return
    unknown = samples.con.execute(
        f"SELECT run, task, sample_id, epoch, a.type FROM (SELECT run, task, sample_id, epoch, "
        f"unnest(assertions) AS a FROM {rel} WHERE {where}) WHERE {layer_case('a')} = 'unknown' "
        "LIMIT 1"
    ).fetchall()
    if unknown:
        r = unknown[0]
        raise InputError(
            f"unknown assertion type '{r[4]}' in sample (run={r[0]}, task={r[1]}, "
            f"sample_id={r[2]}, epoch={r[3]})",
            hint="See `calipers schema` for the assertion types and their layers.",
        )
    ungraded = samples.con.execute(
        f"SELECT run, task, sample_id, epoch FROM {rel} WHERE {where} AND "
        "list_bool_or(list_transform(assertions, lambda a: a.passed IS NULL)) LIMIT 1"
    ).fetchall()
    if ungraded:
        r = ungraded[0]
        raise InputError(
            f"{samples.origin}: sample (run={r[0]}, task={r[1]}, sample_id={r[2]}, epoch={r[3]}) "
            "has assertion specs without results (`passed`)",
            hint="Evaluate them first: `calipers grade FILE -o graded.jsonl`, or `calipers grade` "
            "for the store.",
        )
    off_scale = samples.con.execute(
        f"SELECT run, task, sample_id, epoch, j.score FROM (SELECT run, task, sample_id, epoch, "
        f"unnest(judgments) AS j FROM {rel} WHERE {where}) WHERE {_JUDGE_OK} AND "
        "(j.scale_min IS NULL OR j.scale_max IS NULL) AND "
        "(j.score < coalesce(j.scale_min, 1.0) OR j.score > coalesce(j.scale_max, 5.0)) LIMIT 1"
    ).fetchall()
    if off_scale:
        r = off_scale[0]
        raise InputError(
            f"judge score {r[4]} is outside the default 1–5 scale in sample (run={r[0]}, "
            f"task={r[1]}, sample_id={r[2]}, epoch={r[3]})",
            hint="Give the judgment's scale_min and scale_max.",
        )


def stage_layers(
    samples: SampleSet,
    runs: list[str],
    *,
    weights: Mapping[str, float],
    standardize: bool,
) -> StagedScores:
    """One row per sample of `runs` with its fact, behavior and judge layers (NaN = missing)."""
    con = samples.con
    where = f"run IN ({', '.join(sql_literal(r) for r in runs)})"
    _check(samples, where)
    judges = [
        r[0]
        for r in con.execute(
            f"SELECT DISTINCT j.judge FROM (SELECT unnest(judgments) AS j FROM {samples.relation} "
            f"WHERE {where}) WHERE j.judge IS NOT NULL AND {_JUDGE_OK} ORDER BY 1 LIMIT 50"
        ).fetchall()
    ]
    judge_columns = {name: f"judge__{i}" for i, name in enumerate(judges)}
    per_judge = "".join(
        f", list_avg(list_transform(list_filter(judgments, lambda j: {_JUDGE_OK} AND "
        f"j.judge = {sql_literal(name)}), lambda j: {_judge_score('j')})) AS {col}"
        for name, col in judge_columns.items()
    )
    table = f"calipers_layered_{next(_staged_tables)}"
    stage_table(
        con,
        table,
        f"""
        SELECT run, task, sample_id, epoch,
               CASE WHEN f_total > 0 THEN 1.0 + 4.0 * f_passed / f_total END AS fact,
               CASE WHEN a_total - f_total > 0
                    THEN 1.0 + 4.0 * (a_passed - f_passed) / (a_total - f_total) END AS behavior,
               judge, human {"".join(", " + c for c in judge_columns.values())}
        FROM (
            SELECT run, task, sample_id, epoch,
                   {_weight_sum(fact_only=True, passed=False)} AS f_total,
                   {_weight_sum(fact_only=True, passed=True)} AS f_passed,
                   {_weight_sum(fact_only=False, passed=False)} AS a_total,
                   {_weight_sum(fact_only=False, passed=True)} AS a_passed,
                   list_avg(list_transform(list_filter(judgments, lambda j: {_JUDGE_OK}),
                            lambda j: {_judge_score("j")})) AS judge,
                   list_avg(list_transform(list_filter(human, lambda h: h.dimension IS NULL),
                            lambda h: h.score)) AS human
                   {per_judge}
            FROM {samples.relation} WHERE {where}
        )
        """,
    )
    notes: list[str] = []
    w = dict(weights)

    def raw(values: Mapping[str, FloatArray]) -> FloatArray:
        return weighted_mean(values, w)

    combine = raw
    if standardize:
        stats = con.execute(
            "SELECT " + ", ".join(f"avg({n}), stddev_samp({n})" for n in LAYERS) + f" FROM {table}"
        ).fetchall()[0]
        centre = {}
        for i, name in enumerate(LAYERS):
            mean, sd = stats[2 * i], stats[2 * i + 1]
            if mean is None:
                continue
            if not sd:
                notes.append(f"standardize: the {name} layer does not vary; its z-scores are 0")
            centre[name] = (float(mean), float(sd) if sd else 0.0)

        def combine(values: Mapping[str, FloatArray]) -> FloatArray:
            z = {}
            for name, x in values.items():
                if name in centre:
                    mean, sd = centre[name]
                    z[name] = (x - mean) / sd if sd > 0 else np.where(np.isfinite(x), 0.0, np.nan)
            return weighted_mean(z, w)

        notes.append(
            "standardize: each layer is z-scored over all compared samples before weighting; "
            "the composite is in standard deviations, gates still read the 1–5 layer means"
        )
    return StagedScores(
        con=con,
        table=table,
        components=LAYERS,
        combine=combine,
        raw_combine=raw,
        gated=True,
        judge_columns=judge_columns,
        human_column="human",
        notes=notes,
    )


@dataclass
class SummaryResult(SchemeResult):
    """Per-run summaries of a comparable scheme (layered or metric)."""

    runs: dict[str, RunSummary] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        body = self.header()
        body["runs"] = {name: r.to_dict() for name, r in self.runs.items()}
        return body

    def to_frame(self, level: str = "run") -> pd.DataFrame:
        """Levels: "run" (composite and each component) and "task" (composite per task)."""
        import pandas as pd  # lazily: only for callers who want a DataFrame

        rows: list[dict[str, Any]] = []
        for r in self.runs.values():
            if level == "run":
                row: dict[str, Any] = {"run": r.run, "n_samples": r.n_samples}
                row["composite"] = r.composite.mean
                row.update({name: c.mean for name, c in r.components.items()})
                rows.append(row)
            elif level == "task":
                rows.extend({"run": r.run, "task": t, **v} for t, v in r.tasks.items())
            else:
                raise InputError(f"unknown level '{level}' (run or task)")
        return pd.DataFrame(rows)


def summarize(
    staged: StagedScores,
    runs: list[str],
    *,
    scheme: str,
    origin: str,
    parameters: dict[str, Any],
    threshold: float,
    confidence_level: float,
    n_resamples: int,
    seed: int,
) -> SummaryResult:
    z = z_from_confidence(confidence_level)
    summaries = {
        run: summarize_run(
            staged,
            staged.fetch(run),
            threshold=threshold,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            seed=seed,
            z=z,
        )
        for run in runs
    }
    return SummaryResult(scheme, parameters, origin, list(staged.notes), summaries)


@register
class LayeredScheme(ComparableScheme):
    name = "layered"
    description = "fact / behavior / judge layers on 1–5 and their mean (seed 000)"
    required_fields = ("assertions", "judgments")
    higher_is_better = True

    def stage(
        self,
        samples: SampleSet,
        runs: list[str],
        *,
        weights: str | Mapping[str, float] | None = None,
        standardize: bool = False,
        **options: Any,
    ) -> StagedScores:
        reject_options(self.name, options)
        return stage_layers(samples, runs, weights=parse_weights(weights), standardize=standardize)

    def score(
        self,
        samples: SampleSet,
        *,
        weights: str | Mapping[str, float] | None = None,
        standardize: bool = False,
        threshold: float = DEFAULT_THRESHOLD,
        confidence_level: float = 0.95,
        n_resamples: int = 10_000,
        seed: int = DEFAULT_SEED,
        **options: Any,
    ) -> SummaryResult:
        reject_options(self.name, options)
        runs = samples.runs()
        w = parse_weights(weights)
        staged = stage_layers(samples, runs, weights=w, standardize=standardize)
        parameters = {
            "weights": w,
            "standardize": standardize,
            "threshold": threshold,
            "confidence_level": confidence_level,
            "n_resamples": n_resamples,
            "seed": seed,
        }
        return summarize(
            staged,
            runs,
            scheme=self.name,
            origin=samples.origin,
            parameters=parameters,
            threshold=threshold,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            seed=seed,
        )
