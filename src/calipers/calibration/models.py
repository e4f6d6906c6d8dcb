"""The generative models of the simulated experiments, and the truth each one implies.

An item has standard-normal latents z (one per dimension); a system maps them to the item's
outcome law, and a treatment adds `shift` to every latent (both arms of a pair see the same items,
so they are paired; each arm draws its own noise). With groups, z = √0.3·g + √0.7·u with g shared
by the items of a group: the intra-group correlation is 0.3 on the latent scale and the marginal
law, hence the truth, is unchanged.

The estimand is the mean over the item population (Miller 2024), E[h(Z + shift)] with Z ~ N(0, 1)
and h(z) an item's expected outcome per draw, integrated on a fine grid: the trapezoid rule over
±10 sd with step 0.005, exact to ~1e-12 for these smooth integrands (tests/test_calibration.py
checks every truth against a 10⁶-item Monte Carlo of the same model).

The families the harness was not built around (docs/calibration.md, "Families"): skewed scores
with an effect on a share of the items (`Concentrated` over `BetaClip`; also the planner's
concentrated effects), scores with mass at both bounds (`Bimodal`: its truth by adaptive quadrature
between the kinks), heavy tails (`LogNormal`, capped or not: closed form). Each model also says
what its scale's bounds are and whether the scheme declares them unasked (`bounds`,
`scheme_declares`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from scipy import special

from calipers.schemes.layered.scoring import weighted_mean

FloatArray = npt.NDArray[np.float64]
Combine = Callable[[Mapping[str, FloatArray]], FloatArray]

_Z = np.linspace(-10.0, 10.0, 4001)
_W = np.exp(-0.5 * _Z**2) / np.sqrt(2.0 * np.pi) * (_Z[1] - _Z[0])
LAYER_WEIGHTS = {"fact": 1.0, "behavior": 1.0, "judge": 1.0}


def population_mean(h: Callable[[FloatArray], FloatArray], shift: float = 0.0) -> float:
    """E[h(Z + shift)], Z ~ N(0, 1)."""
    return float(np.sum(h(_Z + shift) * _W))


def bisect(f: Callable[[float], float], target: float, lo: float, hi: float) -> float:
    """x in [lo, hi] with f(x) = target, for f increasing (to 1e-12 of the bracket)."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return 0.5 * (lo + hi)


class Latent(ABC):
    """How one latent dimension becomes outcomes: an item's expected value, and draws.

    `spreads`: whether a shift of the latent moves every item's score a little (an effect spread
    over the items: the MDE's stated assumption, docs/statistics.md). Where it does not — it
    moves a few items across modes, or multiplies the scores — `spread` tries the MDE on a step
    of every item's score instead, and the latent shift is the family's own effect."""

    spreads: ClassVar[bool] = True

    @abstractmethod
    def expected(self, z: FloatArray) -> FloatArray:
        """An item's expected outcome per draw, given its latent."""

    @abstractmethod
    def draw(self, z: FloatArray, epochs: int, rng: np.random.Generator) -> FloatArray:
        """Outcomes, items × epochs."""

    def mean(self, shift: float = 0.0) -> float:
        return population_mean(self.expected, shift)

    def expected_step(self, z: FloatArray, step: float) -> FloatArray:
        """An item's expected outcome when the treatment moves it by `step` (on the scale the
        latent's own parameters live on: the logit, the score)."""
        raise NotImplementedError(f"{type(self).__name__} has no step")

    def draw_step(
        self, z: FloatArray, step: FloatArray, epochs: int, rng: np.random.Generator
    ) -> FloatArray:
        """Outcomes, items × epochs, each item moved by its `step`."""
        raise NotImplementedError(f"{type(self).__name__} has no step")


@dataclass(frozen=True)
class Logit(Latent):
    """Pass/fail: p = expit(loc + scale·z); `trials` Bernoulli(p) per draw, the passed fraction."""

    loc: float
    scale: float = 1.0
    trials: int = 1

    def expected(self, z: FloatArray) -> FloatArray:
        return np.asarray(special.expit(self.loc + self.scale * z), dtype=np.float64)

    def draw(self, z: FloatArray, epochs: int, rng: np.random.Generator) -> FloatArray:
        p = self.expected(z)[:, None]
        passed = rng.binomial(self.trials, np.broadcast_to(p, (z.size, epochs)))
        return np.asarray(passed, dtype=np.float64) / self.trials

    def expected_step(self, z: FloatArray, step: float) -> FloatArray:
        """An item's pass rate when its logit moves by `step` (inf: it always passes)."""
        return np.asarray(special.expit(self.loc + self.scale * z + step), dtype=np.float64)

    def draw_step(
        self, z: FloatArray, step: FloatArray, epochs: int, rng: np.random.Generator
    ) -> FloatArray:
        p = np.asarray(special.expit(self.loc + self.scale * z + step))[:, None]
        passed = rng.binomial(self.trials, np.broadcast_to(p, (z.size, epochs)))
        return np.asarray(passed, dtype=np.float64) / self.trials


@dataclass(frozen=True)
class Judge(Latent):
    """A 1–5 judge: q = loc + scale·z, a score clip(round(q + N(0, noise)), 1, 5) per draw."""

    loc: float = 3.6
    scale: float = 0.8
    noise: float = 0.5

    def expected(self, z: FloatArray) -> FloatArray:
        # clip(round(x), 1, 5) = 1 + Σ_{k=1..4} [x ≥ k + ½]
        q = self.loc + self.scale * z
        steps = sum(special.ndtr((q - k - 0.5) / self.noise) for k in range(1, 5))
        return np.asarray(1.0 + steps, dtype=np.float64)

    def draw(self, z: FloatArray, epochs: int, rng: np.random.Generator) -> FloatArray:
        q = (self.loc + self.scale * z)[:, None]
        x = q + self.noise * rng.standard_normal((z.size, epochs))
        return np.asarray(np.clip(np.round(x), 1.0, 5.0), dtype=np.float64)


def _pdf(x: FloatArray) -> FloatArray:
    return np.asarray(np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi), dtype=np.float64)


def clipped_normal_mean(m: FloatArray, s: float, low: float = 0.0, high: float = 1.0) -> FloatArray:
    """E[clip(Y, low, high)], Y ~ N(m, s²): high·P(Y > high) + low·P(Y < low) + m·P(low < Y <
    high) + s·(φ(α) − φ(β)), α = (low − m)/s, β = (high − m)/s."""
    alpha, beta = (low - m) / s, (high - m) / s
    inside = special.ndtr(beta) - special.ndtr(alpha)
    return np.asarray(
        high * (1.0 - special.ndtr(beta)) + low * special.ndtr(alpha) + m * inside
        + s * (_pdf(alpha) - _pdf(beta)),
        dtype=np.float64,
    )  # fmt: skip


@dataclass(frozen=True)
class BetaClip(Latent):
    """A skewed [0, 1] metric: item mean m = Beta(a, b) quantile of Φ(z) (a Gaussian copula), a
    draw clip(m + N(0, noise), 0, 1)."""

    a: float = 2.0
    b: float = 5.0
    noise: float = 0.1

    def item_mean(self, z: FloatArray) -> FloatArray:
        return np.asarray(special.betaincinv(self.a, self.b, special.ndtr(z)), dtype=np.float64)

    def expected(self, z: FloatArray) -> FloatArray:
        return clipped_normal_mean(self.item_mean(z), self.noise)

    def draw(self, z: FloatArray, epochs: int, rng: np.random.Generator) -> FloatArray:
        return self.draw_step(z, np.zeros(z.size), epochs, rng)

    def expected_step(self, z: FloatArray, step: float) -> FloatArray:
        """An item's expected draw when its score moves by `step` before the clipping."""
        return clipped_normal_mean(self.item_mean(z) + step, self.noise)

    def draw_step(
        self, z: FloatArray, step: FloatArray, epochs: int, rng: np.random.Generator
    ) -> FloatArray:
        m = (self.item_mean(z) + step)[:, None]
        return np.asarray(
            np.clip(m + self.noise * rng.standard_normal((z.size, epochs)), 0.0, 1.0),
            dtype=np.float64,
        )


@dataclass(frozen=True)
class Bimodal(Latent):
    """Scores with mass at both bounds: an item's level m = clip((Φ(z) − low)/(1 − low − high),
    0, 1) — 0 for a share `low` of the items, 1 for a share `high`, uniform on (0, 1) for the
    rest — and a draw clip(m + N(0, noise), 0, 1). A shift of z moves items up the mixture."""

    low: float = 0.4
    high: float = 0.5
    noise: float = 0.1
    spreads: ClassVar[bool] = False  # a shift moves the items near a mode's edge a full unit

    def item_level(self, z: FloatArray) -> FloatArray:
        u = special.ndtr(z)
        return np.asarray(np.clip((u - self.low) / (1.0 - self.low - self.high), 0.0, 1.0))

    def mean(self, shift: float = 0.0) -> float:
        """E[h(Z + shift)] in three pieces, since h has kinks where the level leaves 0 and
        reaches 1: the items at 0 and at 1 (constant h) in closed form, the others by adaptive
        quadrature (the trapezoid rule over the kinks is off by ~2e-6)."""
        from scipy import integrate

        z0 = float(special.ndtri(self.low)) - shift
        z1 = float(special.ndtri(1.0 - self.high)) - shift
        ends = clipped_normal_mean(np.array([0.0, 1.0]), self.noise)
        middle, _ = integrate.quad(
            lambda z: float(self.expected(np.array([z + shift]))[0] * _pdf(np.array([z]))[0]),
            z0, z1, epsabs=1e-13, epsrel=1e-12,
        )  # fmt: skip
        return float(special.ndtr(z0) * ends[0] + special.ndtr(-z1) * ends[1] + middle)

    def expected(self, z: FloatArray) -> FloatArray:
        return clipped_normal_mean(self.item_level(z), self.noise)

    def draw(self, z: FloatArray, epochs: int, rng: np.random.Generator) -> FloatArray:
        return self.draw_step(z, np.zeros(z.size), epochs, rng)

    def expected_step(self, z: FloatArray, step: float) -> FloatArray:
        """An item's expected draw when its level moves by `step` before the noise and the
        clipping."""
        return clipped_normal_mean(self.item_level(z) + step, self.noise)

    def draw_step(
        self, z: FloatArray, step: FloatArray, epochs: int, rng: np.random.Generator
    ) -> FloatArray:
        m = (self.item_level(z) + step)[:, None]
        return np.asarray(
            np.clip(m + self.noise * rng.standard_normal((z.size, epochs)), 0.0, 1.0),
            dtype=np.float64,
        )


@dataclass(frozen=True)
class LogNormal(Latent):
    """A heavy-tailed positive score: a draw exp(mu + item·z + noise·ε), ε ~ N(0, 1) per draw (log
    sd √(item² + noise²) over items and draws), capped at `cap` when one is given: min(x, cap).
    A shift s of z multiplies every score by exp(item·s) (before the cap)."""

    mu: float = 0.0
    item: float = 1.0
    noise: float = 0.6633249580710799  # √(1.2² − 1): log sd 1.2 in all
    cap: float | None = None
    spreads: ClassVar[bool] = False  # a shift multiplies the scores: the largest move most

    @property
    def sigma(self) -> float:
        return math.hypot(self.item, self.noise)

    def expected(self, z: FloatArray) -> FloatArray:
        # log x ~ N(m, s²) given z: E[x] = exp(m + s²/2); E[min(x, c)] = exp(m + s²/2)·Φ((ln c −
        # m − s²)/s) + c·(1 − Φ((ln c − m)/s))
        m, s = self.mu + self.item * z, self.noise
        full = np.exp(m + 0.5 * s * s)
        if self.cap is None:
            return np.asarray(full, dtype=np.float64)
        log_cap = math.log(self.cap)
        below = full * special.ndtr((log_cap - m - s * s) / s)
        return np.asarray(below + self.cap * special.ndtr((m - log_cap) / s), dtype=np.float64)

    def draw(self, z: FloatArray, epochs: int, rng: np.random.Generator) -> FloatArray:
        m = (self.mu + self.item * z)[:, None]
        x = np.exp(m + self.noise * rng.standard_normal((z.size, epochs)))
        if self.cap is not None:
            x = np.minimum(x, self.cap)
        return np.asarray(x, dtype=np.float64)

    def expected_step(self, z: FloatArray, step: float) -> FloatArray:
        """E[clip(x + step, 0, cap)] given z, x the uncapped draw: (x + step) between the
        thresholds a = max(0, −step) and b = cap − step (partial expectations of the lognormal),
        and the cap above b."""
        m, s = self.mu + self.item * z, self.noise
        cap = math.inf if self.cap is None else self.cap
        with np.errstate(divide="ignore"):
            log_a = math.log(-step) if step < 0 else -math.inf
            log_b = math.log(cap - step) if cap - step > 0 else -math.inf
        inside = special.ndtr((log_b - m) / s) - special.ndtr((log_a - m) / s)
        partial = np.exp(m + 0.5 * s * s) * (
            special.ndtr((log_b - m - s * s) / s) - special.ndtr((log_a - m - s * s) / s)
        )
        above = 0.0 if math.isinf(cap) else cap * special.ndtr((m - log_b) / s)
        return np.asarray(partial + step * inside + above, dtype=np.float64)

    def draw_step(
        self, z: FloatArray, step: FloatArray, epochs: int, rng: np.random.Generator
    ) -> FloatArray:
        """Draws moved by `step` (each item's), kept in the scale [0, cap]."""
        m = (self.mu + self.item * z)[:, None]
        x = np.exp(m + self.noise * rng.standard_normal((z.size, epochs))) + step[:, None]
        return np.asarray(np.clip(x, 0.0, np.inf if self.cap is None else self.cap))


@dataclass(frozen=True)
class Arm:
    """One arm's rows (items × epochs, item-major): values per component, and per judge."""

    values: dict[str, FloatArray]
    judges: dict[str, FloatArray]


def _value(values: Mapping[str, FloatArray]) -> FloatArray:
    return values["value"]


def _layered(values: Mapping[str, FloatArray]) -> FloatArray:
    return weighted_mean(values, LAYER_WEIGHTS)


class Model(ABC):
    """A system: what the engine scores per row, and the truth of an arm and of a difference."""

    components: tuple[str, ...]
    gated: bool
    dims: int  # latent dimensions per item
    description: str
    # The composite's true scale (None: unbounded), and whether the scheme declares it without
    # being told (0/1 values, layers on 1–5); otherwise only a cell that declares bounds (as a
    # user's --bounds does) passes it to the engine.
    bounds: tuple[float, float] | None
    scheme_declares: bool

    @abstractmethod
    def draw(
        self, z: FloatArray, shift: float, epochs: int, rng: np.random.Generator, failed: int
    ) -> Arm:
        """Rows of one arm; `failed` rows (at random) lose their judges (layered only)."""

    @abstractmethod
    def arm_truth(self, shift: float, failure: float = 0.0) -> float:
        """The population mean of the arm's composite, with a fraction `failure` of rows whose
        judges failed."""

    def diff_truth(self, shift: float, failure: float = 0.0) -> float:
        """The like-with-like difference treatment − control (same layers in both arms)."""
        return self.arm_truth(shift) - self.arm_truth(0.0)

    @property
    def combine(self) -> Combine:
        return _value


@dataclass(frozen=True)
class Metric(Model):
    """One per-sample value (pass/fail, a 1–5 judge score, a [0, 1] metric)."""

    latent: Latent
    description: str = ""
    bounds: tuple[float, float] | None = (0.0, 1.0)
    scheme_declares: bool = False
    components: tuple[str, ...] = ("value",)
    gated: bool = False
    dims: int = 1

    def draw(
        self, z: FloatArray, shift: float, epochs: int, rng: np.random.Generator, failed: int
    ) -> Arm:
        return Arm({"value": self.latent.draw(z[0] + shift, epochs, rng).ravel()}, {})

    def arm_truth(self, shift: float, failure: float = 0.0) -> float:
        return self.latent.mean(shift)


@dataclass(frozen=True)
class Layered(Model):
    """Per draw: 4 fact and 3 behavior assertions, two judges; layers 1 + 4·passed/total and the
    mean of the judges present; the composite is the mean of the layers present."""

    fact: Logit
    behavior: Logit
    judge: Judge
    description: str = ""
    bounds: tuple[float, float] | None = (1.0, 5.0)
    scheme_declares: bool = True  # the layered scheme: every layer lies on 1–5
    components: tuple[str, ...] = ("fact", "behavior", "judge")
    gated: bool = True
    dims: int = 3

    def draw(
        self, z: FloatArray, shift: float, epochs: int, rng: np.random.Generator, failed: int
    ) -> Arm:
        fact = 1.0 + 4.0 * self.fact.draw(z[0] + shift, epochs, rng).ravel()
        behavior = 1.0 + 4.0 * self.behavior.draw(z[1] + shift, epochs, rng).ravel()
        j1 = self.judge.draw(z[2] + shift, epochs, rng).ravel()
        j2 = self.judge.draw(z[2] + shift, epochs, rng).ravel()
        if failed:
            rows = rng.choice(j1.size, size=failed, replace=False)
            j1[rows] = np.nan
            j2[rows] = np.nan
        judge = np.where(np.isfinite(j1), 0.5 * (j1 + j2), np.nan)
        return Arm({"fact": fact, "behavior": behavior, "judge": judge}, {"j1": j1, "j2": j2})

    def layer_means(self, shift: float) -> tuple[float, float, float]:
        return (
            1.0 + 4.0 * self.fact.mean(shift),
            1.0 + 4.0 * self.behavior.mean(shift),
            self.judge.mean(shift),
        )

    def arm_truth(self, shift: float, failure: float = 0.0) -> float:
        f, b, j = self.layer_means(shift)
        return (1.0 - failure) * (f + b + j) / 3.0 + failure * (f + b) / 2.0

    def diff_truth(self, shift: float, failure: float = 0.0) -> float:
        (f1, b1, j1), (f0, b0, j0) = self.layer_means(shift), self.layer_means(0.0)
        three = (f1 + b1 + j1 - f0 - b0 - j0) / 3.0
        return (1.0 - failure) * three + failure * (f1 + b1 - f0 - b0) / 2.0

    @property
    def combine(self) -> Combine:
        return _layered


@dataclass(frozen=True)
class Concentrated(Model):
    """An effect on a share of the items: the control draws every item from `latent`; a
    treatment with shift δ moves the items whose second latent has Φ(z₁) < `share` by δ (on the
    latent's own step scale: the score before clipping for BetaClip, the logit for Logit, where
    δ = inf means the item always passes) and leaves the others as they are. Which items move
    is independent of how good they are, so an arm's truth is (1 − share)·E[h₀] + share·E[h_δ]."""

    latent: Latent
    share: float
    description: str = ""
    bounds: tuple[float, float] | None = (0.0, 1.0)
    scheme_declares: bool = False
    components: tuple[str, ...] = ("value",)
    gated: bool = False
    dims: int = 2

    def moved(self, z: FloatArray) -> npt.NDArray[np.bool_]:
        return np.asarray(special.ndtr(z[1]) < self.share)

    def draw(
        self, z: FloatArray, shift: float, epochs: int, rng: np.random.Generator, failed: int
    ) -> Arm:
        step = np.where(self.moved(z), shift, 0.0) if shift else np.zeros(z.shape[1])
        return Arm({"value": self.latent.draw_step(z[0], step, epochs, rng).ravel()}, {})

    def arm_truth(self, shift: float, failure: float = 0.0) -> float:
        base = self.latent.mean(0.0)
        if not shift:
            return base
        moved = population_mean(lambda z: self.latent.expected_step(z, shift))
        return (1.0 - self.share) * base + self.share * moved


def spread(m: Model) -> Model:
    """The model with its effects spread over every item, the MDE's stated assumption: a
    concentrated model's share set to 1 (every item's step moves by δ); a metric whose latent
    shift does not spread (`Latent.spreads`: bimodal levels, multiplied lognormal scores) gets a
    step of every item's score within the scale instead; other models as they are."""
    if isinstance(m, Concentrated):
        return replace(m, share=1.0)
    if isinstance(m, Metric) and not m.latent.spreads:
        return Concentrated(
            m.latent, 1.0, f"{m.description}; every item's score moved by one step",
            bounds=m.bounds, scheme_declares=m.scheme_declares,
        )  # fmt: skip
    return m


def logit_for_mean(mean: float, scale: float) -> float:
    """The location whose logit-normal(loc, scale) population mean is `mean`."""
    return bisect(lambda loc: Logit(loc, scale).mean(), mean, -30.0, 30.0)


GATE = 3.5
FACT_P, BEHAVIOR_P = 0.85, 0.92
LAYER_JUDGE = Judge(loc=4.0, scale=0.7, noise=0.5)
RARE_MEAN, RARE_TREATED, RARE_SCALE = 0.95, 0.97, 2.5


@cache
def pass_truth(m: Model, kind: str, k: int, shift: float = 0.0) -> float | None:
    """The population pass@k (1 − (1 − p)^k) or pass^k (p^k) of a pass/fail system, E over its
    items; None for other systems."""
    if not (isinstance(m, Metric) and isinstance(m.latent, Logit) and m.latent.trials == 1):
        return None
    p = m.latent.expected
    if kind == "pass@k":
        return population_mean(lambda z: 1.0 - (1.0 - p(z)) ** k, shift)
    return population_mean(lambda z: p(z) ** k, shift)


SKEWED = BetaClip(a=5.0, b=2.0, noise=0.05)  # item scores ~ Beta(5, 2), + N(0, 0.05), clipped
HEAVY_CAP = 20.0
CONCENTRATED_CONTINUOUS_SHARE = 0.1
CONCENTRATED_BINARY_SHARE = 0.12


def model(name: str) -> Model:
    """The models of the grid by name (see docs/calibration.md for their parameters)."""
    if name.startswith("binary-p"):
        p = float(name.removeprefix("binary-p"))
        return Metric(
            Logit(float(special.logit(p))), f"pass/fail, item logit ~ N(logit {p}, 1)",
            scheme_declares=True,
        )  # fmt: skip
    if name == "judge":
        return Metric(
            Judge(), "1–5 judge, q ~ N(3.6, 0.8), score round(q + N(0, 0.5))",
            bounds=(1.0, 5.0), scheme_declares=True,
        )  # fmt: skip
    if name == "continuous":
        return Metric(
            BetaClip(), "[0, 1] metric, item mean ~ Beta(2, 5), + N(0, 0.1) clipped",
            bounds=(0.0, 1.0), scheme_declares=True,
        )  # fmt: skip
    if name == "rare":
        loc = logit_for_mean(RARE_MEAN, RARE_SCALE)
        return Metric(
            Logit(loc, RARE_SCALE), f"pass/fail {RARE_MEAN} vs {RARE_TREATED}, shared latent",
            scheme_declares=True,
        )  # fmt: skip
    if name.startswith("skewed-s"):
        share = float(name.removeprefix("skewed-s"))
        return Concentrated(
            SKEWED, share, f"[0, 1] ~ Beta(5, 2) + N(0, 0.05); a step on {share:.0%} of items"
        )
    if name == "bimodal":
        return Metric(Bimodal(), "[0, 1] scores at 0 (40%), 1 (50%) or uniform, + N(0, 0.1)")
    if name == "heavy-capped":
        return Metric(
            LogNormal(cap=HEAVY_CAP), f"lognormal (log sd 1.2) capped at {HEAVY_CAP:g}",
            bounds=(0.0, HEAVY_CAP),
        )  # fmt: skip
    if name == "heavy":
        return Metric(LogNormal(), "lognormal (log sd 1.2), unbounded", bounds=None)
    if name == "conc-continuous":
        share = CONCENTRATED_CONTINUOUS_SHARE
        return Concentrated(BetaClip(), share, f"continuous; a step on {share:.0%} of items")
    if name == "conc-binary-p0.70":
        share = CONCENTRATED_BINARY_SHARE
        return Concentrated(
            Logit(float(special.logit(0.7))), share,
            f"pass/fail 0.7; {share:.0%} of items always pass", scheme_declares=True,
        )  # fmt: skip
    fact = Logit(float(special.logit(FACT_P)), 1.0, trials=4)
    behavior = Logit(float(special.logit(BEHAVIOR_P)), 1.0, trials=3)
    if name in ("layered", "layered-judgefail"):
        return Layered(fact, behavior, LAYER_JUDGE, "layered: 4 fact, 3 behavior, 2 judges")
    if name == "layered-gate":
        # behavior mean 1 + 4·E[p] exactly at the gate
        loc = logit_for_mean((GATE - 1.0) / 4.0, 1.0)
        return Layered(fact, Logit(loc, 1.0, trials=3), LAYER_JUDGE, "layered, behavior at 3.5")
    raise KeyError(f"no calibration model '{name}'")


def shift_for(m: Model, diff: float, failure: float = 0.0, top: float = 8.0) -> float | None:
    """The latent shift whose true difference is `diff` (negative: a shift down); None when even
    a shift of ±`top` sd falls short."""
    if diff >= 0:
        if m.diff_truth(top, failure) < diff:
            return None
        return bisect(lambda s: m.diff_truth(s, failure), diff, 0.0, top)
    if m.diff_truth(-top, failure) > diff:
        return None
    return bisect(lambda s: m.diff_truth(s, failure), diff, -top, 0.0)
