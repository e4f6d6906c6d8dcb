"""Missing outcomes cannot decide a verdict: worst/best-case (Manski) bounds of a paired
comparison's composite difference, the rule that says when they must be read, and how the
failures behind missing outcomes are told apart (docs/statistics.md, "Missing outcomes").

A unit is a sample (its epochs together): present in a run when at least one of its matched
observations has a composite there. Epochs lost within a present sample are the estimand's
business (each sample weighs the same however many epochs were scored); a sample with no scored
epoch in one run is a missing outcome. Over the samples present in at least one run, each missing
outcome is filled with the scale's worst and best value — for the lower bound the treatment's at
the scale's low end and the control's at its high end, for the upper bound the reverse — and the
two filled differences get the comparison's own interval (same engine, clusters, weights and
method). Bounds [low end of the worst case's interval, high end of the best case's].

The rule (`MissingBounds.triggered`): some sample is present in one run only, and its presence
differs between the runs (exact McNemar on the samples present in one run only) or may track the
outcome (the other run's values on the samples one run lacks differ from its values on the
complete samples: a rank test), at p ≤ TRIGGER_P and OUTCOME_P. Then PROGRESS or REGRESS stands
only when it holds across the bounds (`calipers.verdicts.gates`).

What is missing, and why: a sample whose `error` is set failed in the system under test (a
pipeline error, a timeout); a missing outcome without one is a failure of the grader (a judge or
scorer that gave no value). Both are missing outcomes by default; `errors="worst"` scores a
system error that left no outcome at the scale's low bound instead (`score_errors_worst`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from calipers.data.files import sql_literal
from calipers.errors import InputError
from calipers.stats.bootstrap import dense_codes
from calipers.stats.interval_parts import Interval, sign_test
from calipers.verdicts.persample import FloatArray, StagedRows, StagedScores

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

# Presence that differs between the runs (exact McNemar on the samples present in one run only)
# at p ≤ TRIGGER_P, or that tracks the outcome (rank test) at p ≤ OUTCOME_P, sends the verdict to
# the bounds. Measured (docs/statistics.md, "Missing outcomes"): with an arm's outcomes missing on
# its own bad draws, false PROGRESS + REGRESS fell from 14–17% to 0–2.1% at n = 200; with 2% of
# outcomes missing at random in both arms, detection of a real +0.1 on pass/fail at n = 500 went
# from 90.6% to 89.1% (with 0.25 and 0.25, the first proposal: 84.6%).
TRIGGER_P = 0.1
OUTCOME_P = 0.05
ERRORS = ("missing", "worst")  # how a system error counts (`errors`)


class _Difference(Protocol):
    """What a paired difference (`calipers.verdicts.difference.Difference`) offers here."""

    @property
    def estimate(self) -> float | None: ...

    @property
    def interval(self) -> Interval | None: ...


@dataclass(frozen=True)
class FilledDifference:
    """The difference with every missing outcome filled one way, and its interval."""

    estimate: float | None
    low: float | None
    high: float | None
    significant: bool  # by the composite's own rule (interval, exact agreement)
    formula: str | None  # the interval's (None: no interval)

    @classmethod
    def of(cls, d: _Difference, significant: bool) -> FilledDifference:
        i = d.interval
        return cls(
            d.estimate, i.low if i else None, i.high if i else None, significant,
            i.formula if i else None,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "significant": self.significant,
            "formula": self.formula,
        }


@dataclass(frozen=True)
class ArmMissing:
    """What one run lacks that the other has."""

    units: int  # samples present in the other run only: missing outcomes, bounded
    observations: int  # observation pairs with a composite in the other run only
    system_errors: int  # of those, samples whose `error` is set (pipeline error, timeout)
    grader_failures: int  # of those, without an error: the grader gave no value
    judge_failures: int | None  # judge layer in the other run only, on a sample with a composite
    scored_worst: int  # errored observations scored at the scale's low bound (errors="worst")
    # rank test: the other run's values on the samples this one lacks against its values on the
    # complete samples (None: nothing to test)
    outcome_p: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "units": self.units,
            "observations": self.observations,
            "system_errors": self.system_errors,
            "grader_failures": self.grader_failures,
            "judge_failures": self.judge_failures,
            "scored_worst": self.scored_worst,
            "outcome_p": self.outcome_p,
        }


@dataclass(frozen=True)
class MissingBounds:
    """Worst/best-case bounds of the composite difference over missing outcomes."""

    scale: tuple[float, float] | None  # the declared bounds filled in (None: unbounded)
    n_units: int  # samples present in at least one run
    n_complete: int  # samples present in both
    control: ArmMissing
    treatment: ArmMissing
    presence_p: float  # exact McNemar on the samples present in one run only
    worst: FilledDifference | None  # treatment's missing at the low end, control's at the high
    best: FilledDifference | None  # the reverse (None: nothing missing, or unbounded)

    @property
    def missing(self) -> int:
        return self.control.units + self.treatment.units

    @property
    def low(self) -> float | None:
        """The lower end of the worst case's interval (−inf: unbounded; None: nothing missing)."""
        if not self.missing:
            return None
        if self.worst is None:
            return -math.inf
        return self.worst.low if self.worst.low is not None else self.worst.estimate

    @property
    def high(self) -> float | None:
        if not self.missing:
            return None
        if self.best is None:
            return math.inf
        return self.best.high if self.best.high is not None else self.best.estimate

    @property
    def triggered(self) -> bool:
        """Some sample is present in one run only and its presence differs between the runs
        (p ≤ TRIGGER_P) or may track the outcome (p ≤ OUTCOME_P): a PROGRESS or REGRESS must
        hold across the bounds."""
        if not self.missing:
            return False
        outcome = [self.control.outcome_p, self.treatment.outcome_p]
        return self.presence_p <= TRIGGER_P or any(
            p is not None and p <= OUTCOME_P for p in outcome
        )

    @property
    def trigger(self) -> str | None:
        """Why the bounds are read, in words (None: they are not)."""
        if not self.triggered:
            return None
        why = []
        if self.presence_p <= TRIGGER_P:
            why.append(
                f"presence differs: {self.treatment.units} samples lack a treatment outcome, "
                f"{self.control.units} a control outcome, exact McNemar p = {self.presence_p:.2g}"
            )
        for arm, other, lacking in (
            (self.treatment, "control", "treatment"),
            (self.control, "treatment", "control"),
        ):
            if arm.outcome_p is not None and arm.outcome_p <= OUTCOME_P:
                why.append(
                    f"{other}'s values on the samples {lacking} lacks differ from the complete "
                    f"samples', rank test p = {arm.outcome_p:.2g}"
                )
        return "; ".join(why)

    def holds_progress(self, trivial: float) -> bool:
        w = self.worst
        return w is not None and w.significant and (w.estimate or 0.0) >= max(trivial, 0.0)

    def holds_regress(self, trivial: float) -> bool:
        b = self.best
        return b is not None and b.significant and (b.estimate or 0.0) <= -max(trivial, 0.0)

    def describe(self) -> str:
        """ "with the 27 missing treatment outcomes at worst/best the difference is in [a, b]"."""
        arms = [
            f"{arm.units} missing {name}"
            for name, arm in (("treatment", self.treatment), ("control", self.control))
            if arm.units
        ]
        what = " and ".join(arms) + " outcome" + ("" if self.missing == 1 else "s")
        if self.worst is None or self.best is None:
            return (
                f"the scale has no declared bounds, so the {what} could be anything: the "
                "difference is unbounded"
            )
        low, high = self.low, self.high
        if low is None or high is None:  # nothing missing: no bounds to give
            return "no outcome is missing"
        return f"with the {what} at worst/best the difference is in [{low:+.3f}, {high:+.3f}]"

    def to_dict(self) -> dict[str, Any]:
        return {
            "scale": None if self.scale is None else list(self.scale),
            "n_units": self.n_units,
            "n_complete": self.n_complete,
            "control": self.control.to_dict(),
            "treatment": self.treatment.to_dict(),
            "presence_p": self.presence_p,
            "low": _json_number(self.low),
            "high": _json_number(self.high),
            "unbounded": bool(self.missing) and (self.worst is None or self.best is None),
            "worst": None if self.worst is None else self.worst.to_dict(),
            "best": None if self.best is None else self.best.to_dict(),
            "triggered": self.triggered,
            "trigger": self.trigger,
        }


def _json_number(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def bound_missing(
    staged: StagedScores,
    control: str,
    treatment: str,
    ic: npt.NDArray[np.intp],
    it: npt.NDArray[np.intp],
    compared_c: FloatArray,
    compared_t: FloatArray,
    *,
    bounds: tuple[float, float] | None,
    estimate: Callable[[FloatArray, FloatArray], FilledDifference],
) -> MissingBounds:
    """The bounds of the pair matched by `ic`, `it` (rows of each run): `compared_*` are the
    composites the comparison differences (like with like, NaN where not compared), `estimate`
    the comparison's own interval of a difference over the rows finite on both sides."""
    c_run, t_run = staged.fetch(control), staged.fetch(treatment)
    raw_c, raw_t = staged.composite(control)[ic], staged.composite(treatment)[it]
    has_c, has_t = np.isfinite(raw_c), np.isfinite(raw_t)
    codes = dense_codes(c_run.sid[ic])
    k = int(codes.max()) + 1 if codes.size else 0
    in_c = np.bincount(codes, weights=has_c, minlength=k) > 0
    in_t = np.bincount(codes, weights=has_t, minlength=k) > 0
    c_only, t_only, both = in_c & ~in_t, in_t & ~in_c, in_c & in_t
    # The other run's per-sample means: on the samples one run lacks against the complete ones.
    mean_c = _unit_means(raw_c, codes, k)
    mean_t = _unit_means(raw_t, codes, k)
    err_c = _rows(c_run.errored, ic)
    err_t = _rows(t_run.errored, it)
    judge = "judge" if staged.gated and "judge" in staged.components else None
    arms = {}
    for name, mine, other, err, worst_rows, lacking, mean_other in (
        ("control", has_c, has_t, err_c, _rows(c_run.scored_worst, ic), t_only, mean_t),
        ("treatment", has_t, has_c, err_t, _rows(t_run.scored_worst, it), c_only, mean_c),
    ):
        lost = other & ~mine
        judge_failures = None
        if judge is not None:
            mine_j = c_run.values[judge][ic] if name == "control" else t_run.values[judge][it]
            other_j = t_run.values[judge][it] if name == "control" else c_run.values[judge][ic]
            judge_failures = int(np.sum(np.isfinite(other_j) & ~np.isfinite(mine_j) & mine & ~err))
        arms[name] = ArmMissing(
            units=int(lacking.sum()),
            observations=int(lost.sum()),
            system_errors=int(np.sum(lost & err)),
            grader_failures=int(np.sum(lost & ~err)),
            judge_failures=judge_failures,
            scored_worst=int(worst_rows.sum()),
            outcome_p=rank_test(mean_other[lacking], mean_other[both]),
        )
    presence_p = sign_test(np.r_[np.ones(int(c_only.sum())), -np.ones(int(t_only.sum()))])
    worst = best = None
    if (c_only.any() or t_only.any()) and bounds is not None:
        lo, hi = bounds
        compared = both[codes] & np.isfinite(compared_c) & np.isfinite(compared_t)
        fill_t = c_only[codes] & has_c  # treatment missing: filled
        fill_c = t_only[codes] & has_t  # control missing: filled
        base_c = np.where(compared, compared_c, np.where(fill_t, raw_c, np.nan))
        base_t = np.where(compared, compared_t, np.where(fill_c, raw_t, np.nan))
        worst = estimate(np.where(fill_c, hi, base_c), np.where(fill_t, lo, base_t))
        best = estimate(np.where(fill_c, lo, base_c), np.where(fill_t, hi, base_t))
    return MissingBounds(
        scale=bounds,
        n_units=int(np.sum(in_c | in_t)),
        n_complete=int(both.sum()),
        control=arms["control"],
        treatment=arms["treatment"],
        presence_p=presence_p,
        worst=worst,
        best=best,
    )


def _rows(flags: BoolArray | None, rows: npt.NDArray[np.intp]) -> BoolArray:
    return np.zeros(rows.size, dtype=bool) if flags is None else flags[rows]


def _unit_means(x: FloatArray, codes: npt.NDArray[np.intp], k: int) -> FloatArray:
    ok = np.isfinite(x)
    n = np.bincount(codes, weights=ok, minlength=k)
    s = np.bincount(codes, weights=np.where(ok, x, 0.0), minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(n > 0, s / np.maximum(n, 1), np.nan), dtype=np.float64)


def rank_test(x: FloatArray, y: FloatArray) -> float | None:
    """Two-sided Wilcoxon–Mann–Whitney test of `x` against `y`: the normal approximation with the
    tie correction and a continuity correction (scipy's `mannwhitneyu(method="asymptotic")`);
    None when a side is empty, 1.0 when every value is the same."""
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    n1, n2 = x.size, y.size
    if not n1 or not n2:
        return None
    z = np.concatenate([x, y])
    n = z.size
    order = np.argsort(z, kind="mergesort")
    ordered = z[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    group = np.cumsum(starts) - 1
    counts = np.bincount(group).astype(np.float64)
    average = np.cumsum(counts) - (counts - 1.0) / 2.0  # the mean rank of each run of ties
    ranks = np.empty(n)
    ranks[order] = average[group]
    u = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    ties = float(np.sum(counts**3 - counts))
    variance = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if variance <= 0:
        return 1.0
    from scipy.special import ndtr  # scipy.stats costs seconds to import

    stat = (abs(u - n1 * n2 / 2.0) - 0.5) / math.sqrt(variance)
    return float(min(1.0, 2.0 * ndtr(-stat)))


# ------------------------------------------------------------------------------ system errors


def errored_rows(rows: StagedRows) -> BoolArray | None:
    """Per staged row: the sample's `error` is set — the system under test failed (a pipeline
    error, a timeout). None when no row has one (one cheap look; the keyed query only then)."""
    samples = rows.samples
    if samples is None or not rows.runs:
        return None
    rel, con = samples.relation, samples.con
    columns = [d[0] for d in con.execute(f"SELECT * FROM {rel} LIMIT 0").description]
    if "error" not in columns:
        return None
    where = f"run IN ({', '.join(sql_literal(r) for r in rows.runs)})"
    if not con.execute(
        f"SELECT 1 FROM {rel} WHERE {where} AND error IS NOT NULL LIMIT 1"
    ).fetchall():
        return None
    run_code = " ".join(f"WHEN {sql_literal(r)} THEN {i}" for i, r in enumerate(rows.runs))
    # the sample codes `stage_rows` numbers: (task, sample_id) in order over the compared runs
    found = con.execute(
        f"""
        WITH keys AS (
            SELECT task, sample_id, (row_number() OVER (ORDER BY task, sample_id) - 1)::BIGINT
                AS sid
            FROM (SELECT DISTINCT task, sample_id FROM {rel} WHERE {where})
        )
        SELECT (CASE run {run_code} END)::INTEGER AS run_code, keys.sid, s.epoch::BIGINT AS epoch
        FROM (SELECT run, task, sample_id, epoch FROM {rel}
              WHERE {where} AND error IS NOT NULL) s
        JOIN keys USING (task, sample_id)
        """
    ).fetchnumpy()
    sid, epoch = rows.columns["sid"], rows.columns["epoch"]
    flags = np.zeros(sid.size, dtype=bool)
    code = np.asarray(found["run_code"], dtype=np.int64)
    width = int(max(epoch.max(initial=0), np.max(found["epoch"], initial=0))) + 1
    bad = np.asarray(found["sid"], dtype=np.int64) * width + np.asarray(found["epoch"])
    for i, run in enumerate(rows.runs):
        span = rows.spans[run]
        keys = sid[span] * width + epoch[span]  # sorted: rows are ordered by (sid, epoch)
        wanted = bad[code == i]
        at = np.searchsorted(keys, wanted)
        hit = at < keys.size
        hit[hit] = keys[at[hit]] == wanted[hit]
        flags[span.start + at[hit]] = True
    return flags


def score_errors_worst(staged: StagedScores) -> int:
    """`errors="worst"`: every observation whose sample errored and has no composite is scored
    at the scale's low bound on every component (a system error counts as the worst outcome);
    observations the harness scored keep their scores. Returns how many were scored."""
    if staged.bounds is None:
        raise InputError(
            "`errors` worst scores a system error at the scale's low bound, and this scale has "
            "no declared bounds",
            hint="Declare the metric's bounds, or count system errors as missing outcomes "
            "(errors missing, the default).",
            parameters=["errors"],
        )
    low = float(staged.bounds[0])
    scored = 0
    for run, arrays in staged.runs.items():
        if arrays.errored is None:
            continue
        fill = arrays.errored & ~np.isfinite(staged.composite(run))
        if not fill.any():
            continue
        arrays.values = {n: np.where(fill, low, v) for n, v in arrays.values.items()}
        arrays.scored_worst = fill
        scored += int(fill.sum())
    staged._composites.clear()  # the composites, computed again from the filled values
    return scored
