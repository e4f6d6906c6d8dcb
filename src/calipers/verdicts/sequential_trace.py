"""A pair's anytime-valid sequence over the units it took, for the report: the interval at the
last unit and the path drawn over n, each computed when first asked for.

Why lazily. A sequential decision is final at its stop, and the stop is found by the replay
over the nulls alone. The interval at the last unit and the path beyond the stop are the
sequence over every unit seen — on a long run the dearest part of a report (2 × 500,000 units:
~0.4 s of CPU for the last interval over the five horizons of the open-ended mixture, ~0.15 s for
the path, against ~0.1 s for everything up to a stop at unit 2,651). So a report that does not
show them (`calipers watch` without `--full-path`) never computes them, and one that does
(`compare --sequential`, `--full-path`, a Python caller reading `interval_at_last`) computes them
exactly as before. A pair undecided at its last unit has that interval from its decision's look
already: it is not computed twice."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from calipers.stats.sequence_trace import interval_trace
from calipers.stats.sequential import confidence_sequence
from calipers.verdicts.sequential_results import PairDecision, PairOutcome
from calipers.verdicts.sequential_rules import GROUP_KINDS, Plan, gains_of, group_look

FloatArray = npt.NDArray[np.float64]
PATH_POINTS = 500  # the plotted sequence is thinned to at most this many points
TRACE_CELLS = 3_000_000  # the trace's budget: ~0.15 s
# … to the stop only: a third of it (the run's report is otherwise done in ~2 s, and a plot of
# 2,651 units needs no finer grid than the 41 points a plot of 500,000 gets)
STOP_TRACE_CELLS = 1_000_000
GRID_POINTS = 1001  # candidates of the grid behind a look's interval
# The report's interval at the last unit: its ends to 2⁻²⁰ of the scale (a millionth: below any
# digit shown) rather than betting_interval's 2⁻⁶⁰ — fewer root-finding steps, each a pass over
# every unit seen.
LAST_PRECISION = 2.0**-20
TRACE_MIN_POINTS = 41  # the plot's grid for many units: 2.5% of the gain's range

Path = list[tuple[int, float, float]]


def oriented(plan: Plan, low: float | None, high: float | None) -> tuple[float | None, ...]:
    """A gain interval as candidate − baseline."""
    return (low, high) if plan.higher_is_better else (_neg(high), _neg(low))


def _neg(x: float | None) -> float | None:
    return None if x is None else -x


class SequenceTrace:
    """The sequence of one pair's gains (in the order taken): `last()` the interval at the last
    unit, `path(full=)` the interval after each look, to the last unit or to the stop. Each is
    computed once, when first read."""

    def __init__(self, plan: Plan, gains: FloatArray, stop: int | None,
                 last: tuple[float | None, ...] | None = None) -> None:  # fmt: skip
        self.plan, self.gains, self.stop = plan, gains, stop
        self._last: tuple[float, float] | None = None
        self._paths: dict[bool, Path] = {}
        self._last_done = False
        if last is not None:  # the decision's look already computed it, exactly
            self._last = (float(last[0] or 0.0), float(last[1] or 0.0))
            self._last_done = True

    def last(self) -> tuple[float, float] | None:
        if not self._last_done:
            self._last_done = True
            self._last = self._compute_last()
        return self._last

    def path(self, *, full: bool) -> Path:
        full = full or self.stop is None or self.stop >= self.gains.size
        if full not in self._paths:
            self._paths[full] = self._compute_path(self.gains.size if full else int(self.stop or 0))
        return self._paths[full]

    def _compute_last(self) -> tuple[float, float] | None:
        plan, gains = self.plan, self.gains
        if not gains.size:
            return None
        if plan.sequence_alpha > 0:
            span = plan.span
            last = confidence_sequence(
                gains, bounds=(-span, span), confidence_level=1.0 - plan.sequence_alpha,
                horizon=plan.horizon, truncation=plan.truncation, precision=LAST_PRECISION,
            )  # fmt: skip
            lo, hi = oriented(plan, last.low, last.high)
            return float(lo or 0.0), float(hi or 0.0)
        if plan.design.kind in GROUP_KINDS:
            path = self.path(full=True)
            return (path[-1][1], path[-1][2]) if path else None
        return None

    def _compute_path(self, n: int) -> Path:
        """The path over the first n units: on the whole run, the points thinned over all of
        it plus the stop; to the stop, thinned over the units before it (a plot of the part
        shown, not three points of a plot of the whole)."""
        plan, gains = self.plan, self.gains[:n]
        path: Path = []
        if n and plan.sequence_alpha > 0:
            span = plan.span
            ends = [n] if self.stop is None or self.stop > n else [self.stop, n]
            at = np.unique(np.concatenate((
                np.linspace(1, n, min(n, PATH_POINTS - 2)).round().astype(np.int64), ends,
            )))  # fmt: skip
            # the traced grid: at most TRACE_CELLS units × candidates × horizons (a plot needs
            # no finer; the ends at the stop and at the last unit are exact)
            horizons = len(plan.horizon) if isinstance(plan.horizon, tuple) else 1
            cells = TRACE_CELLS if n == self.gains.size else STOP_TRACE_CELLS
            points = int(np.clip(cells // max(n * horizons, 1), TRACE_MIN_POINTS, GRID_POINTS))
            lows, highs = interval_trace(
                gains, at, bounds=(-span, span), alpha=plan.sequence_alpha,
                truncation=plan.truncation, horizon=plan.horizon, points=points,
                extra=plan.nulls,
            )  # fmt: skip
            for k, a, b in zip(at, lows, highs, strict=True):
                o_lo, o_hi = oriented(plan, float(a), float(b))
                path.append((int(k), float(o_lo or 0.0), float(o_hi or 0.0)))
        elif n and plan.design.kind in GROUP_KINDS:
            for k, at_k in enumerate(plan.looks_at):
                if at_k > n:
                    break
                _, lo_k, hi_k = (float(a[0]) for a in group_look(plan, gains, k))
                o_lo, o_hi = oriented(plan, lo_k, hi_k)
                path.append((at_k, float(o_lo or 0.0), float(o_hi or 0.0)))
        return path


def outcome(plan: Plan, meta: tuple[str, str, str | None], base: FloatArray, cand: FloatArray,
            decision: PairDecision, seen: int,
            last: tuple[float | None, ...] | None = None) -> PairOutcome:  # fmt: skip
    """A pair's outcome from its decision; its sequence past the decision is left to be
    computed when read (`SequenceTrace`), but for `last`, the interval at the last unit where
    the decision's look already has it (oriented)."""
    stop = decision.n if decision.decisive else None
    at_stop: tuple[float, float] | None = None
    if stop is not None and decision.low is not None and decision.high is not None:
        at_stop = (decision.low, decision.high)
    saved = None
    if plan.design.n_planned is not None and stop is not None:
        saved = max(0, plan.design.n_planned - stop)
    return PairOutcome(
        meta[0], meta[1], meta[2], stop, decision, at_stop, seen, plan.design.n_planned, saved,
        trace=SequenceTrace(plan, gains_of(plan, base, cand), stop, last),
        n_taken=int(base.size),
    )  # fmt: skip
