"""`python -m calipers.calibration`: run a grid, print the summary, write the report."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from calipers.calibration import agreement, engine, report, sequential_report, studies
from calipers.calibration.aggregate import Targets, assess_all
from calipers.calibration.grid import (
    GROUPS,
    REDUCED_SETTINGS,
    Settings,
    full_grid,
    reduced_grid,
)
from calipers.calibration.runner import CellOutcome, run_grid
from calipers.errors import InputError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m calipers.calibration",
        description="Measure the engine's intervals and verdicts on simulations with known truth.",
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="the full grid (default)")
    size.add_argument("--reduced", action="store_true", help="the reduced grid (200 reps)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--seed", type=int, default=None,
        help=f"base seed (default {Settings().seed}): a second seed reruns every cell afresh",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, help="write the markdown report here")
    parser.add_argument("--json", type=Path, help="write the JSON figures here")
    parser.add_argument("--reps-null", type=int, help="null reps per cell")
    parser.add_argument("--reps-alt", type=int, help="alternative reps per cell")
    parser.add_argument("--n-resamples", type=int, help="bootstrap resamples (default 2000)")
    parser.add_argument(
        "--allowance",
        type=float,
        help="Monte Carlo standard errors of slack before a figure misses its target "
        "(default 0 for the full grid, 2 for the reduced one)",
    )
    parser.add_argument(
        "--noise",
        type=float,
        help="a figure worse than its target by fewer Monte Carlo standard errors than this is "
        '"within noise", not failed (default 2; 0: every miss fails)',
    )
    parser.add_argument(
        "--group", choices=sorted(GROUPS),
        help="only this group of the grid: core (the harness's own models) or families (models "
        "it was not built around)",
    )  # fmt: skip
    parser.add_argument(
        "--only", help="only cells whose id contains this text (several: separated by commas)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when any cell fails")
    parser.add_argument(
        "--ppi-json", type=Path, default=studies.PPI_JSON,
        help=f"the PPI++ study's figures, for its section (default {studies.PPI_JSON})",
    )  # fmt: skip
    parser.add_argument(
        "--rank-json", type=Path, default=studies.RANK_JSON,
        help=f"the rank-interval study's figures, for its section (default {studies.RANK_JSON})",
    )  # fmt: skip
    parser.add_argument(
        "--sections-only", action="store_true",
        help="only put the studies' sections into the page --out (no grid is run)",
    )  # fmt: skip
    parser.add_argument(
        "--sequential", action="store_true",
        help="the sequential designs' grid (issue 36) instead of the main one: its JSON "
        f"(--json, default {sequential_report.SEQUENTIAL_JSON}) and its section of --out",
    )  # fmt: skip
    parser.add_argument(
        "--sequential-json", type=Path, default=sequential_report.SEQUENTIAL_JSON,
        help="the sequential grid's figures, for its section of the page the main grid writes "
        f"(default {sequential_report.SEQUENTIAL_JSON})",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.sections_only:
        return _sections_only(args.out, args.ppi_json, args.rank_json, args.sequential_json)
    if args.sequential:
        return _sequential(args)

    grid = "reduced" if args.reduced else "full"
    cells = reduced_grid() if args.reduced else full_grid()
    settings = REDUCED_SETTINGS if args.reduced else Settings()
    changes = {
        "seed": args.seed,
        "reps_null": args.reps_null,
        "reps_alt": args.reps_alt,
        "n_resamples": args.n_resamples,
    }
    settings = Settings(
        **{**settings.__dict__, **{k: v for k, v in changes.items() if v is not None}}
    )
    if args.group:
        wanted = {c.id for c in GROUPS[args.group]()}
        cells = [c for c in cells if c.id in wanted]
        grid = f"{grid}, group {args.group}"
    if args.only:
        texts = [t for t in args.only.split(",") if t]
        cells = [c for c in cells if any(t in c.id for t in texts)]
    allowance = args.allowance if args.allowance is not None else (2.0 if args.reduced else 0.0)
    targets = Targets(allowance=allowance)
    if args.noise is not None:
        targets = Targets(allowance=allowance, noise=args.noise)

    def progress(outcome: CellOutcome, done: int, total: int) -> None:
        print(f"[{done}/{total}] {outcome.cell.id}: {outcome.wall_s:.1f} s", file=sys.stderr)

    start = time.perf_counter()
    outcomes = run_grid(cells, settings, jobs=args.jobs, progress=progress)
    wall = time.perf_counter() - start
    reports = assess_all(outcomes, targets)
    common = {
        "grid": grid,
        "settings": settings,
        "targets": targets,
        "engine": engine.features(),
        "wall_s": wall,
        "jobs": args.jobs,
    }
    text = report.markdown(reports, **common)
    text = studies.splice(text, studies.sections(args.ppi_json, args.rank_json))
    text = sequential_report.splice(text, sequential_report.generated(args.sequential_json))
    text = agreement.splice(text, agreement.generated())
    if args.out:
        report.write(args.out, text)
    if args.json:
        report.write_json(args.json, report.document(reports, **common))
    failed = [r for r in reports if not r.passed]
    noisy = [r for r in reports if r.passed and r.noisy]
    print(
        f"{len(reports) - len(failed)} of {len(reports)} cells pass ({len(noisy)} within noise); "
        f"wall {wall:.0f} s"
    )
    for r in failed:
        print(f"FAIL {r.id}: " + "; ".join(f.describe() for f in r.failures))
    for r in noisy:
        print(f"within noise {r.id}: " + "; ".join(f.describe() for f in r.noisy))
    return 1 if args.check and failed else 0


def _sequential(args: argparse.Namespace) -> int:
    """The sequential grid: run, write its JSON, put its section into --out."""
    import json

    from calipers.calibration import sequential

    cells = sequential.reduced_grid() if args.reduced else sequential.full_grid()
    settings = sequential.REDUCED if args.reduced else sequential.SeqSettings()
    changes = {"seed": args.seed, "reps_null": args.reps_null, "reps_alt": args.reps_alt}
    settings = sequential.SeqSettings(
        **{**settings.__dict__, **{k: v for k, v in changes.items() if v is not None}}
    )
    if args.only:
        texts = [t for t in args.only.split(",") if t]
        cells = [c for c in cells if any(t in c.id for t in texts)]

    def progress(result: dict[str, object], done: int, total: int) -> None:
        cell = result["cell"]
        assert isinstance(cell, dict)
        print(f"[{done}/{total}] {cell['id']}: {result['wall_s']:.1f} s", file=sys.stderr)

    start = time.perf_counter()
    results = sequential.run_grid(cells, settings, jobs=args.jobs, progress=progress)
    wall = time.perf_counter() - start
    allowance = args.allowance if args.allowance is not None else (2.0 if args.reduced else 0.0)
    noise = 2.0 if args.noise is None else args.noise
    body = {
        "machine": _machine(),
        "grid": "reduced" if args.reduced else "full",
        "seed": settings.seed,
        "reps_null": settings.reps_null,
        "reps_alt": settings.reps_alt,
        "jobs": args.jobs,
        "wall_s": wall,
        "allowance": allowance,
        "noise": noise,
        "look_cost_ms": sequential.look_cost(n=300 if args.reduced else 1000),
        "cells": results,
    }
    path = args.json or sequential_report.SEQUENTIAL_JSON
    report.write(path, json.dumps(body, indent=1, ensure_ascii=False) + "\n")
    if args.out:
        page = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        report.write(args.out, sequential_report.splice(page, sequential_report.generated(path)))
    verdict = sequential_report.assess(results, allowance=allowance, noise=noise)
    print(
        f"{verdict['checks'] - len(verdict['failed'])} of {verdict['checks']} checks pass "
        f"({len(verdict['noisy'])} within noise); wall {wall:.0f} s; wrote {path}"
    )
    for c in verdict["failed"]:
        print(f"FAIL {c.describe()}")
    for c in verdict["noisy"]:
        print(f"within noise {c.describe()}")
    for cell_id in verdict["irreproducible"]:
        print(f"FAIL {cell_id}: the same seed gave different stops")
    bad = verdict["failed"] or verdict["irreproducible"]
    return 1 if args.check and bad else 0


def _machine() -> dict[str, object]:
    """The date and machine, as the benchmarks record them."""
    import os
    import platform
    from datetime import UTC, datetime

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
    }


def _sections_only(out: Path | None, ppi: Path, ranks: Path, sequential_json: Path) -> int:
    """The studies' sections put into the existing page `out`, the rest of it unchanged."""
    if out is None:
        print("error: --sections-only needs --out PAGE (the page to update)", file=sys.stderr)
        return 2
    if not out.exists():
        print(
            f"error: {out} does not exist; run the grid first (make calibrate) or name an "
            "existing page with --out",
            file=sys.stderr,
        )
        return 2
    try:
        generated = studies.sections(ppi, ranks)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    page = studies.splice(out.read_text(encoding="utf-8"), generated)
    try:
        page = sequential_report.splice(page, sequential_report.generated(sequential_json))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report.write(out, agreement.splice(page, agreement.generated()))
    print(f"wrote the studies' sections into {out} (from {ppi}, {ranks} and {sequential_json})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
