"""Pairwise judging: a judge is shown two runs' outputs for the same sample and says which is
better — in both orders, because LLM judges favour a position.

For a pair of runs (a, b; a before b by name) and a draw both ran (task, sample_id, epoch):

    order ab   a's output shown first, b's second
    order ba   b's output first, a's second

Each order's verdict is stored in run terms: "a", "b" or "tie" (null when the call failed or its
reply could not be read, with the error). The pair's **outcome**: the verdict when both orders
agree; a **tie** when they disagree (one says a, the other b or tie: the judge's preference
followed the position, not the outputs); missing when either order is missing — never a tie.
A pair is **flipped** when its two verdicts differ. A judge's **position-flip rate** is the share
of its complete pairs that flipped; **first shown** is the share of its decisive verdicts (not
ties) that chose the output shown first: 0.5 for a judge without position bias.

A preference file made elsewhere (`calipers.grading.preferences`) gives the same rows: two rows
of one item, judge and pair in opposite positions are its two orders, combined as above; a row
with no counterpart is a judgment made in **one order** by design (`one_order`: an arena battle,
a human vote), whose outcome is its verdict — a missing order of a two-order design stays missing.

Outcomes feed Bradley–Terry (`calipers.stats.bradley_terry`) as a score for a (1 won, ½ tie,
0 lost), the sample (task, sample_id) being the unit the bootstrap resamples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from calipers.errors import InputError
from calipers.grading.judges import PromptTemplate
from calipers.stats.bradley_terry import BradleyTerryResult, bradley_terry, comparisons
from calipers.stats.rankings import RankMethod

Verdict = Literal["a", "b", "tie"]
Orders = Literal["both", "ab"]
ORDERS = ("ab", "ba")
SCORE: dict[str, float] = {"a": 1.0, "tie": 0.5, "b": 0.0}


def load_template(*, debias_length: bool = True) -> PromptTemplate:
    return PromptTemplate.load("pairwise", debias_length=debias_length)


def pair_prompt(
    template: PromptTemplate, *, task: str, first: str, second: str, expected: str | None
) -> str:
    """The prompt for one order: `first` shown as answer 1. The outputs fill slots and are
    marked as data; `str.format` does not interpret braces inside them."""
    return template.text.format(
        task=task, first=first, second=second, expected=expected or "(none given)"
    )


def verdict(preference: float | None, order: str) -> Verdict | None:
    """A reply's preference for the output shown first (1, ½, 0) as a verdict in run terms."""
    if preference is None:
        return None
    if preference == 0.5:
        return "tie"
    chose_first = preference == 1.0
    return "a" if chose_first == (order == "ab") else "b"


def combine(ab: Verdict | None, ba: Verdict | None) -> Verdict | None:
    """The pair's outcome: agreement → the verdict, disagreement → tie, a missing order → None."""
    if ab is None or ba is None:
        return None
    return ab if ab == ba else "tie"


@dataclass(frozen=True)
class PairVerdict:
    """One row of the store's `pairwise` table."""

    judge: str
    run_a: str
    run_b: str
    task: str
    sample_id: str
    epoch: int
    repeat: int
    verdict_ab: Verdict | None
    verdict_ba: Verdict | None
    rationale_ab: str | None = None
    rationale_ba: str | None = None
    error_ab: str | None = None
    error_ba: str | None = None
    prompt_hash: str = ""
    # judged in one order by design (a preference file's row with no counterpart in the other
    # order): the outcome is that order's verdict; never set on the store's rows
    one_order: bool = False

    @property
    def outcome(self) -> Verdict | None:
        if self.one_order:
            return self.verdict_ab if self.verdict_ab is not None else self.verdict_ba
        return combine(self.verdict_ab, self.verdict_ba)

    @property
    def complete(self) -> bool:
        return self.verdict_ab is not None and self.verdict_ba is not None

    @property
    def flipped(self) -> bool:
        return self.complete and self.verdict_ab != self.verdict_ba

    @property
    def unit(self) -> tuple[str, str]:
        """What the bootstrap resamples: the sample (its epochs, judges and repeats together)."""
        return (self.task, self.sample_id)


COLUMNS = (
    "judge", "run_a", "run_b", "task", "sample_id", "epoch", "repeat", "verdict_ab",
    "verdict_ba", "rationale_ab", "rationale_ba", "error_ab", "error_ba", "prompt_hash",
)  # fmt: skip


@dataclass(frozen=True)
class JudgeStats:
    judge: str
    pairs: int  # complete pairs (both orders judged)
    missing: int  # pairs with an order missing (a failed call or an unreadable reply)
    calls: int
    failed: int  # failed calls
    flips: int
    first_shown: float | None  # share of decisive verdicts that chose the output shown first
    ties: int  # outcomes that are a tie: complete pairs (flips included) and one-order judgments
    first_error: str | None
    one_order: int = 0  # judgments made in one order by design (preference files)

    @property
    def flip_rate(self) -> float | None:
        return self.flips / self.pairs if self.pairs else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge, "pairs": self.pairs, "missing": self.missing,
            "calls": self.calls, "failed": self.failed, "flips": self.flips,
            "flip_rate": self.flip_rate, "first_shown": self.first_shown, "ties": self.ties,
            "first_error": self.first_error, "one_order": self.one_order,
        }  # fmt: skip


def judge_stats(rows: Iterable[PairVerdict]) -> list[JudgeStats]:
    """Per judge: pairs, failures, the position-flip rate and the share choosing the first."""
    by_judge: dict[str, list[PairVerdict]] = defaultdict(list)
    for row in rows:
        by_judge[row.judge].append(row)
    out = []
    for name in sorted(by_judge):
        group = by_judge[name]
        complete = [r for r in group if r.complete]
        single = [r for r in group if r.one_order]
        decisive = first = 0
        for r in group:
            for order, said in (("ab", r.verdict_ab), ("ba", r.verdict_ba)):
                if said in ("a", "b"):
                    decisive += 1
                    first += (said == "a") == (order == "ab")
        errors = [e for r in group for e in (r.error_ab, r.error_ba) if e]
        out.append(JudgeStats(
            name, len(complete), len(group) - len(complete) - len(single),
            2 * len(group) - len(single), len(errors),
            sum(r.flipped for r in complete), first / decisive if decisive else None,
            sum(r.outcome == "tie" for r in (*complete, *single)), errors[0] if errors else None,
            len(single),
        ))  # fmt: skip
    return out


@dataclass(frozen=True)
class PairTally:
    run_a: str
    run_b: str
    a_wins: int
    ties: int
    b_wins: int
    flips: int
    missing: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a, "run_b": self.run_b, "a_wins": self.a_wins, "ties": self.ties,
            "b_wins": self.b_wins, "flips": self.flips, "missing": self.missing,
        }  # fmt: skip


def _in_orders(row: PairVerdict, orders: Orders) -> bool:
    """Whether the row counts under `orders`: a one-order judgment made in order ba is not one
    of order ab's (neither missing nor a tie: it was never asked in order ab)."""
    return orders == "both" or not (row.one_order and row.verdict_ab is None)


def pair_tallies(rows: Iterable[PairVerdict], *, orders: Orders = "both") -> list[PairTally]:
    """Wins, ties and losses per pair of runs (over judges, repeats and draws)."""
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        if not _in_orders(r, orders):
            continue
        c = counts[(r.run_a, r.run_b)]
        said = r.outcome if orders == "both" else r.verdict_ab
        c[said or "missing"] += 1
        c["flips"] += r.flipped
    return [
        PairTally(a, b, c["a"], c["tie"], c["b"], c["flips"], c["missing"])
        for (a, b), c in sorted(counts.items())
    ]


def outcomes(
    rows: Iterable[PairVerdict], *, orders: Orders = "both"
) -> list[tuple[str, str, float, tuple[str, str]]]:
    """(run_a, run_b, score of run_a, unit) for Bradley–Terry: the pair's outcome over both
    orders, or (`orders="ab"`) the verdict of order ab alone — the single-order design that
    shows run_a first every time, kept to measure what position bias does to a ranking."""
    if orders not in ("both", "ab"):
        raise InputError(f"orders must be 'both' or 'ab', got {orders!r}")
    out = []
    for r in rows:
        if not _in_orders(r, orders):
            continue
        said = r.outcome if orders == "both" else r.verdict_ab
        if said is not None:
            out.append((r.run_a, r.run_b, SCORE[said], r.unit))
    return out


def fit_pairs(
    rows: Sequence[PairVerdict],
    *,
    orders: Orders = "both",
    prior: float = 1.0,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    rank_method: RankMethod = "marginal",
    seed: int | None = None,
) -> BradleyTerryResult:
    """Bradley–Terry over the pairs' outcomes, samples resampled as units."""
    data = comparisons(outcomes(rows, orders=orders))
    if len(data.runs) < 2:
        raise InputError(
            "no pairwise outcomes to rank",
            hint="Judge pairs first: `calipers grade --pairwise --judge SPEC` (two runs or more).",
        )
    return bradley_terry(
        data, prior=prior, n_resamples=n_resamples, confidence_level=confidence_level,
        rank_method=rank_method, rng=seed,
    )  # fmt: skip


@dataclass(frozen=True)
class PairwiseRanking:
    """`calipers rank --pairwise` (and `calipers.rank`): the Bradley–Terry fit and its report."""

    fit: BradleyTerryResult
    report: dict[str, Any]

    @property
    def strengths(self) -> dict[str, float]:
        """Log-strength per run (mean 0), best first."""
        return {s.run: s.theta for s in self.fit.strengths}

    def to_dict(self) -> dict[str, Any]:
        return self.report


def rank_pairs(
    rows: Sequence[PairVerdict],
    *,
    source: str,
    orders: Orders = "both",
    prior: float = 1.0,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    rank_method: RankMethod = "marginal",
    seed: int | None = None,
    preferences: dict[str, Any] | None = None,
) -> PairwiseRanking:
    """The fit and the JSON report of `calipers rank --pairwise` (schema: pairwise-rank), over
    the store's verdicts or a preference file's rows (`preferences`: what the file held)."""
    fit = fit_pairs(
        rows, orders=orders, prior=prior, n_resamples=n_resamples,
        confidence_level=confidence_level, rank_method=rank_method, seed=seed,
    )  # fmt: skip
    judges = judge_stats(rows)
    report: dict[str, Any] = {
        "schema_version": "1",
        "kind": "pairwise-rank",
        "source": source,
        "orders": orders,
        "judges": [s.to_dict() for s in judges],
        "pairs": [t.to_dict() for t in pair_tallies(rows, orders=orders)],
        "bradley_terry": fit.to_dict(),
    }
    if len(judges) > 1:
        pooled = [replace(r, judge=f"all {len(judges)} judges") for r in rows]
        report["judges_pooled"] = judge_stats(pooled)[0].to_dict()
    if preferences is not None:
        report["preferences"] = preferences
    return PairwiseRanking(fit, report)


def ranking_report(
    rows: Sequence[PairVerdict],
    *,
    source: str,
    orders: Orders = "both",
    prior: float = 1.0,
    n_resamples: int = 10_000,
    confidence_level: float = 0.95,
    rank_method: RankMethod = "marginal",
    seed: int | None = None,
) -> dict[str, Any]:
    """The JSON report of `calipers rank --pairwise` (schema: pairwise-rank)."""
    return rank_pairs(
        rows, source=source, orders=orders, prior=prior, n_resamples=n_resamples,
        confidence_level=confidence_level, rank_method=rank_method, seed=seed,
    ).report  # fmt: skip
