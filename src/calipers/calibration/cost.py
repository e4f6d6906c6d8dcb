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

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calipers.calibration.study_cli import run_study
from calipers.stats.cost import (
    COST_RESAMPLES,
    cost_per_additional,
    cost_per_solved,
    log_delta_se,
    log_spread,
    net_benefit,
)
from calipers.stats.interval_parts import NoInterval
from calipers.verdicts.cost_figures import MIN_COST_UNITS, interval_warnings

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
    return run_study(
        argv, prog="python -m calipers.calibration.cost", study="cost", seed=20261201,
        grid=grid(), run_cell=run_cell, line=_line,
        extra={"target": TARGET,
               "model": {"mu": MU, "rho": RHO, "shift": SHIFT, "cost_factor": COST_FACTOR}},
    )  # fmt: skip


def _line(cell: CostCell, made: dict[str, Any]) -> str:
    cov = made["coverage"]
    return (
        f"{cell.id:28s} bootstrap-t {cov['per_solved']:.3f} log-delta "
        f"{cov['log-delta']:.3f} delta {cov['delta'] or 0:.3f} "
        f"unbounded {made['unbounded']['cost_per_solved']:.3f} | Δ-ratio "
        f"{cov['additional']:.3f} (unbounded {made['unbounded']['additional']:.3f}) | net "
        f"{cov['net']:.3f}  [{made['wall_s']:.1f}s]"
    )


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


def cost_section(body: dict[str, Any] | None, source: Path = DEFAULT_JSON) -> str:
    """docs/calibration.md's "Cost" section, from the coverage study's JSON (the wrong-choice
    study of `rank --cost` follows it: `calibration.cost_selection.selection_section`)."""
    return _coverage_section(body, source)


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


if __name__ == "__main__":
    raise SystemExit(main())
