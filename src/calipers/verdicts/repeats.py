"""A run's repeats, as `score` and `compare` report them: pass@k and pass^k per run and per task
with intervals over samples, the samples whose outcome flips between epochs, the split of the
variance into between and within samples, and the epochs a target interval width needs
(`calipers.stats.repeats`). Only for runs where some sample was scored in several epochs; pass@k,
pass^k and flips only where every value is 0 or 1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.stats.bootstrap import dense_codes
from calipers.stats.repeats import (
    KINDS,
    KEstimate,
    RepeatsSummary,
    VarianceSplit,
    item_counts,
    paired_pass_hat_k,
    repeat_estimates,
    summarize_repeats,
    variance_split,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Names = Callable[[list[int]], dict[int, str]]

EPOCHS_SHOWN = (1, 2, 4, 8)  # half-widths shown at these epochs per sample
HALF_WIDTHS = (0.05, 0.02, 0.01)  # the epochs each of these needs, on the score's own scale
FLAKY_SHOWN = 50  # sample names listed at most (all are counted)


@dataclass
class RunRepeats:
    """What a run's repeats say (see the module docstring)."""

    n_samples: int
    epochs: tuple[int, int]  # fewest and most scored epochs of a sample
    binary: bool
    summary: RepeatsSummary | None  # pass@k, pass^k, flips (0/1 values only)
    split: VarianceSplit | None
    z: float
    tasks: dict[str, dict[str, list[KEstimate]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # the variance between repeats of one judge on one output (its own noise, on 1–5), pooled
    judge_repeat_variance: float | None = None
    judge_repeat_df: int = 0

    def planning(self) -> dict[str, Any] | None:
        if self.split is None:
            return None
        return {
            "half_width_at": {str(k): self.split.half_width(k, self.z) for k in EPOCHS_SHOWN},
            "epochs_for": {f"{h:g}": self.split.epochs_for(h, self.z) for h in HALF_WIDTHS},
            # the 90% range of that recommendation from these data (`epochs_range`)
            "epochs_range": {
                f"{h:g}": list(self.split.epochs_range(h, self.z)) for h in HALF_WIDTHS
            },
            "method": "normal approximation: z·√((between + within/K)/n) with this run's n "
            "samples (Miller 2024)",
        }

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "n_samples": self.n_samples,
            "epochs": {"min": self.epochs[0], "max": self.epochs[1]},
            "variance": None if self.split is None else self.split.to_dict(),
            "planning": self.planning(),
            "judge_repeats": None if self.judge_repeat_variance is None else {
                "variance": self.judge_repeat_variance, "df": self.judge_repeat_df,
            },
            "notes": self.notes,
        }  # fmt: skip
        if self.summary is not None:
            s = self.summary.to_dict()
            body.update({kind: s[kind] for kind in KINDS})
            body.update(flip_rate=s["flip_rate"], n_flaky=s["n_flaky"],
                        flaky=s["flaky"][:FLAKY_SHOWN])  # fmt: skip
            body["tasks"] = {
                task: {kind: [e.to_dict() for e in found[kind]] for kind in KINDS}
                for task, found in self.tasks.items()
            }
        return body


def _by_task(
    row_task: IntArray, codes: npt.NDArray[np.intp], first: npt.NDArray[np.intp]
) -> Iterator[tuple[int, npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]]:
    """Per task: its code, its rows (in row order), its items (in code order) and its rows' item
    codes renumbered 0…m−1 within the task — what masking the rows task by task gives, from two
    stable sorts instead of a pass over every row per task (and the codes already dense)."""
    # as 16-bit codes numpy's stable sort is a radix sort: 9 ms for 1M rows, not 62
    small = row_task.astype(np.int16) if row_task.size and row_task.max() < 1 << 15 else row_task
    item_task = row_task[first]
    items_by_task = np.argsort(small[first], kind="stable")
    n_items = np.bincount(item_task)
    item_start = np.cumsum(n_items) - n_items
    within = np.empty_like(items_by_task)
    within[items_by_task] = np.arange(items_by_task.size) - np.repeat(item_start, n_items)
    rows_by_task = np.argsort(small, kind="stable")
    n_rows = np.bincount(row_task, minlength=n_items.size)
    row_start = np.cumsum(n_rows) - n_rows
    for t in np.flatnonzero(n_items):
        rows = rows_by_task[row_start[t] : row_start[t] + n_rows[t]]
        items = items_by_task[item_start[t] : item_start[t] + n_items[t]]
        yield int(t), rows, items, within[codes[rows]]


def _is_binary(x: FloatArray) -> bool:
    return bool(np.all((x == 0) | (x == 1)))


def run_repeats(
    values: FloatArray,
    sid: IntArray,
    task_code: IntArray,
    tasks: list[str],
    *,
    units: IntArray | None,
    names: Names | None,
    confidence_level: float,
    z: float,
    judge_repeats: tuple[FloatArray, FloatArray] | None = None,
) -> RunRepeats | None:
    """The repeats of one run's per-row scores (NaN: missing); None when no sample has two
    scored epochs and no judge was asked twice. `units` (per row) are the independent units
    when coarser than a sample; `judge_repeats` (per row: Σ squared deviations of each judge's
    repeats around their mean, and their degrees of freedom) gives the judges' own noise."""
    keep = np.isfinite(values)
    x, s = values[keep], sid[keep]
    if x.size == 0:
        return None
    repeat_var, repeat_df = None, 0
    if judge_repeats is not None and judge_repeats[1].sum() > 0:
        repeat_df = int(judge_repeats[1].sum())
        repeat_var = float(judge_repeats[0].sum() / repeat_df)
    codes = dense_codes(s)
    per_sample = np.bincount(codes)
    if per_sample.max() < 2:
        if repeat_var is None:
            return None
        return RunRepeats(
            n_samples=int(per_sample.size), epochs=(1, 1), binary=False, summary=None,
            split=None, z=z, judge_repeat_variance=repeat_var, judge_repeat_df=repeat_df,
        )  # fmt: skip
    binary = _is_binary(x)
    first = np.unique(codes, return_index=True)[1]  # each sample's first row
    item_units = None if units is None else units[keep][first]
    summary = None
    task_estimates: dict[str, dict[str, list[KEstimate]]] = {}
    notes = []
    if binary:
        summary = summarize_repeats(
            x, codes, item_clusters=item_units, confidence_level=confidence_level
        )
        split = summary.split
        shown = summary.flaky_items[:FLAKY_SHOWN]
        summary = replace(
            summary, flaky=_labels(names, s[first][shown]) + summary.flaky[len(shown) :]
        )
        notes += summary.notes
        ks = [e.k for e in summary.estimates["pass@k"]]
        for t, rows, items, local in _by_task(task_code[keep], codes, first):
            task_estimates[tasks[t]] = repeat_estimates(
                x[rows], local, ks=ks,
                item_clusters=None if item_units is None else item_units[items],
                confidence_level=confidence_level,
            )  # fmt: skip
    else:
        split = variance_split(x, codes)
        notes.append("pass@k and pass^k need 0/1 outcomes: only the variance split is shown")
    return RunRepeats(
        n_samples=int(per_sample.size),
        epochs=(int(per_sample.min()), int(per_sample.max())),
        binary=binary,
        summary=summary,
        split=split,
        z=z,
        tasks=task_estimates,
        notes=notes,
        judge_repeat_variance=repeat_var,
        judge_repeat_df=repeat_df,
    )


def _labels(names: Names | None, sids: IntArray) -> list[str]:
    """Sample names (task/sample_id) for the flaky list, in the order of `sids`."""
    if names is None:
        return [str(int(i)) for i in sids]
    found = names([int(i) for i in sids])
    return [found.get(int(i), str(int(i))) for i in sids]


@dataclass
class PairedRepeats:
    """treatment − control pass^k over the samples both ran ≥ k times (paired by sample)."""

    k: int
    estimate: float
    n_samples: int
    low: float | None
    high: float | None
    method: str | None
    refusal: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def paired_repeats(
    c: FloatArray,
    t: FloatArray,
    samples: IntArray,
    *,
    units: IntArray | None,
    confidence_level: float,
) -> PairedRepeats | None:
    """pass^k difference at the largest k every paired sample reached in both runs (at least
    2), over the pairs (same sample and epoch) where both sides have a 0/1 value."""
    both = np.isfinite(c) & np.isfinite(t)
    if not both.any() or not (_is_binary(c[both]) and _is_binary(t[both])):
        return None
    codes = dense_codes(samples[both])
    c_succ, tries, _ = item_counts(c[both], codes)
    t_succ, _, _ = item_counts(t[both], codes)
    k = int(tries.min())
    if k < 2:
        return None
    first = np.unique(codes, return_index=True)[1]
    item_units = None if units is None else units[both][first]
    estimate, interval, why = paired_pass_hat_k(
        (c_succ, tries), (t_succ, tries), k, item_clusters=item_units,
        confidence_level=confidence_level,
    )  # fmt: skip
    return PairedRepeats(
        k=k,
        estimate=estimate,
        n_samples=int(tries.size),
        low=None if interval is None else interval.low,
        high=None if interval is None else interval.high,
        method=None if interval is None else interval.formula,
        refusal=why,
    )
