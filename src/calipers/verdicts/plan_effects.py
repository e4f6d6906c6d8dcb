"""How a true difference δ changes the paired differences the planner (`calipers.verdicts.planning`)
models — the part of a plan that data from an A/A pilot cannot show.

**Spread over items** (the default): the effect moves items the way the pilot varies. For scores,
every item's difference shifts by δ and the variance stays the pilot's. For 0/1 outcomes every
item's logit shifts by one amount (middling items move most) until the mean moves by δ, and the
discordance follows (`spread_discordance`).

**Concentrated on a share S of units** (`--effect-share S`, 0 < S ≤ 1; a unit is an item, or a
group when the comparison clusters by group): a random share S of the units each move by
h = δ/S, the rest not at all. A unit's effect e is then h with probability S and 0 otherwise,
independent of the pilot's noise ε, so the unit's difference d = ε + e has

    var(d) = var(ε) + var(e),   var(e) = S·h² − δ² = δ²(1/S − 1),

which the pilot's noise variance gains on top. A unit cannot move by more than the scale's width,
so h ≤ width (the planner refuses S below |δ|/width).

For 0/1 outcomes the same holds for the units' mean differences, and the discordance
ψ = P(control ≠ treatment) grows too. An affected item with pass probability p (the two systems
drawing independently given the item) goes to p + h, and its discordance from 2p(1 − p) to
p(1 − p − h) + (p + h)(1 − p) = 2p(1 − p) + h(1 − 2p): over the share S,

    ψ₁ = ψ₀ + S·h·(1 − 2p_S) = ψ₀ + |δ|(1 − 2p_S),

p_S the affected items' mean pass rate (for a drop, read 1 − p for p). It grows by at most |δ|,
when the gain lands on items the baseline always fails. The pilot does not say which items a
concentrated gain lands on; the planner takes the largest growth the baseline's pass rate p̄
allows — the share S at its lowest possible mean rate, p_S = max(0, (p̄ − (1 − S))/S), the rest
passing every time — so the power it promises is a lower bound. Of the growth, the part between
units is var(e) = |δ|h − δ², and the rest, |δ|(1 − 2p_S) − |δ|h = S·h(1 − 2p_S − h), is the
change of one observation's Bernoulli variance, which epochs and the items of a group average
out like the pilot's within-unit noise. With S = 1 every item moves by δ: ψ₁ = ψ₀ + δ(1 − 2p̄),
the spread model without item spread.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(64)
_GH_W = _GH_W / _GH_W.sum()  # E[f(Z)] = Σ w·f(x), Z ~ N(0, 1)


def _expit(x: FloatArray) -> FloatArray:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * x)), dtype=np.float64)


def spread_discordance(pass_rate: float, discordance: float, delta: float) -> float:
    """Two systems that draw independently given an item's pass probability p disagree at
    E[p(1 − p′) + p′(1 − p)]. The items' p are logit-normal with the baseline's mean and the
    spread the discordance implies (E[p(1 − p)] = ψ/2, so var p = p̄(1 − p̄) − ψ/2); the
    effect shifts every item's logit by the same amount — middling items move most — until the
    mean moves by `delta`. With no spread this is ψ + δ(1 − 2p̄) exactly."""
    p_bar = min(max(pass_rate, 1e-6), 1 - 1e-6)
    mu, sigma = _logit_normal(round(p_bar, 12), round(min(discordance / 2.0, 0.25), 12))
    target = min(max(p_bar + delta, 1e-9), 1 - 1e-9)
    shift = _location(sigma, target, mu) - mu
    p = _expit(mu + sigma * _GH_X)
    q = _expit(mu + shift + sigma * _GH_X)
    return float(_GH_W @ (p * (1 - q) + q * (1 - p)))


def _location(sigma: float, target: float, start: float = 0.0) -> float:
    """μ with E[expit(μ + σZ)] = target: Newton's method (the derivative is E[p(1 − p)] > 0),
    safeguarded by bisection on a bracket."""
    low, high, mu = -40.0, 40.0, start
    for _ in range(60):
        p = _expit(mu + sigma * _GH_X)
        f = float(_GH_W @ p) - target
        if abs(f) < 1e-13:
            break
        low, high = (mu, high) if f < 0 else (low, mu)
        slope = float(_GH_W @ (p * (1 - p)))
        step = mu - f / slope if slope > 1e-300 else 0.5 * (low + high)
        mu = step if low < step < high else 0.5 * (low + high)
    return mu


@functools.lru_cache(maxsize=256)
def _logit_normal(p_bar: float, within: float) -> tuple[float, float]:
    """(μ, σ) of the logit-normal law with mean p̄ and E[p(1 − p)] = `within` (σ = 0 when the
    within part is the whole Bernoulli variance)."""
    if within >= p_bar * (1 - p_bar) - 1e-12:
        return _location(0.0, p_bar), 0.0

    def within_at(sigma: float) -> float:  # decreasing in sigma
        p = _expit(_location(sigma, p_bar) + sigma * _GH_X)
        return float(_GH_W @ (p * (1 - p)))

    low, high = 0.0, 20.0
    for _ in range(50):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if within_at(mid) > within else (low, mid)
    sigma = 0.5 * (low + high)
    return _location(sigma, p_bar), sigma


def share_rate(pass_rate: float, share: float, delta: float) -> float:
    """0/1: the mean rate, on the side the effect moves away from, of the share of items a
    concentrated effect lands on — the lowest the baseline's pass rate allows (a gain's items
    fail as much as they can, a drop's pass as much as they can): max(0, (r − (1 − S))/S) with
    r = p̄ for a gain and 1 − p̄ for a drop."""
    r = pass_rate if delta >= 0 else 1.0 - pass_rate
    return max(0.0, (r - (1.0 - share)) / share)


def largest_concentrated(share: float, width: float, pass_rate: float | None, sign: float) -> float:
    """The largest |δ| a share S of units can carry: each moves by at most the scale's width (0/1:
    by at most the room its pass rate leaves, 1 − p_S)."""
    if pass_rate is None:
        return share * width
    return share * (1.0 - share_rate(pass_rate, share, sign))


def concentrated_discordance(
    pass_rate: float, discordance: float, delta: float, share: float
) -> float:
    """0/1: ψ₁ = ψ₀ + |δ|(1 − 2p_S) for an effect `delta` on a share `share` of the items."""
    return discordance + abs(delta) * (1.0 - 2.0 * share_rate(pass_rate, share, delta))


def concentrated_added(
    delta: float, share: float, *, pass_rate: float | None, per_unit: int
) -> float:
    """What a unit's difference variance gains from an effect `delta` concentrated on `share` of
    the units: δ²(1/S − 1) between units, and for 0/1 outcomes the change of each observation's
    Bernoulli variance, S·h(1 − 2p_S − h), averaged over the unit's `per_unit` observations
    (items × epochs)."""
    between = delta * delta * (1.0 / share - 1.0)
    if pass_rate is None:
        return between
    h = abs(delta) / share
    within = share * h * (1.0 - 2.0 * share_rate(pass_rate, share, delta) - h)
    return between + within / per_unit


def concentrated_t_power(
    units: int,
    noise_var: float,
    delta: float,
    share: float,
    *,
    offset: float,
    sign: float,
    crit: float,
) -> float:
    """Scores: P((sign·mean + offset)/SE > crit) for the t statistic on `units` units (n − 1 df)
    whose differences are noise ε (variance `noise_var`, the pilot's) plus h = δ/S on K of them,
    K ~ Binomial(n, S). Given K the mean is Kh/n + ε̄ and the sample variance s²_ε + J_K, with
    J_K = h²K(n − K)/(n(n − 1)) the spread the jumps add; the power averages Φ over K, and over
    s²_ε ~ σ²χ²ₙ₋₁/(n − 1) at 64 equal-probability quantiles. With S = 1 it is the noncentral t's
    power; with few units hit the t statistic is nearly √K, which no normal approximation sees
    (at 5% of 159 items it reached 0.90 where δ²(1/S − 1) alone promised 0.80)."""
    from scipy.special import chdtri, ndtr
    from scipy.stats import binom

    n = units
    df = n - 1
    h = delta / share
    sigma = math.sqrt(max(noise_var, 1e-300))
    mean_k, sd_k = n * share, math.sqrt(n * share * (1 - share))
    lo, hi = max(0, math.floor(mean_k - 9 * sd_k - 2)), min(n, math.ceil(mean_k + 9 * sd_k + 2))
    k = np.unique(np.linspace(lo, hi, min(hi - lo + 1, 801)).round()).astype(np.int64)
    w = binom.pmf(k, n, share)
    if k.size < hi - lo + 1:  # a coarse grid over a wide binomial: weights by their spacing
        w = w * np.gradient(k.astype(float))
    w = w / w.sum()
    q = (np.arange(64) + 0.5) / 64
    s2 = noise_var * chdtri(df, 1 - q) / df  # σ²χ²/df at its quantiles
    jumps = h * h * k * (n - k) / (n * max(n - 1, 1))
    se = np.sqrt((jumps[:, None] + s2[None, :]) / n)
    z = (sign * k[:, None] * h / n + offset - crit * se) / (sigma / math.sqrt(n))
    return float(w @ ndtr(z).mean(axis=1))


def describe_effect(
    delta: float,
    share: float,
    *,
    groups: bool,
    pilot: bool,
    unit_var: float,
    discordance: tuple[float | None, float | None] | None,
) -> str:
    """The plan's assumption about how the effect moves the units, in words (`discordance`:
    0/1 outcomes' ψ₀ and ψ₁)."""
    if share >= 1.0:
        if not pilot:
            return (
                "the power holds for an effect that shifts every item alike (spread over "
                "items); an effect concentrated on a share of items needs --effect-share"
            )
        return (
            "the power holds for an effect that shifts items the way the pilot varies (spread "
            "over items); from an A/A pilot an effect concentrated on a share of items needs "
            "--effect-share"
        )
    if delta == 0:
        return f"no true difference: the effect share {share:g} changes nothing"
    grows = ""
    if discordance is not None and None not in discordance:
        grows = (
            f"; the discordance grows from {discordance[0]:.3g} to {discordance[1]:.3g}, taking "
            "the items the effect lands on to be those the baseline does worst on (the power is "
            "a lower bound)"
        )
    return (
        f"an effect of {delta:+g} concentrated on a share {share:g} of the "
        f"{'groups' if groups else 'items'}, each moved by {delta / share:+.3g}, the rest "
        f"unchanged: the variance of a unit's difference gains δ²(1/S − 1) = "
        f"{delta * delta * (1 / share - 1):.3g} on the noise's {unit_var:.3g}" + grows
    )
