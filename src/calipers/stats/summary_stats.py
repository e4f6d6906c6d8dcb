"""The statistics of a paired comparison computed from its summary table — the sufficient
statistics of the pair, computed where the data live (`calipers.data.summaries`: DuckDB on the
store or on Parquet; a warehouse through `calipers sql`; the Ray Data engine) or in memory
(`build_summaries`). One implementation, used by every engine (docs/scale.md).

The table has one row per (task, unit, cell). Every column but `task`, `unit` and `count`
describes ONE unit; `count` says how many identical units the row stands for:

    n_a, n_b        observations (item × epoch values) of the control (a) and the candidate (b)
    sum_a, sum_b    Σ over the unit's items of the item's epoch mean (ā_i = its values / n)
    sum_aa, sum_bb  Σ ā_i², Σ b̄_i²
    sum_ab          Σ ā_i·b̄_i
    items           the unit's items (paired: at least one value on each side)

`unit` names a cluster (one row per (task, cluster), count 1); NULL when the units are the
items themselves and identical items are collapsed into one row (items 1, count ≥ 1): pass/fail
outcomes with K epochs have at most (K + 1)² cells per task. A unit named in several tasks is one
unit: its rows are added together.

Each item weighs the same, its epochs averaged (docs/statistics.md, the estimand): the paired
difference is Σ_g (B_g − A_g) / Σ_g m_g over units g with A_g = sum_a, B_g = sum_b and m_g = items
— the engine's weighted mean with weights 1/(epochs of the item) — and every interval and test
below is a function of the units' (A_g, B_g, m_g), their multiplicities and their observation
counts, equal to the in-memory engine's to rounding (tests/test_summaries.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats.estimate import MIN_T_UNITS
from calipers.stats.interval_parts import (
    Interval,
    NoInterval,
    hall_ends,
    newcombe_half_widths,
    t_quantile,
)
from calipers.stats.intervals import z_from_confidence
from calipers.stats.paired_tests import PairedTest, _binomial_tails, mcnemar_exact
from calipers.stats.repeats import MAX_K, pass_at_k, pass_hat_k
from calipers.stats.shape import BASE_UNITS, MIN_INFORMATIVE, SKEW_FACTOR, Adequacy

FloatArray = npt.NDArray[np.float64]
COLUMNS = ("task", "unit", "n_a", "n_b", "sum_a", "sum_b", "sum_aa", "sum_bb", "sum_ab",
           "items", "count")  # fmt: skip
NUMBERS = COLUMNS[2:]
COUNTS = ("n_a", "n_b", "items", "count")  # whole numbers


class NotSummarizable(InputError):
    """A statistic the comparison needs is not a function of the summary table (the betting
    interval reads the units in order; Newcombe's interval with epochs reads each epoch's
    pairing); the hint says how to get it from the rows."""


@dataclass(frozen=True)
class SummaryTable:
    """The summary table as columns (see the module docstring)."""

    task: npt.NDArray[np.object_]
    unit: npt.NDArray[np.object_]  # None where the row's units are collapsed items
    n_a: FloatArray
    n_b: FloatArray
    sum_a: FloatArray
    sum_b: FloatArray
    sum_aa: FloatArray
    sum_bb: FloatArray
    sum_ab: FloatArray
    items: FloatArray
    count: FloatArray

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any]) -> SummaryTable:
        """From a mapping of column name → values (a DuckDB `fetchnumpy`, a dict of lists)."""
        missing = [c for c in COLUMNS if c not in columns]
        if missing:
            raise InputError(f"a summary table needs the columns {', '.join(missing)}")

        def texts(values: Any, *, none: bool) -> npt.NDArray[np.object_]:
            if isinstance(values, np.ma.MaskedArray):  # NULLs as None (not the fill value)
                data = np.asarray(values.data, dtype=object)
                data[np.ma.getmaskarray(values)] = None
                values = data
            out = np.asarray(list(values), dtype=object)
            if none:
                return np.asarray([None if v is None or v != v else str(v) for v in out], object)
            return np.asarray([str(v) for v in out], dtype=object)

        def numbers(values: Any) -> FloatArray:
            if isinstance(values, np.ma.MaskedArray):
                values = np.ma.filled(values.astype(np.float64), np.nan)
            return np.asarray(values, dtype=np.float64)

        return cls(
            texts(columns["task"], none=False),
            texts(columns["unit"], none=True),
            *(numbers(columns[c]) for c in NUMBERS),
        )

    @property
    def rows(self) -> int:
        return int(self.count.size)

    def select(self, rows: npt.NDArray[np.bool_]) -> SummaryTable:
        return SummaryTable(*(getattr(self, c)[rows] for c in COLUMNS))

    def to_columns(self) -> dict[str, list[Any]]:
        return {c: getattr(self, c).tolist() for c in COLUMNS}

    @property
    def binary(self) -> bool:
        """Every value 0 or 1 (pass/fail): for values in [0, 1], x² = x only at 0 and 1, so each
        item's epoch mean of squares equals its mean exactly then. Read from the item rows (a
        cluster's sum of squared item means says nothing of the epochs), and there every mean
        times its epochs is a whole number."""
        if self.rows == 0:
            return False
        item = self.items == 1
        a_ok = (self.sum_a >= 0) & (self.sum_a <= self.items) & (self.sum_b >= 0)
        a_ok &= self.sum_b <= self.items
        whole = np.all(_whole(self.sum_a[item] * self.n_a[item]))
        whole &= np.all(_whole(self.sum_b[item] * self.n_b[item]))
        if not (a_ok.all() and whole):
            return False
        if not item.all():  # clusters: every item's mean a multiple of 1/epochs is not enough
            return bool(
                np.all(self.n_a == self.items)
                and np.all(self.n_b == self.items)
                and _close(self.sum_aa, self.sum_a)
                and _close(self.sum_bb, self.sum_b)
            )
        return True  # fmt: skip

    @property
    def single_epoch(self) -> bool:
        """Every item has one value on each side (then each item's mean is its one outcome)."""
        return bool(np.all(self.n_a == self.items) and np.all(self.n_b == self.items))


def _whole(x: FloatArray) -> npt.NDArray[np.bool_]:
    return np.asarray(np.abs(x - np.rint(x)) <= 1e-9 * np.maximum(1.0, np.abs(x)))


def _close(x: FloatArray, y: FloatArray) -> bool:
    return bool(np.all(np.abs(x - y) <= 1e-9 * np.maximum(1.0, np.abs(x) + np.abs(y))))


@dataclass(frozen=True)
class Units:
    """The independent units of a table: per unit A = Σ ā_i, B = Σ b̄_i, m items, observations
    n_a, n_b, the sums of squares and products, and how many identical units (`mult`)."""

    a: FloatArray
    b: FloatArray
    m: FloatArray
    n_a: FloatArray
    n_b: FloatArray
    aa: FloatArray
    bb: FloatArray
    ab: FloatArray
    mult: FloatArray

    @property
    def g(self) -> int:
        return round(float(self.mult.sum()))

    @property
    def d(self) -> FloatArray:
        return np.asarray(self.b - self.a, dtype=np.float64)

    @property
    def items(self) -> float:
        return float(self.mult @ self.m)

    @property
    def observations(self) -> int:
        """Observation pairs: each item's epochs on the side with fewer (both sides have the same
        epochs in a complete evaluation; calipers' engine pairs them by epoch)."""
        return round(float(self.mult @ np.minimum(self.n_a, self.n_b)))

    @property
    def unit_differences(self) -> FloatArray:
        """Each unit's mean difference (B − A)/m, as the engine's `cluster_means` gives it."""
        return np.asarray(self.d / self.m, dtype=np.float64)


def units_of(table: SummaryTable) -> Units:
    """Named units summed over their rows (a cluster in several tasks is one unit); collapsed
    item rows as they are, `count` identical units each."""
    named = np.asarray([u is not None for u in table.unit], dtype=bool)
    columns = ("sum_a", "sum_b", "items", "n_a", "n_b", "sum_aa", "sum_bb", "sum_ab")
    parts: list[list[FloatArray]] = []
    if named.any():
        labels = np.asarray([str(u) for u in table.unit[named]], dtype=object)
        _, codes = np.unique(labels, return_inverse=True)
        codes = codes.ravel()
        weight = table.count[named]
        sums = [np.asarray(np.bincount(codes, weights=getattr(table, c)[named] * weight),
                           dtype=np.float64) for c in columns]  # fmt: skip
        parts.append([*sums, np.ones(sums[0].size)])
    if (~named).any():
        rows = ~named
        parts.append([getattr(table, c)[rows] for c in columns] + [table.count[rows]])
    if not parts:
        empty = np.zeros(0)
        return Units(*(empty for _ in range(9)))
    stacked = [np.concatenate([p[i] for p in parts]).astype(np.float64) for i in range(9)]
    a, b, m, n_a, n_b, aa, bb, ab, mult = stacked
    keep = mult > 0
    return Units(a[keep], b[keep], m[keep], n_a[keep], n_b[keep], aa[keep], bb[keep], ab[keep],
                 mult[keep])  # fmt: skip


# ------------------------------------------------------------------------ means and variances


@dataclass(frozen=True)
class PairedMeans:
    difference: float
    control: float
    treatment: float
    n_units: int
    n_items: float
    n_observations: int


def paired_means(units: Units) -> PairedMeans:
    """Each run's mean over the paired items (each item's epochs averaged) and their difference."""
    total = units.items
    if total <= 0:
        raise NoInterval("no paired item")
    a = float(units.mult @ units.a) / total
    b = float(units.mult @ units.b) / total
    return PairedMeans(float(units.mult @ units.d) / total, a, b, units.g, total,
                       units.observations)  # fmt: skip


def _residuals(units: Units, theta: float) -> FloatArray:
    return np.asarray(units.d - theta * units.m, dtype=np.float64)


def cr1_variance(units: Units, theta: float) -> float:
    """G/(G − 1)·Σ_g (D_g − θ·m_g)²/(Σ m)²: the engine's cluster-robust (CR1) variance of the
    mean difference (`interval_parts.clustered_variance` with the sample weights)."""
    g = units.g
    r = _residuals(units, theta)
    return float(g / (g - 1) * float(units.mult @ (r * r)) / units.items**2)


def t_interval(
    units: Units, confidence_level: float, *, skew_corrected: bool, reason: str | None = None
) -> Interval:
    """The paired t interval on the units with the CR1 standard error on G − 1 df, and Hall's
    skewness correction when `skew_corrected` (as `estimate._t_interval` makes them)."""
    g = units.g
    if g < MIN_T_UNITS:
        raise NoInterval(
            f"{g} independent unit{'' if g == 1 else 's'}: a t interval needs at least "
            f"{MIN_T_UNITS} (below that it covered 90–93% on skewed or discrete scores, "
            "docs/calibration.md)"
        )
    means = paired_means(units)
    theta = means.difference
    variance = cr1_variance(units, theta)
    if variance <= 0:
        raise NoInterval(
            f"all {means.n_observations} paired differences are equal ({theta:+.3f}): no spread "
            "to make an interval from"
        )
    se = math.sqrt(variance)
    df = float(g - 1)
    q = t_quantile(1 - (1 - confidence_level) / 2, df)
    low, high, formula = theta - q * se, theta + q * se, "t"
    if skew_corrected:
        low, high = _hall_bounds(units, theta, se, q)
        formula = "hall-t"
    return Interval(
        theta, low, high, "t", formula, confidence_level, se, df, g, means.n_observations,
        float(means.n_observations), reason=reason,
    )  # fmt: skip


def _hall_bounds(units: Units, theta: float, se: float, q: float) -> tuple[float, float]:
    """`estimate._hall_bounds` from the units: γ̂ the skewness of u_g = G(D_g − θm_g)/Σm."""
    g = units.g
    u = g * _residuals(units, theta) / units.items
    sigma = se * math.sqrt(g)
    gamma = g / ((g - 1) * (g - 2)) * float(units.mult @ (u * u * u)) / sigma**3  # as estimate's
    return hall_ends(theta, sigma, gamma, g, q)


def newcombe_interval(units: Units, confidence_level: float) -> Interval:
    """Newcombe's hybrid score interval with continuity correction (method 11) on the paired
    2×2 table, scaled to the effective n of the clusters, as `estimate._newcombe` makes it for
    pass/fail outcomes with ONE epoch per item (each item's means are then its outcomes, and
    Σ ā·b̄ counts the items that pass in both runs). With several epochs the engine's table counts
    epochs that pass in both runs, which the summaries do not keep: `NotSummarizable`."""
    g = units.g
    means = paired_means(units)
    n = float(means.n_observations)
    theta = means.difference
    # Σ_rows d² over the observations: each item's (b − a)² is b + a − 2ab for 0/1 outcomes
    square = float(units.mult @ (units.aa + units.bb - 2 * units.ab))
    iid_variance = max(square / n - theta * theta, 0.0) / n
    if g == int(n):
        n_eff = n  # one observation per unit: no design effect (`interval_parts.effective_n`)
    else:
        clustered = cr1_variance(units, theta)
        n_eff = float(g)
        if iid_variance > 0 and clustered > 0:
            n_eff = float(min(n, max(g, n * iid_variance / clustered)))
        alpha = 1.0 - confidence_level
        z = z_from_confidence(confidence_level)
        n_eff *= (z / t_quantile(1.0 - alpha / 2.0, g - 1)) ** 2
    scale = n_eff / n
    both = float(units.mult @ units.ab) * scale
    t_only = float(units.mult @ (units.b - units.ab)) * scale
    c_only = float(units.mult @ (units.a - units.ab)) * scale
    neither = n_eff - both - t_only - c_only
    z = z_from_confidence(confidence_level)
    delta, eps = newcombe_half_widths(both, t_only, c_only, neither, z)
    low, high = max(-1.0, theta - delta), min(1.0, theta + eps)
    return Interval(
        theta, low, high, "score", "newcombe-cc", confidence_level, (high - low) / (2 * z),
        None, g, int(n), n_eff,
    )  # fmt: skip


def t_adequacy_counts(values: FloatArray, counts: FloatArray) -> Adequacy:
    """`calipers.stats.shape.t_adequacy` on values with multiplicities (each value repeated
    `counts` times), in O(distinct values)."""
    g = round(float(counts.sum()))
    if g < 3:
        return Adequacy(False, g, g, 0.0, BASE_UNITS + 1)
    scale = float(np.max(np.abs(values))) or 1.0
    keys, inverse = np.unique(np.round(values / scale, 12), return_inverse=True)
    tallies = np.bincount(inverse.ravel(), weights=counts, minlength=keys.size)
    informative = g - round(float(tallies.max())) + 1
    centred = values - float(counts @ values) / g
    m2 = float(counts @ centred**2) / g
    skew = 0.0
    if m2 > 0:
        g1 = float(counts @ (centred * centred * centred)) / g / m2**1.5  # as shape's
        skew = g1 * math.sqrt(g * (g - 1)) / (g - 2)
    needed = int(np.floor(BASE_UNITS + SKEW_FACTOR * skew * skew)) + 1
    return Adequacy(g >= needed and informative >= MIN_INFORMATIVE, g, informative, skew, needed)


# ------------------------------------------------------------------------------------- tests


def _zero(units: Units) -> npt.NDArray[np.bool_]:
    """Units whose difference is 0 up to the rounding of their sums (a cluster's item means
    added in another order)."""
    tol = 4 * np.finfo(np.float64).eps * (np.abs(units.a) + np.abs(units.b))
    return np.asarray(np.abs(units.d) <= tol)


def sign_test(units: Units) -> PairedTest:
    """The exact sign test on the units' mean differences (`paired_tests.sign_test`)."""
    zero = _zero(units)
    pos = round(float(units.mult[(units.d > 0) & ~zero].sum()))
    neg = round(float(units.mult[(units.d < 0) & ~zero].sum()))
    two, greater, less = _binomial_tails(pos, pos + neg)
    return PairedTest(
        "sign", (pos - neg) / 2.0, two, greater, less, None,
        {"positive": pos, "negative": neg, "zero": units.g - pos - neg},
    )  # fmt: skip


def mcnemar(units: Units) -> PairedTest:
    """Exact McNemar on the discordant items (one outcome per item and side, items as units)."""
    b = round(float(units.mult[units.d > 0.5].sum()))
    c = round(float(units.mult[units.d < -0.5].sum()))
    return mcnemar_exact(b, c)


def paired_t(units: Units) -> PairedTest | None:
    """scipy `ttest_rel` on the units' mean differences (`paired_tests.paired_t`)."""
    from scipy.special import stdtr

    g = units.g
    if g < 2:
        return None
    v = units.unit_differences
    mean = float(units.mult @ v) / g
    sd = math.sqrt(float(units.mult @ (v - mean) ** 2) / (g - 1))
    if sd == 0:
        return None
    t = mean / (sd / math.sqrt(g))
    df = float(g - 1)
    return PairedTest(
        "paired_t", t, float(2 * stdtr(df, -abs(t))), float(stdtr(df, -t)), float(stdtr(df, t)),
        df, {"n_units": g},
    )  # fmt: skip


def clustered_standard_error(units: Units) -> PairedTest | None:
    """Miller's (2024) clustered standard error √(Σ_g (D_g − θm_g)²)/Σm and its z test
    (`paired_tests.clustered_standard_error` with the sample weights)."""
    from statistics import NormalDist

    if units.g < 2:
        return None
    theta = paired_means(units).difference
    r = _residuals(units, theta)
    se = math.sqrt(float(units.mult @ (r * r))) / units.items
    if se == 0:
        return None
    z = theta / se
    norm = NormalDist()
    return PairedTest(
        "clustered_se", z, 2 * norm.cdf(-abs(z)), norm.cdf(-z), norm.cdf(z), None,
        {"mean": theta, "standard_error": se, "n_clusters": units.g},
    )  # fmt: skip


# ------------------------------------------------------------------------------ pass@k


@dataclass(frozen=True)
class PassAtK:
    kind: str  # pass@k or pass^k
    k: int
    estimate: float
    n_items: int

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "estimate": self.estimate, "n_items": self.n_items}


def pass_at_k_of(table: SummaryTable, side: str, *, ks: list[int] | None = None) -> list[PassAtK]:
    """pass@k and pass^k of one side (`a` or `b`) over the paired items: the unbiased estimators
    from each item's successes c of n tries, averaged over items — a function of the histogram of
    (c, n). Needs item rows (units = items) and pass/fail outcomes."""
    if not table.binary:
        raise NotSummarizable(
            "pass@k needs pass/fail outcomes (every value 0 or 1)",
            hint="pass@k is reported for pass/fail metrics only.",
        )
    if not np.all(table.items == 1):
        raise NotSummarizable(
            "pass@k needs each item's successes, and these summaries hold clusters' sums",
            hint="Compute the summaries with items as units (--cluster sample_id) for pass@k.",
        )
    n = getattr(table, f"n_{side}")
    c = np.rint(getattr(table, f"sum_{side}") * n)
    fewest = int(n.min()) if n.size else 0
    ks = ks if ks is not None else list(range(1, min(fewest, MAX_K) + 1))
    total = float(table.count.sum())
    found = []
    for k in [k for k in ks if k <= fewest]:
        for kind, fn in (("pass@k", pass_at_k), ("pass^k", pass_hat_k)):
            found.append(PassAtK(kind, k, float(table.count @ fn(c, n, k)) / total, int(total)))
    return found


# ------------------------------------------------------------------ building them in memory


def build_summaries(
    *,
    tasks: list[str],
    item_task: npt.NDArray[np.int64],
    item: npt.NDArray[np.int64],
    side: npt.NDArray[np.bool_],
    values: FloatArray,
    item_unit: npt.NDArray[Any] | None = None,
) -> SummaryTable:
    """The summary table from observations in memory: each observation's item code (dense,
    shared by the runs), whether it is the candidate's (`side`), its value (NaN: missing);
    `item_task[code]` each item's task code, `item_unit[code]` its cluster (None: items are
    the units, identical ones collapsed). The same definition as `calipers.data.summaries`'
    SQL, computed with numpy."""
    keep = np.isfinite(values)
    item, side, values = item[keep], side[keep], values[keep]
    k = int(item_task.size)
    n_a = np.bincount(item[~side], minlength=k).astype(np.float64)
    n_b = np.bincount(item[side], minlength=k).astype(np.float64)
    s_a = np.bincount(item[~side], weights=values[~side], minlength=k)
    s_b = np.bincount(item[side], weights=values[side], minlength=k)
    paired = (n_a > 0) & (n_b > 0)
    n_a, n_b, s_a, s_b = n_a[paired], n_b[paired], s_a[paired], s_b[paired]
    task = item_task[paired]
    a, b = s_a / n_a, s_b / n_b
    if item_unit is None:
        # identical items collapse: one row per (task, n_a, n_b, Σa, Σb), as the SQL groups them
        order = np.lexsort((s_b, s_a, n_b, n_a, task))
        cols = [task[order], n_a[order], n_b[order], s_a[order], s_b[order]]
        change = np.zeros(order.size, dtype=bool)
        for col in cols:
            change[1:] |= col[1:] != col[:-1]
        change[:1] = True
        starts = np.flatnonzero(change)
        count = np.diff(np.r_[starts, order.size]).astype(np.float64)
        first = order[starts]
        ra, rb = a[first], b[first]
        return SummaryTable(
            np.asarray([tasks[t] for t in task[first]], dtype=object),
            np.full(first.size, None, dtype=object), n_a[first], n_b[first], ra, rb, ra * ra,
            rb * rb, ra * rb, np.ones(first.size), count,
        )  # fmt: skip
    labels = np.asarray(item_unit)[paired]
    keys = np.asarray([f"{t}\x00{u}" for t, u in zip(task.tolist(), labels.tolist(), strict=True)])
    uniq, first_of, codes = np.unique(keys, return_index=True, return_inverse=True)
    codes = codes.ravel()

    def total(x: FloatArray) -> FloatArray:
        return np.asarray(np.bincount(codes, weights=x, minlength=uniq.size), dtype=np.float64)

    return SummaryTable(
        np.asarray([tasks[t] for t in task[first_of]], dtype=object),
        np.asarray([str(u) for u in labels[first_of]], dtype=object),
        total(n_a), total(n_b), total(a), total(b), total(a * a), total(b * b), total(a * b),
        np.bincount(codes, minlength=uniq.size).astype(np.float64), np.ones(uniq.size),
    )  # fmt: skip
