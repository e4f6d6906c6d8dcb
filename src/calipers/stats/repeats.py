"""Repeated tries of the same item (epochs): pass@k and pass^k with intervals over items, the items
whose outcome flips between tries, the split of the variance into between and within items, and
how many epochs a target interval width needs (Miller 2024, "Adding Error Bars to Evals", §4).

For an item tried n times with c successes, the unbiased estimators (Chen et al. 2021 for pass@k;
the same counting for pass^k, as τ-bench reports it) are

    pass@k  = 1 − C(n − c, k) / C(n, k)     at least one of k tries succeeds
    pass^k  = C(c, k) / C(n, k)             all k tries succeed

each the probability for k tries drawn without replacement from the n made, so its expectation
is the item's own 1 − (1 − p)^k or p^k exactly when n ≥ k. The run's figure is their mean over
items, with the items (or their groups) as the independent units of its interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats.bootstrap import dense_codes
from calipers.stats.estimate import mean_interval, paired_interval
from calipers.stats.interval_parts import Interval, NoInterval, sample_weights

FloatArray = npt.NDArray[np.float64]
KINDS = ("pass@k", "pass^k")
MAX_K = 10  # the ks reported by default: 1 … min(smallest n, MAX_K)


def _ratio(top: FloatArray, n: FloatArray, k: int) -> FloatArray:
    """C(top, k)/C(n, k) = Π_{j<k} (top − j)/(n − j), 0 where top < k."""
    out = np.ones_like(n, dtype=np.float64)
    for j in range(k):
        out *= np.clip(top - j, 0.0, None) / (n - j)
    return out


def pass_at_k(successes: npt.ArrayLike, trials: npt.ArrayLike, k: int) -> FloatArray:
    """Each item's unbiased pass@k from c successes in n ≥ k tries."""
    c, n = _counts(successes, trials, k)
    return 1.0 - _ratio(n - c, n, k)


def pass_hat_k(successes: npt.ArrayLike, trials: npt.ArrayLike, k: int) -> FloatArray:
    """Each item's unbiased pass^k (every one of k tries succeeds) from c successes in n ≥ k."""
    c, n = _counts(successes, trials, k)
    return _ratio(c, n, k)


def _counts(
    successes: npt.ArrayLike, trials: npt.ArrayLike, k: int
) -> tuple[FloatArray, FloatArray]:
    c = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    if c.shape != n.shape or np.any(c < 0) or np.any(c > n):
        raise InputError("successes must lie between 0 and the number of tries, item by item")
    if not isinstance(k, int) or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    if np.any(n < k):
        raise InputError(f"pass@{k} needs at least {k} tries of every item (fewest: {n.min():g})")
    return c, n


def item_counts(
    outcomes: npt.ArrayLike, items: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.intp]]:
    """Successes and tries per item (codes in sorted label order), and each row's item code."""
    x = np.asarray(outcomes, dtype=np.float64)
    if not np.all((x == 0) | (x == 1)):
        raise InputError("pass@k and pass^k need pass/fail outcomes (every value 0 or 1)")
    codes = dense_codes(np.asarray(items))
    successes = np.asarray(np.bincount(codes, weights=x), dtype=np.float64)
    return successes, np.bincount(codes).astype(np.float64), codes


@dataclass(frozen=True)
class VarianceSplit:
    """One-way random-effects components of a per-try score (method of moments, unbalanced):
    `between` the variance of the items' true means, `within` the variance of a try around its
    item's mean. The variance of a run's mean over n items with K tries each is
    (between + within/K)/n."""

    between: float
    within: float
    n_items: int
    mean_tries: float

    @property
    def within_share(self) -> float | None:
        total = self.between + self.within
        return self.within / total if total > 0 else None

    def half_width(self, epochs: float, z: float, n_items: int | None = None) -> float:
        """The normal-approximation half-width of the mean at `epochs` tries per item."""
        n = self.n_items if n_items is None else n_items
        return z * math.sqrt(max(self.between + self.within / epochs, 0.0) / n)

    def epochs_for(self, half_width: float, z: float) -> int | None:
        """The fewest tries per item whose half-width is ≤ `half_width` with these items; None
        when no number of tries reaches it (the items' own spread alone is wider: more items,
        not more tries). Rounded up: the optimum of (between + within/K)/n ≤ (h/z)²."""
        room = self.n_items * (half_width / z) ** 2 - self.between
        if room <= 0:
            return None
        return max(1, math.ceil(self.within / room - 1e-12))

    def epochs_range(
        self, half_width: float, z: float, *, level: float = 0.9, draws: int = 4000
    ) -> tuple[int | None, int | None]:
        """How far `epochs_for` could be off from the same design's optimum: its central `level`
        range when the two mean squares are redrawn from their sampling laws at the estimates
        (MSW ~ within·χ²(N − a)/(N − a), MSB ~ (within + n₀·between)·χ²(a − 1)/(a − 1), exact for
        normal scores), with a fixed seed (DEFAULT_SEED), so the range is reproducible. None as
        the high end: some redraws reach the width with no number of tries."""
        from calipers.stats._rng import DEFAULT_SEED

        a = self.n_items
        total = a * self.mean_tries
        if total <= a:
            return None, None
        n0 = self.mean_tries  # the balanced n₀; with unequal tries a close approximation
        rng = np.random.default_rng(DEFAULT_SEED)
        msw = self.within * rng.chisquare(total - a, draws) / (total - a)
        msb = (self.within + n0 * self.between) * rng.chisquare(a - 1, draws) / (a - 1)
        between = np.maximum(0.0, (msb - msw) / n0)
        room = a * (half_width / z) ** 2 - between
        unreachable = float(2**31)  # stands for "no number of tries" in the quantiles
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.where(room > 0, np.maximum(1.0, np.ceil(msw / room - 1e-12)), unreachable)
        k = np.minimum(k, unreachable)
        low = np.quantile(k, (1 - level) / 2, method="lower")
        high = np.quantile(k, (1 + level) / 2, method="higher")
        return (
            None if low >= unreachable else int(low),
            None if high >= unreachable else int(high),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "between": self.between,
            "within": self.within,
            "within_share": self.within_share,
            "n_items": self.n_items,
            "mean_tries": self.mean_tries,
        }


def variance_split(values: npt.ArrayLike, items: npt.ArrayLike) -> VarianceSplit | None:
    """The between/within split of `values` over `items` (None below 2 items or without repeats).
    MSW = Σ_i Σ_e (x − x̄_i)²/(N − a); MSB = Σ_i n_i(x̄_i − x̄)²/(a − 1);
    between = (MSB − MSW)/n₀ (≥ 0), n₀ = (N − Σn_i²/N)/(a − 1)."""
    x = np.asarray(values, dtype=np.float64)
    codes = dense_codes(np.asarray(items))
    n_i = np.bincount(codes).astype(np.float64)
    a, total = n_i.size, float(x.size)
    if a < 2 or total <= a:
        return None
    means = np.bincount(codes, weights=x) / n_i
    grand = float(x.mean())
    msw = float(np.sum((x - means[codes]) ** 2)) / (total - a)
    msb = float(np.sum(n_i * (means - grand) ** 2)) / (a - 1)
    n0 = (total - float(np.sum(n_i**2)) / total) / (a - 1)
    return VarianceSplit(max(0.0, (msb - msw) / n0), msw, a, total / a)


@dataclass(frozen=True)
class KEstimate:
    """pass@k or pass^k at one k: the mean of the items' estimates and its interval (or why
    there is none)."""

    kind: str
    k: int
    estimate: float
    n_items: int
    interval: Interval | None
    refusal: str | None = None

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"k": self.k, "estimate": self.estimate, "n_items": self.n_items}
        if self.interval is not None:
            body.update(low=self.interval.low, high=self.interval.high,
                        method=self.interval.formula)  # fmt: skip
        if self.refusal is not None:
            body["refusal"] = self.refusal
        return body


@dataclass(frozen=True)
class RepeatsSummary:
    """A run's repeats: pass@k and pass^k for k = 1 … k_max, flaky items, the variance split."""

    n_items: int
    tries: tuple[int, int]  # fewest and most tries of an item
    estimates: dict[str, list[KEstimate]]
    flip_rate: float  # mean over items of P(two of its tries disagree)
    flaky: list[str]  # items whose tries disagree, most disagreeing first
    flaky_items: list[int]  # the same, as item codes (sorted label order)
    split: VarianceSplit | None
    notes: list[str] = field(default_factory=list)

    def at(self, kind: str, k: int) -> KEstimate | None:
        return next((e for e in self.estimates.get(kind, []) if e.k == k), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_items": self.n_items,
            "tries": {"min": self.tries[0], "max": self.tries[1]},
            **{kind: [e.to_dict() for e in self.estimates[kind]] for kind in KINDS},
            "flip_rate": self.flip_rate,
            "flaky": self.flaky,
            "n_flaky": len(self.flaky),
            "variance": None if self.split is None else self.split.to_dict(),
            "notes": self.notes,
        }


def _interval(
    values: FloatArray,
    clusters: npt.ArrayLike | None,
    confidence_level: float,
    *,
    weights: FloatArray | None = None,
) -> tuple[Interval | None, str | None]:
    try:
        interval = mean_interval(
            values, clusters=clusters, weights=weights, confidence_level=confidence_level,
            bounds=(0.0, 1.0),  # a probability
        )  # fmt: skip
    except NoInterval as why:
        return None, why.reason
    # a probability: bounds beyond [0, 1] (a t interval near a bound) are cut, which only adds
    # coverage
    return replace(interval, low=max(0.0, interval.low), high=min(1.0, interval.high)), None


def summarize_repeats(
    outcomes: npt.ArrayLike,
    items: npt.ArrayLike,
    *,
    names: list[str] | None = None,
    ks: list[int] | None = None,
    item_clusters: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
) -> RepeatsSummary:
    """pass@k and pass^k over the items of one run (`outcomes` 0/1, one per try; `items` its item
    label), for every k in `ks` (default 1 … min(fewest tries, MAX_K)). `names[code]` names an
    item in the flaky list (codes in sorted label order); `item_clusters`, one per item, groups
    items that are not independent."""
    x = np.asarray(outcomes, dtype=np.float64)
    successes, trials, codes = item_counts(x, items)
    estimates, notes = _estimates(x, successes, trials, codes, ks, item_clusters, confidence_level)
    with np.errstate(invalid="ignore", divide="ignore"):
        disagree = np.where(
            trials >= 2, 2.0 * successes * (trials - successes) / (trials * (trials - 1)), 0.0
        )
    order = np.argsort(-disagree, kind="stable")
    # in numpy: a Python loop over every item cost 0.6 s per run of 500,000 samples
    flaky_items = order[disagree[order] > 0].tolist()
    flaky = [names[i] for i in flaky_items] if names is not None else list(map(str, flaky_items))
    repeated = trials >= 2
    return RepeatsSummary(
        n_items=int(trials.size),
        tries=(int(trials.min()), int(trials.max())),
        estimates=estimates,
        flip_rate=float(disagree[repeated].mean()) if repeated.any() else 0.0,
        flaky=flaky,
        flaky_items=flaky_items,
        split=variance_split(x, codes),
        notes=notes,
    )


def repeat_estimates(
    outcomes: npt.ArrayLike,
    items: npt.ArrayLike,
    *,
    ks: list[int],
    item_clusters: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
) -> dict[str, list[KEstimate]]:
    """`summarize_repeats`' pass@k and pass^k alone (the run's per-task figures: no flaky list,
    no variance split, which a task's figures do not show)."""
    x = np.asarray(outcomes, dtype=np.float64)
    successes, trials, codes = item_counts(x, items)
    return _estimates(x, successes, trials, codes, ks, item_clusters, confidence_level)[0]


def _estimates(
    x: FloatArray,
    successes: FloatArray,
    trials: FloatArray,
    codes: npt.NDArray[np.intp],
    ks: list[int] | None,
    item_clusters: npt.ArrayLike | None,
    confidence_level: float,
) -> tuple[dict[str, list[KEstimate]], list[str]]:
    fewest = int(trials.min())
    if ks is None:
        ks = list(range(1, min(fewest, MAX_K) + 1))
    notes = []
    too_big = [k for k in ks if k > fewest]
    if too_big:
        notes.append(
            f"k = {', '.join(map(str, too_big))} left out: an item was tried only {fewest} "
            "time(s), and the estimators need k tries of every item"
        )
    estimates: dict[str, list[KEstimate]] = {kind: [] for kind in KINDS}
    row_clusters = codes if item_clusters is None else np.asarray(item_clusters)[codes]
    for k in [k for k in ks if k <= fewest]:
        for kind, fn in (("pass@k", pass_at_k), ("pass^k", pass_hat_k)):
            per_item = fn(successes, trials, k)
            if k == 1:  # the run's own mean and interval: the tries, each sample weighing 1
                interval, why = _interval(
                    x, row_clusters, confidence_level, weights=sample_weights(codes)
                )
            else:
                interval, why = _interval(per_item, item_clusters, confidence_level)
            estimates[kind].append(
                KEstimate(kind, k, float(per_item.mean()), per_item.size, interval, why)
            )
    return estimates, notes


def paired_pass_hat_k(
    control: tuple[FloatArray, FloatArray],
    treatment: tuple[FloatArray, FloatArray],
    k: int,
    *,
    item_clusters: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
) -> tuple[float, Interval | None, str | None]:
    """treatment − control pass^k over the items both ran ≥ k times: (successes, tries) per item,
    aligned; the mean difference and its paired interval (items as units)."""
    c = pass_hat_k(control[0], control[1], k)
    t = pass_hat_k(treatment[0], treatment[1], k)
    estimate = float((t - c).mean())
    try:
        interval = paired_interval(
            c, t, clusters=item_clusters, confidence_level=confidence_level, bounds=(0.0, 1.0)
        )
    except NoInterval as why:
        return estimate, None, why.reason
    return (
        estimate,
        replace(interval, low=max(-1.0, interval.low), high=min(1.0, interval.high)),
        None,
    )
