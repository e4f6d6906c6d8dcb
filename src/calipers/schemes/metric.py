"""One named per-sample metric — `scores{NAME}` or `correct` — as a mean with its interval.

For results imported from other harnesses (accuracy, f1, exact_match, …): the same summary and the
same paired comparison as the layered scheme, without layers or gates. A sample without the metric
is missing, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from calipers.data.files import sql_literal
from calipers.data.metric_scales import declared_bounds, parse_bounds
from calipers.data.sampleset import SampleSet
from calipers.errors import InputError
from calipers.schemes.base import Scoring
from calipers.schemes.layered import PairedCompareOptions, PairedOptions, PairedScheme
from calipers.schemes.registry import register
from calipers.verdicts.missing_bounds import errored_rows
from calipers.verdicts.persample import FloatArray, StagedScores, as_floats, stage_rows

if TYPE_CHECKING:
    from calipers.data.store import Store
    from calipers.verdicts.sequential_compare import SequentialComparison

METRICS_SHOWN = 6  # metric sections of the store report at most, in name order


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


def stage_metric(
    samples: SampleSet,
    runs: list[str],
    *,
    metric: str | None,
    bounds: str | tuple[float, float] | None = None,
    extra: Mapping[str, str] | None = None,
) -> StagedScores:
    """The metric's values per sample, with its declared bounds (`calipers.data.metric_scales`:
    given, known for the metric's name, or 0/1 values; else unbounded). `extra`: more columns
    (name → SQL) read with the rows and kept in the result's `rows` for a later reader."""
    if not metric:
        raise InputError(
            "the metric scheme needs `metric`: the name of a per-sample score",
            hint=f"Metrics in {samples.origin}: {', '.join(available_metrics(samples)) or 'none'}.",
            parameters=["metric"],
        )
    expr = "correct" if metric == "correct" else f"scores[{sql_literal(metric)}]"
    expressions = {"value": f"({expr})::DOUBLE"}
    query = samples.con.execute(f"SELECT * FROM {samples.relation} LIMIT 0")
    columns = [d[0] for d in query.description]
    if metric != "correct" and "score_weights" in columns:  # a store before 0008 has none
        expressions["weight"] = f"coalesce(score_weights[{sql_literal(metric)}], 1.0)::DOUBLE"
    rows = stage_rows(samples, runs, {**(extra or {}), **expressions})
    value = as_floats(rows.columns["value"])
    weight = as_floats(rows.columns["weight"]) if "weight" in rows.columns else None
    if weight is not None and np.all(weight == 1.0):
        weight = None
    if not np.isfinite(value).any():
        raise InputError(
            f"no sample in {samples.origin} has the metric '{metric}'",
            hint=f"Metrics there: {', '.join(available_metrics(samples)) or 'none'}.",
        )
    finite = value[np.isfinite(value)]
    declared, source = declared_bounds(
        metric, parse_bounds(bounds), all_binary=bool(np.all((finite == 0) | (finite == 1)))
    )
    if declared is not None:
        outside = (finite < declared[0]) | (finite > declared[1])
        if outside.any():
            raise InputError(
                f"{int(outside.sum())} value(s) of '{metric}' in {samples.origin} lie outside its "
                f"bounds [{declared[0]:g}, {declared[1]:g}] ({source}); the first: "
                f"{finite[outside][0]:g}",
                hint="Declare the metric's true bounds with --bounds LOW,HIGH.",
                parameters=["bounds"],
            )
    return StagedScores(
        bounds=declared,
        bounds_source=source,
        runs=rows.run_arrays({"value": value}, weight=weight, errored=errored_rows(rows)),
        names=rows.names,
        rows=rows if extra else None,
        tasks=rows.tasks,
        components=("value",),
        combine=_value,
        raw_combine=_value,
        gated=False,
        notes=[f"metric: {metric}"]
        + (
            [f"{metric}: each sample weighted by its score_weights (absent: 1)"]
            if weight is not None
            else []
        ),
    )


def _bounds_given(options: MetricOptions) -> list[float] | None:
    given = parse_bounds(options.bounds)
    return None if given is None else list(given)


class MetricOptions(PairedOptions):
    metric: str | None = None  # a key of `scores`, or `correct`
    # the metric's bounds, "LOW,HIGH" or a pair (None: known for its name, 0/1, or unbounded)
    bounds: str | tuple[float, float] | None = None


class MetricCompareOptions(MetricOptions, PairedCompareOptions):
    pass


@register
class MetricScheme(PairedScheme):
    name = "metric"
    description = "the mean of one per-sample metric (scores{NAME} or correct) with its interval"
    required_fields = ("scores",)
    higher_is_better = True
    Options = MetricOptions
    CompareOptions = MetricCompareOptions
    report_schema = "metric"
    compare_report_schema = "compare"

    def stage(self, samples: SampleSet, runs: list[str], options: MetricOptions) -> StagedScores:
        return stage_metric(samples, runs, metric=options.metric, bounds=options.bounds)

    def stage_parameters(self, options: MetricOptions) -> dict[str, Any]:
        return {"metric": options.metric, "bounds": _bounds_given(options)}

    def watch(
        self,
        samples: SampleSet,
        *,
        baseline: str,
        candidates: list[str],
        design: str = "sequence",
        n_planned: int | None = None,
        order: str = "arrival",
        every: int = 1,
        **options: Any,
    ) -> SequentialComparison:
        """`PairedScheme.watch`, with the units staged in one query where that gives the same
        units (`calipers.verdicts.sequential_staging`: one row per sample and run, no groups, by
        sample; 2 × 500,000 samples staged in a third of the time); elsewhere, and for every
        error, the generic staging."""
        from calipers.verdicts.compare import check_runs
        from calipers.verdicts.sequential_staging import fast_metric_units, staged_comparison

        o: Any = self.compare_options(**options)
        if candidates:
            check_runs(samples.runs(), samples.origin, baseline, list(candidates))
            staged = fast_metric_units(
                samples, control=baseline, treatments=list(candidates), metric=o.metric,
                bounds=o.bounds, cluster=o.cluster, errors=o.errors, order=order, seed=o.seed,
                by_task=bool(o.by_task),
            )  # fmt: skip
            if staged is not None:
                return staged_comparison(
                    staged, scheme=self.name, origin=samples.origin,
                    stage_parameters=self.stage_parameters(o),
                    higher_is_better=bool(self.higher_is_better), design=design,
                    n_planned=n_planned, order=order, seed=o.seed, every=every, margin=o.margin,
                    equivalence=o.equivalence, min_effect=o.min_effect, by_task=bool(o.by_task),
                )  # fmt: skip
        return super().watch(
            samples, baseline=baseline, candidates=candidates, design=design,
            n_planned=n_planned, order=order, every=every, **options,
        )  # fmt: skip

    def summary_parameters(self, options: MetricOptions) -> dict[str, Any]:
        return {"metric": options.metric, "bounds": _bounds_given(options)}

    def report_scorings(self, store: Store, filled: dict[str, dict[str, int]]) -> list[Scoring]:
        """One section per metric the store has (`correct` and each key of `scores`), at most
        METRICS_SHOWN, in name order."""
        by_metric: dict[str, list[str]] = {}
        for run, fields in filled.items():
            if fields.get("correct"):
                by_metric.setdefault("correct", []).append(run)
        rows = store.con.execute(
            "SELECT DISTINCT unnest(map_keys(scores)) AS metric, run FROM samples "
            "ORDER BY metric, run"
        ).fetchall()
        for metric, run in rows:
            by_metric.setdefault(metric, []).append(run)
        names = sorted(by_metric)[:METRICS_SHOWN]
        if not names:
            return [Scoring("metric", [], {}, "no run has scores or correct")]
        return [
            Scoring(f"metric:{m}" if len(names) > 1 else "metric", by_metric[m], {"metric": m})
            for m in names
        ]
