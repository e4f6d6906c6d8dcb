"""Prediction-powered inference (PPI++) for judge scores against human labels.

A run has N samples scored by a judge (f) and a random subset of n of them labelled by people (y).
The estimand is the mean on the people's scale, θ = E[y]. PPI (Angelopoulos, Bates, Fannjiang,
Jordan & Zrnic, Science 2023) and its power-tuned form PPI++ (Angelopoulos, Duchi & Zrnic 2024,
"PPI++: Efficient prediction-powered inference", arXiv:2311.01453, §2, mean estimation) estimate it
from all the judge scores, corrected by the labelled slice:

    θ̂_λ = λ · f̄_U + (ȳ_L − λ · f̄_L)

with f̄_U the judge's mean over the N − n samples WITHOUT a human label — the paper's unlabelled
set X̃₁…X̃_N, independent of the labelled one — and ȳ_L, f̄_L the human and judge means over the n
labelled samples. λ = 0 is the human-only mean, λ = 1 plain PPI. Its variance is

    Var(θ̂_λ) = λ² · Var(f_U)/(N − n) + Var(y − λf)/n,

minimised by the paper's λ* = Cov(y, f) / ((1 + n/(N − n)) · Var(f)), estimated with the
covariance over the labelled slice and the variance of f pooled over all N samples, clipped to
[0, 1] — exactly `ppi_py.ppi_mean_pointestimate` / `ppi_mean_ci` with `lam=None`, whose
`Yhat_unlabeled` is the judge on the unlabelled samples only (tests/test_ppi.py). (The same
estimator written with the judge mean over ALL N samples has coefficient λ·N/(N − n); its optimum
is then the regression slope Cov(y, f)/Var(f): this is the survey-sampling regression estimator.)

Where calipers departs from the paper (`cross_fit=False, asymptotic=True` is the paper's
estimator and interval exactly), each measured in docs/judges.md:

- λ̂ is cross-fitted: each labelled unit's rectifier y_i − λ̂₋ᵢ·f_i uses the λ̂ estimated without
  it (leave one unit out), so λ̂ is independent of the labels it corrects and the estimate has no
  selection bias (the paper's in-sample λ̂: up to +0.043 at 20 labels on 1–5 scores);
  θ̂ = λ̄·f̄_U + the mean rectifier, λ̄ the mean λ̂₋ᵢ;
- unbiased (n − 1) variances of each part, and a t quantile on Welch–Satterthwaite degrees of
  freedom of the two parts (≈ n − 1 when the labelled part dominates);
- a pass/fail judge against pass/fail labels (one run) gets the stratified form at the regression
  λ with an interval from Wilson intervals (`calipers.stats.ppi_binary`): at 30 labels, a 0.85
  pass rate and sensitivity = specificity = 0.95 — a judge that agrees with all 30 labels 21% of
  the time — the t interval covered 82.7%, this one 99.1%;
- clusters (a sample's epochs, a group): each part's variance is cluster-robust (CR1), built from
  the clusters' influence values, so a cluster with labelled and unlabelled rows is handled too;
  `weights` (1/epochs: the mean of per-sample means) as in `calipers.stats.estimate`;
- the interval shown is never wider than the human-only one (`mean_interval` / `paired_interval`
  of the labels, the interval calipers would otherwise show): when PPI++'s is wider — a weak judge
  at few labels, where the estimated λ̂ costs more than it gains (Mani, Xu, Lipton & Oberst 2025,
  "No free lunch") — the human-only interval and its estimate are reported, and the result says so;
- fewer than MIN_LABELS labelled units: refused (`TooFewLabels`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats.bootstrap import check_weights, dense_codes
from calipers.stats.estimate import mean_interval, paired_interval
from calipers.stats.interval_parts import Interval, NoInterval, is_binary, t_quantile, weighted_mean
from calipers.stats.intervals import z_from_confidence
from calipers.stats.ppi_binary import stratified_interval

FloatArray = npt.NDArray[np.float64]
Lam = float | Literal["auto"] | None

# Below this many labelled units the study measured coverage under 93% in some cell (92.7% at 20
# labels, 85.8% at 15; from 30, 93.8% or more in all 33: docs/judges.md, "Calibrating judges
# against human labels"): refused.
MIN_LABELS = 30
# A judge whose PPI++ variance is not at least this factor below the human-only one (it is worth
# fewer than 10% more labels) is reported as too weak to gain anything.
MIN_GAIN = 1.1


class TooFewLabels(NoInterval):
    """Fewer labelled units than the calibrated minimum: no corrected estimate is made."""

    def __init__(self, n_labelled: int, minimum: int, what: str = "samples") -> None:
        super().__init__(
            f"{n_labelled} labelled {what}: calibrating a judge against human labels needs at "
            f"least {minimum} (below that the corrected interval covered under 93%, "
            "docs/judges.md); label more samples"
        )
        self.n_labelled = n_labelled
        self.minimum = minimum


@dataclass(frozen=True)
class PPIResult:
    """A judge-based mean (or paired difference) corrected by human labels, and what it gained."""

    interval: Interval  # the interval shown: PPI++'s, or the human-only one when PPI++'s is wider
    source: Literal["ppi", "human-only"]
    ppi: Interval | None  # PPI++'s own interval (None with `ppi_reason` when it has none)
    human_only: Interval | None  # the labels alone (None with `human_only_reason`)
    lam: float  # λ: the weight of the unlabelled samples' judge mean (the paper's convention)
    lam_method: str  # "cross-fit", "in-sample" (the paper's λ̂), "fixed", "stratified" (0/1)
    judge_mean: float  # the uncorrected judge mean over every sample: what the judge alone says
    human_mean: float  # the labels' own mean
    n_labelled: int  # labelled observations (rows)
    n_unlabelled: int
    n_labelled_units: int  # independent labelled units (clusters; = rows without clusters)
    effective_labels: float  # n_labelled_units · Var(human only) / Var(PPI++)
    judge_too_weak: bool
    notes: tuple[str, ...]
    ppi_reason: str | None = None
    human_only_reason: str | None = None

    @property
    def estimate(self) -> float:
        return self.interval.estimate

    @property
    def low(self) -> float:
        return self.interval.low

    @property
    def high(self) -> float:
        return self.interval.high

    @property
    def fell_back(self) -> bool:
        return self.source == "human-only"

    @property
    def gain(self) -> float:
        """How many labels' worth each label is with the judge (effective / actual)."""
        return self.effective_labels / self.n_labelled_units

    @property
    def judge_bias(self) -> float:
        """The judge's mean minus the corrected estimate: how far the judge alone is off."""
        return self.judge_mean - self.estimate

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "source": self.source,
            "interval": self.interval.to_dict(),
            "ppi": None if self.ppi is None else self.ppi.to_dict(),
            "ppi_reason": self.ppi_reason,
            "human_only": None if self.human_only is None else self.human_only.to_dict(),
            "human_only_reason": self.human_only_reason,
            "lam": self.lam,
            "lam_method": self.lam_method,
            "judge_mean": self.judge_mean,
            "human_mean": self.human_mean,
            "judge_bias": self.judge_bias,
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "n_labelled_units": self.n_labelled_units,
            "effective_labels": self.effective_labels,
            "gain": self.gain,
            "judge_too_weak": self.judge_too_weak,
            "notes": list(self.notes),
        }


def ppi_mean(
    judge: npt.ArrayLike,
    human: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
    lam: Lam = "auto",
    cross_fit: bool = True,
    stratify: bool = True,
    asymptotic: bool = False,
    min_labels: int = MIN_LABELS,
) -> PPIResult:
    """PPI++ estimate of the human-scale mean from every sample's `judge` score and the `human`
    labels of a random subset (NaN where a sample has none), aligned row by row.

    `lam`: "auto" (or None) power-tunes λ̂, clipped to [0, 1] — cross-fitted (`cross_fit=True`)
    or the paper's in-sample λ̂ — and, when every judge score and label is 0 or 1, takes the
    stratified form (`calipers.stats.ppi_binary`; `stratify=False` keeps the t interval of
    PPI++); a number fixes λ (0: the human-only mean,
    1: plain PPI). `clusters`/`weights` are per row, as in `mean_interval`. `asymptotic=True` is
    the paper's interval (plug-in variances, normal quantile; with `cross_fit=False`, `ppi_py`'s).
    Raises `TooFewLabels` below `min_labels` labelled units, `NoInterval` when neither PPI++ nor
    the labels alone support an interval."""
    f, y, codes, w = _inputs(judge, human, clusters, weights)
    labelled = np.isfinite(y)
    human_only, human_reason = _human_only(
        lambda: mean_interval(
            y[labelled],
            clusters=None if clusters is None else codes[labelled],
            weights=None if w is None else w[labelled],
            confidence_level=confidence_level,
            method="t",  # the CLT interval PPI++ is compared with (ppi_py's), as before
        )
    )
    return _ppi(
        f, y, labelled, codes, w, human_only, human_reason,
        lam=lam, cross_fit=cross_fit, stratified=stratify and is_binary(f, y[labelled]),
        confidence_level=confidence_level, asymptotic=asymptotic, min_labels=min_labels, notes=(),
    )  # fmt: skip


def ppi_paired_difference(
    judge_control: npt.ArrayLike,
    judge_treatment: npt.ArrayLike,
    human_control: npt.ArrayLike,
    human_treatment: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
    lam: Lam = "auto",
    cross_fit: bool = True,
    asymptotic: bool = False,
    min_labels: int = MIN_LABELS,
) -> PPIResult:
    """PPI++ on per-sample differences (treatment − control) of two runs on the same samples:
    the judge's difference on every sample, the humans' on the samples labelled in both runs
    (a sample labelled in one run only counts as unlabelled, and the notes say how many). The
    human-only interval is `paired_interval` of the labelled pairs."""
    jc = np.asarray(judge_control, dtype=np.float64)
    jt = np.asarray(judge_treatment, dtype=np.float64)
    hc = np.asarray(human_control, dtype=np.float64)
    ht = np.asarray(human_treatment, dtype=np.float64)
    if not (jc.shape == jt.shape == hc.shape == ht.shape) or jc.ndim != 1:
        raise InputError(
            "judge and human scores of both runs must be one-dimensional and of one length: "
            f"{jc.shape}, {jt.shape}, {hc.shape}, {ht.shape}"
        )
    both = np.isfinite(hc) & np.isfinite(ht)
    one_side = int(np.sum(np.isfinite(hc) != np.isfinite(ht)))
    f, y, codes, w = _inputs(jt - jc, np.where(both, ht - hc, np.nan), clusters, weights)
    human_only, human_reason = _human_only(
        lambda: paired_interval(
            hc[both],
            ht[both],
            clusters=None if clusters is None else codes[both],
            weights=None if w is None else w[both],
            confidence_level=confidence_level,
            method="t",  # the CLT interval PPI++ is compared with (ppi_py's), as before
        )
    )
    notes: tuple[str, ...] = ()
    if one_side:
        notes = (
            f"{one_side} sample{'s' if one_side != 1 else ''} labelled in one run only "
            "used as unlabelled",
        )
    return _ppi(
        f, y, both, codes, w, human_only, human_reason,
        lam=lam, cross_fit=cross_fit, stratified=False, confidence_level=confidence_level,
        asymptotic=asymptotic, min_labels=min_labels, notes=notes,
    )  # fmt: skip


def _inputs(
    judge: npt.ArrayLike,
    human: npt.ArrayLike,
    clusters: npt.ArrayLike | None,
    weights: npt.ArrayLike | None,
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.intp], FloatArray | None]:
    f = np.asarray(judge, dtype=np.float64)
    y = np.asarray(human, dtype=np.float64)
    if f.ndim != 1 or f.shape != y.shape:
        raise InputError(
            f"judge and human must be one-dimensional and of one length: {f.shape} vs {y.shape}"
        )
    if not np.all(np.isfinite(f)):
        raise InputError(
            "every sample needs a finite judge score",
            hint="Drop the samples the judge failed on (a failed judge is missing, never 0) and "
            "say how many.",
        )
    if np.any(np.isinf(y)):
        raise InputError("human labels must be finite, or NaN where a sample has none")
    if clusters is None:
        codes = np.arange(f.size, dtype=np.intp)
    else:
        labels = np.asarray(clusters)
        if labels.shape != f.shape:
            raise InputError(f"clusters has {labels.size} labels for {f.size} observations")
        codes = dense_codes(labels)
    return f, y, codes, check_weights(weights, f)


def _human_only(make: Any) -> tuple[Interval | None, str | None]:
    try:
        return make(), None
    except NoInterval as why:
        return None, why.reason


@dataclass(frozen=True)
class _Parts:
    """θ̂ = λ̄·f̄_U + r̄_L, r_i = y_i − λ_i·f_i, linearised over clusters: each cluster's influence
    on f̄_U (a) and on r̄_L (rect); Σ over clusters of their products are the (co)variances."""

    f_u: float
    r_l: float
    lam: float  # λ̄: the labelled units' mean λ_i (λ itself when one λ serves every unit)
    a: FloatArray
    rect: FloatArray
    g_u: int  # clusters with unlabelled rows
    g_l: int  # clusters with labelled rows
    g: int


def _share(
    x: FloatArray, rows: npt.NDArray[np.bool_], codes: npt.NDArray[np.intp], w: FloatArray, g: int
) -> tuple[float, FloatArray]:
    """The weighted mean of x over `rows` and each cluster's influence on it."""
    ww = w[rows]
    mean = float(ww @ x[rows] / ww.sum())
    infl = np.bincount(codes[rows], weights=ww * (x[rows] - mean), minlength=g) / ww.sum()
    return mean, np.asarray(infl, dtype=np.float64)


def _count_units(codes: npt.NDArray[np.intp], rows: npt.NDArray[np.bool_], g: int) -> int:
    return int(np.count_nonzero(np.bincount(codes[rows], minlength=g)))


def _kish(w: FloatArray) -> float:
    return float(w.sum() ** 2 / (w @ w))


def _paper_lambda(
    f: FloatArray,
    y: FloatArray,
    labelled: npt.NDArray[np.bool_],
    codes: npt.NDArray[np.intp],
    w: FloatArray,
    g: int,
) -> float:
    """The paper's λ̂ = Ĉov(y, f)/((1 + n/(N − n))·V̂ar(f)) as Cov(ȳ_L, f̄_L)/(Var f̄_L + Var f̄_U),
    the variances from one per-row variance of f pooled over every row: ppi_py's exactly without
    clusters or weights (Ĉov over the labelled rows with 1/n, V̂ar over all with 1/(N − 1))."""
    _, by = _share(y, labelled, codes, w, g)
    _, bf = _share(f, labelled, codes, w, g)
    _, pooled = _share(f, np.ones_like(labelled), codes, w, g)
    per_row = _kish(w) * g / (g - 1) * float(pooled @ pooled)
    denominator = per_row * (1 / _kish(w[labelled]) + 1 / _kish(w[~labelled]))
    return float(by @ bf) / denominator if denominator > 0 else 0.0


def _cross_fit_lambdas(
    f: FloatArray,
    y: FloatArray,
    labelled: npt.NDArray[np.bool_],
    codes: npt.NDArray[np.intp],
    w: FloatArray,
    g: int,
) -> FloatArray:
    """λ̂ for each labelled row, from the other labelled units only (leave one cluster out):
    Ĉov₋ₖ(y, f)/((1 + n/(N − n))·V̂ar₋ₖ(f)), clipped to [0, 1]. A unit's λ̂ is independent of its
    own labels and of the unlabelled rows, so the estimate has no λ̂-selection bias (the paper's
    in-sample λ̂ gave up to +0.043 at 20 labels on 1–5 scores, docs/judges.md)."""
    rows = labelled
    ww, yy, ff, cc = w[rows], y[rows], f[rows], codes[rows]
    total = ww.sum()
    yy = yy - ww @ yy / total  # centred: the sums below lose no digits
    ff = ff - ww @ ff / total

    def sums(x: FloatArray) -> FloatArray:
        return np.asarray(np.bincount(cc, weights=x, minlength=g), dtype=np.float64)

    per = [sums(ww), sums(ww * yy), sums(ww * ff), sums(ww * yy * ff), sums(ww * ff * ff)]
    rest = [float(s.sum()) - s for s in per]  # every labelled unit but cluster k
    w_k = np.where(rest[0] > 0, rest[0], 1.0)
    my, mf = rest[1] / w_k, rest[2] / w_k
    cov = rest[3] / w_k - my * mf
    var = rest[4] / w_k - mf * mf
    ratio = 1 / _kish(ww) + 1 / _kish(w[~rows])
    scale = _kish(ww) * ratio  # 1 + n/(N − n)
    safe = var > 1e-12 * max(1.0, float(np.max(np.abs(ff))) ** 2)
    lam = np.where(safe, cov / (scale * np.where(safe, var, 1.0)), 0.0)
    return np.asarray(np.clip(lam, 0.0, 1.0)[cc], dtype=np.float64)


def _parts(
    f: FloatArray,
    y: FloatArray,
    labelled: npt.NDArray[np.bool_],
    codes: npt.NDArray[np.intp],
    w: FloatArray,
    lam_rows: FloatArray,
) -> _Parts:
    """`lam_rows`: λ_i for each labelled row."""
    g = int(codes.max()) + 1
    unlabelled = ~labelled
    f_u, a = _share(f, unlabelled, codes, w, g)
    r = np.zeros_like(f)
    r[labelled] = y[labelled] - lam_rows * f[labelled]
    r_l, rect = _share(r, labelled, codes, w, g)
    lam = float(w[labelled] @ lam_rows / w[labelled].sum())
    g_u, g_l = _count_units(codes, unlabelled, g), _count_units(codes, labelled, g)
    return _Parts(f_u, r_l, lam, a, rect, g_u, g_l, g)


def _variance(parts: _Parts, asymptotic: bool) -> tuple[float, float | None]:
    """Var(θ̂) and its Welch–Satterthwaite df (None when asymptotic): CR1 factors G/(G − 1) per
    part (plain unbiased variances without clusters), none when asymptotic (the paper's)."""

    def factor(k: int) -> float:
        return 1.0 if asymptotic or k < 2 else k / (k - 1)

    lam = parts.lam
    v_u = factor(parts.g_u) * lam * lam * float(parts.a @ parts.a)
    v_r = factor(parts.g_l) * float(parts.rect @ parts.rect)
    cross = factor(parts.g) * 2 * lam * float(parts.a @ parts.rect)  # clusters holding both
    total = v_u + v_r + cross
    if asymptotic:
        return total, None
    spread = v_r * v_r / (parts.g_l - 1) + (v_u * v_u / (parts.g_u - 1) if v_u > 0 else 0.0)
    return total, (v_u + v_r) ** 2 / spread if spread > 0 else float(parts.g_l - 1)


def _ppi(
    f: FloatArray,
    y: FloatArray,
    labelled: npt.NDArray[np.bool_],
    codes: npt.NDArray[np.intp],
    w: FloatArray | None,
    human_only: Interval | None,
    human_reason: str | None,
    *,
    lam: Lam,
    cross_fit: bool,
    stratified: bool,
    confidence_level: float,
    asymptotic: bool,
    min_labels: int,
    notes: tuple[str, ...],
) -> PPIResult:
    z_from_confidence(confidence_level)  # validates it
    n_labelled = int(labelled.sum())
    g = int(codes.max()) + 1 if codes.size else 0
    g_l = _count_units(codes, labelled, g)
    what = "samples" if g_l == n_labelled and g == f.size else "units"
    if g_l < max(min_labels, 3):
        raise TooFewLabels(g_l, max(min_labels, 3), what)
    tuned = lam is None or lam == "auto"
    if not tuned and not (isinstance(lam, int | float) and math.isfinite(lam)):
        raise InputError(f"lam must be 'auto' or a finite number, got {lam!r}", parameters=["lam"])
    ww = np.ones_like(f) if w is None else w
    notes_list = list(notes)
    g_u = _count_units(codes, ~labelled, g)
    method = "fixed"
    if g_u < 2:
        lam_rows = np.zeros(n_labelled)
        notes_list.append("fewer than 2 unlabelled units: the labels alone carry the estimate")
    elif not tuned:
        lam_rows = np.full(n_labelled, float(lam))  # type: ignore[arg-type]
    elif cross_fit:
        lam_rows, method = _cross_fit_lambdas(f, y, labelled, codes, ww, g), "cross-fit"
    else:
        paper = min(1.0, max(0.0, _paper_lambda(f, y, labelled, codes, ww, g)))
        lam_rows, method = np.full(n_labelled, paper), "in-sample"
    ppi: Interval | None = None
    ppi_reason: str | None = None
    if stratified and tuned and g_u >= 2 and not asymptotic:
        ppi, ppi_reason, lam_value = stratified_interval(
            f, y, labelled, codes, w, confidence_level=confidence_level
        )
        method = "stratified"
        if ppi is not None and human_only is not None:
            ratio = (human_only.high - human_only.low) / max(ppi.high - ppi.low, 1e-300)
            effective = g_l * ratio * ratio
            ppi = replace(ppi, n_effective=effective)
        else:
            effective = float(g_l)
    elif g_u < 2:
        # every unit (or all but one) labelled: no unlabelled mean for the judge to correct, and
        # its parts would be 0/0 (the "corrected scores do not vary" reason was wrong here)
        lam_value, effective = 0.0, float(g_l)
        ppi_reason = "every unit but at most one is labelled: the judge has nothing to add"
    else:
        parts = _parts(f, y, labelled, codes, ww, lam_rows)
        human_var, _ = _variance(
            _parts(f, y, labelled, codes, ww, np.zeros(n_labelled)), asymptotic
        )
        lam_value = parts.lam
        variance, df = _variance(parts, asymptotic)
        estimate = parts.lam * parts.f_u + parts.r_l
        effective = float(g_l) if human_var <= 0 else math.inf
        if variance > 0:
            se = math.sqrt(variance)
            if df is None:
                q = z_from_confidence(confidence_level)
            else:
                q = t_quantile(1 - (1 - confidence_level) / 2, df)
            effective = g_l * human_var / variance
            ppi = Interval(
                estimate, estimate - q * se, estimate + q * se, "ppi",
                "ppi++-z" if asymptotic else "ppi++-t", confidence_level, se, df, g,
                int(f.size), effective,
            )  # fmt: skip
        else:
            ppi_reason = "the corrected scores do not vary: no spread to make an interval from"
    shown, source = _choose(ppi, human_only, ppi_reason, human_reason, notes_list)
    gain = effective / g_l
    too_weak = ppi is None or source == "human-only" or gain < MIN_GAIN
    if too_weak and ppi is not None:
        notes_list.append(
            f"the judge is too weak to gain anything: with it each label is worth {gain:.2f} "
            "labels; the human labels carry the estimate"
        )
    return PPIResult(
        shown, source, ppi, human_only, lam_value, method, weighted_mean(f, w),
        weighted_mean(y[labelled], None if w is None else w[labelled]), n_labelled,
        int(f.size - n_labelled), g_l, effective, too_weak, tuple(notes_list), ppi_reason,
        human_reason,
    )  # fmt: skip


def _choose(
    ppi: Interval | None,
    human_only: Interval | None,
    ppi_reason: str | None,
    human_reason: str | None,
    notes: list[str],
) -> tuple[Interval, Literal["ppi", "human-only"]]:
    """PPI++'s interval unless it is wider than the human-only one (or has none)."""
    if ppi is None:
        if human_only is None:
            raise NoInterval(f"{ppi_reason}; the labels alone: {human_reason}")
        notes.append(f"no corrected interval ({ppi_reason}): the human-only interval is shown")
        return human_only, "human-only"
    if human_only is None:
        notes.append(f"no human-only interval to compare with ({human_reason})")
        return ppi, "ppi"
    ppi_width, human_width = ppi.high - ppi.low, human_only.high - human_only.low
    if ppi_width > human_width:
        notes.append(
            f"the corrected interval (width {ppi_width:.3g}) is wider than the human labels' own "
            f"({human_width:.3g}): the human-only interval is shown"
        )
        return human_only, "human-only"
    return ppi, "ppi"
