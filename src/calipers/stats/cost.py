"""Cost with its uncertainty: cost per solved item (a ratio of means), what an improvement costs
(a ratio of paired differences) and the net benefit at a stated value per solved item.

Units are the independent clusters (a sample with its epochs, or a `group`); each row enters with
its weight (`estimate.sample_weights`: every sample weighs the same however many epochs it has),
so a unit contributes its weighted sums. With s_g, m_g a unit's sums of cost and outcome:

    cost per solved          R = Σ cost_g / Σ solved_g  (= mean cost / mean outcome)
    its variance (log scale) se² = G/(G − 1) · Σ_g (cost_g/Σcost − solved_g/Σsolved)²
    interval ("bootstrap-t") exp(log R̂ − t*_{1−α/2}·se), exp(log R̂ − t*_{α/2}·se)

with t* = (log R* − log R̂)/se* over `n_resamples` draws of G units with replacement, R* and se*
the same formulas on the draw (the seed recorded). The bootstrap-t reads the skewness of heavy-
tailed costs from the data where exp(log R̂ ± t_{G−1}·se) (the log-scale delta method) assumes
it away; it covered 1–4 points more at log sd 1.5 and still misses 93% there below ~1,000 units
(docs/calibration.md, "Cost"), which calipers states as a warning.

When the outcome's own interval (mean ± t·se) reaches 0 the ratio has no finite upper bound:
Fieller's confidence set {R : (Ĉ − R·Â)² ≤ t²·Var(Ĉ − R·Â)} is then a ray or the whole line, and
the result says "unbounded" (`high` None) instead of a number. Paired, the cost per additional
solved item Δcost/Δoutcome is Fieller's set on the units' paired differences, and the net
benefit v·Δoutcome − Δcost is the paired interval of `calipers.stats.estimate.paired_interval`
(t, cluster-robust) on the per-row net values. The two agree by construction: v is inside the
ratio's Fieller interval exactly when the net benefit's interval at v contains 0.

P(net benefit > 0) at a value v is the one-sided confidence level of the paired t test of
"net ≤ 0": T_{G−1}(net̂(v)/se(v)) — the level of the one-sided interval whose lower end is 0, not
a Bayesian posterior. Coverage of every interval here is measured in docs/calibration.md
("Cost") by `python -m calipers.calibration.cost`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats._blas import one_blas_thread
from calipers.stats._rng import resolve_rng
from calipers.stats.bootstrap import check_weights, dense_codes
from calipers.stats.estimate import paired_interval
from calipers.stats.interval_parts import Interval, NoInterval, t_quantile

FloatArray = npt.NDArray[np.float64]

# Resamples of a cost-per-solved interval: the calibration's (docs/calibration.md, "Cost");
# recorded with the seed in every report.
COST_RESAMPLES = 2_000
# Index draws (8 bytes each) held at once while counting a chunk of resamples: 4 MiB, so that a
# chunk's draws and counts stay in cache (measured 15% faster than 16 MiB at 10,000 units).
_CHUNK_DRAWS = 1 << 19
# From this many units, on light-tailed values (the sd of the log of the units' values below
# HEAVY_LOG_SPREAD), the log-delta interval is given without resampling: at 1,000 units it
# covered 93.4–95.6% in every cost calibration cell (the bootstrap-t 93.5–95.3%), and at log
# sd 1 94.6–95.6% — the bootstrap-t's gain over it is at fewer units and heavier tails
# (docs/calibration.md, "Cost"). Resampling 10,000 units costs 2,000 × 10,000 × 5 multiply-adds
# per figure, which made a leaderboard of 100 runs × 10,000 items with cost 60× slower.
LOG_DELTA_UNITS = 1_000
# The sd of the log of the units' values (`log_spread`) from which values are heavy-tailed: at
# log sd 1.5 the intervals fell short at 100 units (docs/cost.md, "When calipers warns").
HEAVY_LOG_SPREAD = 1.25


@dataclass(frozen=True)
class Moments:
    """Two weighted means over the same units and their cluster-robust (CR1) covariance."""

    numerator: float  # mean of the numerator values (Σ s_x / Σ m)
    denominator: float  # mean of the denominator values
    var_numerator: float  # CR1 variance of the numerator's mean
    var_denominator: float
    covariance: float
    n_units: int
    numerator_sums: FloatArray = field(repr=False)  # per unit, what the means were made from
    denominator_sums: FloatArray = field(repr=False)
    sizes: FloatArray = field(repr=False)


def unit_moments(
    numerator: npt.ArrayLike,
    denominator: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
) -> Moments:
    """The units' weighted sums of both values (rows grouped by `clusters`; each row its own unit
    without) and the CR1 covariance of the two means: G/(G − 1)·Σ_g r_g r_gᵀ / (Σm)², with
    r_g = s_g − θ·m_g. NoInterval below 2 units."""
    x = _floats(numerator, "numerator")
    y = _floats(denominator, "denominator")
    if x.shape != y.shape:
        raise InputError(f"numerator and denominator differ in length: {x.size} vs {y.size}")
    w = check_weights(weights, x)
    ww = np.ones_like(x) if w is None else w
    if clusters is None:
        codes = np.arange(x.size, dtype=np.intp)
    else:
        labels = np.asarray(clusters)
        if labels.shape != x.shape:
            raise InputError(f"clusters has {labels.size} labels for {x.size} observations")
        codes = dense_codes(labels)
    g = int(codes.max()) + 1 if codes.size else 0
    if g < 2:
        raise NoInterval(f"{g} independent unit{'s' if g != 1 else ''}: an interval needs 2")
    sx = np.asarray(np.bincount(codes, weights=ww * x, minlength=g), dtype=np.float64)
    sy = np.asarray(np.bincount(codes, weights=ww * y, minlength=g), dtype=np.float64)
    m = np.asarray(np.bincount(codes, weights=ww, minlength=g), dtype=np.float64)
    total = float(m.sum())
    mx, my = float(sx.sum()) / total, float(sy.sum()) / total
    rx, ry = sx - mx * m, sy - my * m
    scale = g / (g - 1) / total**2
    return Moments(
        mx, my, scale * _dot(rx, rx), scale * _dot(ry, ry), scale * _dot(rx, ry), g,
        sx, sy, m,
    )  # fmt: skip


def _dot(a: FloatArray, b: FloatArray) -> float:
    """Σ a·b by numpy's pairwise sum, not BLAS: a BLAS dot over many values is split across its
    threads, so its last digits depend on the machine's cores, and on a busy 2-core machine its
    threads' hand-offs made a 100-run ReasonScore take 7 s instead of 1.5 s (2026-11-27)."""
    return float(np.sum(a * b))


def _floats(values: npt.ArrayLike, name: str) -> FloatArray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1 or not np.all(np.isfinite(a)):
        raise InputError(
            f"{name} must be a one-dimensional array of finite numbers (a missing cost or "
            "outcome is not 0: leave such rows out, or refuse)"
        )
    return a


@dataclass(frozen=True)
class RatioInterval:
    """An interval for a ratio of means, with what it was computed from. `low`/`high` None mean
    unbounded on that side (never an infinity or a huge number in a float field); `excluded`:
    Fieller's set is everything but this open interval (two rays)."""

    estimate: float | None  # None: the denominator's mean is 0
    low: float | None
    high: float | None
    method: str  # "bootstrap-t", "log-delta", "fieller", "none-solved"
    confidence_level: float
    critical_value: float  # t_{G−1}
    moments: Moments
    reason: str
    excluded: tuple[float, float] | None = None
    standard_error_log: float | None = None  # bootstrap-t: the sample's log-delta se
    n_resamples: int | None = None  # bootstrap-t only, with its seed and t* quantiles
    seed: int | None = None
    t_quantiles: tuple[float, float] | None = None  # (t*_{α/2}, t*_{1−α/2}); ±inf possible

    @property
    def unbounded(self) -> bool:
        return self.low is None or self.high is None

    def contains(self, value: float) -> bool:
        inside = (self.low is None or self.low <= value) and (
            self.high is None or value <= self.high
        )
        if self.excluded is not None and self.excluded[0] < value < self.excluded[1]:
            return False
        return inside

    def to_dict(self) -> dict[str, Any]:
        m = self.moments
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "unbounded": (
                None
                if not self.unbounded
                else "both"
                if self.low is None and self.high is None
                else "above"
                if self.high is None
                else "below"
            ),
            "excluded": None if self.excluded is None else list(self.excluded),
            "method": self.method,
            "reason": self.reason,
            "confidence_level": self.confidence_level,
            "critical_value": self.critical_value,
            "numerator_mean": m.numerator,
            "denominator_mean": m.denominator,
            "numerator_se": math.sqrt(max(m.var_numerator, 0.0)),
            "denominator_se": math.sqrt(max(m.var_denominator, 0.0)),
            "covariance": m.covariance,
            "n_units": m.n_units,
            "standard_error_log": self.standard_error_log,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            # an infinite t* quantile (a side the resamples do not bound) is null, never inf
            "t_quantiles": None
            if self.t_quantiles is None
            else [q if math.isfinite(q) else None for q in self.t_quantiles],
        }


def _critical(confidence_level: float, g: int) -> float:
    if not 0.0 < confidence_level < 1.0:
        raise InputError(f"confidence level must be in (0, 1), got {confidence_level}")
    return t_quantile(1.0 - (1.0 - confidence_level) / 2.0, float(g - 1))


def fieller_set(m: Moments, q: float) -> tuple[str, float | None, float | None]:
    """Fieller's confidence set for μ_x/μ_y at critical value q: the R with
    (x̄ − R·ȳ)² ≤ q²(v_xx − 2R·v_xy + R²·v_yy), i.e. a·R² − 2b·R + c ≤ 0 with a = ȳ² − q²v_yy,
    b = x̄ȳ − q²v_xy, c = x̄² − q²v_xx. Returns (kind, r1, r2): "interval" [r1, r2] when a > 0
    (ȳ's own interval excludes 0); "rays" (−∞, r1] ∪ [r2, ∞) when a < 0 and b² − ac > 0; "all"
    (every R) when a ≤ 0 otherwise; "empty" only in degenerate cases (a = 0 exactly)."""
    a = m.denominator**2 - q * q * m.var_denominator
    b = m.numerator * m.denominator - q * q * m.covariance
    c = m.numerator**2 - q * q * m.var_numerator
    disc = b * b - a * c
    if a > 0:
        root = math.sqrt(max(disc, 0.0))
        return "interval", (b - root) / a, (b + root) / a
    if a < 0 and disc > 0:
        root = math.sqrt(disc)
        r1, r2 = (b + root) / a, (b - root) / a  # a < 0: r1 < r2
        return "rays", r1, r2
    return "all", None, None


def cost_per_solved(
    cost: npt.ArrayLike,
    solved: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = COST_RESAMPLES,
    rng: int | np.random.Generator | None = None,
) -> RatioInterval:
    """Mean cost / mean outcome (per solved item for 0/1 outcomes, per unit of score for scores
    ≥ 0) with its interval: the bootstrap-t on the log scale while the outcome's interval
    excludes 0, else Fieller's set (unbounded above). Costs and outcomes must be ≥ 0. `rng`: a
    seed (recorded in the result) or a Generator (a seed is drawn from it)."""
    m = unit_moments(cost, solved, clusters=clusters, weights=weights)
    return per_solved_intervals([m], confidence_level=confidence_level,
                                n_resamples=n_resamples, rng=rng)[0]  # fmt: skip


def per_solved_intervals(
    moments: list[Moments],
    *,
    confidence_level: float = 0.95,
    n_resamples: int = COST_RESAMPLES,
    rng: int | np.random.Generator | None = None,
) -> list[RatioInterval]:
    """`cost_per_solved` of each set of moments (`unit_moments`), all with one seed. A draw of
    units depends only on the seed and the number of units G, so the figures with the same G
    share one draw — the same numbers as one call each, for a fraction of the time (a leaderboard
    of 20 runs on the same items draws once)."""
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 100:
        raise InputError(f"n_resamples must be an integer ≥ 100, got {n_resamples!r}",
                         parameters=["n_resamples"])  # fmt: skip
    _, seed = resolve_rng(rng)
    out: list[RatioInterval | None] = []
    pending: dict[int, list[int]] = {}  # G → which moments need the bootstrap
    for k, m in enumerate(moments):
        if np.any(m.numerator_sums < 0) or np.any(m.denominator_sums < 0):
            raise InputError(
                "cost per solved needs costs and outcomes ≥ 0",
                hint="A score that can be negative has no 'cost per unit of score'.",
            )
        q = _critical(confidence_level, m.n_units)
        made = _without_bootstrap(m, q, confidence_level)
        if made is None and m.n_units >= LOG_DELTA_UNITS:
            spread = log_spread(m.numerator_sums / m.sizes)
            if spread is not None and spread < HEAVY_LOG_SPREAD:
                made = _log_delta_result(m, q, confidence_level, spread)
        out.append(made)
        if made is None:
            pending.setdefault(m.n_units, []).append(k)
    for which in pending.values():
        quantiles = log_ratio_t_quantiles(
            np.column_stack([moments[k].numerator_sums for k in which]),
            np.column_stack([moments[k].denominator_sums for k in which]),
            confidence_level=confidence_level, n_resamples=int(n_resamples), seed=seed,
        )  # fmt: skip
        for j, k in enumerate(which):
            out[k] = _bootstrap_t_result(moments[k], quantiles[j], confidence_level,
                                         int(n_resamples), seed)  # fmt: skip
    return [r for r in out if r is not None]


def _without_bootstrap(m: Moments, q: float, confidence_level: float) -> RatioInterval | None:
    """The interval when nothing was solved or the outcome's interval reaches 0 (Fieller); None
    when the bootstrap-t applies."""
    if m.denominator <= 0:
        # nothing solved: no finite upper bound; below, R = μ_c/μ_a ≥ μ_c (μ_a ≤ 1 for
        # pass/fail) — the cost per item's lower t bound
        low = max(0.0, m.numerator - q * math.sqrt(max(m.var_numerator, 0.0)))
        return RatioInterval(
            None, low, None, "none-solved", confidence_level, q, m,
            "no item was solved: nothing bounds the cost per solved item above (below, it is "
            "at least the cost per item)",
        )  # fmt: skip
    se_den = math.sqrt(max(m.var_denominator, 0.0))
    if m.denominator - q * se_den <= 0 or m.numerator <= 0:
        return _fieller_result(m, q, m.numerator / m.denominator, confidence_level,
                               nonnegative=True)  # fmt: skip
    return None


def _log_delta_result(m: Moments, q: float, confidence_level: float,
                      spread: float) -> RatioInterval:  # fmt: skip
    """R̂·exp(±t_{G−1}·se) with the log-delta se: many units, light tails (LOG_DELTA_UNITS)."""
    estimate = m.numerator / m.denominator
    se = log_delta_se(m)
    reason = (
        f"the outcome's interval excludes 0 and {m.n_units:,} units (≥ {LOG_DELTA_UNITS:,}) with "
        f"light tails (sd of the log of the units' values {spread:.2f} < {HEAVY_LOG_SPREAD}): "
        "the log-scale delta interval, which covered as well as the bootstrap-t there "
        '(docs/calibration.md, "Cost")'
    )
    return RatioInterval(
        estimate, _scaled(estimate, -q * se), _scaled(estimate, q * se), "log-delta",
        confidence_level, q, m, reason, standard_error_log=se,
    )  # fmt: skip


def log_delta_se(m: Moments) -> float:
    """The log-scale delta method's standard error of log(mean numerator / mean denominator)."""
    var_log = (
        m.var_numerator / m.numerator**2
        + m.var_denominator / m.denominator**2
        - 2 * m.covariance / (m.numerator * m.denominator)
    )
    return math.sqrt(max(var_log, 0.0))


def _bootstrap_t_result(m: Moments, quantiles: tuple[float, float], confidence_level: float,
                        n_resamples: int, seed: int) -> RatioInterval:  # fmt: skip
    estimate = m.numerator / m.denominator
    se = log_delta_se(m)
    q_low, q_high = quantiles
    q = _critical(confidence_level, m.n_units)
    # t* = +∞ (a draw with nothing solved) leaves only 0 as the lower bound; t* = −∞ (a draw
    # with no cost) no upper bound. se = 0 (every unit the same ratio): no spread to scale.
    low = 0.0 if q_high == math.inf else _scaled(estimate, -q_high * se) if se else estimate
    high = None if q_low == -math.inf else _scaled(estimate, -q_low * se) if se else estimate
    if high is not None and not math.isfinite(high):
        high = None  # a t* so large that no finite bound is left
    if not math.isfinite(low):
        low = 0.0
    reason = (
        f"the outcome's interval excludes 0 ({m.denominator:.4g} ± "
        f"{q * math.sqrt(max(m.var_denominator, 0.0)):.3g}): the bootstrap-t on the log scale "
        f"({n_resamples:,} resamples of the units, seed {seed})"
    )
    if high is None:
        reason += ": some resamples' ratio falls without limit, so nothing bounds it above"
    return RatioInterval(
        estimate, low, high, "bootstrap-t", confidence_level, q, m, reason,
        standard_error_log=se, n_resamples=n_resamples, seed=seed, t_quantiles=quantiles,
    )  # fmt: skip


def _scaled(estimate: float, exponent: float) -> float:
    """estimate·exp(exponent), infinite past a double's range (a t* of a nearly flat draw)."""
    return estimate * math.exp(exponent) if exponent < 700 else math.inf


def resample_counts(
    g: int, n_resamples: int, rng: np.random.Generator
) -> Iterator[tuple[slice, FloatArray]]:
    """How often each of G units is drawn in each of `n_resamples` bootstrap resamples, in chunks
    (rows of the chunk × G array of counts, as floats for a matrix product). The draws are
    `rng.integers(0, G, size=(n_resamples, G))` row by row — the resamples of
    `scipy.stats.bootstrap` on the same Generator — counted instead of gathered: one matrix
    product then gives every resample's sums of as many columns as are asked."""
    chunk = max(1, min(n_resamples, _CHUNK_DRAWS // max(g, 1)))
    for start in range(0, n_resamples, chunk):
        b = min(chunk, n_resamples - start)
        drawn = rng.integers(0, g, size=(b, g))
        drawn += np.arange(b)[:, None] * g
        counts = np.bincount(drawn.ravel(), minlength=b * g).reshape(b, g)
        yield slice(start, start + b), counts.astype(np.float64)


def log_ratio_t_quantiles(
    numerator_sums: npt.ArrayLike,
    denominator_sums: npt.ArrayLike,
    *,
    confidence_level: float,
    n_resamples: int,
    seed: int,
) -> list[tuple[float, float]]:
    """For each column of the units' sums (G × K, c ≥ 0 and a ≥ 0 with positive totals): the
    α/2 and 1 − α/2 quantiles of t* = (log R* − log R̂)/se* over one draw of the units shared by
    the columns (`resample_counts` on `default_rng(seed)`). On a draw with counts N_g:
    R* = ΣN·c / ΣN·a, and with u = c − R̂·a (centred, so that nothing cancels) and δ = R* − R̂,
    se*² = G/(G − 1)·(ΣN·u² − 2δ·ΣN·u·a + δ²·ΣN·a²)/(ΣN·c)² — the log-delta se of the draw.
    A draw with nothing solved has t* = +∞, one with no cost t* = −∞; quantiles take the nearest
    draw (no interpolation between infinities)."""
    c = np.asarray(numerator_sums, dtype=np.float64)
    a = np.asarray(denominator_sums, dtype=np.float64)
    g, k = c.shape
    r_hat = c.sum(axis=0) / a.sum(axis=0)
    u = c - r_hat * a
    columns = np.concatenate([c, a, u * u, u * a, a * a], axis=1)  # G × 5K
    sums = np.empty((n_resamples, 5 * k))
    with one_blas_thread():
        for rows, counts in resample_counts(g, n_resamples, np.random.default_rng(seed)):
            sums[rows] = counts @ columns
    cs, as_, uu, ua, aa = (sums[:, j * k : (j + 1) * k] for j in range(5))
    with np.errstate(divide="ignore", invalid="ignore"):
        r_star = cs / as_
        delta = r_star - r_hat
        var = g / (g - 1) * (uu - 2 * delta * ua + delta * delta * aa) / (cs * cs)
        se = np.sqrt(np.maximum(var, 0.0))
        shift = np.log(r_star) - np.log(r_hat)
        t = shift / se
    # se* = 0: every drawn unit has the same ratio — t* is 0 on R̂, else ±∞ by its side. Such a
    # draw's se* comes out as rounding noise (~1e-10, not 0): a log-scale se under 1e-12 is none.
    flat = ~(se > 1e-12) & np.isfinite(shift)
    t[flat] = np.where(np.abs(shift[flat]) <= 1e-12, 0.0, np.copysign(np.inf, shift[flat]))
    t[as_ <= 0] = np.inf  # nothing solved on the draw: no finite ratio
    t[(cs <= 0) & (as_ > 0)] = -np.inf
    alpha = 1.0 - confidence_level
    low = np.quantile(t, alpha / 2, axis=0, method="lower")
    high = np.quantile(t, 1 - alpha / 2, axis=0, method="higher")
    return [(float(lo), float(hi)) for lo, hi in zip(low, high, strict=True)]


def _fieller_result(
    m: Moments, q: float, estimate: float | None, confidence_level: float, *, nonnegative: bool
) -> RatioInterval:
    kind, r1, r2 = fieller_set(m, q)
    se_den = math.sqrt(max(m.var_denominator, 0.0))
    reach = (
        f"the {'outcome' if nonnegative else 'outcome difference'}'s interval "
        f"({m.denominator:.4g} ± {q * se_den:.3g}) reaches 0"
    )
    if kind == "interval":
        assert r1 is not None and r2 is not None
        low = max(0.0, r1) if nonnegative else r1
        return RatioInterval(
            estimate, low, r2, "fieller", confidence_level, q, m,
            "Fieller's interval (the outcome's interval excludes 0)",
        )  # fmt: skip
    if kind == "rays":
        assert r1 is not None and r2 is not None
        if nonnegative:
            # the possible values are R ≥ 0: [0, r1] ∪ [r2, ∞) when r1 ≥ 0 (its hull: from 0)
            low = r2 if r1 < 0 else 0.0
            return RatioInterval(
                estimate, low, None, "fieller", confidence_level, q, m,
                f"{reach}: Fieller's set is unbounded above", (r1, r2) if r1 >= 0 else None,
            )  # fmt: skip
        return RatioInterval(
            estimate, None, None, "fieller", confidence_level, q, m,
            f"{reach}: Fieller's set is everything outside ({r1:.4g}, {r2:.4g})", (r1, r2),
        )  # fmt: skip
    return RatioInterval(
        estimate, 0.0 if nonnegative else None, None, "fieller", confidence_level, q, m,
        f"{reach}: Fieller's set is every value",
    )  # fmt: skip


def cost_per_additional(
    control_cost: npt.ArrayLike,
    treatment_cost: npt.ArrayLike,
    control_outcome: npt.ArrayLike,
    treatment_outcome: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
) -> RatioInterval:
    """Δcost/Δoutcome over paired rows (the cost of one more solved item), Fieller's set on the
    units' paired differences: bounded when Δoutcome's interval excludes 0, otherwise unbounded
    (`low`/`high` None, `excluded` the values the data rule out)."""
    dc = _floats(treatment_cost, "treatment cost") - _floats(control_cost, "control cost")
    da = _floats(treatment_outcome, "treatment outcome") - _floats(
        control_outcome, "control outcome"
    )
    m = unit_moments(dc, da, clusters=clusters, weights=weights)
    q = _critical(confidence_level, m.n_units)
    estimate = None if m.denominator == 0 else m.numerator / m.denominator
    return _fieller_result(m, q, estimate, confidence_level, nonnegative=False)


@dataclass(frozen=True)
class NetBenefit:
    """v·Δoutcome − Δcost per item at a stated value v, its paired interval (from
    `paired_interval`, t on G − 1 df, cluster-robust) and what it was computed from."""

    value: float
    interval: Interval
    moments: Moments  # of (Δcost, Δoutcome): the curve over v comes from them

    @property
    def estimate(self) -> float:
        return self.interval.estimate

    def probability_positive(self, values: npt.ArrayLike) -> FloatArray:
        """P(net benefit > 0) at each value: T_{G−1}(net̂(v)/se(v)), the one-sided confidence
        level of "net > 0" from the paired t interval's distribution (1 − the one-sided p-value
        of net ≤ 0); not a posterior. se 0: 1 above 0, 0 at or below."""
        return probability_positive(self.moments, values)

    def to_dict(self) -> dict[str, Any]:
        i = self.interval
        return {
            "value_per_solved": self.value,
            "estimate": i.estimate,
            "low": i.low,
            "high": i.high,
            "standard_error": i.standard_error,
            "df": i.df,
            "method": i.method,
            "formula": i.formula,
            "confidence_level": i.confidence_level,
            "n_units": i.n_units,
            "probability_positive": float(self.probability_positive([self.value])[0]),
        }


def probability_positive(m: Moments, values: npt.ArrayLike) -> FloatArray:
    """T_{G−1}((v·Δâ − Δĉ)/se(v)) for moments of (Δcost, Δoutcome), se(v)² = v²·v_aa − 2v·v_ac
    + v_cc: the one-sided confidence of a positive net benefit at each value v."""
    from scipy.special import stdtr

    v = np.asarray(values, dtype=np.float64)
    est = v * m.denominator - m.numerator
    var = v * v * m.var_denominator - 2 * v * m.covariance + m.var_numerator
    se = np.sqrt(np.maximum(var, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, est / np.where(se > 0, se, 1.0), np.where(est > 0, np.inf, -np.inf))
    return np.asarray(stdtr(float(m.n_units - 1), t), dtype=np.float64)


def net_benefit(
    control_cost: npt.ArrayLike,
    treatment_cost: npt.ArrayLike,
    control_outcome: npt.ArrayLike,
    treatment_outcome: npt.ArrayLike,
    *,
    value: float,
    clusters: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
    confidence_level: float = 0.95,
) -> NetBenefit:
    """The net benefit per item of the treatment at `value` per solved item (per unit of
    outcome): value·Δoutcome − Δcost, the paired t interval on each row's net value
    (`paired_interval(method="t")`, the units' CR1 standard error). NoInterval when the units
    cannot support one (fewer than 6, or every unit's net the same)."""
    if not math.isfinite(value) or value < 0:
        raise InputError(
            f"the value per solved item must be a finite number ≥ 0, got {value}",
            parameters=["value_per_solved"],
        )
    cc, tc = _floats(control_cost, "control cost"), _floats(treatment_cost, "treatment cost")
    ca = _floats(control_outcome, "control outcome")
    ta = _floats(treatment_outcome, "treatment outcome")
    made = paired_interval(
        value * ca - cc, value * ta - tc, clusters=clusters, weights=weights, method="t",
        confidence_level=confidence_level,
    )  # fmt: skip
    m = unit_moments(tc - cc, ta - ca, clusters=clusters, weights=weights)
    return NetBenefit(value, made, m)


def value_grid(m: Moments, stated: float | None = None, *, points: int = 41) -> FloatArray:
    """Values per solved item at which to draw P(net benefit > 0): geometric around the break-even
    Δcost/Δoutcome when both are positive (1/16 to 16 times it), else around the cost difference
    per item; always with 0 and the stated value."""
    if m.numerator > 0 and m.denominator > 0:
        centre = m.numerator / m.denominator
    else:
        centre = max(abs(m.numerator), 1e-12) * 10.0
    grid = centre * np.logspace(-4, 4, points, base=2.0)
    extra = [0.0] + ([] if stated is None else [float(stated)])
    return np.unique(np.concatenate([grid, extra]))


def log_spread(values: npt.ArrayLike) -> float | None:
    """The standard deviation (ddof 1) of the logs of the positive values — how heavy-tailed
    costs are, read where the sample can show it (a sample's skewness cannot: the tail it has not
    seen is the one that matters); None with fewer than 3 positive values."""
    x = np.asarray(values, dtype=np.float64)
    x = x[x > 0]
    if x.size < 3:
        return None
    return float(np.std(np.log(x), ddof=1))
