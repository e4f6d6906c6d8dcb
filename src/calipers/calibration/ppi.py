"""The calibration study of judge calibration against human labels (PPI++ and Rogan–Gladen).

    python -m calipers.calibration.ppi [--reps 2000] [--seed 20261124] [--jobs 2]
        [--json benchmarks/results/ppi_calibration.json] [--markdown]
    python -m calipers.calibration.ppi --from-json benchmarks/results/ppi_calibration.json

Simulated runs of N = 2000 samples with a known human-scale mean θ, a judge on every sample and a
random labelled slice of n; each cell repeats the whole experiment `reps` times and measures, for
the interval calipers shows (`ppi_mean` / `ppi_paired_difference`: PPI++, or the human-only
interval when PPI++'s is wider), its coverage of θ, how often it is no wider than the human-only
interval, the mean width ratio to it, the bias of the estimate, how often PPI++ fell back and how
often the judge was called too weak; for one-run pass/fail cells the same for Rogan–Gladen.

Judges:
- pass/fail: human y ~ Bernoulli(π), judge passes with probability `sens` when y = 1 and fails
  with probability `spec` when y = 0;
- 1–5 scale: y from HUMAN_15, judge = clip(round(y + bias + noise·ε), 1, 5) (bias +1 is a
  systematically lenient judge, piling up at 5), or "unrelated": uniform on 1–5, independent of y;
- paired: two runs on the same samples, the treatment better (pass/fail: P(pass) 0.70 → 0.785;
  1–5: y_T = min(5, y_C + Bernoulli(0.3))), the judge of each run with its own errors — and in
  `lenient-T` cells more lenient to the treatment (+0.5 against +1.0), so the judge alone
  overstates the gain;
- grouped: groups of 5 samples sharing a latent effect, `clusters` = group, labels drawn by sample
  (groups partly labelled).

The study passes `min_labels=2` so that cells below calipers' minimum (MIN_LABELS) are measured:
they are what decided it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.stats.interval_parts import NoInterval
from calipers.stats.ppi import PPIResult, ppi_mean, ppi_paired_difference
from calipers.stats.rogan_gladen import corrected_proportion

N_TOTAL = 2000
DEFAULT_SEED = 20261124
DEFAULT_REPS = 2000
NS = (10, 15, 20, 30, 100, 500)
HUMAN_15 = np.array([0.05, 0.10, 0.20, 0.35, 0.30])  # P(y = 1..5): mean 3.75
RATES = (0.6, 0.8, 0.95)
PREVALENCES = (0.5, 0.85)
SCALE_JUDGES = ((0.0, 0.3), (0.0, 0.5), (0.0, 1.0), (0.0, 2.0), (1.0, 0.5), (1.0, 1.0), (1.0, 2.0))
GROUP_SIZE = 5
GROUP_SD, WITHIN_SD, GROUP_CENTRE = 0.7, 0.8, 3.6
TARGET_COVERAGE = 0.93
TARGET_NOT_WIDER = 0.99

FloatArray = npt.NDArray[np.float64]
Draw = tuple[FloatArray, ...]


@dataclass(frozen=True)
class PPICell:
    kind: str  # binary, scale, paired-binary, paired-scale, grouped-scale
    n: int
    sens: float = 0.0
    spec: float = 0.0
    prevalence: float = 0.0
    bias: float = 0.0
    noise: float = 0.0
    unrelated: bool = False
    lenient_treatment: bool = False

    @property
    def judge(self) -> str:
        if self.kind.endswith("binary"):
            return f"se{self.sens:g}/sp{self.spec:g}"
        if self.unrelated:
            return "unrelated"
        lenient = "/lenient-T" if self.lenient_treatment else ""
        return f"bias{self.bias:+g}/sd{self.noise:g}{lenient}"

    @property
    def id(self) -> str:
        prevalence = f"/p{self.prevalence:g}" if self.kind == "binary" else ""
        return f"{self.kind}{prevalence}/{self.judge}/n{self.n}"


def grid(ns: Iterable[int] = NS) -> list[PPICell]:
    cells: list[PPICell] = []
    for n in ns:
        for p in PREVALENCES:
            for se in RATES:
                for sp in RATES:
                    cells.append(PPICell("binary", n, sens=se, spec=sp, prevalence=p))
        for bias, noise in SCALE_JUDGES:
            cells.append(PPICell("scale", n, bias=bias, noise=noise))
        cells.append(PPICell("scale", n, unrelated=True))
        for rate in RATES:
            cells.append(PPICell("paired-binary", n, sens=rate, spec=rate))
        cells.append(PPICell("paired-scale", n, bias=1.0, noise=1.0))
        cells.append(PPICell("paired-scale", n, bias=1.0, noise=1.0, lenient_treatment=True))
        cells.append(PPICell("paired-scale", n, unrelated=True))
        cells.append(PPICell("grouped-scale", n, bias=1.0, noise=1.0))
    return cells


def _judge_scale(y: FloatArray, bias: float, noise: float, rng: np.random.Generator) -> FloatArray:
    return np.clip(np.round(y + bias + noise * rng.standard_normal(y.size)), 1, 5)


def _judge_binary(y: FloatArray, sens: float, spec: float, rng: np.random.Generator) -> FloatArray:
    u = rng.random(y.size)
    return np.where(y == 1, u < sens, u >= spec).astype(np.float64)


def _judge(cell: PPICell, y: FloatArray, rng: np.random.Generator, bias: float) -> FloatArray:
    if cell.kind.endswith("binary"):
        return _judge_binary(y, cell.sens, cell.spec, rng)
    if cell.unrelated:
        return rng.integers(1, 6, y.size).astype(np.float64)
    return _judge_scale(y, bias, cell.noise, rng)


def truth(cell: PPICell) -> float:
    """θ: the human-scale mean (or mean difference) the cell's runs are drawn from."""
    levels = np.arange(1, 6)
    if cell.kind == "binary":
        return cell.prevalence
    if cell.kind == "scale":
        return float(levels @ HUMAN_15)
    if cell.kind == "paired-binary":
        return 0.7 * 0.95 + 0.3 * 0.4 - 0.7
    if cell.kind == "paired-scale":
        return 0.3 * float(1 - HUMAN_15[-1])
    return float(levels @ _grouped_levels())


def _grouped_levels() -> FloatArray:
    """P(y = k) when y = clip(round(centre + group + within), 1, 5): the sum is normal."""
    sd = math.hypot(GROUP_SD, WITHIN_SD)
    cuts = [-math.inf, 1.5, 2.5, 3.5, 4.5, math.inf]
    cdf = [0.0 if c == -math.inf else 1.0 if c == math.inf else
           NormalDist(GROUP_CENTRE, sd).cdf(c) for c in cuts]  # fmt: skip
    return np.diff(np.array(cdf))


def draw(cell: PPICell, rng: np.random.Generator) -> tuple[Draw, FloatArray | None]:
    """One simulated experiment: the arrays the function under test takes, and the clusters."""
    n_total = N_TOTAL
    labelled = np.zeros(n_total, dtype=bool)
    labelled[rng.choice(n_total, cell.n, replace=False)] = True

    def hide(values: FloatArray) -> FloatArray:
        return np.where(labelled, values, np.nan)

    if cell.kind == "binary":
        y = (rng.random(n_total) < cell.prevalence).astype(np.float64)
        return (_judge(cell, y, rng, cell.bias), hide(y)), None
    if cell.kind == "scale":
        y = rng.choice(np.arange(1.0, 6.0), n_total, p=HUMAN_15)
        return (_judge(cell, y, rng, cell.bias), hide(y)), None
    if cell.kind == "grouped-scale":
        groups = np.repeat(np.arange(n_total // GROUP_SIZE), GROUP_SIZE)
        latent = GROUP_SD * rng.standard_normal(n_total // GROUP_SIZE)[groups]
        y = np.clip(
            np.round(GROUP_CENTRE + latent + WITHIN_SD * rng.standard_normal(n_total)), 1, 5
        )
        return (_judge(cell, y, rng, cell.bias), hide(y)), groups.astype(np.float64)
    if cell.kind == "paired-binary":
        yc = (rng.random(n_total) < 0.7).astype(np.float64)
        yt = (rng.random(n_total) < np.where(yc == 1, 0.95, 0.4)).astype(np.float64)
    else:
        yc = rng.choice(np.arange(1.0, 6.0), n_total, p=HUMAN_15)
        yt = np.minimum(5.0, yc + (rng.random(n_total) < 0.3))
    bias_c = cell.bias - 0.5 if cell.lenient_treatment else cell.bias
    fc, ft = _judge(cell, yc, rng, bias_c), _judge(cell, yt, rng, cell.bias)
    return (fc, ft, hide(yc), hide(yt)), None


FIELDS = (
    "covered", "width", "human_width", "not_wider", "fell_back", "too_weak", "error",
    "ppi_covered", "human_covered", "refused", "rg_covered", "rg_width", "rg_refused",
)  # fmt: skip


# What each variant passes: calipers' defaults, the paper's in-sample λ̂ with calipers' t interval
# (no stratified form for 0/1), and the paper's estimator and normal interval exactly (`ppi_py`).
VARIANTS: dict[str, dict[str, Any]] = {
    "calipers": {},
    "in-sample": {"cross_fit": False, "stratify": False},
    "paper": {"cross_fit": False, "stratify": False, "asymptotic": True},
}


def _one(cell: PPICell, theta: float, rng: np.random.Generator, variant: str) -> list[float]:
    arrays, clusters = draw(cell, rng)
    row = [math.nan] * len(FIELDS)
    options = dict(VARIANTS[variant])
    try:
        if cell.kind.startswith("paired"):
            options.pop("stratify", None)
            result: PPIResult = ppi_paired_difference(
                *arrays, clusters=clusters, min_labels=2, **options
            )
        else:
            result = ppi_mean(*arrays, clusters=clusters, min_labels=2, **options)
    except NoInterval:
        row[FIELDS.index("refused")] = 1.0
        return row
    human = result.human_only
    row[:10] = [
        float(result.interval.contains(theta)),
        result.high - result.low,
        math.nan if human is None else human.high - human.low,
        math.nan if human is None else float(result.high - result.low <= human.high - human.low),
        float(result.fell_back),
        float(result.judge_too_weak),
        result.estimate - theta,
        math.nan if result.ppi is None else float(result.ppi.contains(theta)),
        math.nan if human is None else float(human.contains(theta)),
        0.0,
    ]
    if cell.kind == "binary":
        try:
            rg = corrected_proportion(*arrays, min_labels=2)
            row[10:] = [float(rg.contains(theta)), rg.high - rg.low, 0.0]
        except NoInterval:
            row[12] = 1.0
    return row


def run_cell(
    cell: PPICell, reps: int, seed: int, index: int, variant: str = "calipers"
) -> dict[str, Any]:
    rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
    theta = truth(cell)
    start = time.perf_counter()
    rows = np.array([_one(cell, theta, rng, variant) for _ in range(reps)], dtype=np.float64)
    col = {name: rows[:, i] for i, name in enumerate(FIELDS)}

    def mean(x: FloatArray) -> float:
        x = x[np.isfinite(x)]
        return float(x.mean()) if x.size else math.nan

    ratio = col["width"] / col["human_width"]
    rg_ratio = col["rg_width"] / col["human_width"]
    return {
        "id": cell.id,
        "cell": asdict(cell),
        "theta": theta,
        "reps": reps,
        "coverage": mean(col["covered"]),
        "ppi_coverage": mean(col["ppi_covered"]),
        "human_coverage": mean(col["human_covered"]),
        "not_wider": mean(col["not_wider"]),
        "fell_back": mean(col["fell_back"]),
        "too_weak": mean(col["too_weak"]),
        "width_ratio": mean(ratio),
        "bias": mean(col["error"]),
        "refused": float(np.nansum(col["refused"]) / reps),
        "rg_coverage": mean(col["rg_covered"]),
        "rg_width_ratio": mean(rg_ratio),
        "rg_refused": float(np.nansum(col["rg_refused"]) / reps) if cell.kind == "binary" else None,
        "wall_s": time.perf_counter() - start,
    }


def run(
    cells: list[PPICell],
    *,
    reps: int = DEFAULT_REPS,
    seed: int = DEFAULT_SEED,
    jobs: int = 1,
    variant: str = "calipers",
    progress: Callable[[dict[str, Any], int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Every cell, seeded by (seed, the cell's index): the same seed gives the same figures."""
    results: list[dict[str, Any]] = []
    if jobs <= 1:
        for i, cell in enumerate(cells):
            results.append(run_cell(cell, reps, seed, i, variant))
            if progress:
                progress(results[-1], len(results), len(cells))
        return results
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [
            pool.submit(run_cell, cell, reps, seed, i, variant) for i, cell in enumerate(cells)
        ]
        for future in futures:
            results.append(future.result())
            if progress:
                progress(results[-1], len(results), len(cells))
    return results


def _pct(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{100 * x:.1f}"


def _num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def markdown(results: list[dict[str, Any]], *, min_n: int = 0) -> str:
    """The results table: one line per cell with n ≥ min_n."""
    head = (
        "| cell | n | coverage % | PPI++ alone % | human-only % | not wider % | fell back % "
        "| weak % | width ratio | bias | R–G coverage % | R–G width ratio |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in results:
        c = r["cell"]
        if c["n"] < min_n:
            continue
        name = r["id"].rsplit("/n", 1)[0]
        lines.append(
            f"| {name} | {c['n']} | {_pct(r['coverage'])} | {_pct(r['ppi_coverage'])} "
            f"| {_pct(r['human_coverage'])} | {_pct(r['not_wider'])} | {_pct(r['fell_back'])} "
            f"| {_pct(r['too_weak'])} | {_num(r['width_ratio'], 2)} | {_num(r['bias'], 4)} "
            f"| {_pct(r['rg_coverage'])} | {_num(r['rg_width_ratio'], 2)} |"
        )
    return head + "\n".join(lines) + "\n"


def _joined(rows: list[dict[str, Any] | None], key: str, fmt: Callable[[Any], str]) -> str:
    return " · ".join("—" if r is None else fmt(r[key]) for r in rows)


def compact_table(results: list[dict[str, Any]], *, ns: tuple[int, ...] = (30, 100, 500)) -> str:
    """One line per judge, the labelled-slice sizes `ns` side by side (docs/judges.md)."""
    by_id = {r["id"]: r for r in results}
    names = list(dict.fromkeys(r["id"].rsplit("/n", 1)[0] for r in results))
    sizes = " / ".join(map(str, ns))
    head = (
        f"| cell | coverage % (n = {sizes}) | width ratio | fell back % | bias "
        "| R–G coverage % | R–G width ratio |\n|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for name in names:
        rows = [by_id.get(f"{name}/n{n}") for n in ns]
        if all(r is None for r in rows):
            continue
        binary = name.startswith("binary/")
        lines.append(
            f"| {name} | {_joined(rows, 'coverage', _pct)} "
            f"| {_joined(rows, 'width_ratio', lambda x: _num(x, 2))} "
            f"| {_joined(rows, 'fell_back', _pct)} "
            f"| {_joined(rows, 'bias', lambda x: _num(x, 3))} "
            f"| {_joined(rows, 'rg_coverage', _pct) if binary else '—'} "
            f"| {_joined(rows, 'rg_width_ratio', lambda x: _num(x, 2)) if binary else '—'} |"
        )
    return head + "\n".join(lines) + "\n"


def minimum_table(results: list[dict[str, Any]]) -> str:
    """Per labelled-slice size: the worst cell's coverage, how many cells miss 93%, the worst
    never-wider share and the largest |bias| — what decided MIN_LABELS."""
    head = (
        "| labels | cells | worst coverage % (cell) | cells under 93% | never wider % (worst) "
        "| largest \\|bias\\| |\n|---|---|---|---|---|---|\n"
    )
    lines = []
    for n in sorted({r["cell"]["n"] for r in results}):
        kept = [r for r in results if r["cell"]["n"] == n]
        worst = min(kept, key=lambda r: r["coverage"])
        under = sum(r["coverage"] < TARGET_COVERAGE for r in kept)
        lines.append(
            f"| {n} | {len(kept)} | {_pct(worst['coverage'])} ({worst['id'].rsplit('/n', 1)[0]}) "
            f"| {under} | {_pct(min(r['not_wider'] for r in kept))} "
            f"| {max(abs(r['bias']) for r in kept):.3f} |"
        )
    return head + "\n".join(lines) + "\n"


def variant_table(variants: dict[str, list[dict[str, Any]]], *, ns: tuple[int, ...]) -> str:
    """Cells under 93% and the worst coverage per labelled-slice size, for each variant."""
    head = (
        "| variant | " + " | ".join(f"{n} labels: under 93% · worst" for n in ns) + " |\n"
        "|---|" + "---|" * len(ns) + "\n"
    )
    lines = []
    for name, results in variants.items():
        parts = []
        for n in ns:
            kept = [r for r in results if r["cell"]["n"] == n]
            under = sum(r["coverage"] < TARGET_COVERAGE for r in kept)
            parts.append(f"{under} of {len(kept)} · {_pct(min(r['coverage'] for r in kept))}")
        lines.append(f"| {name} | " + " | ".join(parts) + " |")
    return head + "\n".join(lines) + "\n"


def summary(results: list[dict[str, Any]], *, min_n: int) -> dict[str, Any]:
    """The worst figures over the cells with n ≥ min_n, and the cells that miss a target."""
    kept = [r for r in results if r["cell"]["n"] >= min_n]
    misses = [r["id"] for r in kept if r["coverage"] < TARGET_COVERAGE]
    misses += [r["id"] for r in kept if r["not_wider"] < TARGET_NOT_WIDER]
    return {
        "min_n": min_n,
        "cells": len(kept),
        "worst_coverage": min(r["coverage"] for r in kept),
        "worst_not_wider": min(r["not_wider"] for r in kept),
        "max_abs_bias": max(abs(r["bias"]) for r in kept),
        "misses": misses,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calipers.calibration.ppi", description=__doc__)
    parser.add_argument("--reps", type=int, default=DEFAULT_REPS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ns", default=",".join(map(str, NS)), help="labelled slice sizes")
    parser.add_argument("--only", help="only cells whose id contains this text")
    parser.add_argument(
        "--variant", choices=sorted(VARIANTS), default="calipers",
        help="calipers' defaults, the paper's in-sample λ̂, or the paper's interval exactly",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--markdown", action="store_true", help="print docs/judges.md's tables")
    parser.add_argument("--min-n", type=int, default=0, help="summary over cells from this n")
    parser.add_argument("--from-json", type=Path, help="print the tables of figures written before")
    args = parser.parse_args(argv)
    if args.from_json:
        figures = json.loads(args.from_json.read_text())["cells"]
        print(compact_table(figures) + "\n" + minimum_table(figures), end="")
        return 0
    cells = grid(int(x) for x in args.ns.split(","))
    if args.only:
        cells = [c for c in cells if args.only in c.id]

    def progress(result: dict[str, Any], done: int, total: int) -> None:
        print(
            f"[{done}/{total}] {result['id']}: coverage {_pct(result['coverage'])}%, "
            f"not wider {_pct(result['not_wider'])}% ({result['wall_s']:.1f} s)",
            file=sys.stderr,
        )

    start = time.perf_counter()
    results = run(
        cells, reps=args.reps, seed=args.seed, jobs=args.jobs, variant=args.variant,
        progress=progress,
    )  # fmt: skip
    wall = time.perf_counter() - start
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        body = {"seed": args.seed, "reps": args.reps, "variant": args.variant,
                "n_total": N_TOTAL, "wall_s": wall, "cells": results}  # fmt: skip
        args.json.write_text(json.dumps(body, indent=1) + "\n")
    if args.markdown:
        print(compact_table(results) + "\n" + minimum_table(results), end="")
    print(json.dumps(summary(results, min_n=args.min_n), indent=1), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
