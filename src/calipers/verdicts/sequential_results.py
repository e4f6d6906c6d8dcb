"""What the sequential engine returns: a pair's decision at a look, a look over every pair, and
the result of a replay (each pair's stop, its intervals, the traced sequence). JSON-ready through
`to_dict` (floats finite or None). Re-exported by `calipers.verdicts.sequential`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from calipers.verdicts.gates import SEVERITY, Verdict
from calipers.verdicts.sequential_rules import SequentialDesign


@dataclass(frozen=True)
class PairDecision:
    """A pair's decision at one look. The interval and estimate are of candidate − baseline on
    the metric's scale; `interval` says which: "sequence" (anytime-valid), "repeated" (a group
    design's repeated confidence interval), "fixed" (the hybrid's test at N)."""

    control: str
    treatment: str
    task: str | None
    n: int
    verdict: str  # PROGRESS | REGRESS | NOISE | UNDERPOWERED | continue
    decisive: bool
    final: bool  # the design's last look
    reason: str
    estimate: float | None
    low: float | None
    high: float | None
    confidence_level: float
    interval: str
    margin: str | None  # superior | equivalent | non-inferior | inferior | futile | undecided
    futile: bool  # the improvement sought cannot be there
    e_value_above: float | None = None  # the sequence's capital against "no gain"
    e_value_below: float | None = None  # … against "no loss"
    p_value: float | None = None
    discordant: dict[str, float] | None = None  # pass/fail: the exact discordant-pairs test

    def to_dict(self) -> dict[str, Any]:
        return {
            "control": self.control,
            "treatment": self.treatment,
            "task": self.task,
            "n": self.n,
            "verdict": self.verdict,
            "decisive": self.decisive,
            "final": self.final,
            "reason": self.reason,
            "estimate": _finite(self.estimate),
            "low": _finite(self.low),
            "high": _finite(self.high),
            "confidence_level": self.confidence_level,
            "interval": self.interval,
            "margin": self.margin,
            "futile": self.futile,
            "e_value_above": _finite(self.e_value_above),
            "e_value_below": _finite(self.e_value_below),
            "p_value": _finite(self.p_value),
            "discordant": None
            if self.discordant is None
            else {k: _finite(v) for k, v in self.discordant.items()},
        }


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def e_value(log_value: float) -> float:
    """An e-value from its log, capped at e^700 so that it stays a finite float."""
    return math.exp(min(log_value, 700.0))


def roll_up(decisions: Sequence[PairDecision]) -> str:
    """REGRESS as soon as any pair regresses; else "continue" while any pair is undecided; else
    the worst verdict (gates' order)."""
    verdicts = [d.verdict for d in decisions]
    if not verdicts:
        return "continue"
    if "REGRESS" in verdicts:
        return "REGRESS"
    if "continue" in verdicts:
        return "continue"
    return max(verdicts, key=lambda v: SEVERITY[Verdict(v)])


@dataclass(frozen=True)
class SequentialLook:
    n: tuple[int, ...]  # units seen per pair
    decisions: tuple[PairDecision, ...]
    verdict: str  # the roll-up (`roll_up`)
    stopped: bool  # every pair decisive

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": list(self.n),
            "verdict": self.verdict,
            "stopped": self.stopped,
            "decisions": [d.to_dict() for d in self.decisions],
        }


class Trace(Protocol):
    """A pair's sequence over the units it took, computed when first asked for
    (`calipers.verdicts.sequential_trace`)."""

    def last(self) -> tuple[float, float] | None: ...

    def path(self, *, full: bool) -> list[tuple[int, float, float]]: ...


@dataclass
class PairOutcome:
    """A pair's stop and decision. What lies past the stop — the interval at the last unit seen
    and the traced sequence beyond the stop — is computed only when asked for: a decision is
    final at its stop, and on a long run that tail costs more than everything else (the
    sequence over every unit seen, at every horizon of the mixture). `full_path` False: a
    decided pair shows its sequence to the stop only, and no interval at the last unit."""

    control: str
    treatment: str
    task: str | None
    stopped_at: int | None  # the unit of the first decisive look (None: not decided)
    decision: PairDecision  # at the stop, else at the last unit
    interval_at_stop: tuple[float, float] | None  # exact ends (the trace's are on a grid)
    n_seen: int
    n_planned: int | None
    units_saved: int | None  # N − stopped_at
    trace: Trace | None = field(default=None, repr=False, compare=False)
    n_taken: int = 0  # the units the design took (n_seen, or N when more were given)
    full_path: bool = True

    @property
    def traced_full(self) -> bool:
        """The sequence is followed to the last unit taken: asked for, or nothing lies past the
        stop (not decided, or decided at the last unit)."""
        return self.full_path or self.stopped_at is None or self.stopped_at >= self.n_taken

    @property
    def interval_at_last(self) -> tuple[float, float] | None:
        """The sequence at the last unit taken (None: not traced past the stop, or none)."""
        if self.trace is None or not self.traced_full:
            return None
        return self.trace.last()

    @property
    def path(self) -> list[tuple[int, float, float]]:
        """(n, low, high) after each look, thinned; to the stop unless `traced_full`."""
        return [] if self.trace is None else self.trace.path(full=self.traced_full)

    @property
    def traced_to(self) -> int | None:
        """The last unit the path reaches (None: no path)."""
        path = self.path
        return path[-1][0] if path else None

    def to_dict(self) -> dict[str, Any]:
        def pair(x: tuple[float, float] | None) -> list[float | None] | None:
            return None if x is None else [_finite(x[0]), _finite(x[1])]

        path = self.path
        return {
            "control": self.control,
            "treatment": self.treatment,
            "task": self.task,
            "stopped_at": self.stopped_at,
            "decision": self.decision.to_dict(),
            "interval_at_stop": pair(self.interval_at_stop),
            "interval_at_last": pair(self.interval_at_last),
            "n_seen": self.n_seen,
            "n_planned": self.n_planned,
            "units_saved": self.units_saved,
            "path": [[n, _finite(lo), _finite(hi)] for n, lo, hi in path],
            "traced_to": path[-1][0] if path else None,
        }


@dataclass
class SequentialResult:
    design: SequentialDesign
    alpha: float  # the family α
    pair_alpha: float  # per pair (Bonferroni over the pairs)
    margin: str | None  # as given
    higher_is_better: bool
    every: int
    pairs: list[PairOutcome]
    verdict: str
    notes: list[str] = field(default_factory=list)
    seed: int | None = None  # nothing is drawn at random: the units' order is the caller's

    def trace_full(self, full: bool = True) -> None:
        """Whether decided pairs show their sequence past the stop (computed when first read)."""
        for pair in self.pairs:
            pair.full_path = full

    def untraced_notes(self) -> list[str]:
        """One line per decided pair whose sequence is not shown past its stop."""
        out = []
        for p in self.pairs:
            if p.traced_full or p.stopped_at is None:
                continue
            what = f"{p.treatment} vs {p.control}" + (f", task {p.task}" if p.task else "")
            out.append(
                f"{what}: the interval shown is the one at the stop, unit {p.stopped_at:,}; the "
                "sequence was not traced past the stop (--full-path, or full_path=True, traces it "
                "to the last unit)"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "sequential",
            "design": self.design.to_dict(),
            "alpha": self.alpha,
            "pair_alpha": self.pair_alpha,
            "margin": self.margin,
            "higher_is_better": self.higher_is_better,
            "every": self.every,
            "verdict": self.verdict,
            "pairs": [p.to_dict() for p in self.pairs],
            "notes": [*self.notes, *self.untraced_notes()],
            "seed": self.seed,
        }
