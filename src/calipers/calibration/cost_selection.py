"""How often `calipers rank --cost --margin Δ` names as cheapest acceptable a run that is really
Δ or more worse than the best, against the point-estimate rule, on simulated runs whose truth is
known (docs/cost.md, docs/calibration.md "The cheapest acceptable run").

    python -m calipers.calibration.cost_selection [--reps N] [--seed S] [--only TEXT]
        [--json benchmarks/results/cost_selection.json]
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calipers.calibration.cost import RHO, _mc_se, _pct
from calipers.calibration.study_cli import run_study

SELECTION_JSON = Path("benchmarks/results/cost_selection.json")
SELECTION_TARGET = 0.05  # wrong-choice rate of "cheapest acceptable", every cell
SELECTION_RESAMPLES = 1_000  # bootstrap resamples per simulated evaluation (the command: 10,000)


@dataclass(frozen=True)
class SelectionCell:
    """K runs on the same n items: true accuracies and costs per item, a margin."""

    name: str
    accuracies: tuple[float, ...]
    costs: tuple[float, ...]
    n: int
    margin: float = 0.03
    sigma: float = 1.0  # log sd of an item's cost
    groups: int = 1  # items per group (the unit)
    epochs: int = 1

    @property
    def id(self) -> str:
        return f"{self.name}/n{self.n}"


_ISSUE_ACC = tuple(float(x) for x in np.round(np.linspace(0.70, 0.50, 6), 4))
_ISSUE_COST = tuple(float(x) for x in np.geomspace(10, 0.1, 6))
_AT_MARGIN = (0.70, 0.67, 0.67, 0.67, 0.67, 0.67)


def selection_grid() -> list[SelectionCell]:
    cells = [SelectionCell("issue", _ISSUE_ACC, _ISSUE_COST, n) for n in (30, 100, 500, 2000)]
    cells += [
        SelectionCell("near1", (0.99, 0.98, 0.97, 0.96, 0.95, 0.94), _ISSUE_COST, 500),
        SelectionCell("near0", (0.10, 0.09, 0.08, 0.06, 0.04, 0.02), _ISSUE_COST, 500),
        SelectionCell("heavy-costs", _ISSUE_ACC, _ISSUE_COST, 500, sigma=2.0),
        SelectionCell("at-margin", _AT_MARGIN, _ISSUE_COST, 100),
        SelectionCell("at-margin", _AT_MARGIN, _ISSUE_COST, 500),
        SelectionCell("at-margin", _AT_MARGIN, _ISSUE_COST, 2000),
        SelectionCell("one-within", (0.70, 0.68, 0.67, 0.67, 0.67, 0.67), _ISSUE_COST, 500),
        SelectionCell("groups5-e3", _ISSUE_ACC, _ISSUE_COST, 500, groups=5, epochs=3),
    ]
    return cells


def _logit_for(accuracy: float) -> float:
    """β with E[expit(β + Z)] = accuracy, Z ~ N(0, 1) (bisection on the quadrature)."""
    x, w = np.polynomial.hermite_e.hermegauss(120)
    w = w / w.sum()
    low, high = -20.0, 20.0
    for _ in range(80):
        mid = (low + high) / 2
        low, high = (mid, high) if w @ (1 / (1 + np.exp(-(mid + x)))) < accuracy else (low, mid)
    return (low + high) / 2


def simulate_selection(
    cell: SelectionCell, betas: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One evaluation: each unit's sums of the runs' per-item outcomes and costs, and its size.
    An item's difficulty z (shared by the runs: paired; with groups √0.3·u + √0.7·e) sets every
    run's chance expit(β_r + z) per epoch and its cost c_r·exp(σ(ρz + √(1 − ρ²)ε) − σ²/2)."""
    n, k, e = cell.n, len(cell.accuracies), cell.epochs
    if cell.groups > 1:
        u = np.repeat(rng.standard_normal(-(-n // cell.groups)), cell.groups)[:n]
        z = math.sqrt(0.3) * u + math.sqrt(0.7) * rng.standard_normal(n)
    else:
        z = rng.standard_normal(n)
    chance = 1.0 / (1.0 + np.exp(-(betas[None, :] + z[:, None])))  # n × K
    solved = (rng.random((e, n, k)) < chance[None]).mean(axis=0)
    spread = math.sqrt(1 - RHO**2)
    noise = rng.standard_normal((e, n, k)).mean(axis=0) * math.sqrt(e)  # one draw's sd
    costs = np.asarray(cell.costs)[None, :] * np.exp(
        cell.sigma * (RHO * z[:, None] + spread * noise) - cell.sigma**2 / 2
    )
    if cell.groups == 1:
        return solved, costs, np.ones(n)
    unit = np.arange(n) // cell.groups
    g = int(unit.max()) + 1
    sums = np.stack([np.bincount(unit, weights=solved[:, j], minlength=g) for j in range(k)], 1)
    spent = np.stack([np.bincount(unit, weights=costs[:, j], minlength=g) for j in range(k)], 1)
    return sums, spent, np.bincount(unit, minlength=g).astype(np.float64)


def run_selection_cell(cell: SelectionCell, reps: int, seed: int, number: int) -> dict[str, Any]:
    from calipers.stats.cost_selection import naive_choice, select_within_margin

    rng = np.random.default_rng([seed, 1000 + number])
    acc = np.asarray(cell.accuracies)
    cost = np.asarray(cell.costs)
    betas = np.array([_logit_for(a) for a in acc])
    per_solved = cost / acc
    best = float(acc.max())
    wrong_run = best - acc >= cell.margin - 1e-12  # picking it: really Δ or more worse
    fine = ~wrong_run
    ideal = int(np.flatnonzero(fine)[np.argmin(per_solved[fine])])
    truly_dominates = (acc[None, :] > acc[:, None]) & (cost[None, :] < cost[:, None])  # [i, j]
    names = [f"r{i}" for i in range(acc.size)]
    tally = {"mcb_wrong": 0, "naive_wrong": 0, "mcb_none": 0, "mcb_ideal": 0, "naive_ideal": 0,
             "false_dominated": 0, "dominated_any": 0}  # fmt: skip
    for _ in range(reps):
        sums, spent, sizes = simulate_selection(cell, betas, rng)
        made = select_within_margin(
            sums, spent, sizes, runs=names, margin=cell.margin, n_resamples=SELECTION_RESAMPLES,
            rng=rng,
        )  # fmt: skip
        if made.chosen is None:
            tally["mcb_none"] += 1
        else:
            i = names.index(made.chosen)
            tally["mcb_wrong"] += bool(wrong_run[i])
            tally["mcb_ideal"] += i == ideal
        j = naive_choice(made.accuracy, made.cost_per_solved, margin=cell.margin)
        tally["naive_wrong"] += bool(wrong_run[j])
        tally["naive_ideal"] += j == ideal
        false = any(
            not truly_dominates[i, names.index(by)]
            for i, bys in enumerate(made.dominated_by) for by in bys
        )  # fmt: skip
        tally["false_dominated"] += false
        tally["dominated_any"] += any(made.dominated_by)
    return {
        "id": cell.id,
        "cell": asdict(cell),
        "reps": reps,
        "resamples": SELECTION_RESAMPLES,
        "truth": {
            "best": best,
            "ideal": names[ideal],
            "cost_per_solved": per_solved.tolist(),
            "wrong_runs": [names[i] for i in np.flatnonzero(wrong_run)],
        },
        **{k: v / reps for k, v in tally.items()},
    }


def selection_table(body: dict[str, Any]) -> str:
    """The wrong-choice rates as a Markdown table (docs/calibration.md "Cost", docs/cost.md)."""
    lines = [
        "| cell | accuracies | costs per item | items | unit | evaluations | wrong: MCB % "
        "| wrong: point estimates % | none shown % | the ideal run: MCB %, point estimates % "
        "| falsely dominated % |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in body["cells"]:
        cell = c["cell"]
        unit = "item" if cell["groups"] == 1 else f"group of {cell['groups']}"
        if cell["epochs"] > 1:
            unit += f", {cell['epochs']} epochs"
        costs = f"{cell['costs'][0]:g} … {cell['costs'][-1]:g}" + (
            f", log sd {cell['sigma']:g}" if cell["sigma"] != 1.0 else ""
        )
        lines.append(
            f"| `{c['id']}` | {', '.join(f'{a:g}' for a in cell['accuracies'])} | {costs} "
            f"| {cell['n']} | {unit} | {c['reps']:,} | {_pct(c['mcb_wrong'])} ± "
            f"{_mc_se(c['mcb_wrong'], c['reps']):.1f} | {_pct(c['naive_wrong'])} "
            f"| {_pct(c['mcb_none'])} | {_pct(c['mcb_ideal'])}, {_pct(c['naive_ideal'])} "
            f"| {_pct(c['false_dominated'])} |"
        )
    return "\n".join(lines) + "\n"


def selection_main(argv: list[str] | None = None) -> int:
    return run_study(
        argv, prog="python -m calipers.calibration.cost_selection", study="cost-selection",
        seed=20261202, grid=selection_grid(), run_cell=run_selection_cell, line=_line,
        extra={"resamples": SELECTION_RESAMPLES, "target": SELECTION_TARGET,
               "model": {"rho": RHO}},
    )  # fmt: skip


def _line(cell: SelectionCell, made: dict[str, Any]) -> str:
    return (
        f"{cell.id:24s} wrong MCB {made['mcb_wrong']:.3f} naive {made['naive_wrong']:.3f} "
        f"none {made['mcb_none']:.3f} ideal {made['mcb_ideal']:.3f}/"
        f"{made['naive_ideal']:.3f} false-dominated {made['false_dominated']:.3f} "
        f"[{made['wall_s']:.1f}s]"
    )


def selection_section(selection: dict[str, Any] | None, source: Path = SELECTION_JSON) -> str:
    """docs/calibration.md's "The cheapest acceptable run" subsection, from the study's JSON
    (nothing when it is missing)."""
    if selection is None:
        return ""
    where = source
    worst = max(c["mcb_wrong"] for c in selection["cells"])
    passed = sum(c["mcb_wrong"] <= SELECTION_TARGET for c in selection["cells"])
    # cells measured again with more evaluations (`--only ID --reps N`, merged into the file)
    more = [c for c in selection["cells"] if c["reps"] != selection["reps"]]
    again = "".join(
        f" `{c['id']}` was measured again with {c['reps']:,} evaluations (`python -m "
        f"calipers.calibration.cost_selection --only {c['id']} --reps {c['reps']}`, the same "
        "seed) and that figure replaces the first in the file."
        for c in more
    )
    lines = [
        "",
        "### The cheapest acceptable run (`rank --cost`)",
        "",
        "How often `calipers rank --cost --margin Δ` names as cheapest acceptable a run that is "
        "really Δ or more worse than the best (docs/cost.md; exactly Δ counts as wrong: the "
        "least favourable case), against the point-estimate rule (the cheapest run whose "
        "estimate is within Δ of the best estimate). `python -m "
        f"calipers.calibration.cost_selection --reps {selection['reps']} --json {where}` "
        f"(seed {selection['seed']}, "
        f"{selection['resamples']:,} bootstrap resamples per evaluation, "
        f"{selection['wall_s'] / 60:.1f} min); the model is in "
        f"`calipers.calibration.cost_selection` (`simulate_selection`).{again}",
        "",
        f"Target: ≤ {SELECTION_TARGET:.0%} wrong in every cell. **{passed} of "
        f"{len(selection['cells'])} cells pass** (worst {100 * worst:.1f}%). Columns: the "
        "runs' true accuracies and costs per item; items; the unit; evaluations; wrong choices "
        "of MCB (calipers; ± its Monte Carlo standard error) and of the point estimates; how "
        "often MCB shows no run within Δ; how "
        "often each rule picks the truly cheapest run within Δ; how often any run is labelled "
        "dominated by a run that does not truly dominate it.",
        "",
        selection_table(selection).rstrip("\n"),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(selection_main())
