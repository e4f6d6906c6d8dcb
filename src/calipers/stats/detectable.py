"""The minimum detectable effect of a bounded comparison, by simulating the procedure that will
judge the alternative — the interval `auto` would choose on it, not the one it chose here.

Why a simulation of the whole procedure. On bounded, non-0/1 data `auto` picks per sample: the
skewness-corrected t interval where the rule of `calipers.stats.shape` holds (more than 28 +
25·γ̂² units, 12 of them informative), else the betting interval. Near the rule's edge the choice
is a coin toss, and the two intervals detect very different effects (at 30 skewed units the t
interval detects a gain of 0.044 92% of the time, the betting interval 0%). An MDE from the
interval this sample happened to get promised 80% and delivered 50% (issue 33: skewed scores at
30 items, capped lognormal scores at 100). So the alternative's resamples are judged as `auto`
would judge them: the rule on each resample, then Hall's t or the betting capital.

Why the treatment's scores move within the scale. The alternative is the MDE's stated one — every
unit's treatment score moves by the same amount, as far as the scale's bounds allow — not the
differences moved by δ: a unit whose control is at the top of the scale cannot gain. On scores
piled at the bounds the differences moved by δ promised 80% and a shift of every score by the
same amount delivered 53% (bimodal scores at 25 items); δ is the mean difference that shift makes
on these units.

Why the treatment's spread grows toward the middle of the scale. On a bounded scale an effect
that moves the items' scores toward the middle also spreads them: an item's expected score on an
S-shaped (logistic) scale moves by its slope, which is in proportion to the room on both sides,
(m − lo)(hi − m), so between items the spread grows with that room. The treatment's deviations
from its mean are scaled by room(m + shift)/room(m), never below 1 (an effect toward a bound may
narrow the spread; the MDE does not count on it). Without it, at 20 layered units (a mean of 4.25
on 1–5 moved down by 1.2, where the treatment's SD grows from 0.45 to 0.63), the MDE was detected
69–77% of the time; with it 76–81% (docs/calibration.md).

The resamples are bootstrap samples of the units (fixed by a seed, the same for every shift, so
the power is monotone in it), centred so that the sample's own difference is taken as no effect,
and spread by the allowance the t rule's MDE makes for a sample spread below the population's
(`spread_allowance`).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from calipers.stats.betting import reaches_rows
from calipers.stats.interval_parts import sd_allowance, t_quantile
from calipers.stats.shape import BASE_UNITS, MIN_INFORMATIVE, SKEW_FACTOR

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

STEPS = 13  # the shift to 2⁻¹³ of the scale: a reported figure, no more
# 250 resamples put a power of 0.8 within ±0.025 (one standard error); the seed is fixed so that
# one comparison always reports one MDE.
RESAMPLES = 250
SEED = 20261126


def simulated_detectable(
    differences: npt.ArrayLike,
    *,
    scale: tuple[float, float],
    control: npt.ArrayLike | None = None,
    weights: npt.ArrayLike | None = None,
    auto: bool = True,
    confidence_level: float = 0.95,
    power: float = 0.8,
    resamples: int = RESAMPLES,
    rng: int = SEED,
) -> float | None:
    """The smallest true mean difference the comparison detects with `power`, in either direction:
    the larger of the two, leaving out a direction the scale leaves no room for (scores near a
    bound cannot drop far enough to be detected: no drop is detectable, which is no reason to
    call every gain undetectable); inf when neither direction is detectable.

    `differences`: the units' mean differences (treatment − control); `control`: the units' control
    means (None: the differences themselves move, within their bounds ±(high − low)); `scale`: the
    values' declared bounds; `weights`: the units' weights. `auto`: the alternative is judged as
    `auto` judges it (t or betting, per resample); else by the betting interval alone. None when
    `auto` would give every resample the t interval: its closed form (`Interval.detectable_effect`)
    then applies."""
    lo, hi = float(scale[0]), float(scale[1])
    d = np.asarray(differences, dtype=np.float64)
    w = np.ones_like(d) if weights is None else np.asarray(weights, dtype=np.float64)
    centred = d - float(w @ d / w.sum())
    centred = centred * spread_allowance(centred, w)
    if auto and every_resample_t(centred, resamples=resamples, rng=rng):
        return None
    draw = np.random.default_rng(rng).integers(0, d.size, size=(resamples, d.size))
    if control is None:
        base, start = centred[draw], None
    else:
        c = np.asarray(control, dtype=np.float64)
        start = np.clip(c + centred, lo, hi)  # each unit's treatment under no effect
        base = c[draw]
    rows = _Rows(base, start, draw, w[draw], (w / w.max())[draw], (lo, hi))
    found = []
    for sign in (1.0, -1.0):
        shift = _smallest_shift(rows, sign, auto, 1.0 - confidence_level, power)
        if shift is None:
            found.append(math.inf)
        elif start is None:
            found.append(shift)
        else:
            centre = np.array([float(w @ start / w.sum())])
            free, _ = spread_shift(start[None, :], centre, room(centre, (lo, hi)), sign * shift,
                                   (lo, hi))  # fmt: skip
            moved = np.clip(free[0], lo, hi) - np.asarray(control, dtype=np.float64)
            found.append(abs(float(w @ moved / w.sum())))
    finite = [f for f in found if math.isfinite(f)]
    return max(finite) if finite else math.inf


def every_resample_t(values: FloatArray, *, resamples: int, rng: int) -> bool:
    """Whether `auto` would give every resample the t interval: `bool(np.all(t_rule_rows(
    values[draw])))` for the resamples `simulated_detectable` draws, `draw =
    np.random.default_rng(rng).integers(0, G, size=(resamples, G))` — the same value, without
    gathering, rounding and partitioning every resample where two of its sums settle it.

    The draw is made a block of rows at a time from the same generator (numpy's bounded integers
    keep no state between calls but the bit generator's, so the rows are the rows of the one
    draw); each row the bound of `_rule_proven` settles needs no more; the rule itself judges the
    others, and the first that fails ends the search. Over 250 resamples of 500,000 units it was
    8.5 s of a 14 s `compare` (a 1 GB gather, a rounding and a partition per row); it is a
    gather and two sums per row, and never 1 GB of indices at once."""
    g = values.size
    generator = np.random.default_rng(rng)
    proof = _proof_need(values) if resamples > 0 and g > 0 else None
    block = resamples if proof is None else max(1, 2**19 // g)  # 4 MB of gathered values
    gathered = np.empty((min(block, resamples), g)) if proof is not None else None
    for first in range(0, max(resamples, 1), max(block, 1)):
        draw = generator.integers(0, g, size=(min(block, resamples - first), g))
        unsettled = draw
        if proof is not None and gathered is not None:
            unsettled = draw[~_rule_proven(values, draw, *proof, gathered[: draw.shape[0]])]
        if unsettled.shape[0] and not bool(np.all(t_rule_rows(values[unsettled]))):
            return False
    return True


def _proof_need(values: FloatArray) -> tuple[float, float] | None:
    """The second central moment m₂ above which a resample of `values` (G of them, drawn with
    replacement) surely passes `t_rule_rows`, and max|v|. None where no resample can be shown
    to (m₂ is at most R²/4 on values spanning R: few units, a heavy tail), or the values are not
    finite.

    The skewness: |m₃| ≤ max|v − v̄|·m₂ ≤ R·m₂, so |γ̂| ≤ R/√m₂, and the rule's 28 + 25·G₁² < G
    (G₁ = γ̂·√(G(G − 1))/(G − 2), the adjusted skewness `t_rule_rows` computes) holds once m₂ >
    25·R²·G(G − 1)/((G − 2)²(G − 29)). The informative units: fewer than 12 means that one
    rounded value — values within 10⁻¹²·max|v| of each other, as `informative_rows` rounds them
    — holds all but at most 10 units, and then m₂ ≤ (span/2)² + 10·R²/G. Float error: a sum of G
    terms in any order is within 2(G + 2)ε of its exact value (relative to the sum of the terms'
    magnitudes), which bounds `t_rule_rows`' own m₂ and m₃ and this bound's sums alike; the
    margins below are that, doubled."""
    g = values.size
    if g <= BASE_UNITS + 1 or g < 2 * MIN_INFORMATIVE:
        return None
    top = float(np.max(np.abs(values)))
    spread = float(np.max(values) - np.min(values)) * (1.0 + 1e-12)
    if not (math.isfinite(top) and math.isfinite(spread) and top > 0):
        return None  # NaN or inf among the values, or all 0: the rule itself decides
    rel = _relative_error(g)
    reach = spread + 2.0 * rel * top  # max|v − v̄| as computed, v̄ a float mean
    room = (g - 1) / (1.0 + 1e-12) - BASE_UNITS  # 28 + 25·G₁² must stay below G − 1
    skew_need = SKEW_FACTOR * reach**2 * g * (g - 1) / (g - 2) ** 2 * (1.0 + 8.0 * rel) ** 2 / room
    span = 2e-12 * top  # twice the widest span of values that round alike
    others = MIN_INFORMATIVE - 2  # units off the common value that leave fewer than 12
    need = max(skew_need, span * span / 4.0 + others * (spread + span) ** 2 / g)
    return (need, top) if need < spread * spread / 4.0 else None


def _relative_error(g: int) -> float:
    return 2.0 * (g + 2) * float(np.finfo(np.float64).eps)


def _rule_proven(
    values: FloatArray,
    draw: npt.NDArray[np.intp],
    need: float,
    top: float,
    gathered: FloatArray,
) -> BoolArray:
    """Rows of `draw` whose m₂ is surely above `need` (`_proof_need`, with `top` = max|v|), from
    a lower bound on it by each row's sum and sum of squares. True is a proof that `t_rule_rows`
    holds on the row; False only that the sums do not show it. `gathered`: room for the rows'
    values."""
    g = draw.shape[1]
    rel = _relative_error(g)
    np.take(values, draw, out=gathered)
    totals = gathered.sum(axis=1)
    np.multiply(gathered, gathered, out=gathered)
    squares = gathered.sum(axis=1)
    centre = np.abs(totals) / g + rel * top  # |mean| at most
    low = squares / g * (1.0 - 2.0 * rel) - centre * centre * (1.0 + rel)
    return np.asarray(low > need)


def spread_allowance(centred: FloatArray, weights: FloatArray) -> float:
    """The units' spread's 60% upper confidence bound over its estimate, √(df/χ²₀.₄(df)) as the
    t rule's MDE takes it (Browne 1995), on the degrees of freedom the sample variance has when
    the tails are heavy: Var(s²/σ²) ≈ 2/(G − 1) + κ/G (κ the excess kurtosis, taken ≥ 0), so df =
    2/that. The resamples spread as this sample does, and a sample of a skewed, heavy-tailed
    population shows less than its spread more often than not. (The betting interval's bets are
    capped, so its MDE follows the spread only weakly: capped lognormal scores at 30 units, 3.92
    without the allowance and 3.97 with it, where 80% power needs 4.0.)"""
    g = centred.size
    if g < 2:
        return 1.0
    m2 = float(weights @ centred**2 / weights.sum())
    if m2 <= 0:
        return 1.0
    kurtosis = float(weights @ centred**4 / weights.sum()) / m2**2 - 3.0
    return sd_allowance(2.0 / (2.0 / (g - 1) + max(kurtosis, 0.0) / g))


class _Rows:
    """The resampled units and how a shift moves them (the differences, or the treatment's scores
    within the scale, spread as the room grows). A shift that clips no unit of a row and does not
    spread it leaves its t rule, standard error and skewness as they were, so those are computed
    once and again only for the rows it clips or spreads."""

    def __init__(
        self,
        base: FloatArray,
        start: FloatArray | None,
        draw: npt.NDArray[np.intp],
        weights: FloatArray,
        stake: FloatArray,
        scale: tuple[float, float],
    ) -> None:
        self.base, self.weights, self.stake, self.scale = base, weights, stake, scale
        self.start = None if start is None else start[draw]
        self.centre = self.room = None
        if self.start is not None:  # each row's treatment mean, and the room around it
            self.centre = np.sum(weights * self.start, axis=1) / np.sum(weights, axis=1)
            self.room = room(self.centre, scale)
        self.still = self.moved(0.0)[0]
        self.informative = informative_rows(self.still)
        self.rule = t_rule_rows(self.still, self.informative)
        self.hall = hall_statistics(self.still, weights)

    def moved(self, shift: float) -> tuple[FloatArray, npt.NDArray[np.intp], BoolArray]:
        """The rows moved by `shift`, how many units of each row the bounds clipped, and which
        rows' treatment spread grew (the room around its mean grew with the shift)."""
        lo, hi = self.scale
        if self.start is None or self.centre is None or self.room is None:
            # the differences, within ±(hi − lo)
            free, low, high = self.base + shift, lo - hi, hi - lo
            spread = np.zeros(free.shape[0], dtype=bool)
            return np.clip(free, low, high), np.sum((free < low) | (free > high), axis=1), spread
        free, spread = spread_shift(self.start, self.centre, self.room, shift, self.scale)
        clipped = np.sum((free < lo) | (free > hi), axis=1)
        return np.clip(free, lo, hi) - self.base, clipped, spread


def _smallest_shift(
    rows: _Rows, sign: float, auto: bool, alpha: float, power: float
) -> float | None:
    """The smallest shift (in the direction `sign`, to 2⁻STEPS of the scale) whose resamples are
    detected with `power`; None when even the scale's width is not."""
    lo, hi = rows.scale

    def reaches(shift: float) -> bool:
        return bool(np.mean(_detected(rows, sign * shift, sign, auto, alpha)) >= power)

    far = hi - lo
    if not reaches(far):
        return None
    near, out = 0.0, far
    for _ in range(STEPS):
        mid = 0.5 * (near + out)
        if reaches(mid):
            out = mid
        else:
            near = mid
    return out


def _detected(rows: _Rows, shift: float, sign: float, auto: bool, alpha: float) -> BoolArray:
    """Which resamples, moved by `shift`, the procedure finds significant in the direction
    `sign`."""
    lo, hi = rows.scale
    moved, clipped_units, spread = rows.moved(shift)
    clipped = (clipped_units > 0) | spread  # rows whose t rule and statistics change
    width = 2.0 * (hi - lo)  # the differences' bounds ±(hi − lo), scaled to [0, 1]

    def betting(which: BoolArray | slice = slice(None)) -> BoolArray:
        scaled = (moved[which] + (hi - lo)) / width
        return reaches_rows(scaled, rows.stake[which], 0.5, alpha, sign)

    if not auto:
        return betting()
    use_t = rows.rule.copy()
    estimate, sigma, gamma = (a.copy() for a in rows.hall)
    estimate += shift
    if clipped.any():
        # k clipped units lower a row's informative count by at most k: sort only where that
        # could take it below the rule's minimum (or where the spread moved every unit)
        informative = rows.informative[clipped] - clipped_units[clipped]
        unsure = (informative < MIN_INFORMATIVE) | spread[clipped]
        if moved.shape[1] > BASE_UNITS:  # fewer units: the t rule never holds, nothing to sort
            informative[unsure] = informative_rows(moved[clipped][unsure])
        use_t[clipped] = t_rule_rows(moved[clipped], informative)
        fresh = hall_statistics(moved[clipped], rows.weights[clipped])
        for mine, new in zip((estimate, sigma, gamma), fresh, strict=True):
            mine[clipped] = new
    if not use_t.any():
        return betting()
    detected = hall_t_detects(estimate, sigma, gamma, moved.shape[1], alpha, sign)
    if not use_t.all():  # the betting test only where auto would bet (most of its cost)
        detected[~use_t] = betting(~use_t)
    return np.asarray(detected)


def spread_shift(
    start: FloatArray,
    centre: FloatArray,
    room_now: FloatArray,
    shift: float,
    scale: tuple[float, float],
) -> tuple[FloatArray, BoolArray]:
    """Rows of treatment scores (`start`, each row's mean `centre` and its `room`) moved by
    `shift`, their deviations from the mean scaled by room(centre + shift)/room(centre) where that
    is above 1 (not yet clipped to the scale); and which rows spread."""
    lo, hi = scale
    grows = np.ones_like(centre)
    ok = room_now > 0  # a row at a bound has no spread to grow
    grows[ok] = np.maximum(room(np.clip(centre[ok] + shift, lo, hi), scale) / room_now[ok], 1.0)
    spread = grows > 1.0
    free = start + shift
    if spread.any():
        free[spread] += (grows[spread, None] - 1.0) * (start[spread] - centre[spread, None])
    return free, spread


def room(mean: FloatArray, scale: tuple[float, float]) -> FloatArray:
    """(m − lo)(hi − m): how far a mean on the scale can spread its values, both ways."""
    lo, hi = scale
    return np.asarray((mean - lo) * (hi - mean))


def informative_rows(rows: FloatArray) -> npt.NDArray[np.intp]:
    """Each row's informative units as `calipers.stats.shape.t_adequacy` counts them (those not
    at the most common value, plus one of those at it) where one value holds more than half the
    row, else ⌈G/2⌉ + 1: no fewer than the count, and no fewer than the rule's minimum (the t
    rule needs G > 28), which is all the rule asks of it. A value holding more than half a row
    is its median: a partition per row, not a sort (the MDE of a layered comparison of 10,000
    samples spent half its time sorting here)."""
    g = rows.shape[1]
    scale = np.max(np.abs(rows), axis=1, keepdims=True)
    scale[scale == 0] = 1.0
    rounded = np.round(rows / scale, 12)
    middle = np.partition(rounded, g // 2, axis=1)[:, g // 2 : g // 2 + 1]
    at_middle = np.count_nonzero(rounded == middle, axis=1)
    return np.asarray(np.where(2 * at_middle > g, g - at_middle + 1, (g + 1) // 2 + 1))


def t_rule_rows(rows: FloatArray, informative: npt.NDArray[np.intp] | None = None) -> BoolArray:
    """`calipers.stats.shape.t_adequacy(row).holds` for each row (the units of one resample);
    `informative`: each row's informative count, when known (`informative_rows`)."""
    g = rows.shape[1]
    if g < BASE_UNITS + 1:
        return np.zeros(rows.shape[0], dtype=bool)
    if informative is None:
        informative = informative_rows(rows)
    centred = rows - rows.mean(axis=1, keepdims=True)
    squares = centred * centred  # products, not `**`: numpy's power is 10× slower for cubes
    m2 = np.mean(squares, axis=1)
    m3 = np.mean(squares * centred, axis=1)
    safe = np.where(m2 > 0, m2, 1.0)
    skew = np.where(m2 > 0, m3 / safe**1.5, 0.0) * math.sqrt(g * (g - 1)) / (g - 2)
    needed = np.floor(BASE_UNITS + SKEW_FACTOR * skew * skew) + 1
    return np.asarray((g >= needed) & (informative >= MIN_INFORMATIVE))


def hall_statistics(
    rows: FloatArray, weights: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Each row's weighted mean, σ̂ = SE·√G (the CR1 standard error over its units) and γ̂, the
    skewness of its influence values: what `estimate._hall_bounds` computes."""
    g = rows.shape[1]
    total = weights.sum(axis=1)
    estimate = np.sum(weights * rows, axis=1) / total
    resid = weights * (rows - estimate[:, None])
    if g < 2:  # one unit: no spread to estimate
        return estimate, np.zeros_like(estimate), np.zeros_like(estimate)
    sigma = np.sqrt(g / (g - 1) * np.sum(resid * resid, axis=1)) / total * math.sqrt(g)
    if g < 3:  # no skewness from two units (and no t: the rule needs 29): Hall's term is 0
        return estimate, sigma, np.zeros_like(estimate)
    u = g * resid / total[:, None]
    safe = np.where(sigma > 0, sigma, 1.0)
    gamma = g / ((g - 1) * (g - 2)) * np.sum(u * u * u, axis=1) / (safe * safe * safe)
    return estimate, sigma, gamma


def hall_t_detects(
    estimate: FloatArray, sigma: FloatArray, gamma: FloatArray, g: int, alpha: float, sign: float
) -> BoolArray:
    """Whether Hall's skewness-corrected t interval (`estimate._hall_bounds`) of each row lies
    above 0 (`sign` > 0) or below it."""
    flat = np.abs(gamma) < 1e-9
    step = (1.0 if sign > 0 else -1.0) * t_quantile(1.0 - alpha / 2.0, g - 1) / math.sqrt(g)
    y = step - gamma / (6 * g)  # g⁻¹(±q/√G), Hall's transform inverted
    curved = 3.0 / np.where(flat, 1.0, gamma) * (np.cbrt(1.0 + gamma * y) - 1.0)
    end = estimate - sigma * np.where(flat, y, curved)
    return np.asarray((sigma > 0) & ((end > 0) if sign > 0 else (end < 0)))
