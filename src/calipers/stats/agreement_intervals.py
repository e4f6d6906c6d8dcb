"""Intervals for agreement between judges: Pearson r by Fisher's z, Krippendorff's α by a
bootstrap over units, and a run's agreement figures with their intervals.

The unit is the item (a sample), or the cluster above it (`group`) when the data names one. With
epochs, an item's repeated judgments enter as its mean (each item weighs the same, as everywhere in
calipers); the estimate is then the agreement of the judges' per-item means.

- Pearson r: Fisher's z, atanh(r) ± q·√(c/(n − 3)), back through tanh, with n the number of units
  (items, or clusters when clustered: a conservative count, the design effect of a correlation is
  at most the cluster size). `fisher-z` is the textbook interval (q = z₁₋α/₂, c = 1: on
  unclustered data `scipy.stats.pearsonr(x, y).confidence_interval()`); `fisher-z-robust`, the
  default, takes c = max(1, the influence-function estimate of the variance) and q = t₁₋α/₂ on
  n − 3 degrees of freedom, because 1–5 scores with skewed items undercover with the textbook one.
- Krippendorff's α: units resampled with replacement (a cluster's items together); the interval
  is the BCa (default) or percentile interval of α over the resamples, the resamples drawn as
  `scipy.stats.bootstrap` draws them (`integers(0, units, (resamples, units))`) from one recorded
  seed. Refused below `MIN_ALPHA_UNITS` units, where the calibration study measured coverage under
  the 93% target (docs/calibration.md, "Judge agreement").

Every function returns an `AgreementInterval`, which keeps the estimate even when the interval is
refused, and then says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats._rng import resolve_rng
from calipers.stats._t975 import T975
from calipers.stats.agreement import krippendorff_alpha, pearson
from calipers.stats.bootstrap import COUNTING_MAX_RATIO, Algorithm, _counting_draws, dense_codes

FloatArray = npt.NDArray[np.float64]
AlphaMethod = Literal["percentile", "bca"]
PearsonMethod = Literal["fisher-z", "fisher-z-robust"]

# Fisher's z needs n > 3; the robust interval covered ≥ 93% from the smallest n the study ran (10).
MIN_PEARSON_UNITS = 4
# Below this many units the α bootstrap covered less than 93% in some cell of the study.
MIN_ALPHA_UNITS = 30
# A resample whose ratings do not vary has no α; more than this share of them and no interval.
MAX_UNDEFINED_SHARE = 0.01
_CHUNK_CELLS = 1 << 23  # resamples × units per batch of index draws (~64 MB of int64)


@dataclass(frozen=True)
class AgreementInterval:
    """An agreement figure with its interval, or the reason it has none."""

    statistic: str  # "pearson" or "krippendorff_alpha"
    estimate: float | None  # None: not defined (a constant judge, too few items)
    low: float | None
    high: float | None
    method: str | None  # "fisher-z", "percentile", "bca"; None when refused
    confidence_level: float
    n_units: int  # independent units: items, or clusters
    n_items: int
    clustered: bool
    refusal: str | None = None
    level: str | None = None  # α's level: interval or nominal
    n_resamples: int | None = None
    seed: int | None = None
    distribution: FloatArray | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "method": self.method,
            "confidence_level": self.confidence_level,
            "n_units": self.n_units,
            "n_items": self.n_items,
            "clustered": self.clustered,
            "refusal": self.refusal,
        }
        if self.level is not None:
            body["level"] = self.level
        if self.n_resamples is not None:
            body["n_resamples"] = self.n_resamples
            body["seed"] = self.seed
        return body


def _check_level(confidence_level: float) -> float:
    if not 0.0 < confidence_level < 1.0:
        raise InputError(f"confidence_level must lie in (0, 1), got {confidence_level}")
    return NormalDist().inv_cdf(0.5 + confidence_level / 2)


def _unit_codes(clusters: npt.ArrayLike | None, n: int) -> tuple[npt.NDArray[np.intp], bool]:
    if clusters is None:
        return np.arange(n, dtype=np.intp), False
    labels = np.asarray(clusters)
    if labels.shape != (n,):
        raise InputError(f"clusters needs one label per item ({n}), got shape {labels.shape}")
    return dense_codes(labels), True


def _t_quantile(confidence_level: float, df: int) -> float:
    if confidence_level == 0.95 and 1 <= df <= len(T975):
        return T975[df - 1]
    from scipy.special import stdtrit  # lazily: scipy.special costs 0.2 s to import

    return float(stdtrit(df, 0.5 + confidence_level / 2))


def _variance_factor(a: FloatArray, b: FloatArray, codes: npt.NDArray[np.intp], r: float) -> float:
    """n_units·Var̂(r)/(1 − r²)²: the variance of √n_units·atanh(r) by the influence function of
    r, IF = uv − r(u² + v²)/2 on standardised u, v, summed within units (1 for bivariate normal
    data, where Fisher's 1/(n − 3) is right; above 1 for heavy-tailed or skewed scores)."""
    u = (a - a.mean()) / a.std()
    v = (b - b.mean()) / b.std()
    influence = u * v - r / 2 * (u * u + v * v)
    per_unit = np.bincount(codes, weights=influence)
    n_units = int(np.count_nonzero(np.bincount(codes)))
    return float(n_units * (per_unit**2).sum() / a.size**2 / (1 - r * r) ** 2)


def pearson_interval(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
    method: PearsonMethod = "fisher-z-robust",
) -> AgreementInterval:
    """Pearson r of two judges over items (one value per item each: its mean over epochs) with
    an interval on Fisher's z over the units: the items, or with `clusters` (one label per item)
    the clusters. Items missing either value (NaN) are left out.

    `fisher-z`: atanh(r) ± z₁₋α/₂/√(n − 3), the textbook interval (scipy's `pearsonr`); it
    assumes bivariate normal scores. `fisher-z-robust` (default, calibrated): the variance
    1/(n − 3) times max(1, the influence-function estimate of n·Var(atanh r), summed within
    units), and t quantiles on n − 3 degrees of freedom: never narrower than `fisher-z`'s, wider
    where the scores' tails say Fisher's variance is too small."""
    z_crit = _check_level(confidence_level)
    if method not in ("fisher-z", "fisher-z-robust"):
        raise InputError(f"method must be 'fisher-z' or 'fisher-z-robust', got {method!r}")
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(
            f"pearson_interval needs two 1-D arrays of one length: {a.shape} {b.shape}"
        )
    codes, clustered = _unit_codes(clusters, a.size)
    both = np.isfinite(a) & np.isfinite(b)
    a, b, codes = a[both], b[both], codes[both]
    n_items = int(a.size)
    n_units = int(np.unique(codes).size) if clustered else n_items

    def refused(reason: str, estimate: float | None = None) -> AgreementInterval:
        return AgreementInterval(
            "pearson", estimate, None, None, None, confidence_level, n_units, n_items, clustered,
            refusal=reason,
        )  # fmt: skip

    if n_items < 2:
        return refused(f"{n_items} item(s) rated by both: no correlation")
    r = pearson(a, b)
    if not math.isfinite(r):
        return refused("a judge gave every item the same score: no correlation")
    unit = "clusters" if clustered else "items"
    if n_units < MIN_PEARSON_UNITS:
        return refused(f"{n_units} {unit}: Fisher's z needs at least {MIN_PEARSON_UNITS}", r)
    if abs(r) == 1.0:
        return refused(f"r = {r:+.0f} exactly on {n_items} items: Fisher's z has no interval", r)
    centre = math.atanh(r)
    if method == "fisher-z":
        half = z_crit / math.sqrt(n_units - 3)
    else:
        factor = max(1.0, _variance_factor(a, b, codes, r))
        half = _t_quantile(confidence_level, n_units - 3) * math.sqrt(factor / (n_units - 3))
    return AgreementInterval(
        "pearson", r, math.tanh(centre - half), math.tanh(centre + half), method,
        confidence_level, n_units, n_items, clustered,
    )  # fmt: skip


def _unit_statistics(data: FloatArray, level: str) -> FloatArray:
    """Per item (column of a raters × items array), the sums α is made of: observed
    disagreement, pairable values, and Σv, Σv² (interval) or the count per category (nominal)."""
    present = np.isfinite(data)
    m = present.sum(axis=0).astype(float)
    values = np.where(present, data, 0.0)
    pairable = m >= 2
    safe = np.where(pairable, m - 1, 1.0)
    if level == "interval":
        s1, s2 = values.sum(axis=0), (values**2).sum(axis=0)
        observed = np.where(pairable, 2 * (m * s2 - s1**2) / safe, 0.0)
        parts = [s1, s2]
    else:
        cats = np.unique(data[present])
        per = np.stack([((data == c) & present).sum(axis=0) for c in cats]).astype(float)
        observed = np.where(pairable, (m**2 - (per**2).sum(axis=0)) / safe, 0.0)
        parts = list(per)
    stats = np.vstack([observed, m, *parts])
    return np.where(pairable[None, :], stats, 0.0)  # an item rated once is not pairable


def _distinct_rows(rows: FloatArray) -> tuple[FloatArray, npt.NDArray[np.intp]]:
    """`np.unique(rows, axis=0, return_counts=True)`: the distinct rows in lexicographic order and
    how many of each, by a lexsort of the columns and a cut where a row differs from the one
    before it. numpy's own sorts the rows as one structured value each, through a comparison
    function per pair: 2 × 2.6 s of a layered `compare` over 500,000 samples, 0.15 s this way.
    The same rows in the same order (floats ordered as numpy sorts them, NaN last and never equal
    to itself); of rows equal but for the sign of a zero, numpy's keeps whichever its unstable
    sort put first — the per-unit sums here have no −0.0 (a bincount's sums start at +0.0)."""
    n = rows.shape[0]
    if n == 0 or rows.ndim != 2 or rows.shape[1] == 0:
        distinct, counts = np.unique(rows, axis=0, return_counts=True)
        return distinct, counts
    ordered = rows[np.lexsort(rows.T[::-1])]
    starts = np.ones(n, dtype=bool)
    np.any(ordered[1:] != ordered[:-1], axis=1, out=starts[1:])
    first = np.flatnonzero(starts)
    return ordered[first], np.diff(np.r_[first, n])


def _alpha_from_sums(sums: FloatArray, level: str) -> FloatArray:
    """α from summed unit statistics (rows as in `_unit_statistics`, any trailing shape)."""
    observed, n = sums[0], sums[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        if level == "interval":
            expected = 2 * (n * sums[3] - sums[2] ** 2) / (n * (n - 1))
        else:
            expected = (n**2 - (sums[2:] ** 2).sum(axis=0)) / (n * (n - 1))
        alpha = 1.0 - (observed / n) / expected
    return np.where((n >= 2) & (expected > 1e-12 * np.maximum(n, 1.0)), alpha, np.nan)


def _bca_levels(
    dist: FloatArray, estimate: float, jack: FloatArray, alpha: float
) -> tuple[float, float]:
    """BCa quantile levels (Efron 1987) as scipy.stats.bootstrap computes them: z0 from the share
    of resamples below the estimate (ties count half), the acceleration from the jackknife."""
    nd = NormalDist()
    below = (np.count_nonzero(dist < estimate) + np.count_nonzero(dist <= estimate)) / (
        2 * dist.size
    )
    if not 0.0 < below < 1.0:
        return alpha / 2, 1 - alpha / 2
    z0 = nd.inv_cdf(below)
    dev = jack.mean() - jack
    den = 6.0 * float((dev**2).sum()) ** 1.5
    accel = float((dev**3).sum()) / den if den > 0 else 0.0
    levels = []
    for z_a in (nd.inv_cdf(alpha / 2), nd.inv_cdf(1 - alpha / 2)):
        levels.append(nd.cdf(z0 + (z0 + z_a) / (1 - accel * (z0 + z_a))))
    return levels[0], levels[1]


def krippendorff_interval(
    ratings: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    level: Literal["interval", "nominal"] = "interval",
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    method: AlphaMethod = "bca",
    min_units: int = MIN_ALPHA_UNITS,
    algorithm: Algorithm = "auto",
    rng: int | np.random.Generator | None = None,
) -> AgreementInterval:
    """Krippendorff's α of a raters × items array (NaN: missing) with a bootstrap interval over
    the units: items, or with `clusters` (one label per item) whole clusters. Refused below
    `min_units` units (the calibrated default) and when more than 1% of resamples have no α.

    `algorithm`: `index` draws unit indices exactly as `scipy.stats.bootstrap` does; `counting`
    draws how often each kind of unit is drawn (units with equal sums are interchangeable: the
    same distribution, O(kinds) a resample — 1–5 scores of two judges have at most 25 kinds);
    `auto` counts when the kinds are at most a third of the units (as `stats.bootstrap`)."""
    _check_level(confidence_level)
    data = np.asarray(ratings, dtype=float)
    if data.ndim != 2:
        raise InputError(f"ratings must be raters × items, got shape {data.shape}")
    if level not in ("interval", "nominal"):
        raise InputError(f"level must be 'interval' or 'nominal', got {level!r}")
    if method not in ("percentile", "bca"):
        raise InputError(f"method must be 'percentile' or 'bca', got {method!r}")
    if n_resamples < 100:
        raise InputError(f"n_resamples must be at least 100, got {n_resamples}")
    codes, clustered = _unit_codes(clusters, data.shape[1])
    pairable = np.isfinite(data).sum(axis=0) >= 2
    data, codes = data[:, pairable], codes[pairable]
    n_items = int(data.shape[1])
    codes = dense_codes(codes) if n_items else codes
    n_units = int(codes.max()) + 1 if n_items else 0
    generator, seed = resolve_rng(rng)

    def result(estimate: float | None, **kw: Any) -> AgreementInterval:
        kw.setdefault("low", None)
        kw.setdefault("high", None)
        kw.setdefault("method", None)
        return AgreementInterval(
            statistic="krippendorff_alpha", estimate=estimate, confidence_level=confidence_level,
            n_units=n_units, n_items=n_items, clustered=clustered, level=level, **kw,
        )  # fmt: skip

    if n_items == 0:
        return result(None, refusal="no item is rated by two judges")
    estimate = krippendorff_alpha(data, level=level)
    if not math.isfinite(estimate):
        return result(None, refusal="the ratings do not vary: α is not defined")
    unit = "clusters" if clustered else "items"
    if n_units < min_units:
        return result(
            estimate,
            refusal=f"{n_units} {unit}: the bootstrap interval of α falls short of its coverage "
            f"below {min_units} (docs/calibration.md)",
        )
    per_item = _unit_statistics(data, level)
    per_unit = np.zeros((per_item.shape[0], n_units))
    for row in range(per_item.shape[0]):
        per_unit[row] = np.bincount(codes, weights=per_item[row], minlength=n_units)
    distinct, mult = _distinct_rows(per_unit.T)
    use_counting = algorithm == "counting" or (
        algorithm == "auto" and mult.size <= COUNTING_MAX_RATIO * n_units
    )
    dist = np.empty(n_resamples)
    if use_counting:  # units alike in every sum are interchangeable: O(distinct) a resample
        counts = _counting_draws(generator, mult.astype(float), n_resamples)
        dist[:] = _alpha_from_sums(distinct.T @ counts, level)
    chunk = max(1, _CHUNK_CELLS // n_units)
    for start in range(0, 0 if use_counting else n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = generator.integers(0, n_units, size=(stop - start, n_units))
        sums = np.stack([row[idx].sum(axis=1) for row in per_unit])
        dist[start:stop] = _alpha_from_sums(sums, level)
    undefined = int(np.count_nonzero(~np.isfinite(dist)))
    if undefined > MAX_UNDEFINED_SHARE * n_resamples:
        return result(
            estimate,
            refusal=f"{undefined} of {n_resamples} resamples have ratings that do not vary "
            "(no α): too few varied items",
        )
    dist = dist[np.isfinite(dist)]
    alpha = 1.0 - confidence_level
    levels = (alpha / 2, 1 - alpha / 2)
    if method == "bca":
        total = per_unit.sum(axis=1, keepdims=True)
        jack = _alpha_from_sums(total - per_unit, level)
        jack = jack[np.isfinite(jack)]
        if jack.size >= 2:
            levels = _bca_levels(dist, estimate, jack, alpha)
    low, high = np.quantile(dist, levels)
    return result(
        estimate, low=float(low), high=float(high), method=method, n_resamples=n_resamples,
        seed=seed, distribution=dist,
    )  # fmt: skip


# ---------------------------------------------------------------------- a run's agreement


@dataclass(frozen=True)
class RunAgreement:
    """A run's agreement figures with their intervals, on per-item means: the judges' Pearson r
    (per pair, and their mean), Krippendorff's α (interval) between judges, and the judge layer
    against human labels (Pearson r). None where the data has no such figure."""

    unit: str  # the independent unit: sample_id, group or task
    judge_pairs: list[tuple[str, str, AgreementInterval]]
    judge_pearson: AgreementInterval | None
    judge_alpha: AgreementInterval | None
    human_pearson: AgreementInterval | None

    @property
    def empty(self) -> bool:
        """No figure at all: fewer than two judges and no human labels."""
        found = (self.judge_pearson, self.judge_alpha, self.human_pearson)
        return not self.judge_pairs and all(f is None for f in found)

    def to_dict(self) -> dict[str, Any]:
        def body(i: AgreementInterval | None) -> dict[str, Any] | None:
            return None if i is None else i.to_dict()

        return {
            "unit": self.unit,
            "judge_pearson": body(self.judge_pearson),
            "judge_pairs": [{"judges": [a, b], **i.to_dict()} for a, b, i in self.judge_pairs],
            "judge_krippendorff_alpha": body(self.judge_alpha),
            "human_pearson": body(self.human_pearson),
        }


def item_means(values: FloatArray, items: npt.NDArray[np.int64], n_items: int) -> FloatArray:
    """Per item, the mean of its finite values (NaN where it has none)."""
    ok = np.isfinite(values)
    total = np.bincount(items[ok], weights=values[ok], minlength=n_items)
    count = np.bincount(items[ok], minlength=n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def run_agreement(
    judges: Mapping[str, FloatArray],
    items: npt.NDArray[np.int64],
    *,
    units: npt.ArrayLike | None = None,
    unit: str = "sample_id",
    judge_layer: FloatArray | None = None,
    human: FloatArray | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    rng: int | np.random.Generator | None = None,
) -> RunAgreement:
    """A run's agreement from per-row scores: `judges` (name → one score per row, NaN: not
    judged), `items` (the item code 0..k−1 of each row; epochs of an item share it), `units`
    (the cluster label of each row when the unit is above the item; None: the item). A pair of
    judges needs 3 items both rated for r (as the layered scheme always has)."""
    items = np.asarray(items, dtype=np.int64)
    k = int(items.max()) + 1 if items.size else 0
    unit_of_item: npt.NDArray[Any] | None = None
    if units is not None and unit != "sample_id":
        labels = np.asarray(units)
        unit_of_item = np.empty(k, dtype=labels.dtype)
        unit_of_item[items] = labels
    means = {name: item_means(np.asarray(v, dtype=float), items, k) for name, v in judges.items()}
    pairs: list[tuple[str, str, AgreementInterval]] = []
    names = list(means)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            both = np.isfinite(means[a]) & np.isfinite(means[b])
            if both.sum() < 3:
                continue
            pairs.append((a, b, pearson_interval(
                means[a], means[b], clusters=unit_of_item, confidence_level=confidence_level
            )))  # fmt: skip
    judge_pearson = _mean_pearson(pairs, confidence_level)
    judge_alpha = None
    if len(means) >= 2:
        alpha = krippendorff_interval(
            np.vstack(list(means.values())), clusters=unit_of_item, level="interval",
            confidence_level=confidence_level, n_resamples=n_resamples, rng=rng,
        )  # fmt: skip
        judge_alpha = alpha if alpha.estimate is not None else None
    human_pearson = None
    if human is not None and judge_layer is not None:
        j = item_means(np.asarray(judge_layer, dtype=float), items, k)
        h = item_means(np.asarray(human, dtype=float), items, k)
        if (np.isfinite(j) & np.isfinite(h)).sum() >= 3:
            found = pearson_interval(j, h, clusters=unit_of_item, confidence_level=confidence_level)
            human_pearson = found if found.estimate is not None else None
    return RunAgreement(unit, pairs, judge_pearson, judge_alpha, human_pearson)


def _mean_pearson(
    pairs: list[tuple[str, str, AgreementInterval]], confidence_level: float
) -> AgreementInterval | None:
    """The mean r over pairs of judges: with one pair its interval; with several, the mean has
    none (the pairs share items, so their errors are not independent): each pair's is given."""
    defined = [i for _, _, i in pairs if i.estimate is not None]
    if not defined:
        return None
    if len(pairs) == 1:
        return defined[0]
    first = defined[0]
    return AgreementInterval(
        "pearson", float(np.mean([i.estimate for i in defined if i.estimate is not None])),
        None, None, None, confidence_level, first.n_units, first.n_items, first.clustered,
        refusal=f"the mean over {len(defined)} pairs of judges has no interval: each pair's "
        "is given",
    )  # fmt: skip
