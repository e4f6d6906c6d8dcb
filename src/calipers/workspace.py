"""Where calipers keeps its files in the working directory: every `.calipers/...` path is named
here and nowhere else."""

from __future__ import annotations

from pathlib import Path

WORKSPACE = Path(".calipers")
DEFAULT_DB = WORKSPACE / "calipers.duckdb"  # the store; `--db` or CALIPERS_DB to choose another
JUDGE_CACHE = WORKSPACE / "judge-cache"  # judge replies by content hash
RUNS_DIR = WORKSPACE / "runs"  # pipeline inputs and outputs of `calipers run`, per run
PIPELINE_CACHE = WORKSPACE / "cache"  # pipeline outputs by content hash (run and check)
DEMO_DIR = WORKSPACE / "demo"  # what `calipers demo` writes
