"""The cells of the calibration grid, the full grid and the reduced one, and the run settings."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

NS = (5, 10, 20, 50, 200)
EPOCHS = (1, 3)
KINDS = ("binary-p0.70", "binary-p0.02", "binary-p0.98", "judge", "continuous", "layered")
GROUPED_KINDS = ("binary-p0.70", "continuous", "layered")
GROUPED_NS = (20, 50, 200)
K3_KINDS = ("binary-p0.70", "continuous")
K3_NS = (50, 200)
CASES = (3, 6, 20)
JUDGE_FAILURE = 0.3
BOOTSTRAP_METHODS = ("percentile", "bca")
BOOTSTRAP_KINDS = ("judge", "continuous", "layered")
BOOTSTRAP_NS = (200,)  # refused below 200 units, and on 0/1 outcomes
# Unequal epochs: each arm loses later epochs, more on its weaker items (`simulate.kept_epochs`)
DROPPED_EPOCHS = 0.3
DROPPED_KINDS = ("binary-p0.70", "judge", "continuous", "layered")
DROPPED_NS = (20, 200)
# pass@k and pass^k are measured on every pass/fail cell with epochs; these add k up to 5.
REPEATS_CELLS = (("binary-p0.70", 20, 5), ("binary-p0.70", 200, 5), ("binary-p0.98", 50, 5),
                 ("binary-p0.02", 50, 5))  # fmt: skip
RARE_DIFF = 0.02  # the rare-discordance cells also run an alternative at this true difference
# Non-inferiority: (kind, n, epochs, grouped, margin on the kind's scale)
MARGIN_CELLS = (
    ("binary-p0.70", 200, 1, False, 0.05),
    ("binary-p0.70", 50, 3, False, 0.1),
    ("binary-p0.98", 200, 1, False, 0.03),
    ("rare", 200, 1, False, 0.02),
    ("judge", 50, 1, False, 0.2),
    ("continuous", 50, 1, True, 0.05),
    ("layered", 50, 1, False, 0.2),
)
# The planner (`calipers plan`): (kind, epochs, grouped, effect, margin) — plan from an A/A pilot,
# then run the planned n at the true effect (or at no difference, against the margin).
PLAN_POWER = 0.8
PLAN_PILOT = 4000  # items in the pilot the design is measured on
PLAN_CELLS = (
    ("binary-p0.70", 1, False, 0.1, None),
    ("binary-p0.70", 3, False, 0.08, None),
    ("binary-p0.70", 1, True, 0.1, None),
    ("binary-p0.70", 1, False, None, 0.06),
    ("judge", 1, False, 0.25, None),
    ("judge", 1, True, 0.3, None),
    ("continuous", 1, False, 0.03, None),
    ("continuous", 3, True, 0.04, None),
    ("continuous", 1, False, None, 0.03),
)


@dataclass(frozen=True)
class Cell:
    """One design: a model, n items, epochs per item, and how the runs are compared."""

    model: str  # a name of calibration.models.model, or "robustness"
    n: int  # items (robustness: cases)
    epochs: int = 1
    grouped: bool = False  # items in groups of 5 sharing a latent effect; cluster="group"
    treatments: int = 1
    judge_failure: float = 0.0  # the treatment's share of rows whose judges failed
    fixed_diff: float | None = None  # an extra alternative at this true difference
    interval: str = "auto"  # the --interval the engine is asked for
    margin: float | None = None  # a non-inferiority margin: the null and a true drop of it
    plan_effect: float | None = None  # a planner cell: plan for this effect (or `margin`)
    plan: bool = False  # a planner cell: n is the pilot's size; the planned n is measured
    dropped_epochs: float = 0.0  # the average share of later epochs an arm loses

    @property
    def id(self) -> str:
        if self.model == "robustness":
            return f"robustness/cases{self.n}"
        if self.plan:  # n is the pilot's; the planned n is an outcome
            goal = (
                f"effect{self.plan_effect:g}" if self.margin is None else f"margin{self.margin:g}"
            )
            return "/".join(
                [
                    "plan",
                    self.model,
                    f"e{self.epochs}",
                    *(["grouped"] if self.grouped else []),
                    goal,
                ]
            )
        parts = [self.model, f"n{self.n}", f"e{self.epochs}"]
        if self.grouped:
            parts.append("grouped")
        if self.treatments > 1:
            parts.append(f"k{self.treatments}")
        if self.interval != "auto":
            parts.append(self.interval)
        if self.margin is not None:
            parts.append(f"margin{self.margin:g}")
        if self.dropped_epochs:
            parts.append(f"dropped{self.dropped_epochs:g}")
        return "/".join(parts)

    @property
    def key(self) -> int:
        """A stable 32-bit hash of the id: with the base seed, it seeds the cell's generator, so
        a cell gives the same figures in any grid and under any worker scheduling."""
        return int.from_bytes(hashlib.sha256(self.id.encode()).digest()[:4], "big")

    @property
    def cost(self) -> float:
        """Relative run time, to start the longest cells first."""
        if self.model == "robustness":
            return 0.3
        if self.plan:
            return 4.0
        rows = self.n * self.epochs
        per = 3.0 if self.model.startswith("layered") else 1.0
        return (1.0 + rows / 100.0) * per * (1 + self.treatments) / 2

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, **asdict(self)}


@dataclass(frozen=True)
class Settings:
    seed: int = 20240917
    reps_null: int = 2000
    reps_alt: int = 1000
    n_resamples: int = 2000  # for the bootstrap cells (--interval percentile|bca); auto ignores it
    confidence_level: float = 0.95


def full_grid() -> list[Cell]:
    cells = [Cell(kind, n, e) for kind in KINDS for n in NS for e in EPOCHS]
    cells += [
        Cell(k, n, e, grouped=True) for k in GROUPED_KINDS for n in GROUPED_NS for e in EPOCHS
    ]
    cells += [Cell("rare", n, e, fixed_diff=RARE_DIFF) for n in NS for e in EPOCHS]
    cells += [
        Cell(k, n, 3, dropped_epochs=DROPPED_EPOCHS) for k in DROPPED_KINDS for n in DROPPED_NS
    ]
    cells += [Cell(k, n, e) for k, n, e in REPEATS_CELLS]
    # The bootstrap overrides, where they are offered (≥ 200 units, not on 0/1 outcomes).
    cells += [
        Cell(kind, n, 1, interval=method)
        for method in BOOTSTRAP_METHODS for kind in BOOTSTRAP_KINDS for n in BOOTSTRAP_NS
    ]  # fmt: skip
    cells += [Cell("layered-gate", n, e) for n in NS if n >= 10 for e in EPOCHS]
    cells += [
        Cell("layered-judgefail", n, e, judge_failure=JUDGE_FAILURE)
        for n in NS
        if n >= 10
        for e in EPOCHS
    ]
    cells += [Cell(k, n, 1, treatments=3) for k in K3_KINDS for n in K3_NS]
    cells += [Cell("robustness", c) for c in CASES]
    cells += [Cell(k, n, e, grouped=g, margin=m) for k, n, e, g, m in MARGIN_CELLS]
    cells += [
        Cell(k, PLAN_PILOT, e, grouped=g, plan_effect=eff, margin=m, plan=True)
        for k, e, g, eff, m in PLAN_CELLS
    ]
    return cells


REDUCED_IDS = (
    "binary-p0.70/n20/e1",
    "binary-p0.70/n200/e3",
    "binary-p0.02/n50/e1",
    "binary-p0.98/n200/e1",
    "judge/n10/e3",
    "judge/n50/e1",
    "continuous/n5/e1",
    "continuous/n50/e3",
    "layered/n20/e1",
    "layered/n50/e3",
    "continuous/n20/e3/dropped0.3",
    "binary-p0.70/n50/e1/grouped",
    "layered/n50/e1/grouped",
    "rare/n200/e1",
    "layered-gate/n50/e1",
    "layered-judgefail/n200/e1",
    "binary-p0.70/n50/e1/k3",
    "robustness/cases6",
    "binary-p0.70/n200/e1/margin0.05",
    "plan/continuous/e1/effect0.03",
)


def reduced_grid() -> list[Cell]:
    """A representative subset: every kind, both epochs, small and large n, grouped, rare, the gate
    and judge-failure variants, K = 3 and robustness."""
    by_id = {c.id: c for c in full_grid()}
    return [by_id[i] for i in REDUCED_IDS]


REDUCED_SETTINGS = Settings(reps_null=300, reps_alt=300)
