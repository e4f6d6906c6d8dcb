"""`calipers check` against `kelvin check` (kelvin-eval 0.3.0) on the six reference cases, with a
deterministic pipeline that sleeps 0.2 s per call (tests/fixtures/pipelines/stage_pipeline.py, run
as `python -S` by both tools: on a 2-core machine the pipeline's own start-up CPU, ~30 ms × 66
calls, is a large part of the floor).

    .venv/bin/python benchmarks/bench_check.py

In one run, in fresh temporary project directories (same kelvin.yaml, same cases): kelvin (its
cache off, the default), calipers cold at `-j 8` (empty cache), then calipers warm (the same
command again). Checks that both give the same numbers, and that the warm run invokes nothing
(the pipeline logs each call). Goal: calipers ≥ 3× faster than kelvin cold; 0 calls warm.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import save

ROOT = Path(__file__).parent.parent
CASES = ROOT / "tests" / "fixtures" / "kelvin" / "cases"
PIPELINE = ROOT / "tests" / "fixtures" / "pipelines" / "stage_pipeline.py"
BIN = Path(sys.executable).parent
KEYS = ("invariance", "invariance_sample", "sensitivity", "sensitivity_sample", "kelvin_score")


def make_project(root: Path) -> None:
    shutil.copytree(CASES, root / "cases")
    (root / "kelvin.yaml").write_text(
        f'run: "{sys.executable} -S {PIPELINE} {{input}} {{output}}"\ncases: cases\n'
        "decision_field: stage_assessment\ngoverning_types: [gate_rule]\nseed: 0\n"
    )


def timed(command: list[str], cwd: Path, log: Path) -> tuple[float, int]:
    env = {**os.environ, "STAGE_SLEEP": "0.2", "STAGE_COUNT": str(log)}
    before = len(log.read_text()) if log.exists() else 0
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True)
    elapsed = time.perf_counter() - start
    return elapsed, (len(log.read_text()) if log.exists() else 0) - before


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        base = Path(tmp)
        theirs = base / "kelvin-project"
        make_project(theirs)
        kelvin_s, kelvin_calls = timed([str(BIN / "kelvin"), "check"], theirs, base / "k.log")
        command = [str(BIN / "calipers"), "check", "-j", "8", "-q", "--no-store"]
        colds = []
        for i in range(3):  # a fresh project (empty cache) each time; the median counts
            ours = base / f"calipers-project-{i}"
            make_project(ours)
            colds.append(timed(command, ours, base / f"c{i}.log"))
        cold_s, cold_calls = sorted(colds)[1]
        warm_s, warm_calls = timed(command, ours, base / "c2.log")
        k = json.loads((theirs / "kelvin" / "report.json").read_text())
        c = json.loads((ours / "kelvin" / "report.json").read_text())
    same = all(k[key] == c[key] for key in KEYS)
    results = {
        "kelvin_s": round(kelvin_s, 2),
        "kelvin_calls": kelvin_calls,
        "calipers_cold_s": round(cold_s, 2),
        "calipers_cold_runs_s": [round(t, 2) for t, _ in colds],
        "calipers_cold_calls": cold_calls,
        "calipers_warm_s": round(warm_s, 2),
        "calipers_warm_calls": warm_calls,
        "speedup": round(kelvin_s / cold_s, 2),
        "same_numbers": same,
        "numbers": {key: c[key] for key in KEYS},
    }
    print(f"kelvin 0.3.0         {kelvin_s:6.2f} s  {kelvin_calls} pipeline calls")
    runs = ", ".join(f"{t:.2f}" for t, _ in colds)
    print(f"calipers -j 8, cold  {cold_s:6.2f} s  {cold_calls} pipeline calls (median of {runs})")
    print(f"calipers -j 8, warm  {warm_s:6.2f} s  {warm_calls} pipeline calls")
    print(f"speed-up {kelvin_s / cold_s:.1f}× (goal ≥ 3×); same numbers: {same}")
    save("check", results)
    if not same:
        sys.exit("the numbers differ")


if __name__ == "__main__":
    main()
