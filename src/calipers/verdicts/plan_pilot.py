"""What a pilot says about the design (`Design.from_runs`): the paired differences matched on
(sample, epoch), their method-of-moments variance components, and the skewness of the units
that sets how many of them the t interval needs."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from calipers.stats.bootstrap import dense_codes
from calipers.stats.interval_parts import cluster_means
from calipers.stats.shape import t_adequacy

FloatArray = npt.NDArray[np.float64]


def paired_difference(
    sid: npt.NDArray[np.int64],
    epoch: npt.NDArray[np.int64],
    x: FloatArray,
    other_sid: npt.NDArray[np.int64],
    other_epoch: npt.NDArray[np.int64],
    y: FloatArray,
) -> FloatArray:
    """y − x matched on (sample, epoch); NaN where the other run has no finite value."""
    width = int(max(epoch.max(initial=0), other_epoch.max(initial=0))) + 1
    key, other_key = sid * width + epoch, other_sid * width + other_epoch
    order = np.argsort(other_key, kind="stable")
    pos = np.clip(np.searchsorted(other_key[order], key), 0, max(other_key.size - 1, 0))
    found = other_key.size > 0 and other_key[order][pos] == key
    out = np.where(found, y[order][pos] - x, np.nan) if other_key.size else np.full(x.size, np.nan)
    return np.asarray(out, dtype=np.float64)


def components(
    x: FloatArray, sid: npt.NDArray[np.int64], group: npt.NDArray[np.int64] | None
) -> tuple[float, float, float, int, int]:
    """Method-of-moments components of x: (σ²_epoch, σ²_item, σ²_group, items per group,
    epochs per item), negative estimates set to 0."""
    items = dense_codes(sid)
    n_items = int(items.max()) + 1
    counts = np.bincount(items, minlength=n_items)
    e = max(1, round(float(counts.mean())))
    item_mean = cluster_means(x, items)
    epoch_var = 0.0
    if counts.max() > 1:
        dev = x - item_mean[items]
        dof = int(x.size - n_items)
        epoch_var = float(dev @ dev / dof) if dof > 0 else 0.0
    if group is None:
        item_var = float(np.var(item_mean, ddof=1)) if n_items > 1 else 0.0
        return epoch_var, max(0.0, item_var - epoch_var / e), 0.0, 1, e
    item_group = np.zeros(n_items, dtype=np.int64)
    item_group[items] = dense_codes(group)
    n_groups = int(item_group.max()) + 1
    k = max(1, round(n_items / n_groups))
    group_mean = cluster_means(item_mean, item_group)
    within = item_mean - group_mean[item_group]
    dof = n_items - n_groups
    item_total = float(within @ within / dof) if dof > 0 else 0.0
    group_total = float(np.var(group_mean, ddof=1)) if n_groups > 1 else 0.0
    return (
        epoch_var,
        max(0.0, item_total - epoch_var / e),
        max(0.0, group_total - item_total / k),
        k,
        e,
    )


def unit_skewness(
    x: FloatArray, sid: npt.NDArray[np.int64], unit_of: npt.NDArray[np.int64]
) -> float:
    """The skewness of the units' mean differences (each sample weighs the same)."""
    items = dense_codes(sid)
    item_mean = cluster_means(x, items)
    item_unit = np.zeros(item_mean.size, dtype=np.int64)
    item_unit[items] = dense_codes(unit_of)
    return t_adequacy(cluster_means(item_mean, item_unit)).skewness
