"""Simulated ReasonScore leaderboards whose true order is known, for the rank-interval study
(`calipers.calibration.rankings`, cells of kind `reasonscore`).

A leaderboard: K runs answer the same generated questions — T tiers (easy, medium, hard) × J
tasks × 2 difficulty points, m questions per (tier, task, point), one epoch — and are scored by
the reasonscore scheme itself, whose rank intervals (`schemes.reasonscore.ranks.group_ranks`)
are what is measured.

One question i of (tier t, task j, point p) has difficulty d_i = δ_t + δ_j + δ_p + N(0, 1), the
same for every run (the runs answer the same questions, as on ReasonScape: their scores are
positively correlated, and the scheme's bootstrap, which resamples each run on its own, does not
use that). Run r with quality q_r, on it:

    truncated  ~ Bernoulli(τ_{r,t})               (τ_{r,t} = τ_r · (1 + tier index))
    correct    = not truncated and (knows or guesses),  knows ~ Bernoulli(expit(q_r − d_i)),
                 guesses ~ Bernoulli(g_j)          (guess_chance g_j of the task, recorded)
    tokens_out = the context limit LIMIT if truncated, else NegBin with mean μ_{r,t} = c_r · B_t
                 (shape 4: sd half the mean)

The ranked quantity is score/token. With infinitely many questions at each point (the design's
m the same at every point) each layer converges to its plug-in limit: the Wilson margin → 0 and
its center → the adjusted share clipped to [0, 1], so a task's score → max(0.01,
clip(Σ_p [E correct_p − g_j] / Σ_p (1 − g_j), 0, 1) − τ_{r,t}) with E correct_p = (1 − τ_{r,t})
(g_j + (1 − g_j) s_p), s_p = E[expit(q_r − δ − Z)]; a tier → 1000 · the geometric mean of its
task limits; the mean tokens of a tier → (1 − τ_{r,t}) μ_{r,t} + τ_{r,t} LIMIT; score/token → the
mean of the tier limits over the mean of the token limits. That limit is the truth the ranks are
measured against, computed in closed form up to the one-dimensional integral s_p (Gauss–Hermite,
96 nodes); `tests/test_rankings_calibration.py` checks the integral against scipy's quad (to 1e-11)
and the limits against the scheme's own score/token on 720,000 questions per run.

The token scale c_r of each run is solved so that the limits are the cell's targets: pairs of
runs ("0", "1"), ("2", "3"), … a relative `gap` apart (near-ties), consecutive pairs a factor 2
apart (clear gaps); in the first pair of each two the better run is the more accurate and more
expensive one, in the second the cheaper and less accurate one — a finite-sample score's
optimistic Wilson margin is larger at lower accuracy, so the first kind of pair is where a rank
interval centred on the finite-sample score would miss. With `fewer` < 1 the less accurate run
of each pair answers only the first share `fewer` of each point's questions (its margin is larger
still; the limit does not change).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from calipers.data.duck import connect
from calipers.data.files import sql_name
from calipers.data.model import duckdb_columns
from calipers.data.sampleset import SampleSet
from calipers.schemes.reasonscore.ranks import Estimand, group_ranks
from calipers.schemes.reasonscore.scheme import ReasonScoreOptions
from calipers.schemes.reasonscore.scoring import DEFAULT_LABEL, TASK_FLOOR, ReasonScoreResult
from calipers.schemes.registry import get_scheme

FloatArray = npt.NDArray[np.float64]

TIER_NAMES = ("easy", "medium", "hard")
TIER_DIFFICULTY = (-0.5, 0.5, 1.5)  # δ_t
TIER_TOKENS = (400.0, 700.0, 1000.0)  # B_t: a tier's typical output length at c_r = 1
POINT_DIFFICULTY = (-0.5, 0.5)  # δ_p
GUESS = (0.5, 0.25, 0.0, 0.2)  # g_j, task j by j mod 4
LIMIT = 4096  # tokens of a truncated output
STEP = 0.5  # consecutive pairs' targets: ×0.5 (clear gaps)
QUALITY = ((2.5, 1.2), (2.0, 0.8))  # (more accurate, less accurate) run of a pair, by pair parity
TRUNCATION = ((0.02, 0.06), (0.03, 0.05))  # τ_r of the same runs
NEGBIN_SHAPE = 4.0
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(96)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


@dataclass(frozen=True)
class Design:
    runs: int  # K
    tiers: int  # T ≤ 3
    tasks: int  # J per tier
    samples: int  # m questions per (tier, task, point)
    gap: float  # relative gap between the two runs of a near-tie pair
    fewer: float = 1.0  # the less accurate run of each pair answers this share of the questions

    def task_difficulty(self) -> FloatArray:
        return np.linspace(-0.5, 0.5, self.tasks) if self.tasks > 1 else np.zeros(1)


@dataclass(frozen=True)
class Run:
    name: str
    accurate: bool  # the more accurate run of its pair
    quality: float  # q_r
    truncation: float  # τ_r (tier t: τ_r · (1 + t))
    tokens: float  # c_r


def solved(q: float, delta: float) -> float:
    """E[expit(q − delta − Z)], Z ~ N(0, 1), by Gauss–Hermite quadrature."""
    return float(np.sum(_WEIGHTS / (1.0 + np.exp(-(q - delta - _NODES)))))


def limit_score(design: Design, quality: float, truncation: float) -> float:
    """The mean over tiers of the tier ReasonScores' infinite-sample limits."""
    tiers = []
    for t in range(design.tiers):
        tau = truncation * (1 + t)
        logs = []
        for j, task_delta in enumerate(design.task_difficulty()):
            g = GUESS[j % len(GUESS)]
            excess = sum(
                (1 - tau) * (g + (1 - g) * solved(quality, TIER_DIFFICULTY[t] + task_delta + p)) - g
                for p in POINT_DIFFICULTY
            )
            share = min(1.0, max(0.0, excess / (len(POINT_DIFFICULTY) * (1 - g))))
            logs.append(np.log(max(TASK_FLOOR, share - tau)))
        tiers.append(1000.0 * float(np.exp(np.mean(logs))))
    return float(np.mean(tiers))


def limit_tokens(design: Design, run: Run) -> float:
    """The mean over tiers of the tiers' mean output tokens, in the limit."""
    tiers = [
        (1 - run.truncation * (1 + t)) * run.tokens * TIER_TOKENS[t]
        + run.truncation * (1 + t) * LIMIT
        for t in range(design.tiers)
    ]
    return float(np.mean(tiers))


@cache
def leaderboard(design: Design) -> tuple[tuple[Run, ...], tuple[float, ...]]:
    """The runs and their true score/token (the infinite-sample limits), run "0" the best."""
    profiles = []
    targets = []
    for r in range(design.runs):
        pair, second = divmod(r, 2)
        accurate = second == pair % 2  # pairs 1, 3, …: the better run is the accurate one
        quality, truncation = QUALITY[pair % 2], TRUNCATION[pair % 2]
        kind = 0 if accurate else 1
        profiles.append((accurate, quality[kind], truncation[kind]))
        targets.append(STEP**pair * (1.0 - design.gap) ** second)
    # c_r from limit score / (mean_t (1 − τ_t) c B_t + τ_t LIMIT) = scale · target, the scale set
    # so that the cheapest run's c is 0.5 (every run has a positive token count)
    scores, fixed, per_c = [], [], []
    for _, q, tau in profiles:
        scores.append(limit_score(design, q, tau))
        fixed.append(limit_tokens(design, Run("", True, q, tau, 0.0)))
        per_c.append(limit_tokens(design, Run("", True, q, tau, 1.0)) - fixed[-1])
    scale = min(
        s / (v * (a + 0.5 * b)) for s, v, a, b in zip(scores, targets, fixed, per_c, strict=True)
    )
    runs = tuple(
        Run(str(r), accurate, q, tau, (s / (scale * v) - a) / b)
        for r, ((accurate, q, tau), s, v, a, b) in enumerate(
            zip(profiles, scores, targets, fixed, per_c, strict=True)
        )
    )
    truth = tuple(limit_score(design, r.quality, r.truncation) / limit_tokens(design, r)
                  for r in runs)  # fmt: skip
    return runs, truth


def simulate(design: Design, rng: np.random.Generator) -> pa.Table:
    """One leaderboard's samples: every run on the same questions."""
    runs, _ = leaderboard(design)
    m = design.samples
    tiers, tasks, points, ids, diff = [], [], [], [], []
    for t in range(design.tiers):
        for j, task_delta in enumerate(design.task_difficulty()):
            for p, point_delta in enumerate(POINT_DIFFICULTY):
                base = TIER_DIFFICULTY[t] + task_delta + point_delta
                diff.append(base + rng.standard_normal(m))
                tiers.append(np.full(m, t))
                tasks.append(np.full(m, j))
                points.append(np.full(m, p))
                ids.append(np.arange(m))
    d, tier, task = np.concatenate(diff), np.concatenate(tiers), np.concatenate(tasks)
    point, sample = np.concatenate(points), np.concatenate(ids)
    guess = np.array(GUESS)[task % len(GUESS)]
    answered = sample < max(1, round(design.fewer * m))
    columns: dict[str, list[npt.NDArray[np.generic]]] = {}
    for run in runs:
        tau = run.truncation * (1 + tier)
        truncated = rng.random(d.size) < tau
        knows = rng.random(d.size) < 1.0 / (1.0 + np.exp(-(run.quality - d)))
        guessed = rng.random(d.size) < guess
        mean = run.tokens * np.array(TIER_TOKENS)[tier]
        tokens = rng.negative_binomial(NEGBIN_SHAPE, NEGBIN_SHAPE / (NEGBIN_SHAPE + mean))
        keep = np.ones(d.size, dtype=bool) if run.accurate else answered
        for name, values in (
            ("run", np.full(d.size, int(run.name))),
            ("tier", tier),
            ("task", task),
            ("point", point),
            ("sample", sample),
            ("correct", (knows | guessed) & ~truncated),
            ("guess_chance", guess),
            ("truncated", truncated),
            ("tokens_out", np.where(truncated, LIMIT, tokens)),
        ):
            columns.setdefault(name, []).append(values[keep])
    return pa.table({name: np.concatenate(v) for name, v in columns.items()})


def sample_set(table: pa.Table) -> SampleSet:
    """The samples as the scheme reads them: a table with the model's columns (the others null),
    names made as a file's would be."""
    con = connect()
    columns = ", ".join(f"{sql_name(n)} {t}" for n, t in duckdb_columns().items())
    con.execute(f"CREATE TABLE samples ({columns})")
    con.register("simulated", table)
    con.execute(
        """
        INSERT INTO samples (run, tier, task, point, sample_id, epoch, correct, guess_chance,
                             truncated, tokens_out)
        SELECT run::VARCHAR, ?[tier + 1], 'task' || task::VARCHAR,
               'p' || point::VARCHAR, tier::VARCHAR || '/' || task::VARCHAR || '/'
               || point::VARCHAR || '/' || sample::VARCHAR, 0, correct, guess_chance, truncated,
               tokens_out
        FROM simulated
        """,
        [list(TIER_NAMES)],
    )
    con.unregister("simulated")
    return SampleSet(con, "samples", "<simulated leaderboard>")


def rank_spans(
    design: Design, rng: np.random.Generator, *, estimand: Estimand = "limit"
) -> dict[str, tuple[int, int]]:
    """One simulated leaderboard scored by the reasonscore scheme: each run's rank interval, as
    the scheme reports it (`estimand` "limit"), or from `group_ranks` on the scheme's runs with
    the finite-sample score/token as the estimand ("score": what the fix replaced)."""
    samples = sample_set(simulate(design, rng))
    try:
        seed = int(rng.integers(2**31))
        result = get_scheme("reasonscore").score(samples, seed=seed)
        assert isinstance(result, ReasonScoreResult)
        if estimand == "limit":
            found = result.group_ranks.get(tuple(sorted(result.runs)))
        else:
            found, _ = group_ranks(
                samples, result.groups()[0].runs, z=ReasonScoreOptions().z, floor=TASK_FLOOR,
                default=DEFAULT_LABEL, seed=seed, estimand=estimand,
            )  # fmt: skip
    finally:
        samples.con.close()
    if found is None:
        raise RuntimeError(f"no rank intervals for a simulated leaderboard: {result.notes}")
    return {r["run"]: (int(r["rank_low"]), int(r["rank_high"])) for r in found["runs"]}
