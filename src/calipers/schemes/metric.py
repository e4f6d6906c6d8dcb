"""One named per-sample metric — `scores{NAME}` or `correct` — as a mean with its interval.

For results imported from other harnesses (accuracy, f1, exact_match, …): the same summary and the
same paired comparison as the layered scheme, without layers or gates. A sample without the metric
is missing, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from calipers.data.files import sql_literal
from calipers.data.source import SampleSet
from calipers.errors import InputError
from calipers.schemes.base import ComparableScheme, reject_options
from calipers.schemes.layered import SummaryResult, summarize
from calipers.schemes.persample import FloatArray, StagedScores, as_floats, stage_rows
from calipers.schemes.registry import register
from calipers.stats import DEFAULT_SEED


def _value(values: Mapping[str, FloatArray]) -> FloatArray:
    return values["value"]


def available_metrics(samples: SampleSet) -> list[str]:
    rows = samples.con.execute(
        f"SELECT DISTINCT unnest(map_keys(scores)) FROM {samples.relation} ORDER BY 1"
    ).fetchall()
    names = [r[0] for r in rows]
    has_correct = samples.con.execute(f"SELECT count(correct) FROM {samples.relation}").fetchall()[
        0
    ][0]
    return (["correct"] if has_correct else []) + names


def stage_metric(samples: SampleSet, runs: list[str], *, metric: str | None) -> StagedScores:
    if not metric:
        raise InputError(
            "the metric scheme needs --metric NAME",
            hint=f"Metrics in {samples.origin}: {', '.join(available_metrics(samples)) or 'none'}.",
        )
    expr = "correct" if metric == "correct" else f"scores[{sql_literal(metric)}]"
    rows = stage_rows(samples, runs, {"value": f"({expr})::DOUBLE"})
    value = as_floats(rows.columns["value"])
    if not np.isfinite(value).any():
        raise InputError(
            f"no sample in {samples.origin} has the metric '{metric}'",
            hint=f"Metrics there: {', '.join(available_metrics(samples)) or 'none'}.",
        )
    return StagedScores(
        runs=rows.run_arrays({"value": value}),
        tasks=rows.tasks,
        components=("value",),
        combine=_value,
        raw_combine=_value,
        gated=False,
        notes=[f"metric: {metric}"],
    )


@register
class MetricScheme(ComparableScheme):
    name = "metric"
    description = "the mean of one per-sample metric (scores{NAME} or correct) with its interval"
    required_fields = ("scores",)
    higher_is_better = True

    def stage(
        self, samples: SampleSet, runs: list[str], *, metric: str | None = None, **options: Any
    ) -> StagedScores:
        reject_options(self.name, options)
        return stage_metric(samples, runs, metric=metric)

    def score(
        self,
        samples: SampleSet,
        *,
        metric: str | None = None,
        confidence_level: float = 0.95,
        n_resamples: int = 10_000,
        seed: int = DEFAULT_SEED,
        **options: Any,
    ) -> SummaryResult:
        reject_options(self.name, options)
        runs = samples.runs()
        staged = stage_metric(samples, runs, metric=metric)
        parameters = {
            "metric": metric,
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
            threshold=float("nan"),
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            seed=seed,
        )
