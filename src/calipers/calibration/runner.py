"""Run the cells: simulated experiments through the engine, tallied per phase, cells in parallel.

A cell runs up to three phases, each with its own generator `default_rng([seed, cell.key,
phase])`, so its figures depend on neither the grid it is part of nor the worker scheduling:

    null   both arms the same system; every interval, the verdict rates, the MDE of each pair
    mde    the treatment shifted so that the true difference is the median reported MDE
    fixed  the treatment shifted to a fixed true difference (rare discordance: +0.02)
"""

from __future__ import annotations

import math
import multiprocessing
import statistics
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from calipers.calibration import engine, models, robust
from calipers.calibration.grid import PLAN_POWER, Cell, Settings
from calipers.calibration.simulate import experiment, failed_rows
from calipers.verdicts import planning

PHASES = ("null", "mde", "fixed", "margin", "pilot", "plan")
RUNS = ("A", "B", "C", "D")


@dataclass
class Phase:
    """What one phase of a cell measured."""

    name: str
    reps: int
    shift: float
    truth_diff: float | None
    truth_runs: dict[str, float]
    intervals: dict[str, dict[str, int]] = field(default_factory=dict)  # offered/reported/covered
    verdicts: dict[str, int] = field(default_factory=dict)  # the roll-up per rep
    pairs: int = 0
    significant_up: int = 0
    significant_down: int = 0
    error_sum: float = 0.0  # Σ (difference estimate − truth)
    error_n: int = 0
    mdes: list[float] = field(default_factory=list)
    decisions: dict[str, int] = field(default_factory=dict)  # margin decisions per pair
    # name → [Σ error, Σ error², n], error = estimate − truth
    bias: dict[str, list[float]] = field(default_factory=dict)
    planned: dict[str, Any] | None = None  # a planner cell: the plan the phase ran
    errors: int = 0
    first_error: str | None = None

    def interval(self, name: str, interval: engine.Interval, truth: float) -> None:
        tally = self.intervals.setdefault(name, {"offered": 0, "reported": 0, "covered": 0})
        tally["offered"] += 1
        if interval.reported:
            tally["reported"] += 1
            tally["covered"] += int(interval.covers(truth))

    def pair(self, pair: engine.PairOutcome) -> None:
        self.pairs += 1
        estimate = pair.composite.estimate
        if pair.significant and estimate is not None:
            self.significant_up += int(estimate > 0)
            self.significant_down += int(estimate < 0)
        if estimate is not None and self.truth_diff is not None:
            self.error_sum += estimate - self.truth_diff
            self.error_n += 1
        if pair.mde is not None:
            self.mdes.append(pair.mde)
        if pair.margin_decision is not None:
            self.decisions[pair.margin_decision] = self.decisions.get(pair.margin_decision, 0) + 1
        if self.truth_diff is not None:
            self.interval("diff", pair.composite, self.truth_diff)

    def estimate(self, name: str, interval: engine.Interval, truth: float) -> None:
        """An interval with its estimate's error (pass@k, pass^k of a run)."""
        self.interval(name, interval, truth)
        if interval.estimate is not None:
            tally = self.bias.setdefault(name, [0.0, 0.0, 0])
            error = interval.estimate - truth
            tally[0] += error
            tally[1] += error * error
            tally[2] += 1

    def failed(self, exc: Exception) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = "".join(traceback.format_exception_only(exc)).strip()

    def to_dict(self) -> dict[str, Any]:
        body = asdict(self)
        mdes = body.pop("mdes")
        median = statistics.median(mdes) if mdes else None
        body["mde_median"] = None if median is None or math.isinf(median) else median
        body["mde_reported"] = len(mdes)
        return body


@dataclass
class CellOutcome:
    cell: Cell
    seed: int
    phases: list[Phase]
    mde_median: float | None
    notes: list[str]
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "cell": self.cell.to_dict(),
            "seed": [self.seed, self.cell.key],
            "phases": {p.name: p.to_dict() for p in self.phases},
            "mde_median": self.mde_median,
            "notes": self.notes,
            "wall_s": self.wall_s,
        }


def _phase_rng(settings: Settings, cell: Cell, phase: str) -> np.random.Generator:
    return np.random.default_rng([settings.seed, cell.key, PHASES.index(phase)])


def _paired_phase(
    cell: Cell, model: models.Model, name: str, shift: float, reps: int, settings: Settings
) -> Phase:
    runs = list(RUNS[: 1 + cell.treatments])
    shifts = {"A": 0.0, **dict.fromkeys(runs[1:], shift)}
    failure = {"B": cell.judge_failure} if cell.judge_failure else {}
    rows = cell.n * cell.epochs
    realized = {r: failed_rows(failure.get(r, 0.0), rows) / rows for r in runs}
    phase = Phase(
        name,
        reps,
        shift,
        model.diff_truth(shift, realized["B"]),
        {r: model.arm_truth(shifts[r], realized[r]) for r in runs},
    )
    rng = _phase_rng(settings, cell, name)
    for _ in range(reps):
        seed = int(rng.integers(0, 2**31 - 1))
        staged = experiment(
            model,
            n=cell.n,
            epochs=cell.epochs,
            grouped=cell.grouped,
            shifts=shifts,
            failure=failure,
            rng=rng,
            dropped=cell.dropped_epochs,
        ).staged()
        try:
            outcome = engine.compare(
                staged,
                treatments=runs[1:],
                grouped=cell.grouped,
                method=cell.interval,
                confidence_level=settings.confidence_level,
                n_resamples=settings.n_resamples,
                seed=seed,
                margin=cell.margin,
            )
            summaries = {
                r: engine.summarize(
                    staged,
                    r,
                    grouped=cell.grouped,
                    method=cell.interval,
                    confidence_level=settings.confidence_level,
                    n_resamples=settings.n_resamples,
                    seed=seed,
                )
                for r in runs
            }
        except Exception as exc:  # a crash is a finding, counted and reported, not fatal
            phase.failed(exc)
            continue
        for run, interval in summaries.items():
            phase.interval(f"run {run}", interval, phase.truth_runs[run])
        # pass@k is measured where every item has its epochs: with epochs dropped on the weaker
        # items, the reps where every item kept k of them are a selection of stronger item sets
        if not cell.dropped_epochs:
            for name, (interval, truth) in _repeats(staged, model, shifts, settings).items():
                phase.estimate(name, interval, truth)
        for pair in outcome.pairs:
            phase.pair(pair)
        phase.verdicts[outcome.verdict] = phase.verdicts.get(outcome.verdict, 0) + 1
    return phase


def repeat_ks(epochs: int) -> list[int]:
    """The ks measured at this many epochs: 2 and all of them."""
    return sorted({2, epochs}) if epochs >= 2 else []


def _repeats(
    staged: Any, model: models.Model, shifts: dict[str, float], settings: Settings
) -> dict[str, tuple[engine.Interval, float]]:
    """pass@k and pass^k of every arm of a pass/fail system tried several times, with truths."""
    if models.pass_truth(model, "pass@k", 1) is None:
        return {}
    out = {}
    for run, shift in shifts.items():
        arrays = staged.fetch(run)
        epochs = int(np.bincount(arrays.sid).min())
        ks = repeat_ks(epochs)
        if not ks:
            continue
        found = engine.repeats(arrays, ks=ks, confidence_level=settings.confidence_level)
        for (kind, k), interval in found.items():
            truth = models.pass_truth(model, kind, k, shift)
            assert truth is not None
            out[f"{kind.replace('k', str(k))} {run}"] = (interval, truth)
    return out


def _robustness_phase(cell: Cell, reps: int, settings: Settings) -> Phase:
    phase = Phase("null", reps, 0.0, None, dict(robust.TRUTH))
    rng = _phase_rng(settings, cell, "null")
    for _ in range(reps):
        seed = int(rng.integers(0, 2**31 - 1))
        cases = robust.simulate_cases(rng, cell.n)
        try:
            intervals = {
                name: engine.robustness_interval(
                    cases,
                    invariance=name == "invariance",
                    confidence_level=settings.confidence_level,
                    n_resamples=settings.n_resamples,
                    seed=seed,
                )
                for name in ("invariance", "sensitivity")
            }
        except Exception as exc:  # as in _paired_phase: counted and reported
            phase.failed(exc)
            continue
        for name, interval in intervals.items():
            phase.interval(name, interval, robust.TRUTH[name])
    return phase


def _plan_phase(cell: Cell, model: models.Model, settings: Settings) -> Phase:
    """Measure the design on an A/A pilot of `cell.n` items, plan, and run the planned n at the
    true effect (or, with a margin, at no difference): the share reaching the goal is the power
    the planner promised."""
    pilot = experiment(
        model,
        n=cell.n,
        epochs=cell.epochs,
        grouped=cell.grouped,
        shifts={"A": 0.0, "B": 0.0},
        failure={},
        rng=_phase_rng(settings, cell, "pilot"),
    ).staged()
    design = planning.Design.from_runs(
        pilot, "A", "B", cluster="group" if cell.grouped else "sample_id", scale=1.0
    )
    goal = planning.Goal(
        effect=cell.plan_effect,
        margin=cell.margin,
        power=PLAN_POWER,
        alpha=1.0 - settings.confidence_level,
    )
    planned = planning.plan(design, goal)
    assert planned.items is not None
    items = planned.items + (-planned.items % 5 if cell.grouped else 0)  # whole groups of 5
    shift = 0.0
    if cell.plan_effect is not None:
        found = models.shift_for(model, cell.plan_effect)
        assert found is not None
        shift = found
    # as many reps as a null phase: the promise is checked to ± 3 points
    phase = _paired_phase(
        replace(cell, n=items), model, "plan", shift, settings.reps_null, settings
    )
    promised = planning.power_at(design, goal, items // design.cluster_size)
    phase.planned = {"items": items, "units": planned.units, "power": promised,
                     "formula": planned.formula, "source": design.source}  # fmt: skip
    return phase


def run_cell(cell: Cell, settings: Settings) -> CellOutcome:
    start = time.perf_counter()
    notes: list[str] = []
    mde = None
    if cell.plan:
        phases = [_plan_phase(cell, models.model(cell.model), settings)]
        return CellOutcome(cell, settings.seed, phases, None, notes, time.perf_counter() - start)
    if cell.model == "robustness":
        phases = [_robustness_phase(cell, settings.reps_null, settings)]
    else:
        model = models.model(cell.model)
        null = _paired_phase(cell, model, "null", 0.0, settings.reps_null, settings)
        phases = [null]
        rows = cell.n * cell.epochs
        failure = failed_rows(cell.judge_failure, rows) / rows
        mde = statistics.median(null.mdes) if null.mdes else None
        if cell.margin is not None:
            # the null (false "inferior") and a true drop of exactly the margin (false
            # "non-inferior"); power and detection are the plain cells' business
            shift = models.shift_for(model, -cell.margin, failure)
            assert shift is not None
            phases.append(_paired_phase(cell, model, "margin", shift, settings.reps_alt, settings))
            return CellOutcome(cell, settings.seed, phases, mde, notes, time.perf_counter() - start)
        if mde is not None and math.isinf(mde):
            notes.append("detection skipped: the engine reports that no difference is detectable")
            mde = None
        elif mde is None:
            notes.append("detection skipped: the engine reports no MDE")
        elif mde <= 0:
            notes.append("detection skipped: the median MDE is 0")
        else:
            # +MDE, or −MDE when no system of this kind is that much better (near a bound)
            shift = models.shift_for(model, mde, failure)
            if shift is None:
                shift = models.shift_for(model, -mde, failure)
                if shift is not None:
                    notes.append(f"detection at −MDE: no system is {mde:.3g} better")
            if shift is None:
                notes.append(f"detection skipped: the MDE {mde:.3g} is out of reach both ways")
            else:
                phases.append(_paired_phase(cell, model, "mde", shift, settings.reps_alt, settings))
        if cell.fixed_diff is not None:
            shift = models.shift_for(model, cell.fixed_diff, failure)
            assert shift is not None
            phases.append(_paired_phase(cell, model, "fixed", shift, settings.reps_alt, settings))
    return CellOutcome(cell, settings.seed, phases, mde, notes, time.perf_counter() - start)


def _run(args: tuple[Cell, Settings]) -> CellOutcome:
    return run_cell(*args)


def run_grid(
    cells: Iterable[Cell],
    settings: Settings,
    *,
    jobs: int = 2,
    progress: Callable[[CellOutcome, int, int], None] | None = None,
) -> list[CellOutcome]:
    """Every cell, longest first over `jobs` processes; results in the order of `cells`."""
    cells = list(cells)
    order = sorted(range(len(cells)), key=lambda i: -cells[i].cost)
    work = [(cells[i], settings) for i in order]
    done: dict[str, CellOutcome] = {}

    def record(outcome: CellOutcome) -> None:
        done[outcome.cell.id] = outcome
        if progress is not None:
            progress(outcome, len(done), len(cells))

    if jobs <= 1:
        for item in work:
            record(_run(item))
    else:
        # spawn: the engine starts threads, which do not survive a fork safely
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            for outcome in pool.imap_unordered(_run, work):
                record(outcome)
    return [done[c.id] for c in cells]
