"""Run the cells: simulated experiments through the engine, tallied per phase, cells in parallel.

A cell runs up to three phases, each with its own generator `default_rng([seed, cell.key,
phase])`, so its figures depend on neither the grid it is part of nor the worker scheduling:

    null   both arms the same system; every interval, the verdict rates, the MDE of each pair
    mde    the treatment shifted so that the true difference is the median reported MDE
    fixed  the treatment shifted to a fixed true difference (rare discordance: +0.02), or by a
           fixed latent shift (`Cell.fixed_shift`: a step on a share of items, scores × 1.3)
    mirror the treatment shifted by −fixed_shift (a few items harmed)
    own    where the mde phase spread the effect (`models.spread`) and no fixed phase measures the
           family's own effect: that effect at the MDE (coverage, and verdicts against it)

Cells of the families group (`grid.family_grid`) run every phase at `Settings.reps_null` reps.
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

from calipers.calibration import engine, models, robust, schemes
from calipers.calibration.grid import PLAN_POWER, Cell, Settings, is_family
from calipers.calibration.simulate import (
    GROUP_CORRELATION,
    GROUP_SIZE,
    NAMED_GROUP_CORRELATION,
    experiment,
    failed_rows,
)
from calipers.verdicts import planning

# appended, never reordered: a phase's index seeds its generator
PHASES = ("null", "mde", "fixed", "margin", "pilot", "plan", "mirror", "own")
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
    progress_up: int = 0  # significant and positive, and the pair's verdict PROGRESS
    scale_read: int = 0  # reps of an unbounded metric where the verdict used a scale's width
    bounds_given: int = 0  # pairs with worst/best-case bounds over missing outcomes
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

    def pair(self, pair: engine.PairOutcome, *, missing: bool = False) -> None:
        """One pair's figures. `missing` (cells whose outcomes go missing): the difference's
        interval is the one the report shows — the worst/best-case bounds when the engine gives
        them, else the complete-case interval — and the complete-case one is kept beside it."""
        self.pairs += 1
        estimate = pair.composite.estimate
        if pair.significant and estimate is not None:
            self.significant_up += int(estimate > 0)
            self.significant_down += int(estimate < 0)
            self.progress_up += int(estimate > 0 and pair.verdict == "PROGRESS")
        if estimate is not None and self.truth_diff is not None:
            self.error_sum += estimate - self.truth_diff
            self.error_n += 1
        if pair.mde is not None:
            self.mdes.append(pair.mde)
        if pair.margin_decision is not None:
            self.decisions[pair.margin_decision] = self.decisions.get(pair.margin_decision, 0) + 1
        if self.truth_diff is not None:
            bounds = pair.bounds
            self.bounds_given += int(bounds is not None)
            if missing:
                self.interval("diff", bounds or pair.composite, self.truth_diff)
                self.interval("diff complete-case", pair.composite, self.truth_diff)
            else:
                self.interval("diff", pair.composite, self.truth_diff)
                if bounds is not None:
                    self.interval("diff bounds", bounds, self.truth_diff)

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
    lose = {"T": "B", "C": "A"}.get(cell.mnar)
    for _ in range(reps):
        seed = int(rng.integers(0, 2**31 - 1))
        staged = experiment(
            model,
            n=cell.n,
            epochs=cell.epochs,
            grouped=cell.clustered,
            shifts=shifts,
            failure=failure,
            rng=rng,
            dropped=cell.dropped_epochs,
            group_size=cell.groups or GROUP_SIZE,
            correlation=NAMED_GROUP_CORRELATION if cell.named_groups else GROUP_CORRELATION,
            lose=lose,
        ).staged(bounds=declared_bounds(cell, model))
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
                default_cluster=cell.named_groups,
            )
        except Exception as exc:  # a crash is a finding, counted and reported, not fatal
            phase.failed(exc)
            continue
        for run in runs:
            phase.interval(f"run {run}", outcome.runs[run], phase.truth_runs[run])
        if model.bounds is None and outcome.span is not None:  # read from the observed range
            phase.scale_read += 1
        # pass@k is measured where every item has its epochs: with epochs dropped on the weaker
        # items, the reps where every item kept k of them are a selection of stronger item sets
        if not cell.dropped_epochs:
            for name, (interval, truth) in _repeats(staged, model, shifts, settings).items():
                phase.estimate(name, interval, truth)
        for pair in outcome.pairs:
            phase.pair(pair, missing=bool(cell.mnar))
        phase.verdicts[outcome.verdict] = phase.verdicts.get(outcome.verdict, 0) + 1
    return phase


MDE_SHARE = 0.5  # detection is measured at MDEs up to this share of the declared scale


def _declared_width(cell: Cell, model: models.Model) -> float | None:
    bounds = declared_bounds(cell, model)
    return None if bounds is None else bounds[1] - bounds[0]


def declared_bounds(cell: Cell, model: models.Model) -> tuple[float, float] | None:
    """The bounds the engine is given: the scale's, when the scheme declares them itself (0/1
    outcomes, layers on 1–5) or the cell declares them (as --bounds does); else none."""
    return model.bounds if (model.scheme_declares or cell.declare) else None


def _scheme_phase(cell: Cell, name: str, shift: float, reps: int, settings: Settings) -> Phase:
    """A rubric cell: the run's interval (the null phase only); an objective cell: the net
    gain's interval under the null and at a shift, and how often the seed's rule promotes."""
    rng = _phase_rng(settings, cell, name)
    level, resamples = settings.confidence_level, settings.n_resamples
    if cell.model == "rubric":
        phase = Phase(name, reps, shift, None, {"A": schemes.rubric_truth()})
    else:
        truth = schemes.objective_truth(shift) - schemes.objective_truth(0.0)
        phase = Phase(name, reps, shift, truth, {})
    for _ in range(reps):
        seed = int(rng.integers(0, 2**31 - 1))
        try:
            if cell.model == "rubric":
                run = schemes.rubric_interval(
                    schemes.rubric_samples(rng, cell.n), seed=seed, confidence_level=level,
                    n_resamples=resamples,
                )  # fmt: skip
                phase.interval("run A", run, phase.truth_runs["A"])
                continue
            baseline, candidate = schemes.objective_pair(rng, cell.n, shift)
            found = schemes.objective_compare(
                baseline, candidate, seed=seed, confidence_level=level, n_resamples=resamples
            )
        except Exception as exc:  # as in _paired_phase: counted and reported
            phase.failed(exc)
            continue
        assert phase.truth_diff is not None
        phase.pairs += 1
        phase.interval("diff", found.net_gain, phase.truth_diff)
        verdict = "promote" if found.promote else found.verdict
        phase.verdicts[verdict] = phase.verdicts.get(verdict, 0) + 1
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
    ).staged(bounds=declared_bounds(cell, model))
    design = planning.Design.from_runs(
        pilot, "A", "B", cluster="group" if cell.grouped else "sample_id", scale=1.0
    )
    shift = 0.0
    effect = cell.plan_effect
    share = None
    if cell.plan_step is not None:  # an effect on a share of the items (models.Concentrated)
        assert isinstance(model, models.Concentrated)
        shift, share = cell.plan_step, model.share
        effect = model.diff_truth(shift)
    elif effect is not None:
        found = models.shift_for(model, effect)
        assert found is not None
        shift = found
    goal = planning.Goal(
        effect=effect,
        margin=cell.margin,
        power=PLAN_POWER,
        alpha=1.0 - settings.confidence_level,
    )
    made = engine.plan(design, goal, share)
    planned = made.plan
    assert planned.items is not None
    items = planned.items + (-planned.items % 5 if cell.grouped else 0)  # whole groups of 5
    # as many reps as a null phase: the promise is checked to ± 3 points
    phase = _paired_phase(
        replace(cell, n=items), model, "plan", shift, settings.reps_null, settings
    )
    if items == planned.items and planned.power is not None:
        promised = float(planned.power)
    else:
        promised = made.power_at(items // design.cluster_size)
    phase.planned = {"items": items, "units": planned.units, "power": promised,
                     "formula": planned.formula, "source": design.source, "effect": effect,
                     "effect_share": share, "share_passed": made.share_passed}  # fmt: skip
    return phase


def run_cell(cell: Cell, settings: Settings) -> CellOutcome:
    start = time.perf_counter()
    notes: list[str] = []
    mde = None
    if cell.plan:
        phases = [_plan_phase(cell, models.model(cell.model), settings)]
        return CellOutcome(cell, settings.seed, phases, None, notes, time.perf_counter() - start)
    reps_alt = settings.reps_null if is_family(cell) else settings.reps_alt
    if cell.model == "robustness":
        phases = [_robustness_phase(cell, settings.reps_null, settings)]
    elif cell.model in ("rubric", "objective"):
        phases = [_scheme_phase(cell, "null", 0.0, settings.reps_null, settings)]
        if cell.model == "objective":
            phases.append(_scheme_phase(cell, "fixed", schemes.OBJECTIVE_SHIFT, reps_alt, settings))
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
            edge = models.shift_for(model, -cell.margin, failure)
            assert edge is not None
            phases.append(_paired_phase(cell, model, "margin", edge, reps_alt, settings))
            return CellOutcome(cell, settings.seed, phases, mde, notes, time.perf_counter() - start)
        if cell.mnar:
            notes.append("detection skipped: missing-outcome cells measure the null")
            mde = None
        elif mde is not None and math.isinf(mde):
            notes.append("detection skipped: the engine reports that no difference is detectable")
            mde = None
        elif mde is None:
            notes.append("detection skipped: the engine reports no MDE")
        elif mde <= 0:
            notes.append("detection skipped: the median MDE is 0")
        elif (width := _declared_width(cell, model)) is not None and mde > MDE_SHARE * width:
            # an MDE over half the scale: no spread shift reaches it (the alternative piles the
            # scores against a bound, which is not the MDE's assumption), and every comparison
            # that quotes it is UNDERPOWERED (it is 10× the smallest effect worth detecting)
            notes.append(
                f"detection skipped: the MDE {mde:.3g} is over half the scale's width {width:g}"
            )
            mde = None
        else:
            # +MDE, or −MDE when no system of this kind is that much better (near a bound); an
            # MDE promises power for an effect spread over the items (docs/statistics.md), so a
            # model whose effects are concentrated on a share of them is tried spread here (its
            # concentrated effects have their own phases: fixed, mirror)
            spread = models.spread(model)
            if spread is not model:
                notes.append("detection at the MDE with the effect spread over every item")
            at = models.shift_for(spread, mde, failure)
            if at is None:
                at = models.shift_for(spread, -mde, failure)
                if at is not None:
                    notes.append(f"detection at −MDE: no system is {mde:.3g} better")
            if at is None:
                notes.append(f"detection skipped: the MDE {mde:.3g} is out of reach both ways")
            else:
                phases.append(_paired_phase(cell, spread, "mde", at, reps_alt, settings))
                own = _own_shift(cell, model, spread, mde, at, failure)
                if own is not None:
                    phases.append(_paired_phase(cell, model, "own", own, reps_alt, settings))
        if cell.fixed_diff is not None:
            fixed = models.shift_for(model, cell.fixed_diff, failure)
            assert fixed is not None
            phases.append(_paired_phase(cell, model, "fixed", fixed, reps_alt, settings))
        if cell.fixed_shift is not None:
            step = cell.fixed_shift
            phases.append(_paired_phase(cell, model, "fixed", step, reps_alt, settings))
            if cell.mirror:
                phases.append(_paired_phase(cell, model, "mirror", -step, reps_alt, settings))
    return CellOutcome(cell, settings.seed, phases, mde, notes, time.perf_counter() - start)


def _own_shift(
    cell: Cell, model: models.Model, spread: models.Model, mde: float, at: float, failure: float
) -> float | None:
    """The family's own effect at the MDE (in the direction the mde phase took), where the mde
    phase tried a spread one instead and no fixed phase measures the family's own: the MDE does
    not promise its power (an effect outside its assumption), but its intervals must still cover
    and its verdicts must not point the wrong way."""
    if spread is model or cell.fixed_shift is not None or cell.fixed_diff is not None:
        return None
    return models.shift_for(model, mde if spread.diff_truth(at, failure) > 0 else -mde, failure)


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
