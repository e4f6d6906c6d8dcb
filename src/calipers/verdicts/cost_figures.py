"""What a comparison's cost section holds — each run's cost figures, each pair's cost per
additional solved item and net benefit — and the rules that say when a cost interval is refused
or comes with a warning (measured in docs/calibration.md, "Cost"; decided in docs/cost.md). The
figures are computed by `calipers.verdicts.cost`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from calipers.errors import InputError
from calipers.stats.cost import HEAVY_LOG_SPREAD, NetBenefit, RatioInterval

# Below this many units every cost interval is refused: measured coverage of cost per solved
# (bootstrap-t) 0.89–0.98 at 30 units on lognormal costs (log sd 1–1.5), of the net benefit
# 0.89–0.95, and nothing was measured below (docs/calibration.md, "Cost").
MIN_COST_UNITS = 30
# Below this many units an interval comes with a warning.
WARN_COST_UNITS = 100
# Fewer units with a solved item than this: the accuracy's log is poorly determined (coverage
# 0.91–0.92 at 100 items and accuracy 0.046, where most runs solve under 5).
WARN_SOLVED_UNITS = 10
# Costs this heavy-tailed (sd of the log of the units' costs) on fewer than HEAVY_WARN_UNITS:
# at log sd 1.5 covered 0.920–0.922 at 100 units, 0.933–0.947 at 300 (0.917 in a pilot: too close
# to call), 0.935–0.953 from 1,000; at log sd 1 ≥ 0.939 from 100 units with enough solved.
# (HEAVY_LOG_SPREAD, from calipers.stats.cost: 1.25)
HEAVY_WARN_UNITS = 1_000
# The system's usage per solved item where the telemetry has it: its SQL (NULL when a field is
# missing: not 0) and the fields it needs. The graders' tokens (grader_tokens_*) never count.
USAGE = {
    "tokens": ("tokens_in + tokens_out", ("tokens_in", "tokens_out")),
    "seconds": ("latency_s", ("latency_s",)),
}


def interval_warnings(n_units: int, *, solved_units: int | None = None,
                      spread: float | None = None, what: str = "costs") -> list[str]:  # fmt: skip
    """The stated warnings of a cost interval on `n_units` units (docs/cost.md); `what` the
    values per solved item (costs, tokens or seconds: the same interval)."""
    out = []
    if n_units < WARN_COST_UNITS:
        out.append(
            f"{n_units} units, fewer than {WARN_COST_UNITS}: at 30 units cost per solved covered "
            "89–98% of the truth in simulation and the net benefit 89–95% (docs/calibration.md, "
            '"Cost")'
        )
    if solved_units is not None and solved_units < WARN_SOLVED_UNITS:
        out.append(
            f"only {solved_units} units solved anything: the accuracy's scale is poorly "
            "determined (coverage 91–92% at 100 items and accuracy 0.05, docs/calibration.md)"
        )
    if spread is not None and spread >= HEAVY_LOG_SPREAD and n_units < HEAVY_WARN_UNITS:
        out.append(
            f"heavy-tailed {what} (sd of the log of the units' {what} {spread:.2f} ≥ "
            f"{HEAVY_LOG_SPREAD}) on fewer than {HEAVY_WARN_UNITS:,} units: at log sd 1.5 the "
            "interval covered 92.0–92.2% at 100 units and 93.3–94.7% at 300 "
            '(docs/calibration.md, "Cost"); a tail the sample has not shown can move the mean'
        )
    return out


@dataclass
class CostFigures:
    """Cost per solved item for one run (or one task of it), and what it was made from."""

    n_samples: int
    n_units: int
    cost_per_sample: float | None  # the mean over samples of the per-sample mean cost
    outcome_mean: float | None
    total_cost: float | None  # Σ cost_usd over the scored observations
    interval: RatioInterval | None
    refusal: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self, *, usage: bool = False) -> dict[str, Any]:
        """The figures; `usage`: of tokens or seconds (`per_sample`, `total` for the cost's
        `cost_per_sample`, `total_cost`)."""
        i = self.interval
        return {
            "n_samples": self.n_samples,
            "n_units": self.n_units,
            "per_sample" if usage else "cost_per_sample": self.cost_per_sample,
            "outcome_mean": self.outcome_mean,
            "total" if usage else "total_cost": self.total_cost,
            "estimate": None if i is None else i.estimate,
            "low": None if i is None or self.refusal else i.low,
            "high": None if i is None or self.refusal else i.high,
            "interval": None if i is None or self.refusal else i.to_dict(),
            "refusal": self.refusal,
            "warnings": self.warnings,
        }


@dataclass
class UsageCost:
    """Tokens or seconds per solved item for one run (and its tasks): the cost's figures."""

    measure: str  # a key of USAGE
    figures: CostFigures | None  # None: refused (refusal says why)
    refusal: str | None
    tasks: dict[str, CostFigures] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        body = (
            self.figures.to_dict(usage=True)
            if self.figures
            else {"estimate": None, "low": None, "high": None}
        )
        return {"measure": self.measure, "column": USAGE[self.measure][0], **body,
                "refusal": self.refusal or (self.figures.refusal if self.figures else None),
                "tasks": {t: f.to_dict(usage=True) for t, f in self.tasks.items()}}  # fmt: skip


@dataclass
class RunCost:
    run: str
    figures: CostFigures | None  # None: refused (refusal says why)
    refusal: str | None
    grader_cost: float | None  # Σ grader_cost_usd over the run's observations (None: none)
    grader_observations: int
    tasks: dict[str, CostFigures] = field(default_factory=dict)
    usage: dict[str, UsageCost] = field(default_factory=dict)  # where the telemetry has it

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            **(self.figures.to_dict() if self.figures else {"estimate": None, "low": None,
                                                           "high": None}),
            "refusal": self.refusal or (self.figures.refusal if self.figures else None),
            "grader_cost": self.grader_cost,
            "grader_observations": self.grader_observations,
            "tasks": {t: f.to_dict() for t, f in self.tasks.items()},
            "usage": {k: u.to_dict() for k, u in self.usage.items()},
        }  # fmt: skip


@dataclass
class PairCost:
    control: str
    treatment: str
    n_pairs: int
    delta_cost: float | None  # mean per item, treatment − control
    delta_outcome: float | None
    per_additional: RatioInterval | None
    net: NetBenefit | None
    curve: list[tuple[float, float]]  # (value per solved, P(net benefit > 0))
    refusal: str | None = None
    net_refusal: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def worth_it(self) -> bool:
        return self.net is not None and self.net.interval.low > 0

    def to_dict(self) -> dict[str, Any]:
        a = self.per_additional
        return {
            "control": self.control,
            "treatment": self.treatment,
            "n_pairs": self.n_pairs,
            "delta_cost": self.delta_cost,
            "delta_outcome": self.delta_outcome,
            "cost_per_additional": None if a is None else a.to_dict(),
            "net_benefit": None if self.net is None else self.net.to_dict(),
            "net_refusal": self.net_refusal,
            "curve": [{"value": v, "probability_positive": p} for v, p in self.curve],
            "curve_meaning": (
                "P(net benefit > 0) at each value per solved item: the one-sided confidence "
                "level T_{G-1}(net/se) of the paired t interval, not a posterior probability"
            ),
            "refusal": self.refusal,
            "warnings": self.warnings,
        }


@dataclass
class CostComparison:
    """The cost section of a comparison: per run, per pair, and how it was made."""

    outcome: str  # "solved item" or "unit of <metric>"
    value_per_solved: float | None
    confidence_level: float
    cluster: str
    runs: dict[str, RunCost]
    pairs: list[PairCost]
    notes: list[str] = field(default_factory=list)

    def gate_failure(self) -> str | None:
        """`--gate worth-it`: fails unless every pair's net benefit interval lies above 0."""
        if self.value_per_solved is None:
            raise InputError(
                "--gate worth-it needs a value per solved item",
                hint="Add --value-per-solved V (what one more solved item is worth, in the "
                "cost's currency).",
                parameters=["value_per_solved"],
            )
        if not self.pairs:
            return "there is no candidate to weigh against its cost (gate worth-it)"
        failing = []
        for p in self.pairs:
            if p.net is None:
                failing.append(f"{p.treatment}: no net benefit ({p.net_refusal or p.refusal})")
            elif not p.worth_it:
                i = p.net.interval
                failing.append(
                    f"{p.treatment}: net benefit {i.estimate:+.4g} per item, interval "
                    f"[{i.low:+.4g}, {i.high:+.4g}] is not above 0"
                )
        if failing:
            return f"not worth it at {self.value_per_solved:g} per {self.outcome}: " + "; ".join(
                failing
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "value_per_solved": self.value_per_solved,
            "confidence_level": self.confidence_level,
            "cluster": self.cluster,
            "system_cost": "cost_usd",
            "grader_cost": "grader_cost_usd (reported apart, never counted as the system's)",
            "runs": {r: c.to_dict() for r, c in self.runs.items()},
            "pairs": [p.to_dict() for p in self.pairs],
            "notes": self.notes,
        }
