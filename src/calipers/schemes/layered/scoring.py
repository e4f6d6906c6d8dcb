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

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from calipers.data import layer_inputs
from calipers.data.duck import ordered, position_in
from calipers.data.files import sql_literal
from calipers.data.model import FACT_ASSERTIONS, layer_case
from calipers.data.sampleset import SampleSet
from calipers.errors import InputError
from calipers.schemes.base import SchemeResult
from calipers.stats import z_from_confidence
from calipers.verdicts.missing_bounds import errored_rows
from calipers.verdicts.persample import (
    FloatArray,
    StagedRows,
    StagedScores,
    as_floats,
    resolve_cluster,
    stage_rows,
)
from calipers.verdicts.ranking import rank_runs
from calipers.verdicts.run_summary import RunSummary, summarize_run
from calipers.verdicts.sample_codes import codes_keys
from calipers.verdicts.threads import THREADED_RUN_ROWS

if TYPE_CHECKING:
    import pandas as pd

LAYERS = ("fact", "behavior", "judge")


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
                    f"`weights`: '{part}' is not LAYER=NUMBER",
                    parameters=["weights"],
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
                f"`weights`: unknown layer '{name}'",
                hint="Layers: fact, behavior, judge.",
                parameters=["weights"],
            )
        try:
            weight = float(raw_value)
        except (TypeError, ValueError):
            raise InputError(
                f"`weights`: {name}={raw_value!r} is not a number", parameters=["weights"]
            ) from None
        if not np.isfinite(weight) or weight < 0:
            raise InputError(
                f"`weights`: {name}={raw_value} must be a finite number ≥ 0", parameters=["weights"]
            )
        weights[name] = weight
    if not any(weights.values()):
        raise InputError(
            "`weights`: at least one layer needs a positive weight", parameters=["weights"]
        )
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


_SCALE_TOLERANCE = 1e-9  # rescaling a score at a bound of its scale may land a hair outside 1–5
_SLOTS, _BITS, _MAX_PACKED = layer_inputs.SLOTS, layer_inputs.BITS, layer_inputs.MAX_PACKED
_JUDGE_OK, _IN_SCALE = layer_inputs.JUDGE_OK, layer_inputs.IN_SCALE


def _weight_sum(*, fact_only: bool, passed: bool) -> str:
    conds = [f"a.type IN ({', '.join(repr(t) for t in FACT_ASSERTIONS)})"] if fact_only else []
    conds += ["a.passed"] if passed else []
    value = "coalesce(a.weight, 1.0)"
    body = f"CASE WHEN {' AND '.join(conds)} THEN {value} ELSE 0.0 END" if conds else value
    return f"list_sum(list_transform(assertions, lambda a: {body}))"


def _raise_bad_input(samples: SampleSet, where: str) -> None:
    """Find the first sample with an unknown assertion type, an ungraded assertion or a judge score
    off its scale, and say which (only runs when staging saw one)."""
    rel = samples.relation
    unknown = samples.con.execute(
        f"SELECT run, task, sample_id, epoch, a.type FROM (SELECT run, task, sample_id, epoch, "
        f"unnest(assertions) AS a FROM {rel} WHERE {where}) "
        f"WHERE coalesce({layer_case('a')}, 'unknown') = 'unknown' LIMIT 1"
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
        f"SELECT run, task, sample_id, epoch, j.score, coalesce(j.scale_min, 1.0), "
        f"coalesce(j.scale_max, 5.0) FROM (SELECT run, task, sample_id, epoch, "
        f"unnest(judgments) AS j FROM {rel} WHERE {where}) WHERE {_JUDGE_OK} AND NOT {_IN_SCALE} "
        "LIMIT 1"
    ).fetchall()
    if off_scale:
        r = off_scale[0]
        scale = "the default 1–5 scale" if (r[5], r[6]) == (1.0, 5.0) else "its scale"
        raise InputError(
            f"judge score {r[4]} is outside {scale} {r[5]:g}–{r[6]:g} in sample "
            f"(run={r[0]}, task={r[1]}, sample_id={r[2]}, epoch={r[3]})",
            hint="Give the judgment's scale_min and scale_max.",
        )
    raise InputError(f"{samples.origin}: an assertion or judgment could not be read")


def _layer(passed: npt.ArrayLike, total: npt.ArrayLike) -> FloatArray:
    p, t = np.asarray(passed, dtype=np.float64), np.asarray(total, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(t > 0, 1.0 + 4.0 * p / t, np.nan)


def _assertion_layers(
    samples: SampleSet, runs: list[str], rows: StagedRows
) -> dict[str, FloatArray]:
    packed = np.asarray(np.ma.filled(rows.columns["packed"], 0), dtype=np.int64)
    slot = {name: (packed >> (_BITS * i)) & _MAX_PACKED for i, name in enumerate(_SLOTS)}
    n_assertions = np.asarray(np.ma.filled(rows.columns["n_assertions"], 0), dtype=np.int64)
    if slot["bad"].any():
        _raise_bad_input(samples, f"run IN ({', '.join(sql_literal(r) for r in runs)})")
    if not slot["weighted"].any() and n_assertions.max(initial=0) <= _MAX_PACKED:
        fact_total = slot["fact_passed"] + slot["fact_failed"]
        behavior_total = slot["behavior_passed"] + slot["behavior_failed"]
        return {
            "fact": _layer(slot["fact_passed"], fact_total),
            "behavior": _layer(slot["behavior_passed"], behavior_total),
        }
    # Every type is known by now, so behavior = all − fact: two passes fewer.
    weighted = stage_rows(
        samples,
        runs,
        {
            "f_total": _weight_sum(fact_only=True, passed=False),
            "f_passed": _weight_sum(fact_only=True, passed=True),
            "a_total": _weight_sum(fact_only=False, passed=False),
            "a_passed": _weight_sum(fact_only=False, passed=True),
        },
    )
    col = {k: np.nan_to_num(as_floats(v)) for k, v in weighted.columns.items()}
    return {
        "fact": _layer(col["f_passed"], col["f_total"]),
        "behavior": _layer(col["a_passed"] - col["f_passed"], col["a_total"] - col["f_total"]),
    }


def _stage_summaries(
    samples: SampleSet, runs: list[str], summarised: Mapping[str, layer_inputs.RunSummaries]
) -> tuple[list[str | None], StagedRows]:
    """The staged rows from the summaries written with the samples (calipers.data.layer_inputs):
    the same columns as from the nested lists, without a pass over them. A judge a run lacks is
    NULL there, as its empty list is on the nested path."""
    judged = {run: s.judges for run, s in summarised.items()}
    named = sorted({j for js in judged.values() for j in js if j is not None})
    judges: list[str | None] = [*named, *([None] if any(None in js for js in judged.values())
                                          else [])]  # fmt: skip
    where = f"run IN ({', '.join(sql_literal(r) for r in runs)})"
    view = "compared_layer_inputs"
    samples.con.execute(
        f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM layer_inputs WHERE {where}"
    )
    expressions = {"packed": "packed", "n_assertions": "n_assertions", "human": "human"}
    for i, judge in enumerate(judges):
        # where every run lists the judge at the same place, read that place: a CASE over 100
        # runs costs more than the rest of the query (0.6 s against 0.2 s on 100 × 10,000)
        at = {js.index(judge) + 1 if judge in js else 0 for js in judged.values()}
        for agg in layer_inputs.JUDGE_AGGREGATES:
            if len(at) == 1 and 0 not in at:
                expressions[f"judge_{i}_{agg}"] = f"judge_{agg}[{min(at)}]"
                continue
            cases = " ".join(
                f"WHEN {sql_literal(run)} THEN judge_{agg}[{js.index(judge) + 1}]"
                for run, js in judged.items()
                if judge in js
            )
            expressions[f"judge_{i}_{agg}"] = f"CASE run {cases} END"
    digests = {s.keys for s in summarised.values()}
    grouped = samples.con.execute(
        f'SELECT 1 FROM {view} WHERE "group" IS NOT NULL LIMIT 1'
    ).fetchall()
    if len(digests) == 1 and None not in digests and not grouped:
        rows = _same_keys(samples, view, runs, expressions)
    else:
        rows = stage_rows(SampleSet(samples.con, view, samples.origin), runs, expressions)
    rows.samples = samples  # sample names come from the samples themselves
    # numbered in (task, sample_id) order over the runs either way: their names read by key
    sid = rows.columns["sid"]
    keys = codes_keys(samples.con, runs) if sid.size else None
    # one key per code, or the strings answer
    rows.store_keys = keys if keys is not None and keys.size == int(sid.max()) + 1 else None
    return judges, rows


def _same_keys(
    samples: SampleSet, view: str, runs: list[str], expressions: Mapping[str, str]
) -> StagedRows:
    """`stage_rows` for runs with the same (task, sample_id) keys and no groups: each run's key
    and task ranks, stored with the summaries, are the codes `stage_rows` would number over the
    union — with no join over the rows. Each run's summaries are stored in (task, sample_id,
    epoch) order, which a scan keeps within a run; the rows are sorted where it does not."""
    exprs = "".join(f', {sql} AS "{name}"' for name, sql in expressions.items())
    columns = samples.con.execute(
        f"SELECT {position_in('run', runs)}::INTEGER AS run_code, key_rank AS sid, "
        f"task_rank AS task_code, epoch::BIGINT AS epoch{exprs} FROM {view}"
    ).fetchnumpy()
    columns = ordered(columns, ("run_code", "sid", "epoch"))  # a scan interleaves the runs
    code = np.asarray(columns["run_code"], dtype=np.int64)
    columns["sid"] = np.asarray(columns["sid"], dtype=np.int64)
    columns["epoch"] = np.asarray(columns["epoch"], dtype=np.int64)
    columns["task_code"] = np.asarray(columns["task_code"], dtype=np.int64)
    columns["group_code"] = np.full(code.size, -1, dtype=np.int64)
    bounds = np.searchsorted(code, np.arange(len(runs) + 1))
    spans = {r: slice(int(bounds[i]), int(bounds[i + 1])) for i, r in enumerate(runs)}
    tasks = [r[0] for r in samples.con.execute(f"SELECT DISTINCT task FROM {view} ORDER BY 1")
             .fetchall()]  # fmt: skip
    return StagedRows(columns, spans, tasks, samples, list(runs))


def stage_layers(
    samples: SampleSet,
    runs: list[str],
    *,
    weights: Mapping[str, float],
    standardize: bool,
) -> StagedScores:
    """Each sample of `runs` with its fact, behavior and judge layers (NaN = missing)."""
    where = f"run IN ({', '.join(sql_literal(r) for r in runs)})"
    summarised = layer_inputs.current(samples.con, runs) if samples.whole_runs else None
    if summarised is not None:
        judges, rows = _stage_summaries(samples, runs, summarised)
    else:
        judges = layer_inputs.judge_names(samples.con, samples.relation, where)
        expressions = {"packed": layer_inputs.packed_assertions(),
                       "n_assertions": layer_inputs.N_ASSERTIONS,
                       "human": layer_inputs.HUMAN_OVERALL}  # fmt: skip
        lists = {f"judge_{i}": layer_inputs.judge_scores(name) for i, name in enumerate(judges)}
        for i in range(len(judges)):
            # One transform per judge, cheap aggregates over it. A rescaled score outside 1–5 is
            # a score off its scale: min and max catch it without another pass.
            for agg in layer_inputs.JUDGE_AGGREGATES:
                expressions[f"judge_{i}_{agg}"] = layer_inputs.judge_aggregate(f"judge_{i}", agg)
        rows = stage_rows(samples, runs, expressions, lists=lists)
    values = _assertion_layers(samples, runs, rows)
    n = rows.columns["sid"].size
    judge_sum, judge_count = np.zeros(n), np.zeros(n)
    repeat_ss, repeat_df = np.zeros(n), np.zeros(n)
    per_judge: dict[str, FloatArray] = {}
    for i, name in enumerate(judges):
        col = {agg: as_floats(rows.columns[f"judge_{i}_{agg}"]) for agg in ("sum", "min", "max")}
        low, high = np.nanmin(col["min"], initial=1.0), np.nanmax(col["max"], initial=5.0)
        if low < 1.0 - _SCALE_TOLERANCE or high > 5.0 + _SCALE_TOLERANCE:
            _raise_bad_input(samples, where)
        count = np.nan_to_num(as_floats(rows.columns[f"judge_{i}_count"]))
        total = np.nan_to_num(col["sum"])
        judge_sum += total
        judge_count += count
        squares = np.nan_to_num(as_floats(rows.columns[f"judge_{i}_ss"]))
        several = count >= 2
        with np.errstate(invalid="ignore", divide="ignore"):
            repeat_ss += np.where(several, squares - total * total / np.maximum(count, 1), 0.0)
        repeat_df += np.where(several, count - 1, 0.0)
        if name is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                per_judge[name] = np.where(count > 0, total / count, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        values["judge"] = np.where(judge_count > 0, judge_sum / judge_count, np.nan)
    human = as_floats(rows.columns["human"])
    notes: list[str] = []
    w = dict(weights)

    def raw(layers: Mapping[str, FloatArray]) -> FloatArray:
        return weighted_mean(layers, w)

    combine = raw
    if standardize:
        centre = {}
        for name in LAYERS:
            x = values[name][np.isfinite(values[name])]
            if x.size == 0:
                continue
            sd = float(np.std(x, ddof=1)) if x.size > 1 else 0.0
            if not sd:
                notes.append(f"standardize: the {name} layer does not vary; its z-scores are 0")
            centre[name] = (float(x.mean()), sd)

        def combine(layers: Mapping[str, FloatArray]) -> FloatArray:
            z = {}
            for name, x in layers.items():
                if name in centre:
                    mean, sd = centre[name]
                    z[name] = (x - mean) / sd if sd > 0 else np.where(np.isfinite(x), 0.0, np.nan)
            return weighted_mean(z, w)

        notes.append(
            "standardize: each layer is z-scored over all compared samples before weighting; "
            "the composite is in standard deviations, gates still read the 1–5 layer means"
        )
    return StagedScores(
        runs=rows.run_arrays(
            {name: values[name] for name in LAYERS},
            per_judge if len(per_judge) >= 2 else {},
            human,
            judge_repeats=(np.maximum(repeat_ss, 0.0), repeat_df) if repeat_df.any() else None,
            errored=errored_rows(rows),
        ),
        tasks=rows.tasks,
        components=LAYERS,
        combine=combine,
        raw_combine=raw,
        gated=True,
        notes=notes,
        span=None if standardize else 4.0,  # layers live on 1–5; z-scores have no fixed scale
        bounds=None if standardize else (1.0, 5.0),
        bounds_source=(
            "standardized layers (z-scores) have no bounds"
            if standardize
            else "the layered scheme: every layer lies on 1–5"
        ),
        names=rows.names,
    )


def value_label(scheme: str, parameters: Mapping[str, Any]) -> str:
    """What the per-run value is called where it is shown: the layered composite, or the metric
    scheme's metric by its name ("value" when none is recorded). JSON keys stay `composite`."""
    if scheme == "metric":
        return str(parameters.get("metric") or "value")
    return "composite"


@dataclass(repr=False)  # the readable repr of the base class
class SummaryResult(SchemeResult):
    """Per-run summaries of a comparable scheme (layered or metric)."""

    runs: dict[str, RunSummary] = field(default_factory=dict)
    # rank intervals and tie groups over the samples every run has (`verdicts.ranking`)
    ranking: dict[str, Any] | None = None
    # --calibrate-judges: each run's judge layer corrected by its human labels (PPI++)
    judge_calibration: dict[str, Any] | None = None
    # runs without any value (the metric, or every layer): listed, not scored or ranked
    lacking: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        body = self.header()
        body["runs"] = {name: r.to_dict() for name, r in self.runs.items()}
        body["ranking"] = self.ranking
        if self.judge_calibration is not None:
            body["judge_calibration"] = self.judge_calibration
        if self.lacking:
            body["lacking"] = list(self.lacking)
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
    interval: str = "auto",
    cluster: str = "auto",
) -> SummaryResult:
    """Each run's summary, clustered by one unit for all of them (`resolve_cluster`), recorded
    in `parameters` as `cluster` and `cluster_reason`."""
    z = z_from_confidence(confidence_level)
    choice = resolve_cluster([staged.fetch(run) for run in runs], cluster)
    cluster = choice.cluster
    parameters = {**parameters, "cluster": cluster, "cluster_reason": choice.reason}

    # The runs' summaries and the ranking side by side, as a comparison makes its summaries
    # (`compare_staged`): numpy releases the GIL in their array work and in the ranking's
    # resampling (most of it), and each has its own seeded generator, so the results do not
    # depend on the scheduling. The summaries of small runs are made one after another beside
    # the ranking: numpy's calls on them are too short to release the GIL for long, and threads
    # cost more than they give (100 runs × 10,000 samples, 2 cores, 2026-11-27: a leaderboard
    # 0.67–0.88 s and 1.17–1.40 s of CPU on 4 threads).
    def summary(run: str) -> RunSummary:
        return summarize_run(
            staged, staged.fetch(run), threshold=threshold, confidence_level=confidence_level,
            n_resamples=n_resamples, seed=seed, z=z, interval=interval, cluster=cluster,
        )  # fmt: skip

    rows = sum(staged.fetch(run).sid.size for run in runs) / max(len(runs), 1)
    threaded = rows >= THREADED_RUN_ROWS
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1) if threaded else 1) as pool:
        ranked = pool.submit(rank_runs, staged, runs, confidence_level=confidence_level,
                             seed=seed)  # fmt: skip
        if threaded:
            made = {run: pool.submit(summary, run) for run in runs}
            summaries = {run: future.result() for run, future in made.items()}
        else:
            summaries = {run: summary(run) for run in runs}
        ranking, why = ranked.result()
    notes = list(staged.notes) + [n for n in (choice.note, why) if n]
    return SummaryResult(scheme, parameters, origin, notes, summaries, ranking)
