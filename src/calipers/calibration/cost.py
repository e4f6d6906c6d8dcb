"""Cost intervals against known truth: cost per solved item, the cost per additional solved
item and the net benefit, on simulated runs with heavy-tailed costs.

    python -m calipers.calibration.cost [--reps N] [--seed S] [--only TEXT]
        [--json benchmarks/results/cost_calibration.json]

The model (each cell `default_rng([seed, cell number])`): items i = 1..n with a latent
z_i ~ N(0, 1) (with `groups`, z = √0.3·u_group + √0.7·e_item, 5 items a group: the same marginal
law, clustered); each of `epochs` draws of an item is solved with probability
expit(logit p + z_i) and costs exp(μ + σ(ρ·z_i + √(1 − ρ²)·ε)), μ = −3, ρ = −0.5 (harder items
cost more), ε ~ N(0, 1) per draw: lognormal with log sd σ. A paired candidate sees the same items:
solved with expit(logit p + 0.4 + z_i) and costing 1.5 times as much per draw (its own ε).
Truths: E[cost] = exp(μ + σ²/2) (× 1.5), E[solved] = E[expit(logit p + Z)] by Gauss–Hermite
quadrature (120 nodes); cost per solved = E[cost]/E[solved]; the cost per additional solved
item = Δcost/Δsolved; the net benefit at the value v = 2·(Δcost/Δsolved) (a gain worth twice
what it costs) is v·Δsolved − Δcost.

Measured per cell: coverage of the 95% interval of each (an unbounded end covers on its
side), the share of runs whose interval is unbounded, and for comparison, on the same data, the
log-scale delta interval exp(log R̂ ± t·se) (calipers' interval before the bootstrap-t) and the
plain delta method on the ratio (R̂ ± t·se). `--json` writes the figures, from which
docs/calibration.md's "Cost" section and docs/cost.md's table are made
(`calipers.calibration.studies`).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calipers.stats.cost import (
    COST_RESAMPLES,
    cost_per_additional,
    cost_per_solved,
    log_delta_se,
    log_spread,
    net_benefit,
)
from calipers.stats.estimate import NoInterval
from calipers.verdicts.cost import MIN_COST_UNITS, interval_warnings

TARGET = 0.93  # coverage of a nominal 95% interval
MU, RHO, SHIFT, COST_FACTOR = -3.0, -0.5, 0.4, 1.5
DEFAULT_JSON = Path("benchmarks/results/cost_calibration.json")


@dataclass(frozen=True)
class CostCell:
    p: float  # the accuracy at the median item (logit scale centre)
    sigma: float  # log sd of a draw's cost
    n: int  # items
    epochs: int = 1
    groups: bool = False

    @property
    def id(self) -> str:
        extra = (f"/e{self.epochs}" if self.epochs > 1 else "") + (
            "/groups5" if self.groups else ""
        )
        return f"p{self.p:g}/sigma{self.sigma:g}{extra}/n{self.n}"


def grid() -> list[CostCell]:
    cells = [
        CostCell(p, s, n)
        for p in (0.03, 0.5, 0.97)
        for s in (1.0, 1.5)
        for n in (30, 100, 300, 1000)
    ]
    cells += [CostCell(0.5, 1.5, n, epochs=3) for n in (30, 100, 300, 1000)]
    cells += [CostCell(0.5, 1.5, n, groups=True) for n in (30, 100, 300, 1000)]
    return cells


def mean_solved(logit: float) -> float:
    """E[expit(logit + Z)], Z ~ N(0, 1), by Gauss–Hermite quadrature."""
    x, w = np.polynomial.hermite_e.hermegauss(120)
    return float(w @ (1.0 / (1.0 + np.exp(-(logit + x)))) / w.sum())


def truths(cell: CostCell) -> dict[str, float]:
    base = math.log(cell.p / (1 - cell.p))
    cost = math.exp(MU + cell.sigma**2 / 2)
    a0, a1 = mean_solved(base), mean_solved(base + SHIFT)
    d_cost, d_solved = (COST_FACTOR - 1) * cost, a1 - a0
    value = 2 * d_cost / d_solved
    return {
        "cost_per_solved": cost / a0,
        "cost_per_additional": d_cost / d_solved,
        "value": value,
        "net_benefit": value * d_solved - d_cost,
        "accuracy": a0,
        "accuracy_candidate": a1,
    }


def simulate(cell: CostCell, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One paired run of the cell, one row per (item, epoch)."""
    n, e = cell.n, cell.epochs
    if cell.groups:
        u = np.repeat(rng.standard_normal(-(-n // 5)), 5)[:n]
        z = math.sqrt(0.3) * u + math.sqrt(0.7) * rng.standard_normal(n)
        cluster = np.arange(n) // 5
    else:
        z = rng.standard_normal(n)
        cluster = np.arange(n)
    zz = np.repeat(z, e)
    base = math.log(cell.p / (1 - cell.p))
    solved0 = (rng.random(n * e) < 1 / (1 + np.exp(-(base + zz)))).astype(float)
    solved1 = (rng.random(n * e) < 1 / (1 + np.exp(-(base + SHIFT + zz)))).astype(float)
    spread = math.sqrt(1 - RHO**2)
    cost0 = np.exp(MU + cell.sigma * (RHO * zz + spread * rng.standard_normal(n * e)))
    cost1 = COST_FACTOR * np.exp(MU + cell.sigma * (RHO * zz + spread * rng.standard_normal(n * e)))
    return {
        "cluster": np.repeat(cluster, e),
        "weights": np.full(n * e, 1.0 / e),
        "cost0": cost0, "cost1": cost1, "solved0": solved0, "solved1": solved1,
    }  # fmt: skip


def run_cell(cell: CostCell, reps: int, seed: int, number: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, number])
    truth = truths(cell)
    hits = {"per_solved": 0, "log-delta": 0, "delta": 0, "additional": 0, "net": 0}
    unbounded = {"cost_per_solved": 0, "additional": 0}
    refused = {"cost_per_solved": 0, "additional": 0, "net": 0}
    by_solved: dict[str, list[int]] = {}  # solved units (bins) → [reps, covered]
    by_spread: dict[str, list[int]] = {}  # units' cost log sd (bins) → [reps, covered]
    by_method: dict[str, list[int]] = {}  # the interval calipers gave → [reps, covered]
    quiet = [0, 0]  # intervals calipers shows without a warning → [reps, covered]
    below_minimum = 0  # fewer than MIN_COST_UNITS units: calipers shows no interval
    for _ in range(reps):
        d = simulate(cell, rng)
        kw: dict[str, Any] = {"clusters": d["cluster"], "weights": d["weights"]}
        try:
            r = cost_per_solved(d["cost0"], d["solved0"], rng=rng, **kw)
        except NoInterval:
            refused["cost_per_solved"] += 1
        else:
            covered = r.contains(truth["cost_per_solved"])
            hits["per_solved"] += covered
            if r.method == "bootstrap-t":  # the log-delta interval on the same data
                half = r.critical_value * log_delta_se(r.moments)
                ratio = math.log(truth["cost_per_solved"] / (r.estimate or math.nan))
                hits["log-delta"] += abs(ratio) <= half
            else:  # Fieller's or none-solved: the same as before the bootstrap-t
                hits["log-delta"] += covered
            unbounded["cost_per_solved"] += r.unbounded
            slot = by_method.setdefault(r.method, [0, 0])
            slot[0] += 1
            slot[1] += covered
            solved_units = int(np.unique(d["cluster"][d["solved0"] > 0]).size)
            key = next(k for k, lim in _SOLVED_BINS if solved_units < lim)
            slot = by_solved.setdefault(key, [0, 0])
            slot[0] += 1
            slot[1] += covered
            m = r.moments
            spread = log_spread(m.numerator_sums / m.sizes)
            key = next(k for k, lim in _SPREAD_BINS if spread is None or spread < lim)
            slot = by_spread.setdefault(key, [0, 0])
            slot[0] += 1
            slot[1] += covered
            if m.n_units < MIN_COST_UNITS:
                below_minimum += 1
            elif not interval_warnings(m.n_units, solved_units=solved_units, spread=spread):
                quiet[0] += 1
                quiet[1] += covered
            if m.denominator > 0:
                est = m.numerator / m.denominator
                grad = np.array([1 / m.denominator, -est / m.denominator])
                cov = np.array([[m.var_numerator, m.covariance], [m.covariance, m.var_denominator]])
                se = math.sqrt(max(float(grad @ cov @ grad), 0.0))
                hits["delta"] += abs(est - truth["cost_per_solved"]) <= r.critical_value * se
        pair = (d["cost0"], d["cost1"], d["solved0"], d["solved1"])
        try:
            a = cost_per_additional(*pair, **kw)
        except NoInterval:
            refused["additional"] += 1
        else:
            hits["additional"] += a.contains(truth["cost_per_additional"])
            unbounded["additional"] += a.unbounded
        try:
            nb = net_benefit(*pair, value=truth["value"], **kw)
        except NoInterval:
            refused["net"] += 1
        else:
            hits["net"] += nb.interval.contains(truth["net_benefit"])
    shown = {
        "per_solved": reps - refused["cost_per_solved"],
        "log-delta": reps - refused["cost_per_solved"],
        "delta": reps - refused["cost_per_solved"],
        "additional": reps - refused["additional"],
        "net": reps - refused["net"],
    }
    return {
        "id": cell.id,
        "cell": asdict(cell),
        "reps": reps,
        "resamples": COST_RESAMPLES,
        "truth": truth,
        "coverage": {k: (hits[k] / shown[k] if shown[k] else None) for k in hits},
        "shown": shown,
        "unbounded": {k: v / reps for k, v in unbounded.items()},
        "refused": refused,
        "below_minimum": below_minimum / reps,
        "unwarned": {
            "share": quiet[0] / reps,
            "coverage": quiet[1] / quiet[0] if quiet[0] else None,
        },
        "by_solved_units": {
            k: {"reps": v[0], "coverage": v[1] / v[0]} for k, v in by_solved.items()
        },
        "by_log_spread": {k: {"reps": v[0], "coverage": v[1] / v[0]} for k, v in by_spread.items()},
        "by_method": {k: {"reps": v[0], "coverage": v[1] / v[0]} for k, v in by_method.items()},
    }


_SPREAD_BINS = (("<1", 1.0), ("1-1.25", 1.25), ("1.25-1.5", 1.5), (">=1.5", math.inf))
_SOLVED_BINS = (("<5", 5), ("5-9", 10), ("10-19", 20), ("20-49", 50), (">=50", 10**12))


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        import sys

        argv = sys.argv[1:]
    if "--selection" in argv:  # the wrong-choice study of `rank --cost`
        return selection_main([a for a in argv if a != "--selection"])
    parser = argparse.ArgumentParser(prog="python -m calipers.calibration.cost")
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--only", default=None, help="cells whose id contains this text")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    cells = []
    for number, cell in enumerate(grid()):
        if args.only and args.only not in cell.id:
            continue
        t0 = time.perf_counter()
        made = run_cell(cell, args.reps, args.seed, number)
        made["wall_s"] = time.perf_counter() - t0
        cells.append(made)
        cov = made["coverage"]
        print(
            f"{cell.id:28s} bootstrap-t {cov['per_solved']:.3f} log-delta "
            f"{cov['log-delta']:.3f} delta {cov['delta'] or 0:.3f} "
            f"unbounded {made['unbounded']['cost_per_solved']:.3f} | Δ-ratio "
            f"{cov['additional']:.3f} (unbounded {made['unbounded']['additional']:.3f}) | net "
            f"{cov['net']:.3f}  [{made['wall_s']:.1f}s]",
            flush=True,
        )
    body = {
        "study": "cost",
        "reps": args.reps,
        "seed": args.seed,
        "target": TARGET,
        "wall_s": time.perf_counter() - started,
        "model": {"mu": MU, "rho": RHO, "shift": SHIFT, "cost_factor": COST_FACTOR},
        "cells": cells,
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    return 0


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def coverage_table(body: dict[str, Any]) -> str:
    """The study's figures as a Markdown table (docs/calibration.md "Cost", docs/cost.md)."""
    lines = [
        "| cell | accuracy | log sd | items | epochs / groups | cost per solved % | unbounded % "
        "| log-delta % | plain delta % | no warning: share %, coverage % "
        "| per additional % (unbounded %) | net benefit % |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in body["cells"]:
        cell, cov = c["cell"], c["coverage"]
        design = (f"{cell['epochs']} epochs" if cell["epochs"] > 1 else "") + (
            "groups of 5" if cell["groups"] else ""
        )
        quiet = c.get("unwarned") or {}
        lines.append(
            f"| `{c['id']}` | {c['truth']['accuracy']:.3f} | {cell['sigma']:g} | {cell['n']} "
            f"| {design or '—'} | {_pct(cov['per_solved'])} "
            f"| {_pct(c['unbounded']['cost_per_solved'])} | {_pct(cov['log-delta'])} "
            f"| {_pct(cov['delta'])} "
            f"| {_pct(quiet.get('share'))}, {_pct(quiet.get('coverage'))} "
            f"| {_pct(cov['additional'])} ({_pct(c['unbounded']['additional'])}) "
            f"| {_pct(cov['net'])} |"
        )
    return "\n".join(lines) + "\n"


def cost_section(
    body: dict[str, Any] | None,
    source: Path = DEFAULT_JSON,
    selection: dict[str, Any] | None = None,
    selection_source: Path | None = None,
) -> str:
    """docs/calibration.md's "Cost" section, from the studies' JSON (the coverage study, then
    the wrong-choice study of `rank --cost` when its figures are given)."""
    text = _coverage_section(body, source)
    if selection is None:
        return text
    where = selection_source or SELECTION_JSON
    worst = max(c["mcb_wrong"] for c in selection["cells"])
    passed = sum(c["mcb_wrong"] <= SELECTION_TARGET for c in selection["cells"])
    # cells measured again with more evaluations (`--only ID --reps N`, merged into the file)
    more = [c for c in selection["cells"] if c["reps"] != selection["reps"]]
    again = "".join(
        f" `{c['id']}` was measured again with {c['reps']:,} evaluations (`python -m "
        f"calipers.calibration.cost --selection --only {c['id']} --reps {c['reps']}`, the same "
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
        "estimate is within Δ of the best estimate). `python -m calipers.calibration.cost "
        f"--selection --reps {selection['reps']} --json {where}` (seed {selection['seed']}, "
        f"{selection['resamples']:,} bootstrap resamples per evaluation, "
        f"{selection['wall_s'] / 60:.1f} min); the model is in `calipers.calibration.cost` "
        f"(`simulate_selection`).{again}",
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
    return text + "\n".join(lines) + "\n"


def _coverage_section(body: dict[str, Any] | None, source: Path) -> str:
    lines = ["## Cost (issue 40)", ""]
    if body is None:
        missing = (
            f"Not measured yet: {source} is missing (`python -m calipers.calibration.cost "
            f"--json {source}` writes it)."
        )
        return "\n".join([*lines, missing]) + "\n"
    lines += [
        "Cost per solved item, the cost per additional solved item and the net benefit "
        "(docs/cost.md) on simulated runs with lognormal costs whose truth is known "
        f"(`calipers.calibration.cost` says how). `python -m calipers.calibration.cost --reps "
        f"{body['reps']} --json {source}` (seed {body['seed']}, {body['wall_s'] / 60:.1f} min); "
        "this section is rendered from that file.",
        "",
        f"Target: coverage ≥ {TARGET:.0%} of every nominal 95% interval from 100 items; "
        "below that, or where it is missed, calipers states a warning or refuses (docs/cost.md, "
        '"When calipers warns or refuses"). An unbounded end covers on its side. Columns: '
        "the accuracy (mean solved) of the baseline; the costs' log sd; items; cost per solved "
        "item's coverage (calipers' interval: the bootstrap-t on the log scale with "
        f"{body['cells'][0].get('resamples', 0):,} resamples — from 1,000 units with light "
        "tails, the log-scale delta interval, which needs none; Fieller when the accuracy's "
        "interval reaches 0) and how often its interval is unbounded; on the same data, for "
        "comparison, the log-scale delta interval (calipers' before the bootstrap-t) and the "
        "plain delta method; the share of runs calipers shows this interval without a warning "
        "and their coverage; the cost per additional solved item (Fieller) and how often it is "
        "unbounded; the net benefit at twice the break-even value (paired t). The Monte Carlo "
        f"standard error of a coverage near 93% is {_mc_se(0.93, body['reps']):.1f} points.",
        "",
        coverage_table(body).rstrip("\n"),
        "",
        *_coverage_verdict(body),
    ]
    return "\n".join(lines) + "\n"


def _mc_se(p: float, reps: int) -> float:
    """The Monte Carlo standard error of a simulated share p over `reps` runs, in points."""
    return 100 * math.sqrt(p * (1 - p) / reps)


def _coverage_verdict(body: dict[str, Any]) -> list[str]:
    """Which cells from 100 items miss the target, per interval: the sentences under the table
    (cells of fewer than MIN_COST_UNITS units, where calipers gives no interval, left out)."""
    cells = [c for c in body["cells"] if c["cell"]["n"] >= 100
             and c["cell"]["n"] // (5 if c["cell"]["groups"] else 1) >= MIN_COST_UNITS]  # fmt: skip
    out = []
    for key, name in (("per_solved", "cost per solved item"),
                      ("additional", "cost per additional solved item"),
                      ("net", "net benefit")):  # fmt: skip
        missed = [c for c in cells if (c["coverage"][key] or 0) < TARGET]
        text = f"- {name}: ≥ {TARGET:.0%} in {len(cells) - len(missed)} of {len(cells)} cells from "
        text += f"100 items and {MIN_COST_UNITS} units" + (
            "." if not missed else "; below it: " + ", ".join(
                f"`{c['id']}` {_pct(c['coverage'][key])}%" for c in missed
            ) + "."
        )  # fmt: skip
        out.append(text)
    light = [(c["id"], c["by_method"]["log-delta"]) for c in body["cells"]
             if (c.get("by_method") or {}).get("log-delta")]  # fmt: skip
    if light:
        covs = [m["coverage"] for _, m in light]
        out.append(
            f"- the log-delta interval (≥ 1,000 units, light tails) was given in {len(light)} "
            f"cells, on {min(m['reps'] for _, m in light):,}–{max(m['reps'] for _, m in light):,} "
            f"runs of each, and covered {_pct(min(covs))}–{_pct(max(covs))}% there."
        )
    return out


# ------------------------------------------------------------------ the cheapest acceptable run

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
    parser = argparse.ArgumentParser(prog="python -m calipers.calibration.cost --selection")
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--only", default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    cells = []
    for number, cell in enumerate(selection_grid()):
        if args.only and args.only not in cell.id:
            continue
        t0 = time.perf_counter()
        made = run_selection_cell(cell, args.reps, args.seed, number)
        made["wall_s"] = time.perf_counter() - t0
        cells.append(made)
        print(f"{cell.id:24s} wrong MCB {made['mcb_wrong']:.3f} naive {made['naive_wrong']:.3f} "
              f"none {made['mcb_none']:.3f} ideal {made['mcb_ideal']:.3f}/"
              f"{made['naive_ideal']:.3f} false-dominated {made['false_dominated']:.3f} "
              f"[{made['wall_s']:.1f}s]", flush=True)  # fmt: skip
    body = {
        "study": "cost-selection", "reps": args.reps, "seed": args.seed,
        "resamples": SELECTION_RESAMPLES, "target": SELECTION_TARGET,
        "wall_s": time.perf_counter() - started, "model": {"rho": RHO}, "cells": cells,
    }  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
