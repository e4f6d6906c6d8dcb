"""The rubric and objective schemes under calibration: simulated samples with known truth, scored
the way each scheme scores them, and the interval each reports.

**rubric** (seed 001, `calipers.schemes.rubric`): per sample, a judge scores each of the seven
dimensions on 1–5 (`scale_min` 1, `scale_max` 5, which the scheme rescales to 1–10: 1, 3.25, 5.5,
7.75, 10): clip(round(loc_d + 0.7·z + N(0, 0.6)), 1, 5) with loc_d in RUBRIC_LOCS (skewed high,
as LLM judges are), z the item's latent; two possible red flags, each raised with probability
expit(−2.5 − 0.8·z), and one bonus with expit(−1.5 + 0.8·z). The scheme's final score is
min(10, max(1, composite − 0.5·flags) + 0.25·bonus), the composite Σ w_d·dim_d rounded half up to
cents. The interval is the run's (`summarize_runs`: today a percentile bootstrap of the mean final
score). Truth: E[final] — given z the dimensions, flags and bonus are independent, so the law of
the composite is the convolution of the seven dimensions' laws on its 0.0125 grid, exact, and the
expectation over z the trapezoid rule of `calibration.models`.

**objective** (seed 002, `calipers.schemes.objective`): per sample, 4 assertions ~ Bernoulli(p),
logit p = logit 0.8 + z₀, and one overall judgment on 1–5 (`scale_max` 5), clip(round(3.8 +
0.8·z₁ + N(0, 0.6)), 1, 5) with z₁ = 0.6·z₀ + 0.8·u; base = 0.6·passed/4 + 0.4·(judge − 1)/4 and
no cost metric (so no cost adjustment). The interval is the net gain's (`net_gain_interval`, one
task: the candidate's mean base − the baseline's), under the null and at a latent shift of
OBJECTIVE_SHIFT. Truth: 0.6·E[p] + 0.4·(E[judge] − 1)/4 per arm, in closed form given z.

The harness calls the schemes' own functions on arrays (`evaluate` and `summarize_runs`;
`TaskSamples`, `score_runs`, `decide` and `net_gain_interval`) rather than building a DuckDB table
per simulated run (0.1–0.7 s each); tests/test_calibration.py checks that they give what
`calipers.score` and `compare_objective` give on the same samples.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from calipers.calibration.engine import Interval
from calipers.calibration.models import FloatArray, Judge, Logit, population_mean
from calipers.schemes.objective.scoring import COST_METRICS, TaskSamples, Weights, score_runs
from calipers.schemes.objective.verdict import Settings, decide, net_gain_interval
from calipers.schemes.rubric.definition import DEFAULT_WEIGHTS, DIMENSIONS, load_rubric
from calipers.schemes.rubric.scoring import Evaluation, evaluate, summarize_runs

RUBRIC_LOCS = {
    "correctness": 3.9,
    "completeness": 4.1,
    "adherence": 4.3,
    "actionability": 3.8,
    "efficiency": 4.0,
    "safety": 4.6,
    "consistency": 4.4,
}
RUBRIC_LOADING, RUBRIC_NOISE = 0.7, 0.6
RED_FLAGS = ("invented_api", "unsafe_change")  # each raised with expit(FLAG_LOC − FLAG_SLOPE·z)
FLAG_LOC, FLAG_SLOPE = -2.5, 0.8
BONUS = "adds_tests"  # raised with expit(BONUS_LOC + BONUS_SLOPE·z)
BONUS_LOC, BONUS_SLOPE = -1.5, 0.8
# a judge's 1–5 score on the rubric's 1–10 scale, in units of 0.25: 1 + 9(s − 1)/4
_QUARTERS = np.array([4, 13, 22, 31, 40])

OBJECTIVE_CHECKS = Logit(float(special.logit(0.8)), 1.0, trials=4)
OBJECTIVE_JUDGE = Judge(loc=3.8, scale=0.8, noise=0.6)
OBJECTIVE_CORRELATION = 0.6  # of the judge's latent with the checks'
OBJECTIVE_SHIFT = 0.3  # the alternative's latent shift (both latents)


def _judge_pmf(loc: float, z: FloatArray) -> FloatArray:
    """P(clip(round(loc + a·z + N(0, σ)), 1, 5) = k), k = 1..5, per z (len(z) × 5)."""
    mu = loc + RUBRIC_LOADING * z
    cdf = np.column_stack(
        [special.ndtr((k + 0.5 - mu) / RUBRIC_NOISE) for k in range(1, 5)] + [np.ones_like(z)]
    )
    return np.diff(cdf, axis=1, prepend=0.0)


def rubric_expected(z: FloatArray) -> FloatArray:
    """E[final score | z], exactly: the composite's law on its grid of 0.0125 (the weights are
    multiples of 0.05, a dimension a multiple of 0.25), rounded half up to cents, then the red
    flags' deductions, the floor, the bonus and the ceiling."""
    w = {d: int(DEFAULT_WEIGHTS[d] / Decimal("0.05")) for d in DIMENSIONS}  # 5, 4, 3, 3, 2, 2, 1
    top = int(_QUARTERS[-1]) * sum(w.values())
    law = np.zeros((z.size, top + 1))
    law[:, 0] = 1.0
    for d in DIMENSIONS:
        pmf = _judge_pmf(RUBRIC_LOCS[d], z)
        step = np.zeros_like(law)
        for k, quarter in enumerate(_QUARTERS):
            shift = w[d] * int(quarter)
            step[:, shift:] += law[:, : law.shape[1] - shift] * pmf[:, k : k + 1]
        law = step
    units = np.arange(top + 1)
    cents = (5 * units + 2) // 4  # raw = units·0.0125, rounded half up to cents
    flag = special.expit(FLAG_LOC - FLAG_SLOPE * z)
    bonus = special.expit(BONUS_LOC + BONUS_SLOPE * z)
    flags = [(1 - flag) ** 2, 2 * flag * (1 - flag), flag**2]  # 0, 1 or 2 unique red flags
    out = np.zeros(z.size)
    for f, pf in enumerate(flags):
        after = np.maximum(100, cents - 50 * f)
        for b, pb in ((0, 1 - bonus), (1, bonus)):
            final = np.minimum(1000, after + 25 * b) / 100.0
            out += pf * pb * (law @ final)
    return out


@cache
def rubric_truth() -> float:
    """The population mean of the final score."""
    return population_mean(rubric_expected)


# 1 + 9(s − 1)/4 as the scheme computes it from a judgment's float score on 1–5
_RESCALED = {
    s: 1 + 9 * (Decimal(repr(float(s))) - Decimal("1.0")) / (Decimal("5.0") - Decimal("1.0"))
    for s in range(1, 6)
}


@dataclass(frozen=True)
class RubricSamples:
    """Simulated rubric samples: judge scores 1–5 per dimension (items × 7), flags, bonus."""

    scores: npt.NDArray[np.int64]
    flags: npt.NDArray[np.bool_]  # items × len(RED_FLAGS)
    bonus: npt.NDArray[np.bool_]  # items

    def records(self, run: str = "A") -> list[dict[str, Any]]:
        """The samples in calipers' data model: one judgment per dimension on a 1–5 scale, the
        red flags and bonus on the first judgment."""
        out = []
        for i in range(self.scores.shape[0]):
            judgments: list[dict[str, Any]] = [
                {"judge": "j", "dimension": d, "score": float(self.scores[i, k]),
                 "scale_min": 1.0, "scale_max": 5.0}
                for k, d in enumerate(DIMENSIONS)
            ]  # fmt: skip
            judgments[0]["red_flags"] = [f for j, f in enumerate(RED_FLAGS) if self.flags[i, j]]
            judgments[0]["bonuses"] = [BONUS] if self.bonus[i] else []
            out.append({"run": run, "task": "t", "sample_id": f"s{i:05d}", "epoch": 0,
                        "judgments": judgments})  # fmt: skip
        return out

    def evaluations(self, run: str = "A") -> list[Evaluation]:
        """Each sample through the rubric's pipeline (`evaluate`), as `score_evaluations` does
        from the records above."""
        rules = load_rubric().base
        out = []
        for i in range(self.scores.shape[0]):
            dims = {d: _RESCALED[int(self.scores[i, k])] for k, d in enumerate(DIMENSIONS)}
            flags = [f for j, f in enumerate(RED_FLAGS) if self.flags[i, j]]
            extras = [BONUS] if self.bonus[i] else []
            out.append(evaluate((run, "t", f"s{i:05d}", 0), dims, flags, extras, rules))
        return out


def rubric_samples(rng: np.random.Generator, n: int) -> RubricSamples:
    z = rng.standard_normal(n)
    locs = np.array([RUBRIC_LOCS[d] for d in DIMENSIONS])
    x = locs[None, :] + RUBRIC_LOADING * z[:, None] + RUBRIC_NOISE * rng.standard_normal((n, 7))
    scores = np.clip(np.round(x), 1, 5).astype(np.int64)
    flags = rng.random((n, len(RED_FLAGS))) < special.expit(FLAG_LOC - FLAG_SLOPE * z)[:, None]
    bonus = rng.random(n) < special.expit(BONUS_LOC + BONUS_SLOPE * z)
    return RubricSamples(scores, flags, bonus)


def rubric_interval(
    samples: RubricSamples, *, confidence_level: float, n_resamples: int, seed: int
) -> Interval:
    """The run's mean final score and the interval the rubric scheme reports (None: none)."""
    options: dict[str, Any] = {}
    if "bounds" in inspect.signature(summarize_runs).parameters:
        options["bounds"] = (1.0, 10.0)  # the scheme's own scale, should it take it
    grades = summarize_runs(
        samples.evaluations(), confidence_level=confidence_level, n_resamples=n_resamples,
        seed=seed, **options,
    )["A"]  # fmt: skip
    if grades.interval is None:
        return Interval(grades.mean_final, None, None)
    return Interval(grades.mean_final, float(grades.interval[0]), float(grades.interval[1]))


# --- objective -----------------------------------------------------------------------------


def _objective_latents(z: FloatArray) -> tuple[FloatArray, FloatArray]:
    r = OBJECTIVE_CORRELATION
    return z[0], r * z[0] + np.sqrt(1.0 - r * r) * z[1]


def objective_truth(shift: float = 0.0) -> float:
    """An arm's population mean of base = 0.6·obj01 + 0.4·judge01 (no cost adjustment); each
    latent is standard normal, so each mean is one integral."""
    judge01 = (OBJECTIVE_JUDGE.mean(shift) - 1.0) / 4.0
    return 0.6 * OBJECTIVE_CHECKS.mean(shift) + 0.4 * judge01


@dataclass(frozen=True)
class ObjectiveSamples:
    """One run's simulated samples: assertions passed of 4, and the judge's 1–5 score."""

    passed: FloatArray  # items
    judge: FloatArray  # items, 1–5

    def task(self) -> TaskSamples:
        """The run's one task as the scheme stages it (`stage_tasks`: one row per sample)."""
        n = self.passed.size
        objective = self.passed / 4.0
        judge01 = (self.judge - 1.0) / 4.0
        w = Weights()
        base = (w.w_obj * objective + w.w_judge * judge01) / (w.w_obj + w.w_judge)
        cost = {m: np.full(n, np.nan) for m in COST_METRICS}
        return TaskSamples(objective, judge01, np.ones(n, dtype=bool), base, 0, cost, n)

    def records(self, run: str) -> list[dict[str, Any]]:
        return [
            {"run": run, "task": "t", "sample_id": f"s{i:05d}", "epoch": 0,
             "assertions": [{"name": f"c{k}", "type": "contains", "passed": bool(k < p)}
                            for k in range(4)],
             "judgments": [{"judge": "j", "score": float(s), "scale_min": 1.0,
                            "scale_max": 5.0}]}
            for i, (p, s) in enumerate(zip(self.passed, self.judge, strict=True))
        ]  # fmt: skip


def objective_pair(
    rng: np.random.Generator, n: int, shift: float
) -> tuple[ObjectiveSamples, ObjectiveSamples]:
    """The baseline and the candidate (its latents shifted by `shift`) on the same n items."""
    z_checks, z_judge = _objective_latents(rng.standard_normal((2, n)))
    arms = []
    for s in (0.0, shift):
        passed = OBJECTIVE_CHECKS.draw(z_checks + s, 1, rng).ravel() * 4.0
        judge = OBJECTIVE_JUDGE.draw(z_judge + s, 1, rng).ravel()
        arms.append(ObjectiveSamples(np.round(passed), judge))
    return arms[0], arms[1]


@dataclass(frozen=True)
class ObjectiveOutcome:
    net_gain: Interval
    verdict: str
    promote: bool


def objective_compare(
    baseline: ObjectiveSamples,
    candidate: ObjectiveSamples,
    *,
    confidence_level: float,
    n_resamples: int,
    seed: int,
) -> ObjectiveOutcome:
    """The objective comparison's net gain, its interval and verdict, as `compare_objective`
    makes them from staged tasks."""
    settings = Settings()
    staged = {"A": {"t": baseline.task()}, "B": {"t": candidate.task()}}
    scores = score_runs(staged, baseline="A", weights=settings.weights)
    _, regressions, net, verdict, _ = decide(scores["A"], scores["B"], settings)
    found = net_gain_interval(
        staged["A"], staged["B"], ["t"], settings,
        confidence_level=confidence_level, n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    interval = Interval(net, None, None) if found is None else Interval(net, found.low, found.high)
    promote = verdict.value == "improved" and not regressions
    return ObjectiveOutcome(interval, verdict.value, promote)
