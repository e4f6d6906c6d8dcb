"""The units of a sequential comparison of one metric, staged in one query: each sample's value
per run and its arrival, grouped where the data live, instead of the scheme's generic staging
(every row fetched, numbered and sorted) and a second pass for the arrival order.

Why. `calipers watch` on a store of 2 × 500,000 samples spent most of its time before the first
look: the generic staging (one row per sample and epoch with integer codes from a join with the
numbered keys, then sorted: 0.7 s idle) and the arrival order (a window and a grouping over the
rows again: 0.2 s). A sequential comparison needs neither the rows nor their codes — only each
unit's value per run, in the order the units arrived — and one GROUP BY over the rows gives them
(benchmarks/README.md, "Sequential").

The same numbers, not nearly the same: this path is taken only where its units are provably the
ones the generic path makes (`calipers.verdicts.sequential_units.paired_units` over
`calipers.schemes.metric.stage_metric`) — the metric scheme's value, each sample at most one row
per run (one epoch: the unit's mean is its value, exactly), no sample naming a group, units by
sample, errors counted as missing, not by task — and everything else is left to the generic path
(`fast_metric_units` returns None). A unit's arrival is, as there, the position of its last row
of either run in the rows' written order (`row_number() OVER ()` over the same scan); the
positions of distinct samples differ, so sorting by them gives the generic path's stable sort.
tests/test_sequential_staging.py holds the two paths equal, array by array, on the inputs it
takes, and checks that it declines the others."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from calipers.data.files import sql_literal
from calipers.data.metric_scales import declared_bounds, parse_bounds
from calipers.verdicts.persample import ClusterChoice, resolve_cluster
from calipers.verdicts.sequential import PairedUnits, decide_sequentially, parse_design
from calipers.verdicts.sequential_compare import SequentialComparison, watch_parameters
from calipers.verdicts.sequential_units import ORDERS, is_binary, unit_permutation

if TYPE_CHECKING:
    from calipers.data.sampleset import SampleSet

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class StagedUnits:
    """What the generic path's staging tells a sequential comparison besides its units: the
    bounds and where they came from, the notes, the unit chosen and why."""

    units: list[PairedUnits]
    bounds: tuple[float, float]
    bounds_source: str
    notes: list[str]
    cluster: ClusterChoice


def _floats(column: Any) -> FloatArray:
    """A fetched DOUBLE column with NaN where NULL."""
    if isinstance(column, np.ma.MaskedArray):
        return np.asarray(np.ma.filled(column.astype(np.float64), np.nan), dtype=np.float64)
    return np.asarray(column, dtype=np.float64)


def fast_metric_units(
    samples: SampleSet,
    *,
    control: str,
    treatments: Sequence[str],
    metric: str | None,
    bounds: str | tuple[float, float] | None,
    cluster: str,
    errors: str,
    order: str,
    seed: int,
    by_task: bool,
) -> StagedUnits | None:
    """The metric scheme's sequential units of `treatments` against `control`, or None where
    the generic path must make them (see the module's docstring: it also raises every error)."""
    if not metric or errors != "missing" or by_task or cluster not in ("auto", "sample_id"):
        return None
    if order not in ORDERS:
        return None
    runs = [control, *treatments]
    rel, con = samples.relation, samples.con
    columns = [d[0] for d in con.execute(f"SELECT * FROM {rel} LIMIT 0").description]
    where = f"run IN ({', '.join(sql_literal(r) for r in runs)})"
    if (
        "group" in columns
        and con.execute(
            f'SELECT 1 FROM {rel} WHERE {where} AND "group" IS NOT NULL LIMIT 1'
        ).fetchall()
    ):
        return None  # groups: `auto` may cluster by them
    if ("correct" if metric == "correct" else "scores") not in columns or "epoch" not in columns:
        return None  # the generic path's error
    expr = "correct" if metric == "correct" else f"scores[{sql_literal(metric)}]"
    weighted = metric != "correct" and "score_weights" in columns
    per_run = []
    for i, r in enumerate(runs):
        mine = f"FILTER (WHERE run = {sql_literal(r)})"
        per_run.append(
            f"count(*) {mine} AS n{i}, max(pos) {mine} AS p{i}, any_value(epoch) {mine} AS e{i}, "
            f"any_value(v) {mine} AS v{i}"
        )
    # the weights only decide a note (a sequential decision weighs every unit alike)
    weights = (
        f", bool_and(coalesce(score_weights[{sql_literal(metric)}], 1.0)::DOUBLE = 1.0) AS unit_w"
        if weighted
        else ""
    )
    # the random order permutes the units in the sample codes' order, (task, sample_id) sorted;
    # the arrival order needs no sort here (the positions sort the units). A row without a task
    # or a sample_id has no sample code: the generic staging's join drops it, and so does this.
    sort = " ORDER BY task, sample_id" if order == "random" else ""
    found = con.execute(
        f"""
        WITH ordered AS (
            SELECT run, task, sample_id, epoch::BIGINT AS epoch, ({expr})::DOUBLE AS v,
                   {"score_weights, " if weighted else ""}row_number() OVER () AS pos
            FROM {rel} WHERE {where}
        )
        SELECT {", ".join(per_run)}{weights} FROM ordered GROUP BY task, sample_id
        HAVING task IS NOT NULL AND sample_id IS NOT NULL{sort}
        """
    ).fetchnumpy()
    counts = [np.asarray(found[f"n{i}"], dtype=np.int64) for i in range(len(runs))]
    if any(bool(np.any(c > 1)) for c in counts):
        return None  # epochs (a unit is a mean of several rows), or a row twice
    epochs = [np.ma.asarray(found[f"e{i}"]) for i in range(len(runs))]
    if any(
        bool(np.any(np.ma.getmaskarray(e) & (c == 1))) for e, c in zip(epochs, counts, strict=True)
    ):
        return None  # a row without an epoch
    if any(bool(np.any(np.ma.filled(e, 0) < 0)) for e in epochs):
        return None  # a negative epoch: the generic path's keys are (sample, epoch) codes
    values = [_floats(found[f"v{i}"]) for i in range(len(runs))]
    # stage_metric's checks, over every row of the runs (present or not in the other run)
    present = np.concatenate([v[c == 1] for v, c in zip(values, counts, strict=True)])
    finite = present[np.isfinite(present)]
    if not finite.size:
        return None  # the generic path says that no sample has the metric
    declared, source = declared_bounds(
        metric, parse_bounds(bounds), all_binary=bool(np.all((finite == 0) | (finite == 1)))
    )
    if declared is None or bool(np.any((finite < declared[0]) | (finite > declared[1]))):
        return None  # the generic path's errors: unbounded, or values outside the bounds
    notes = [f"metric: {metric}"]
    if weighted and not bool(np.all(np.asarray(found["unit_w"]))):
        notes.append(f"{metric}: each sample weighted by its score_weights (absent: 1)")
    # no sample names a group: the choice `resolve_cluster` makes for runs without groups
    choice = resolve_cluster([], cluster)
    lo, hi = float(declared[0]), float(declared[1])
    control_epoch = np.ma.filled(epochs[0].astype(np.int64), -1)
    found_units = []
    for k, treatment in enumerate(treatments, start=1):
        epoch = np.ma.filled(epochs[k].astype(np.int64), -1)
        both = (counts[0] == 1) & (counts[k] == 1) & (control_epoch == epoch)
        keep = np.flatnonzero(both & np.isfinite(values[0]) & np.isfinite(values[k]))
        # + 0.0: as the generic path's sums (a −0 unit is +0 there)
        base, cand = values[0][keep] + 0.0, values[k][keep] + 0.0
        if order == "arrival":
            last = np.maximum(_positions(found["p0"])[keep], _positions(found[f"p{k}"])[keep])
            rank = np.argsort(last, kind="stable")
        else:
            rank = unit_permutation(keep.size, seed)
        found_units.append(
            PairedUnits(
                control=control,
                treatment=treatment,
                task=None,
                baseline=base[rank],
                candidate=cand[rank],
                bounds=(lo, hi),
                binary=is_binary(base, cand, lo, hi),
            )
        )
    return StagedUnits(found_units, (lo, hi), source, notes, choice)


def _positions(column: Any) -> npt.NDArray[np.int64]:
    """A run's last position per sample (0 where the run lacks it)."""
    return np.asarray(np.ma.filled(np.ma.asarray(column).astype(np.int64), 0), dtype=np.int64)


def staged_comparison(
    staged: StagedUnits,
    *,
    scheme: str,
    origin: str,
    stage_parameters: dict[str, Any],
    higher_is_better: bool,
    design: str,
    n_planned: int | None,
    order: str,
    seed: int,
    every: int,
    margin: str | float | None,
    equivalence: bool,
    min_effect: float | None,
    by_task: bool,
) -> SequentialComparison:
    """The comparison `PairedScheme.watch` makes, from units staged here: the same decisions,
    parameters and notes (tests/test_sequential_staging.py compares the two documents)."""
    result = decide_sequentially(
        staged.units, design=parse_design(design, n_planned=n_planned), margin=margin,
        higher_is_better=higher_is_better, every=every, equivalence=equivalence,
        min_effect=min_effect,
    )  # fmt: skip
    parameters = watch_parameters(
        stage_parameters, design=design, n_planned=n_planned, order=order, seed=seed,
        every=every, cluster=staged.cluster, bounds=staged.bounds,
        bounds_source=staged.bounds_source, by_task=by_task, margin=margin,
    )  # fmt: skip
    notes = [*staged.notes, *([staged.cluster.note] if staged.cluster.note else [])]
    return SequentialComparison(scheme, origin, parameters, result, notes)
