"""The sequential grid: simulated paired runs with known truth, replayed through the sequential
engine with a look after every unit, to measure what the designs promise (issue 36).

Each cell draws `reps` paired runs at once (numpy over reps × units) from the harness's models
(`calipers.calibration.models`): pass/fail near 0.5 and 0.95 and with rare discordance, a 1–5
judge, continuous [0, 1] scores (Beta(2, 5) and a skewed Beta(5, 2)), bimodal scores; clustered
items (groups of 5 sharing 0.3 of the latent variance, a cluster = a unit); 1 or 5 epochs (a
unit is the item's epoch mean); K = 1 or 3 treatments. Runs go through
`calipers.verdicts.sequential_rules.replay` — the engine `decide_sequentially` runs (the tests
check that they agree rep by rep) — for each design, in four phases:

    null     every arm the same system: a false PROGRESS or REGRESS at any look, any pair
    mde      the treatment at the fixed-N MDE: PROGRESS by N, and the fixed test's at N
    twice    at twice the MDE: the unit the run stops at (N when it does not stop by N)
    drop     margin cells, a true drop of exactly the margin: a false non-inferior

The MDE is the fixed test's at N: (z_{1−α/2K} + z_{0.8})·sd/√N with sd the unit differences'
under the null (2,000 runs); the shift of the treatment's latents giving that true difference
is found by bisection on the model's truth. Where the model cannot move up that far (a pass
rate near 1) the alternative is a drop of the same size, and power is REGRESS's.

Stress cells: the arms' calls finish in their own time — the candidate's calls twice as slow,
and every call slower the worse its outcome (latency Exp(1 or 2) × (1 + 4·(1 − outcome)): a
failure, with its retries and time-outs, takes five times as long; items submitted 8 per unit
of time) —
and the engine's contract is simulated: a unit counts only when both arms (and all its epochs)
are in and every unit before it is, and the look comes when the reorder buffer releases units
(`buffer`: one epoch; `epochs`: five epochs arriving one by one). The `naive` cell feeds units in
completion order with no buffer: not a design, the contract's reason.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from calipers.calibration import models
from calipers.verdicts.sequential import SequentialDesign, SequentialMonitor
from calipers.verdicts.sequential_rules import (
    EQUIVALENT,
    NON_INFERIOR,
    PROGRESS,
    REGRESS,
    SUPERIOR,
    Plan,
    final_test,
    make_plan,
    replay,
)

FloatArray = npt.NDArray[np.float64]
ALPHA = 0.05
POWER = 0.8
GROUP_SIZE = 5
GROUP_CORRELATION = 0.3
SD_REPS = 2000  # null runs for the unit differences' sd behind the MDE
CHUNK = 1000  # reps per block (memory: a few arrays of CHUNK × N)
DESIGNS = ("hybrid", "sequence", "sequence-N", "obf", "pocock")
PHASES = ("null", "mde", "twice", "drop")
PASSING = (NON_INFERIOR, EQUIVALENT, SUPERIOR)  # margin decisions that pass a non-inferior gate
# Targets (issue 36)
TARGET_POWER_LOSS = 0.03  # hybrid power at the MDE ≥ the fixed test's − 3 points
TARGET_N = {"hybrid": 0.45, "sequence": 0.35}  # mean stop at twice the MDE, a share of N
SLOWER = 2.0  # the candidate's calls: mean latency × 2
FAILING = 4.0  # a call's latency × (1 + 4·(1 − outcome)): a failure takes 5 times as long
RATE = 8.0  # items submitted per unit of time


@dataclass(frozen=True)
class SeqCell:
    id: str
    model: str  # pass-0.50, pass-0.95, rare, judge, continuous, skewed, bimodal
    n: int  # N: the planned units
    epochs: int = 1
    clustered: bool = False
    treatments: int = 1
    stress: str | None = None  # buffer | epochs | naive
    margin: float | None = None  # on the metric's scale
    designs: tuple[str, ...] = DESIGNS

    @property
    def key(self) -> int:
        return int.from_bytes(hashlib.sha256(self.id.encode()).digest()[:4], "big")


@dataclass(frozen=True)
class SeqSettings:
    reps_null: int = 4000
    reps_alt: int = 2000
    seed: int = 20260312


REDUCED = SeqSettings(reps_null=400, reps_alt=200)


def _cell(model: str, n: int, **kw: Any) -> SeqCell:
    parts = [model, f"N{n}"]
    if kw.get("epochs", 1) > 1:
        parts.append(f"e{kw['epochs']}")
    if kw.get("clustered"):
        parts.append("clustered")
    if kw.get("treatments", 1) > 1:
        parts.append(f"K{kw['treatments']}")
    if kw.get("margin") is not None:
        parts.append(f"margin{kw['margin']:g}")
    if kw.get("stress"):
        parts.append(kw["stress"])
    return SeqCell("/".join(parts), model, n, **kw)


def full_grid() -> list[SeqCell]:
    stress = ("hybrid", "sequence", "sequence-N")
    return [
        _cell("pass-0.50", 1300),
        _cell("pass-0.95", 2000),
        _cell("rare", 3000),
        _cell("judge", 800),
        _cell("continuous", 1000),
        _cell("skewed", 1000),
        _cell("bimodal", 800),
        _cell("pass-0.50", 1000, epochs=5),
        _cell("continuous", 1000, epochs=5),
        _cell("pass-0.50", 600, clustered=True),
        _cell("judge", 600, clustered=True),
        _cell("pass-0.50", 1300, treatments=3),
        _cell("continuous", 1000, treatments=3),
        _cell("pass-0.50", 1300, margin=0.05),
        _cell("judge", 800, margin=0.2),
        _cell("pass-0.50", 1300, stress="buffer", designs=stress),
        _cell("continuous", 1000, epochs=5, stress="epochs", designs=stress),
        _cell("pass-0.50", 1300, stress="naive", designs=("hybrid", "sequence-N")),
    ]


def reduced_grid() -> list[SeqCell]:
    """Seconds, not minutes: smaller N and fewer cells (tests/test_calibration_sequential.py)."""
    return [
        _cell("pass-0.50", 400, designs=("hybrid", "sequence", "obf")),
        _cell("continuous", 1000, designs=("hybrid", "sequence")),
        _cell("pass-0.50", 400, treatments=3, designs=("hybrid",)),
        _cell("judge", 300, margin=0.2, designs=("hybrid", "sequence")),
        _cell("pass-0.50", 400, stress="buffer", designs=("sequence-N",)),
    ]


@cache
def _model(name: str) -> tuple[models.Metric, tuple[float, float], bool]:
    """The model, its scale's bounds, and whether one draw is a pass/fail outcome."""
    if name.startswith("pass-"):
        m = models.model(f"binary-p{name.removeprefix('pass-')}")
    elif name == "skewed":
        m = models.Metric(models.SKEWED, "[0, 1] ~ Beta(5, 2) + N(0, 0.05)", bounds=(0.0, 1.0))
    else:
        m = models.model(name)
    assert isinstance(m, models.Metric) and m.bounds is not None
    return m, m.bounds, isinstance(m.latent, models.Logit)


def _design(label: str, n: int) -> SequentialDesign:
    kinds = {"hybrid": "hybrid", "sequence": "sequence", "sequence-N": "sequence",
             "obf": "obrien-fleming", "pocock": "pocock"}  # fmt: skip
    return SequentialDesign(kinds[label], n_planned=None if label == "sequence" else n)  # type: ignore[arg-type]


@dataclass
class Draw:
    """One block of simulated runs: units (reps × N) per arm, and where looks happen."""

    arms: list[FloatArray]
    looks: npt.NDArray[np.bool_] | None = None
    order: npt.NDArray[np.intp] | None = None  # naive: units in completion order


def _latents(rng: np.random.Generator, reps: int, items: int, clustered: bool) -> FloatArray:
    u = rng.standard_normal((reps, items))
    if not clustered:
        return u
    g = rng.standard_normal((reps, items // GROUP_SIZE))
    share = math.sqrt(GROUP_CORRELATION)
    return share * np.repeat(g, GROUP_SIZE, axis=1) + math.sqrt(1 - GROUP_CORRELATION) * u


_Z = np.linspace(-9.0, 9.0, 36_001)


@cache
def _item_means(latent: models.BetaClip) -> FloatArray:
    return latent.item_mean(_Z)


def _draw(
    latent: models.Latent, z: FloatArray, epochs: int, rng: np.random.Generator
) -> FloatArray:
    """`latent.draw`, with a Beta item mean read from a table (np.interp on a 0.0005 grid of z,
    error ~1e-9) instead of the inverse incomplete beta on every draw (80% of the time)."""
    if not isinstance(latent, models.BetaClip):
        return latent.draw(z, epochs, rng)
    m = np.interp(z, _Z, _item_means(latent))[:, None]
    noise = latent.noise * rng.standard_normal((z.size, epochs))
    return np.asarray(np.clip(m + noise, 0.0, 1.0), dtype=np.float64)


def simulate(cell: SeqCell, shifts: list[float], reps: int, rng: np.random.Generator) -> Draw:
    """`reps` runs of the arms (the first the control) with these latent shifts."""
    m, (lo, hi), _ = _model(cell.model)
    items = cell.n * (GROUP_SIZE if cell.clustered else 1)
    z = _latents(rng, reps, items, cell.clustered)
    arms, finish = [], np.zeros((reps, items))
    start = np.arange(items) / RATE
    for a, shift in enumerate(shifts):
        draws = _draw(m.latent, (z + shift).ravel(), cell.epochs, rng).reshape(reps, items, -1)
        unit = draws.mean(axis=2)
        if cell.clustered:
            unit = unit.reshape(reps, cell.n, GROUP_SIZE).mean(axis=2)
        arms.append(np.asarray(unit, dtype=np.float64))
        if cell.stress:
            worse = 1.0 + FAILING * (1.0 - (draws - lo) / (hi - lo))
            mean = SLOWER if a > 0 else 1.0
            latency = rng.exponential(mean, draws.shape) * worse
            finish = np.maximum(finish, start + latency.max(axis=2))
    out = Draw(arms)
    if cell.stress:
        done = finish if not cell.clustered else finish.reshape(reps, cell.n, -1).max(axis=2)
        if cell.stress == "naive":
            out.order = np.argsort(done, axis=1)
        else:  # the reorder buffer releases unit j when it and every unit before it are in
            released = np.maximum.accumulate(done, axis=1)
            looks = np.ones((reps, cell.n), dtype=bool)
            looks[:, :-1] = released[:, 1:] > released[:, :-1]
            out.looks = looks
    return out


@cache
def _shift(model: str, diff: float) -> float | None:
    m, _, _ = _model(model)
    return models.shift_for(m, diff)


@cache
def _sd(cell: SeqCell, seed: int) -> float:
    rng = np.random.default_rng([seed, cell.key, 99])
    plain = replace(cell, stress=None, treatments=1)
    d = simulate(plain, [0.0, 0.0], min(SD_REPS, max(200, 4_000_000 // cell.n)), rng)
    return float(np.std(d.arms[1] - d.arms[0]))


def mde(cell: SeqCell, seed: int) -> float:
    """The fixed test's MDE at N, two-sided at α/K, 80% power (normal approximation)."""
    a = ALPHA / cell.treatments
    z = float(special.ndtri(1 - a / 2) + special.ndtri(POWER))
    return z * _sd(cell, seed) / math.sqrt(cell.n)


def _plan(cell: SeqCell, label: str, pairs: int, effect: float) -> Plan:
    """The pair's plan; the improvement sought (behind NOISE and futility) is the MDE the design
    was planned for."""
    _, bounds, binary = _model(cell.model)
    return make_plan(
        _design(label, cell.n), n_pairs=pairs, bounds=bounds,
        binary=binary and cell.epochs == 1 and not cell.clustered, margin=cell.margin,
        min_effect=effect,
    )  # fmt: skip


def _replay(plan: Plan, draw: Draw, arm: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    base, cand = draw.arms[0], draw.arms[arm]
    if draw.order is not None:
        base = np.take_along_axis(base, draw.order, axis=1)
        cand = np.take_along_axis(cand, draw.order, axis=1)
    run = replay(plan, base, cand, looks=draw.looks)
    stop = np.where(run.stop > 0, run.stop, run.n).astype(np.float64)
    return stop, run.verdict.astype(np.float64), run.margin.astype(np.float64)


def _phase_rng(settings: SeqSettings, cell: SeqCell, phase: str) -> np.random.Generator:
    return np.random.default_rng([settings.seed, cell.key, PHASES.index(phase)])


def _blocks(reps: int) -> list[int]:
    return [min(CHUNK, reps - s) for s in range(0, reps, CHUNK)]


Measure = Callable[[str, "Plan", "Draw", "Tally"], None]


@dataclass
class Tally:
    """Per design: sums over reps of the events a phase counts."""

    reps: int = 0
    counts: dict[str, float] = field(default_factory=dict)
    stops: list[float] = field(default_factory=list)

    def add(self, name: str, values: Any) -> None:
        self.counts[name] = self.counts.get(name, 0.0) + float(np.sum(values))

    def rate(self, name: str) -> float:
        return self.counts.get(name, 0.0) / max(self.reps, 1)


def _run_phase(
    cell: SeqCell,
    phase: str,
    settings: SeqSettings,
    shifts: list[float],
    reps: int,
    measure: Measure,
    effect: float,
) -> dict[str, Tally]:
    rng = _phase_rng(settings, cell, phase)
    tallies = {d: Tally() for d in cell.designs}
    pairs = cell.treatments
    for size in _blocks(reps):
        draw = simulate(cell, shifts, size, rng)
        for label in cell.designs:
            tallies[label].reps += size
            measure(label, _plan(cell, label, pairs, effect), draw, tallies[label])
    return tallies


def run_cell(cell: SeqCell, settings: SeqSettings) -> dict[str, Any]:
    start = time.perf_counter()
    effect = mde(cell, settings.seed)
    up = _shift(cell.model, 2 * effect) is not None
    sign = 1.0 if up else -1.0
    shift1, shift2 = _shift(cell.model, sign * effect), _shift(cell.model, sign * 2 * effect)
    wanted = PROGRESS if up else REGRESS

    def null(label: str, plan: Plan, draw: Draw, t: Tally) -> None:
        false = np.zeros(draw.arms[0].shape[0], dtype=bool)
        for arm in range(1, len(draw.arms)):
            stop, verdict, margin = _replay(plan, draw, arm)
            false |= (verdict == PROGRESS) | (verdict == REGRESS)
            if arm == 1 and cell.margin is not None:  # no difference: the margin question
                t.add("ni", np.isin(margin, PASSING))
                t.stops.extend(stop.tolist())
                if label == "hybrid":
                    fixed = _fixed(plan, draw)
                    t.add("fixed_ni", [f.low is not None and f.low > -cell.margin for f in fixed])
        t.add("false", false)

    def power(label: str, plan: Plan, draw: Draw, t: Tally) -> None:
        stop, verdict, _ = _replay(plan, draw, 1)
        t.add("power", verdict == wanted)
        t.stops.extend(stop.tolist())
        if label == "hybrid":
            fixed = np.array([f.up if up else f.down for f in _fixed(plan, draw)], dtype=bool)
            hybrid = verdict == wanted
            t.add("fixed", fixed)
            t.add("hybrid_only", hybrid & ~fixed)
            t.add("fixed_only", fixed & ~hybrid)

    def drop(label: str, plan: Plan, draw: Draw, t: Tally) -> None:
        _, _, margin = _replay(plan, draw, 1)
        t.add("false_ni", np.isin(margin, PASSING))

    def phase(name: str, shifts: list[float], reps: int, how: Measure) -> dict[str, Tally]:
        return _run_phase(cell, name, settings, shifts, reps, how, effect)

    out: dict[str, Any] = {"cell": asdict(cell), "mde": effect, "direction": "up" if up else "down"}
    phases = {"null": phase("null", [0.0] * (1 + cell.treatments), settings.reps_null, null)}
    if cell.margin is None and cell.stress != "naive" and shift1 is not None and shift2 is not None:
        phases["mde"] = phase("mde", [0.0, shift1], settings.reps_alt, power)
        phases["twice"] = phase("twice", [0.0, shift2], settings.reps_alt, power)
    if cell.margin is not None:
        s = _shift(cell.model, -cell.margin)
        if s is not None:
            phases["drop"] = phase("drop", [0.0, s], settings.reps_alt, drop)
    out["designs"] = {label: _summary(label, phases, cell) for label in cell.designs}
    out["reproducible"] = _reproducible(cell, settings, effect)
    out["wall_s"] = time.perf_counter() - start
    return out


def _fixed(plan: Plan, draw: Draw) -> list[Any]:
    """The fixed-n engine's test at N at the pair's whole α, for each rep (the reference)."""
    fixed = replace(plan, fixed_alpha=plan.pair_alpha)
    return [final_test(fixed, b, c) for b, c in zip(draw.arms[0], draw.arms[1], strict=True)]


def _share(p: float, n: int) -> dict[str, float]:
    return {"rate": p, "se": math.sqrt(max(p * (1 - p), 0.0) / max(n, 1)), "reps": n}


def _summary(label: str, phases: dict[str, dict[str, Tally]], cell: SeqCell) -> dict[str, Any]:
    got: dict[str, Any] = {}
    t = phases["null"][label]
    got["false"] = _share(t.rate("false"), t.reps)
    if "mde" in phases:
        m = phases["mde"][label]
        got["power"] = _share(m.rate("power"), m.reps)
        if label == "hybrid":
            got["fixed_power"] = _share(m.rate("fixed"), m.reps)
            # the difference on the same runs: its standard error from the discordant runs
            a, b = m.rate("hybrid_only"), m.rate("fixed_only")
            got["power_loss"] = {
                "rate": b - a, "se": math.sqrt(max(a + b - (a - b) ** 2, 0.0) / m.reps),
                "reps": m.reps,
            }  # fmt: skip
        w = np.array(phases["twice"][label].stops) / cell.n
        got["twice"] = {
            "mean_n": float(w.mean()), "se": float(w.std(ddof=1) / math.sqrt(w.size)),
            "median_n": float(np.median(w)), "power": phases["twice"][label].rate("power"),
        }  # fmt: skip
    if "drop" in phases:
        d = phases["drop"][label]
        got["false_ni"] = _share(d.rate("false_ni"), d.reps)
    if cell.margin is not None:
        w = np.array(t.stops) / cell.n
        got["ni"] = {
            "rate": t.rate("ni"), "mean_n": float(w.mean()), "median_n": float(np.median(w)),
            **({"fixed": t.rate("fixed_ni")} if label == "hybrid" else {}),
        }  # fmt: skip
    return got


def _reproducible(cell: SeqCell, settings: SeqSettings, effect: float) -> bool:
    """The same seed gives the same stops: the null phase's first reps, drawn and replayed
    twice."""
    stops = []
    for _ in range(2):
        rng = _phase_rng(settings, cell, "null")
        draw = simulate(cell, [0.0, 0.0], 50, rng)
        stops.append(_replay(_plan(cell, cell.designs[0], 1, effect), draw, 1)[0])
    return bool(np.array_equal(stops[0], stops[1]))


def look_cost(n: int = 2000, pairs: int = 3, seed: int = 1, repeat: int = 3) -> dict[str, float]:
    """The time a look after every unit adds, per unit (all pairs), for each design: a monitor
    fed `n` pass/fail units per pair and looked at after each — the best of `repeat` runs, so
    that the machine's other load is not counted as the look's."""
    rng = np.random.default_rng(seed)
    out = {}
    for label in DESIGNS:
        best = math.inf
        for _ in range(repeat):
            mon = SequentialMonitor(
                [("base", f"t{k}", None) for k in range(pairs)], bounds=(0.0, 1.0),
                binary=True, design=_design(label, n),
            )  # fmt: skip
            x = (rng.random((pairs, n, 2)) < 0.5).astype(float)
            start = time.perf_counter()
            for i in range(n):
                for k in range(pairs):
                    mon.add(k, x[k, i, 0], x[k, i, 1])
                mon.look()
            best = min(best, (time.perf_counter() - start) / n * 1e3)  # ms per unit
        out[label] = best
    return out


def _run(args: tuple[SeqCell, SeqSettings]) -> dict[str, Any]:
    return run_cell(*args)


def run_grid(
    cells: list[SeqCell],
    settings: SeqSettings,
    *,
    jobs: int = 2,
    progress: Callable[[dict[str, Any], int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Every cell, in `jobs` worker processes; results in the cells' order."""
    results: dict[str, dict[str, Any]] = {}
    work = [(c, settings) for c in cells]
    done: Iterator[dict[str, Any]]
    if jobs <= 1:
        done = map(_run, work)
    else:
        pool = multiprocessing.get_context("spawn").Pool(jobs)
        done = pool.imap_unordered(_run, work)
    try:
        for i, result in enumerate(done, 1):
            results[result["cell"]["id"]] = result
            if progress is not None:
                progress(result, i, len(cells))
    finally:
        if jobs > 1:
            pool.close()
            pool.join()
    return [results[c.id] for c in cells]
