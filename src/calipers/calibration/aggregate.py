"""From tallies to figures, each with its Monte Carlo standard error and its target.

Targets (a cell FAILS when any figure misses one):
    coverage of every reported interval                       ≥ 0.93
      (a difference per phase; a run per system, pooled over the arms that are that system)
    PROGRESS + REGRESS under the null                         ≤ 0.06
    significant and positive at the median reported MDE       ≥ 0.75
    margin cells: false "inferior" under the null, and false
      "non-inferior" at a true drop of exactly the margin     ≤ 0.05 each
    planner cells: the share of experiments at the planned n
      reaching the planned decision                           = 0.8 ± 0.03
      (significant and negative at −MDE when +MDE is out of reach)
    reps the engine crashed on                                = 0

    families group (grid.family_grid):
      the unbounded heavy-tailed cells: PROGRESS among the significant
      gains at scores × 1.3 (a gain read as trivial is the old defect) ≥ 0.90
      and reps whose verdict used a scale's width                = 0

A figure misses its target when it is worse than the target by more than `allowance` Monte Carlo
standard errors (binomial, at the target, over the figure's trials), and by more than `noise`
of them: a figure worse than its target by less than `noise` (2) standard errors is "within
noise" — the reps are too few to tell it from the target — and marked so rather than failed.
The full grid uses allowance 0; the reduced grid's 200 reps (a check that nothing broke, in
`make test`; the full grid is the measurement) leave a correct engine ~1.1 standard errors from a
0.93 coverage target and ~0.6 from 0.06, so it allows 2. `strict` records whether
the figure misses with no allowance at all.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from calipers.calibration.runner import CellOutcome, Phase

VERDICTS = ("PROGRESS", "CAUTIOUS", "REGRESS", "NOISE", "UNDERPOWERED")


@dataclass(frozen=True)
class Targets:
    coverage: float = 0.93
    false_verdicts: float = 0.06
    detection: float = 0.75
    false_margin: float = 0.05  # α: a false "inferior", a false "non-inferior"
    plan_tolerance: float = 0.03  # the planned n's power within ± this of the promise
    bias: float = 0.005  # |mean error| of the estimates that must be unbiased (pass@k, pass^k)
    progress_share: float = 0.90  # PROGRESS among significant gains (unbounded heavy tails)
    allowance: float = 0.0  # Monte Carlo standard errors of slack (see the module docstring)
    noise: float = 2.0  # a miss by fewer standard errors than this is "within noise"


@dataclass
class Figure:
    name: str
    value: float | None
    trials: int
    se: float | None
    target: float | None = None
    direction: str = ""  # "min" (value ≥ target), "max" (value ≤ target), "near" (± tolerance)
    tolerance: float = 0.0
    missed: bool = False
    strict: bool = False  # missed with no allowance
    within_noise: bool = False  # missed with no allowance, but by less than `noise` SEs

    def judge(self, allowance: float, noise: float = 0.0) -> Figure:
        if self.target is None or self.value is None or self.trials == 0:
            return self
        slack = max(allowance, noise) * math.sqrt(self.target * (1.0 - self.target) / self.trials)
        if self.direction == "near":
            self.strict = abs(self.value - self.target) > self.tolerance
            self.missed = abs(self.value - self.target) > self.tolerance + slack
        else:
            sign = 1.0 if self.direction == "min" else -1.0
            self.strict = sign * (self.value - self.target) < 0
            self.missed = sign * (self.value - self.target) < -slack
        self.within_noise = self.strict and not self.missed
        return self

    def describe(self) -> str:
        if self.direction == "near":
            value = "n/a" if self.value is None else f"{self.value:.3f}"
            return f"{self.name} {value} (target {self.target} ± {self.tolerance})"
        op = "≥" if self.direction == "min" else "≤"
        value = "n/a" if self.value is None else f"{self.value:.3f}"
        return f"{self.name} {value} (target {op} {self.target})"


def rate(hits: int, trials: int) -> tuple[float | None, float | None]:
    if trials == 0:
        return None, None
    p = hits / trials
    return p, math.sqrt(p * (1.0 - p) / trials)


def _figure(name: str, hits: int, trials: int, target: float | None = None, d: str = "") -> Figure:
    value, se = rate(hits, trials)
    return Figure(name, value, trials, se, target, d)


@dataclass
class CellReport:
    id: str
    outcome: CellOutcome
    figures: dict[str, Figure] = field(default_factory=dict)

    @property
    def failures(self) -> list[Figure]:
        return [f for f in self.figures.values() if f.missed]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def noisy(self) -> list[Figure]:
        """Figures worse than their target by less than the noise band (not failures)."""
        return [f for f in self.figures.values() if f.within_noise]

    @property
    def status(self) -> str:
        if self.failures:
            return "FAIL"
        return "within noise" if self.noisy else "PASS"

    def figure(self, name: str) -> Figure | None:
        return self.figures.get(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.outcome.to_dict(),
            "status": self.status,
            "failures": [f.describe() for f in self.failures],
            "within_noise": [f.describe() for f in self.noisy],
            "figures": {k: asdict(f) for k, f in self.figures.items()},
        }


def _bias_figures(phase: Phase, targets: Targets) -> dict[str, Figure]:
    """The mean error of estimates that must be unbiased (pass@k, pass^k): within ±
    `targets.bias` of 0, beyond which it misses only by more than 2 Monte Carlo standard errors
    (the estimators are exactly unbiased; a few hundred reps cannot pin a mean to ±0.005)."""
    out = {}
    for name, (total, squares, n) in phase.bias.items():
        if n < 2:
            continue
        mean = total / n
        se = math.sqrt(max(squares / n - mean * mean, 0.0) / (n - 1))
        key = f"bias {phase.name}: {name}"
        figure = Figure(key, mean, int(n), se, 0.0, "near", targets.bias + 2.0 * se)
        out[key] = figure
    return out


def _interval_figures(phase: Phase, targets: Targets) -> dict[str, Figure]:
    """Figures of the paired difference, per phase (each phase has its own true difference)."""
    out = _bias_figures(phase, targets)
    for name, tally in phase.intervals.items():
        if name.startswith("run "):
            continue
        key = f"{phase.name}: {name}"
        # the complete-case interval beside the bounds the report shows: for the record
        target = None if name.endswith("complete-case") else targets.coverage
        cover = _figure(f"coverage {key}", tally["covered"], tally["reported"], target)
        cover.direction = "min"
        out[f"coverage {key}"] = cover
        refused = tally["offered"] - tally["reported"]
        out[f"refused {key}"] = _figure(f"refused {key}", refused, tally["offered"])
    return out


def _system(outcome: CellOutcome, phase: Phase, run: str) -> str:
    """Which system an arm is: the control in every phase (and every arm of the null), with or
    without the judge failures of run B (or the outcomes an arm loses, `Cell.mnar`), or the
    treatment of a phase."""
    failing = run == "B" and outcome.cell.judge_failure > 0
    losing = run == {"T": "B", "C": "A"}.get(outcome.cell.mnar)
    label = "control" if run == "A" or phase.shift == 0 else f"treatment ({phase.name})"
    return (
        label
        + (" with judge failures" if failing else "")
        + (" with lost outcomes" if losing else "")
    )


def _run_figures(outcome: CellOutcome, targets: Targets) -> dict[str, Figure]:
    """Coverage of each system's own interval, pooled over every arm that is that system: the
    control's interval is the same procedure on the same law in every phase, and taking the
    worst of several noisy estimates of one coverage (as the harness once did) is biased low.
    The ± is binomial over the pooled intervals; arms of one rep share items, so it is a little
    optimistic for pooled control arms."""
    pooled: dict[str, dict[str, int]] = {}
    for phase in outcome.phases:
        for name, tally in phase.intervals.items():
            if not name.startswith("run "):
                continue
            system = _system(outcome, phase, name.removeprefix("run "))
            into = pooled.setdefault(system, {"offered": 0, "reported": 0, "covered": 0})
            for k in into:
                into[k] += tally[k]
    out = {}
    for system, tally in pooled.items():
        name = f"coverage run: {system}"
        out[name] = _figure(name, tally["covered"], tally["reported"], targets.coverage, "min")
        refused = tally["offered"] - tally["reported"]
        out[f"refused run: {system}"] = _figure(f"refused run: {system}", refused, tally["offered"])
    return out


PASSING = ("superior", "equivalent", "non-inferior")


def _margin_figures(phases: dict[str, Phase], targets: Targets) -> dict[str, Figure]:
    """Under the null, "inferior" is false; at a true drop of exactly the margin, "non-inferior"
    (or better) is false. Each is one bound of the pair's interval, so each should be ≤ α/2."""
    null, edge = phases["null"], phases["margin"]
    inferior = null.decisions.get("inferior", 0)
    passed = sum(edge.decisions.get(d, 0) for d in PASSING)
    return {
        "false inferior": _figure(
            "false inferior under the null", inferior, null.pairs, targets.false_margin, "max"
        ),
        "false non-inferior": _figure(
            "false non-inferior at a true drop of the margin", passed, edge.pairs,
            targets.false_margin, "max",
        ),
        "non-inferior null": _figure(
            "non-inferior (or better) under the null", sum(
                null.decisions.get(d, 0) for d in PASSING), null.pairs
        ),
    }  # fmt: skip


def _plan_figures(phase: Phase, targets: Targets) -> dict[str, Figure]:
    """The share of the planned experiments that reached the planned decision, against the
    power the planner promised at the n that ran, within ± `plan_tolerance`."""
    assert phase.planned is not None
    if phase.truth_diff is not None and phase.shift != 0.0:
        hits = phase.significant_up
    else:
        hits = sum(phase.decisions.get(d, 0) for d in PASSING)
    promised = float(phase.planned["power"])  # at the n run (whole groups: a little over 0.8)
    figure = _figure("power at the planned n", hits, phase.pairs, round(promised, 3), "near")
    figure.tolerance = targets.plan_tolerance
    return {"plan power": figure}


def assess(outcome: CellOutcome, targets: Targets) -> CellReport:
    report = CellReport(outcome.cell.id, outcome)
    figures = report.figures
    if outcome.cell.plan:
        phase = outcome.phases[0]
        figures.update(_plan_figures(phase, targets))
        figures.update(_interval_figures(phase, targets))
        if phase.errors:
            figures["errors plan"] = Figure("errors plan", float(phase.errors), phase.reps, None,
                                            0.0, "max")  # fmt: skip
        for f in figures.values():
            f.judge(targets.allowance, targets.noise)
        return report
    figures.update(_run_figures(outcome, targets))
    for phase in outcome.phases:
        figures.update(_interval_figures(phase, targets))
        if phase.errors:
            figures[f"errors {phase.name}"] = Figure(
                f"errors {phase.name}", float(phase.errors), phase.reps, None, 0.0, "max"
            )
        if phase.error_n:
            figures[f"bias {phase.name}"] = Figure(
                f"bias {phase.name}", phase.error_sum / phase.error_n, phase.error_n, None
            )
    phases = {p.name: p for p in outcome.phases}
    null = phases["null"]
    if outcome.cell.model == "objective":  # the seed's rule, for the record (no target)
        figures["promote"] = _figure("promoted under the null", null.verdicts.get("promote", 0),
                                     sum(null.verdicts.values()))  # fmt: skip
    if outcome.cell.model not in ("robustness", "rubric", "objective"):
        counted = sum(null.verdicts.values())
        if outcome.cell.model == "heavy":  # unbounded: no scale may come from the data
            read = sum(p.scale_read for p in outcome.phases)
            reps = sum(sum(p.verdicts.values()) for p in outcome.phases)
            figures["scale read"] = _figure(
                "a scale read from the data of an unbounded metric", read, reps, 0.0, "max"
            )
        for verdict in VERDICTS:
            figures[verdict] = _figure(verdict, null.verdicts.get(verdict, 0), counted)
        false = null.verdicts.get("PROGRESS", 0) + null.verdicts.get("REGRESS", 0)
        figures["false verdicts"] = _figure(
            "PROGRESS + REGRESS under the null", false, counted, targets.false_verdicts, "max"
        )
        if outcome.cell.margin is not None:
            figures.update(_margin_figures(phases, targets))
        if "mde" in phases:
            mde = phases["mde"]
            down = mde.truth_diff is not None and mde.truth_diff < 0
            figures["detection"] = _figure(
                "detection at −MDE" if down else "detection at the MDE",
                mde.significant_down if down else mde.significant_up,
                mde.pairs,
                targets.detection,
                "min",
            )
        if "fixed" in phases:
            fixed = phases["fixed"]
            figures["detection fixed"] = _figure(
                "detection at the fixed difference", fixed.significant_up, fixed.pairs
            )
            if fixed.truth_diff is not None and fixed.truth_diff > 0:
                # a real gain shown significant must not be read as trivial (the unbounded
                # heavy-tailed cells: a "trivial" difference from the observed range blocked it)
                target = targets.progress_share if outcome.cell.model == "heavy" else None
                figures["progress among gains"] = _figure(
                    "PROGRESS among significant gains (fixed)", fixed.progress_up,
                    fixed.significant_up, target, "min",
                )  # fmt: skip
        if "own" in phases:  # the family's own effect at the MDE: no power promised
            own = phases["own"]
            down = own.truth_diff is not None and own.truth_diff < 0
            figures["detection own"] = _figure(
                "detection of the family's own effect at the MDE",
                own.significant_down if down else own.significant_up,
                own.pairs,
            )
            figures["wrong way own"] = _figure(
                "significant the wrong way at the family's own effect",
                own.significant_up if down else own.significant_down,
                own.pairs,
                targets.false_verdicts,
                "max",
            )
        if "mirror" in phases:
            mirror = phases["mirror"]
            figures["detection mirror"] = _figure(
                "detection at the mirror difference", mirror.significant_down, mirror.pairs
            )
    for f in figures.values():
        f.judge(targets.allowance, targets.noise)
    return report


def assess_all(outcomes: list[CellOutcome], targets: Targets) -> list[CellReport]:
    return [assess(o, targets) for o in outcomes]
