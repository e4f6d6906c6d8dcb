"""The units of a sequential comparison, in the order they arrived.

A sequential decision looks at the data after every unit, so the order of the units is part of
the evidence: a confidence sequence is valid for any order that is fixed without looking at the
outcomes. Two orders are offered:

- `arrival` (the default): the order the rows were written — a file's line order, the store's
  insertion order (DuckDB keeps both: `row_number() OVER ()` over a plain scan follows them). A
  unit enters when its last row of either run has arrived, so a growing file is read as the run
  that writes it produced it, and a look never depends on rows still to come. This is the order a
  run that is still going has; it is valid as long as the writer did not order its rows by their
  outcomes (a file sorted by score is not an arrival order — use `random`).
- `random`: a permutation of the units drawn from `seed` (recorded in the report): the order of a
  replay of a finished pair whose file order may carry information.

A unit is what the fixed-n engine resamples: a sample with its epochs (their mean) or, with
`cluster="group"`, a group (the mean of its samples' means); a sample counts only when both runs
have it with a value (the like-with-like composite `match_rows` makes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from calipers.data.files import sql_literal
from calipers.errors import InputError
from calipers.verdicts.paired import match_rows
from calipers.verdicts.persample import cluster_labels
from calipers.verdicts.sequential import PairedUnits

if TYPE_CHECKING:
    from calipers.data.sampleset import SampleSet
    from calipers.verdicts.persample import StagedScores

ORDERS = ("arrival", "random")
FloatArray = npt.NDArray[np.float64]


def arrival_positions(samples: SampleSet, runs: Sequence[str]) -> dict[str, FloatArray]:
    """Per run, each sample code's position of arrival: the 1-based index, in the order the rows
    were written, of the sample's last row of that run (its last epoch to arrive); 0 where the
    run lacks the sample. Arrays indexed by the sample codes `stage_rows` gives."""
    where = f"run IN ({', '.join(sql_literal(r) for r in runs)})"
    # One row per sample key in the keys' sorted order — row i is the sample code i, as
    # `sample_keys_sql` numbers them — with each run's last position as a column: no join with
    # the numbered keys (a third of a second on 1M rows, where this takes a tenth).
    columns = ", ".join(
        f"max(pos) FILTER (WHERE run = {sql_literal(r)}) AS p{i}" for i, r in enumerate(runs)
    )
    found = samples.con.execute(
        f"""
        WITH ordered AS (
            SELECT run, task, sample_id, row_number() OVER () AS pos
            FROM {samples.relation} WHERE {where}
        )
        SELECT {columns} FROM ordered GROUP BY task, sample_id ORDER BY task, sample_id
        """
    ).fetchnumpy()
    out: dict[str, FloatArray] = {}
    for i, run in enumerate(runs):
        col = found[f"p{i}"]
        values = np.ma.filled(col.astype(np.float64), 0.0) if np.ma.isMaskedArray(col) else col
        out[run] = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=0.0)
    return out


def _codes(x: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """`np.unique(x, return_inverse=True)` — without the sort when x is already sorted, as the
    staged rows are (by sample): a third of the units' cost on a million rows."""
    if x.size and bool(np.all(x[1:] >= x[:-1])):
        new = np.empty(x.size, dtype=bool)
        new[0] = True
        np.not_equal(x[1:], x[:-1], out=new[1:])
        return x[new], np.cumsum(new) - 1
    values, inverse = np.unique(x, return_inverse=True)
    return values, inverse.reshape(-1)


def _unit_groups(
    samples: npt.NDArray[np.int64], units: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The rows' grouping into samples and the samples' into units, shared by both arms: the
    unit codes (sorted), each row's sample index and each sample's unit index."""
    _, sample_of_row = _codes(samples)
    if bool(np.all(sample_of_row[1:] >= sample_of_row[:-1])):  # sorted: a sample's first row
        first_row = np.flatnonzero(np.diff(sample_of_row, prepend=-1))
    else:
        first_row = np.unique(sample_of_row, return_index=True)[1]
    unit_codes, unit_of_sample = _codes(units[first_row])
    return unit_codes, sample_of_row, unit_of_sample


def _unit_means(values: FloatArray, sample_of_row: npt.NDArray[np.int64],
                unit_of_sample: npt.NDArray[np.int64]) -> FloatArray:  # fmt: skip
    """Each unit's mean of its samples' means (a sample's epochs averaged first)."""
    sample_means = np.bincount(sample_of_row, weights=values) / np.bincount(sample_of_row)
    means = np.bincount(unit_of_sample, weights=sample_means) / np.bincount(unit_of_sample)
    return np.asarray(means, dtype=np.float64)


def paired_units(
    staged: StagedScores,
    samples: SampleSet,
    *,
    control: str,
    treatments: Sequence[str],
    cluster: str,
    order: str = "arrival",
    seed: int = 0,
    by_task: bool = False,
    named: bool = False,
) -> list[PairedUnits]:
    """One `PairedUnits` per treatment (per treatment and task with `by_task`): the units both
    runs have, in `order`. The composite's declared bounds are required: the anytime-valid
    sequences are betting sequences on a bounded scale. `named`: give each unit its name
    ("task/sample_id"; one query, worth it for a batch, not for a million units)."""
    if order not in ORDERS:
        raise InputError(
            f"unknown order '{order}'",
            hint="Order the units by arrival (the order the rows were written) or random "
            "(a seeded permutation).",
            parameters=["order"],
        )
    if cluster == "task":
        raise InputError(
            "a sequential comparison cannot use tasks as its units",
            hint="Cluster by sample_id or group: a sequence needs units that arrive one by one.",
            parameters=["cluster"],
        )
    if staged.bounds is None:
        raise InputError(
            "a sequential comparison needs the scale's bounds, and the compared value has none "
            "declared",
            hint="Give them with --bounds LOW,HIGH (the metric's possible range, not the range "
            "seen): the anytime-valid sequences bet on a bounded scale.",
            parameters=["bounds"],
        )
    lo, hi = (float(b) for b in staged.bounds)
    positions = arrival_positions(samples, [control, *treatments]) if order == "arrival" else None
    names = staged.names
    found: list[PairedUnits] = []
    for treatment in treatments:
        matched = match_rows(staged, control, treatment)
        c_run = staged.fetch(control)
        keep = np.isfinite(matched.control) & np.isfinite(matched.treatment)
        rows_c = matched.ic[keep]
        sid = c_run.sid[rows_c]
        units = cluster_labels(c_run, rows_c, cluster)
        tasks = c_run.task_code[rows_c]
        for task_code in np.unique(tasks) if by_task else [None]:
            sel = np.ones(sid.size, bool) if task_code is None else tasks == task_code
            codes, of_row, of_sample = _unit_groups(sid[sel], units[sel])
            base = _unit_means(matched.control[keep][sel], of_row, of_sample)
            cand = _unit_means(matched.treatment[keep][sel], of_row, of_sample)
            if positions is not None:
                # a unit arrives with its last sample's last row, in either run
                last = np.maximum(positions[control][sid[sel]], positions[treatment][sid[sel]])
                arrived = np.zeros(codes.size, dtype=np.float64)
                np.maximum.at(arrived, np.searchsorted(codes, units[sel]), last)
                rank = np.argsort(arrived, kind="stable")
            else:
                rank = unit_permutation(codes.size, seed)
            unit_names = _unit_names(codes[rank], cluster, names) if named else ()
            found.append(
                PairedUnits(
                    control=control,
                    treatment=treatment,
                    task=None if task_code is None else staged.tasks[int(task_code)],
                    baseline=base[rank],
                    candidate=cand[rank],
                    bounds=(lo, hi),
                    binary=is_binary(base, cand, lo, hi),
                    unit_ids=unit_names,
                )
            )
    return found


def unit_permutation(n: int, seed: int) -> npt.NDArray[np.int64]:
    """The random order of n units sorted by name, drawn from `seed`: the one `watch --order
    random` and `run --stop` share, so a stopped run replays to the same stop."""
    return np.random.default_rng(seed).permutation(n).astype(np.int64)


def is_binary(base: FloatArray, cand: FloatArray, lo: float, hi: float) -> bool:
    """Pass/fail units: 0/1 outcomes on a 0–1 scale, every unit one or the other."""
    both = np.concatenate([base, cand])
    return (lo, hi) == (0.0, 1.0) and bool(both.size) and bool(np.all((both == lo) | (both == hi)))


def _unit_names(codes: npt.NDArray[np.int64], cluster: str, names: object) -> tuple[str, ...]:
    """Readable unit names where the staging can give them ("task/sample_id"), else the codes."""
    if cluster == "sample_id" and callable(names):
        known = names([int(c) for c in codes])
        return tuple(str(known.get(int(c), c)) for c in codes)
    return tuple(f"{cluster} {int(c)}" for c in codes)
