"""The command line every separate calibration study shares (`calipers.calibration.cost`,
`cost_families`, `cost_selection`): `--reps`, `--seed`, `--only TEXT` (cells whose id contains
it) and `--json PATH`; each cell run on `default_rng([seed, cell number])` by the study's own
`run_cell`, a line printed per cell, the figures written as one JSON body."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def run_study(
    argv: Sequence[str] | None,
    *,
    prog: str,
    study: str,
    seed: int,
    grid: Sequence[Any],
    run_cell: Callable[[Any, int, int, int], dict[str, Any]],
    line: Callable[[Any, dict[str, Any]], str],
    extra: dict[str, Any] | None = None,
) -> int:
    """Parse `argv`, run the cells of `grid` that `--only` keeps (numbered by their place in the
    whole grid, so a cell's draws do not depend on which others run), print `line(cell, made)`
    for each, and write {study, reps, seed, **extra, wall_s, cells} to `--json`."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=seed)
    parser.add_argument("--only", default=None, help="cells whose id contains this text")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(None if argv is None else list(argv))
    started = time.perf_counter()
    cells = []
    for number, cell in enumerate(grid):
        if args.only and args.only not in cell.id:
            continue
        t0 = time.perf_counter()
        made = run_cell(cell, args.reps, args.seed, number)
        made["wall_s"] = time.perf_counter() - t0
        cells.append(made)
        print(line(cell, made), flush=True)
    body = {
        "study": study, "reps": args.reps, "seed": args.seed, **(extra or {}),
        "wall_s": time.perf_counter() - started, "cells": cells,
    }  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    return 0
