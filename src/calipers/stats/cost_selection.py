"""The cheapest run that is good enough: which runs are shown within a margin Δ of the best
(multiple comparisons with the best), which are confidently dominated, and the cheapest of the
acceptable ones.

Input: K runs on the same G units (items, or their `group` clusters; an item's epochs enter as
its mean), as each unit's weighted sums — of the outcome (G × K), of the system's cost (G × K) —
and the unit's size m_g (its weight, the same for every run). Each run's accuracy is
θ_k = Σ_g S_gk / Σ_g m_g and its cost per item c_k likewise.

**Multiple comparisons with the best** (Hsu 1996, "Multiple Comparisons", ch. 4; the constrained
lower bounds). With [K] the truly best run, the event that every one-sided bound
θ_[K] − θ_j ≤ θ̂_[K] − θ̂_j + d·se_[K]j holds (j ≠ [K]) gives, for every run i at once,

    θ_i − max_{j≠i} θ_j ≥ L_i = min(0, min_{j≠i} (θ̂_i − θ̂_j − d·se_ij))

(for i ≠ [K], the bound on the pair (i, [K]); for [K] itself, 0). `d` is read from a paired
bootstrap of the units (every run resampled with the same draw; `n_resamples`, the seed
recorded): for each candidate best b the (1 − α) quantile of the max-statistic
max_{j≠b} ((θ̂_b − θ̂_j) − (θ*_b − θ*_j)) / se_bj, and d the largest over b (the best is unknown).
se_ij is the bootstrap standard deviation of θ*_i − θ*_j, floored at span/G (one unit's worth:
two runs that agree on every unit are not thereby shown equal). A run is **acceptable** when
L_i > −Δ: then "θ_i > max_j θ_j − Δ" holds simultaneously for every acceptable run with
probability ≥ 1 − α, so the cheapest acceptable run is really Δ or more worse than the best with
probability ≤ α (measured in docs/calibration.md, "Cost").

**Dominance**: run j dominates run i when it is confidently both more accurate and cheaper per
item — both one-sided paired tests significant (an intersection–union test: the larger p-value
decides), Holm's step-down over all K(K − 1) ordered pairs so that no run is falsely called
dominated with probability ≥ 1 − α (familywise). More accurate and cheaper per item implies
cheaper per solved item too. The accuracy test is the exact
one-sided McNemar test (binomial on the discordant units) when every unit is one 0/1 item, else
the paired t test on the units (CR1, G − 1 df: `scipy.stats.ttest_rel` when units weigh the
same); the cost test is the paired t test on the units' costs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.errors import InputError
from calipers.stats._blas import one_blas_thread
from calipers.stats._rng import resolve_rng
from calipers.stats.cost import resample_counts

FloatArray = npt.NDArray[np.float64]

LABELS = ("cheapest acceptable", "acceptable", "not shown within margin", "dominated")


def _matrix(values: npt.ArrayLike, name: str) -> FloatArray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 2 or not np.all(np.isfinite(a)):
        raise InputError(
            f"{name} must be a units × runs array of finite numbers (a missing cost or outcome "
            "is not 0: leave such units out, or refuse)"
        )
    return a


def bootstrap_means(
    sums: FloatArray, sizes: FloatArray, *, n_resamples: int, rng: np.random.Generator
) -> FloatArray:
    """Each run's mean Σ w_g S_gk / Σ w_g m_g over `n_resamples` paired bootstrap draws of the
    units (w_g: how often unit g was drawn; one draw for all runs), shape (n_resamples, K).
    When units repeat (0/1 items of a few runs: at most 2^K patterns), the draw counts of the
    distinct units are drawn instead — Multinomial(G, share of each): the same distribution."""
    g, k = sums.shape
    table = np.column_stack([sums, sizes])
    distinct, inverse = np.unique(table, axis=0, return_inverse=True)
    out = np.empty((n_resamples, k))
    with one_blas_thread():
        return _draw_means(g, k, sums, sizes, distinct, inverse, out, n_resamples, rng)


def _draw_means(g: int, k: int, sums: FloatArray, sizes: FloatArray, distinct: FloatArray,
                inverse: npt.NDArray[np.intp], out: FloatArray, n_resamples: int,
                rng: np.random.Generator) -> FloatArray:  # fmt: skip
    if distinct.shape[0] <= g // 4:
        share = np.bincount(inverse.ravel(), minlength=distinct.shape[0]) / g
        chunk = max(1, (1 << 22) // distinct.shape[0])
        for start in range(0, n_resamples, chunk):
            b = min(chunk, n_resamples - start)
            counts = rng.multinomial(g, share, size=b).astype(np.float64)
            out[start : start + b] = (counts @ distinct[:, :k]) / (counts @ distinct[:, k])[:, None]
        return out
    for rows, counts in resample_counts(g, n_resamples, rng):  # the cost intervals' draws
        out[rows] = (counts @ sums) / (counts @ sizes)[:, None]
    return out


def mcb_lower_bounds(
    draws: FloatArray, point: FloatArray, *, alpha: float, floor: float
) -> tuple[FloatArray, float, FloatArray, FloatArray]:
    """(L, d, se, d per candidate best) from bootstrap draws (resamples × K) and the estimates:
    the constrained MCB lower bounds of θ_i − max_{j≠i} θ_j (see the module's docstring)."""
    k = point.size
    diff_hat = point[:, None] - point[None, :]  # [i, j] = θ̂_i − θ̂_j
    centred = draws - draws.mean(axis=0)
    cov = centred.T @ centred / max(draws.shape[0] - 1, 1)
    var = np.diag(cov)
    se = np.sqrt(np.maximum(var[:, None] + var[None, :] - 2.0 * cov, 0.0))
    se = np.maximum(se, floor)
    np.fill_diagonal(se, np.inf)
    per_best = np.empty(k)
    for b in range(k):
        moved = (diff_hat[b] - (draws[:, [b]] - draws)) / se[b]  # [r, j]
        moved[:, b] = -np.inf
        per_best[b] = float(np.quantile(moved.max(axis=1), 1.0 - alpha)) if k > 1 else 0.0
    d = float(per_best.max()) if k > 1 else 0.0
    bound = diff_hat - d * se
    np.fill_diagonal(bound, np.inf)
    lower = np.minimum(0.0, bound.min(axis=1)) if k > 1 else np.zeros(1)
    np.fill_diagonal(se, 0.0)
    return lower, d, se, per_best


def paired_t_greater(sums: FloatArray, sizes: FloatArray) -> tuple[FloatArray, FloatArray]:
    """One-sided paired t tests of every ordered pair: [i, j] the p-value of "run j's mean is
    above run i's" (H0: μ_j ≤ μ_i), the units' CR1 standard error on G − 1 df; and the t values.
    With equal unit sizes this is `scipy.stats.ttest_rel(x_j, x_i, alternative="greater")`."""
    from scipy.special import stdtr

    g = sums.shape[0]
    total = float(sizes.sum())
    mean = sums.sum(axis=0) / total
    resid = sums - np.outer(sizes, mean)
    cov = g / (g - 1) * (resid.T @ resid) / total**2
    var = np.diag(cov)
    se = np.sqrt(np.maximum(var[:, None] + var[None, :] - 2.0 * cov, 0.0))
    diff = mean[None, :] - mean[:, None]  # [i, j] = μ̂_j − μ̂_i
    scale = 1e-12 * (1.0 + np.abs(mean[:, None]) + np.abs(mean[None, :]))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > scale, diff / np.where(se > scale, se, 1.0),
                     np.where(diff > 0, np.inf, -np.inf))  # fmt: skip
    p = np.asarray(stdtr(float(g - 1), -t), dtype=np.float64)
    np.fill_diagonal(p, 1.0)
    return p, t


def mcnemar_greater(outcomes: FloatArray) -> tuple[FloatArray, npt.NDArray[np.int64]]:
    """Exact one-sided McNemar tests on 0/1 items (G × K): [i, j] the p-value of "run j solves
    more than run i" — P(Bin(b + c, ½) ≥ b), b the items j solved and i did not, c the reverse;
    and b (the discordant counts, [i, j])."""
    from scipy.stats import binom

    x = outcomes
    b = np.rint((1.0 - x).T @ x).astype(np.int64)  # [i, j]: i failed, j solved
    n = b + b.T
    p = np.where(n > 0, binom.sf(b - 1, n, 0.5), 1.0)
    np.fill_diagonal(p, 1.0)
    return np.asarray(p, dtype=np.float64), b


@dataclass(frozen=True)
class Selection:
    """The labels of the runs and everything they were computed from."""

    runs: tuple[str, ...]
    margin: float
    confidence_level: float  # one-sided, of the simultaneous lower bounds
    n_units: int
    n_resamples: int
    seed: int
    accuracy: FloatArray
    cost_per_item: FloatArray
    cost_per_solved: FloatArray  # inf where nothing was solved
    lower: FloatArray  # simultaneous lower bound of θ_i − max_{j≠i} θ_j
    critical_value: float  # d
    critical_by_best: FloatArray
    se: FloatArray  # bootstrap se of θ̂_i − θ̂_j (floored)
    p_better: FloatArray  # [i, j]: one-sided p of "j more accurate than i"
    p_cheaper: FloatArray  # [i, j]: one-sided p of "j cheaper per item than i"
    accuracy_test: str  # "exact McNemar" or "paired t"
    dominance_alpha: float  # familywise, Holm over the K(K − 1) ordered pairs
    labels: tuple[str, ...]
    dominated_by: tuple[tuple[str, ...], ...]
    chosen: str | None  # the cheapest acceptable run (None: no run is shown within Δ)
    order_by: str  # "cost per solved" or "cost per item"
    notes: tuple[str, ...] = field(default=())

    def index(self, run: str) -> int:
        return self.runs.index(run)

    def to_dict(self) -> dict[str, Any]:
        return {
            "margin": self.margin,
            "confidence_level": self.confidence_level,
            "n_units": self.n_units,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "critical_value": self.critical_value,
            "accuracy_test": self.accuracy_test,
            "dominance_alpha": self.dominance_alpha,
            "chosen": self.chosen,
            "order_by": self.order_by,
        }


def select_within_margin(
    outcome_sums: npt.ArrayLike,
    cost_sums: npt.ArrayLike,
    sizes: npt.ArrayLike | None = None,
    *,
    runs: list[str] | tuple[str, ...],
    margin: float,
    confidence_level: float = 0.95,
    n_resamples: int = 2_000,
    rng: int | np.random.Generator | None = None,
    span: float = 1.0,
    cost_per_solved: bool = True,
) -> Selection:
    """Label each run (see the module's docstring): `outcome_sums`, `cost_sums` units × runs,
    `sizes` per unit (None: every unit one item); `span` the outcome scale's width (the se
    floor's unit); `cost_per_solved` False orders by cost per item (a scale not starting at 0)."""
    s = _matrix(outcome_sums, "outcome sums")
    c = _matrix(cost_sums, "cost sums")
    g, k = s.shape
    if c.shape != s.shape:
        raise InputError(f"cost sums have shape {c.shape}, outcome sums {s.shape}")
    if len(runs) != k or len(set(runs)) != k:
        raise InputError(f"{k} runs need {k} distinct names, got {list(runs)}")
    m = np.ones(g) if sizes is None else np.asarray(sizes, dtype=np.float64)
    if m.shape != (g,) or not np.all(np.isfinite(m)) or np.any(m <= 0):
        raise InputError("unit sizes must be one positive number per unit")
    if k < 2:
        raise InputError(f"choosing among runs needs at least 2, got {k}")
    if g < 2:
        raise InputError(f"{g} unit(s): the bounds need at least 2")
    if not (np.isfinite(margin) and margin > 0):
        raise InputError(f"the margin must be a positive number, got {margin}",
                         parameters=["margin"])  # fmt: skip
    if not 0.0 < confidence_level < 1.0:
        raise InputError(f"confidence level must be in (0, 1), got {confidence_level}")
    if not isinstance(n_resamples, int | np.integer) or n_resamples < 100:
        raise InputError(f"n_resamples must be an integer ≥ 100, got {n_resamples!r}")
    if np.any(c < 0):
        raise InputError("costs must be ≥ 0")
    alpha = 1.0 - confidence_level
    generator, seed = resolve_rng(rng)
    total = float(m.sum())
    accuracy = s.sum(axis=0) / total
    per_item = c.sum(axis=0) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        per_solved = np.where(accuracy > 0, per_item / np.where(accuracy > 0, accuracy, 1), np.inf)
    draws = bootstrap_means(s, m, n_resamples=int(n_resamples), rng=generator)
    lower, d, se, per_best = mcb_lower_bounds(draws, accuracy, alpha=alpha, floor=span / g)
    binary = sizes is None or bool(np.all(m == 1.0))
    binary = binary and bool(np.all((s == 0) | (s == 1)))
    if binary:
        p_better, _ = mcnemar_greater(s)
        test = "exact McNemar"
    else:
        p_better, _ = paired_t_greater(s, m)
        test = "paired t"
    p_more_costly, _ = paired_t_greater(c, m)  # [i, j]: j costs more than i
    p_cheaper = p_more_costly.T.copy()  # [i, j]: j costs less than i
    dominates = holm(np.maximum(p_better, p_cheaper), alpha)  # [i, j]: j dominates i
    dominated_by = tuple(tuple(runs[j] for j in np.flatnonzero(dominates[i])) for i in range(k))
    key = per_solved if cost_per_solved else per_item
    acceptable = [i for i in range(k) if lower[i] > -margin and not dominated_by[i]]
    chosen = min(acceptable, key=lambda i: (key[i], per_item[i], runs[i])) if acceptable else None
    labels = []
    for i in range(k):
        if dominated_by[i]:
            labels.append("dominated")
        elif i == chosen:
            labels.append("cheapest acceptable")
        elif lower[i] > -margin:
            labels.append("acceptable")
        else:
            labels.append("not shown within margin")
    return Selection(
        tuple(runs), float(margin), confidence_level, g, int(n_resamples), seed, accuracy,
        per_item, per_solved, lower, d, per_best, se, p_better, p_cheaper, test, alpha,
        tuple(labels), dominated_by, None if chosen is None else runs[chosen],
        "cost per solved" if cost_per_solved else "cost per item",
    )  # fmt: skip


def holm(p: FloatArray, alpha: float) -> npt.NDArray[np.bool_]:
    """Holm's step-down over the off-diagonal entries of a square matrix of p-values: which are
    rejected at familywise level `alpha`."""
    k = p.shape[0]
    off = ~np.eye(k, dtype=bool)
    values = p[off]
    order = np.argsort(values, kind="stable")
    m = values.size
    passed = values[order] <= alpha / (m - np.arange(m))
    stop = int(np.argmin(passed)) if not passed.all() else m
    rejected = np.zeros(m, dtype=bool)
    rejected[order[:stop]] = True
    out = np.zeros((k, k), dtype=bool)
    out[off] = rejected
    return out


def naive_choice(accuracy: npt.ArrayLike, cost: npt.ArrayLike, *, margin: float) -> int:
    """The point-estimate rule, for comparison only: the cheapest run whose estimate is within
    `margin` of the best estimate (index)."""
    a, c = np.asarray(accuracy, dtype=np.float64), np.asarray(cost, dtype=np.float64)
    within = np.flatnonzero(a >= a.max() - margin)
    return int(within[np.argmin(c[within])])


def frontier(selection: Selection) -> list[str]:
    """The runs no other run confidently dominates, cheapest first (by the selection's cost):
    the frontier drawn only through confident dominance."""
    key = (
        selection.cost_per_solved
        if selection.order_by == "cost per solved"
        else (selection.cost_per_item)
    )
    kept = [i for i, by in enumerate(selection.dominated_by) if not by]
    return [selection.runs[i] for i in sorted(kept, key=lambda i: (key[i], selection.runs[i]))]
