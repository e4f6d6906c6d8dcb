"""`--calibrate-judges`: the judge layer's mean of each run, and its paired difference, corrected
by the samples that carry human labels (PPI++, `calipers.stats.ppi`; docs/judges.md). The judge
layer and the labels are on the same 1–5 scale (a sample's human scores averaged, as the layered
scheme stages them). Samples whose judges all failed are left out, and counted."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats.interval_parts import NoInterval, sample_weights
from calipers.stats.ppi import ppi_mean, ppi_paired_difference
from calipers.verdicts.persample import RunArrays, cluster_labels

FloatArray = npt.NDArray[np.float64]


def _refusal(reason: str, **extra: Any) -> dict[str, Any]:
    return {"refusal": reason, **extra}


def calibrate_run(arrays: RunArrays, *, cluster: str, confidence_level: float) -> dict[str, Any]:
    """The run's judge-layer mean on the human scale, or the reason there is none."""
    judge = arrays.values.get("judge")
    if judge is None or arrays.human is None:
        return _refusal("no judge layer or no human labels in this run")
    keep = np.isfinite(judge)
    dropped = int((~keep).sum())
    rows = np.flatnonzero(keep)
    try:
        result = ppi_mean(
            judge[keep], arrays.human[keep], clusters=cluster_labels(arrays, rows, cluster),
            weights=sample_weights(arrays.sid[keep]), confidence_level=confidence_level,
        )  # fmt: skip
    except (NoInterval, InputError) as why:
        return _refusal(getattr(why, "reason", None) or str(why), judge_failed=dropped)
    return {**result.to_dict(), "judge_failed": dropped}


def calibrate_pair(
    control: RunArrays, treatment: RunArrays, *, cluster: str, confidence_level: float
) -> dict[str, Any]:
    """treatment − control of the judge layer, corrected by the samples labelled in both runs,
    over the pairs (same sample and epoch) both runs' judges scored."""
    jc, jt = control.values.get("judge"), treatment.values.get("judge")
    if jc is None or jt is None or control.human is None or treatment.human is None:
        return _refusal("no judge layer or no human labels in these runs")
    width = int(max(control.epoch.max(initial=0), treatment.epoch.max(initial=0))) + 1
    _, ic, it = np.intersect1d(
        control.sid * width + control.epoch, treatment.sid * width + treatment.epoch,
        assume_unique=True, return_indices=True,
    )  # fmt: skip
    both = np.isfinite(jc[ic]) & np.isfinite(jt[it])
    dropped = int((~both).sum())
    ic, it = ic[both], it[both]
    try:
        result = ppi_paired_difference(
            jc[ic], jt[it], control.human[ic], treatment.human[it],
            clusters=cluster_labels(control, ic, cluster),
            weights=sample_weights(control.sid[ic]), confidence_level=confidence_level,
        )  # fmt: skip
    except (NoInterval, InputError) as why:
        return _refusal(getattr(why, "reason", None) or str(why), judge_failed=dropped)
    return {**result.to_dict(), "judge_failed": dropped}
