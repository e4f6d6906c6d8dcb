"""`calipers check` against `kelvin check` (kelvin-eval 0.3.0) on the six reference cases, with a
deterministic pipeline that sleeps 0.2 s per call (tests/fixtures/pipelines/stage_pipeline.py, run
as `python -S` by both tools: on a 2-core machine the pipeline's own start-up CPU, ~30 ms × 66
calls, is a large part of the floor).

    .venv/bin/python benchmarks/bench_check.py

Three pairs, each in fresh temporary project directories (same kelvin.yaml, same cases): kelvin
(its cache off, the default), calipers cold at `-j 8` (empty cache), then calipers warm (the same
command again); medians of the three, and the median of the three pairs' speed-ups. Checks that
both give the same numbers, and that the warm run invokes nothing (the pipeline logs each call).
Goal: calipers ≥ 3× faster than kelvin cold; warm re-run < 0.5 s and 0 calls.

Both tools run from bytecode, as installed packages do: when PYTHONDONTWRITEBYTECODE is set
(calipers is an editable install, so it would otherwise compile its sources on every start while
kelvin's site-packages have their .pyc), the children get a private PYTHONPYCACHEPREFIX instead,
and an untimed warm-up run of each tool fills it. The warm run's CPU (user + sys of the whole
process, no children) is reported too: it moves much less than wall time on a loaded machine.
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


def timed(
    command: list[str], cwd: Path, log: Path, env: dict[str, str]
) -> tuple[float, int, float]:
    """(wall s, pipeline calls, CPU s of the process and of the children it waited for)."""
    before = len(log.read_text()) if log.exists() else 0
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, cwd=cwd, env={**env, "STAGE_COUNT": str(log)}, stdout=subprocess.DEVNULL,
            stderr=err,
        )  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            sys.exit(f"{command[0]} failed: {err.read().decode(errors='replace')}")
    calls = (len(log.read_text()) if log.exists() else 0) - before
    return elapsed, calls, usage.ru_utime + usage.ru_stime


def environment(base: Path) -> dict[str, str]:
    env = {**os.environ, "STAGE_SLEEP": "0.2"}
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    return env


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main() -> None:
    load_before = os.getloadavg()
    kelvin_cmd = [str(BIN / "kelvin"), "check"]
    command = [str(BIN / "calipers"), "check", "-j", "8", "-q", "--no-store"]
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        base = Path(tmp)
        env = environment(base)
        for name, cmd in (("kelvin", kelvin_cmd), ("calipers", command)):  # fill the bytecode cache
            make_project(base / f"warm-up-{name}")
            timed(cmd, base / f"warm-up-{name}", base / "w.log", {**env, "STAGE_SLEEP": "0"})
        kelvins, colds, warms = [], [], []
        for i in range(3):
            theirs, ours = base / f"kelvin-project-{i}", base / f"calipers-project-{i}"
            make_project(theirs)
            make_project(ours)
            kelvins.append(timed(kelvin_cmd, theirs, base / f"k{i}.log", env))
            colds.append(timed(command, ours, base / f"c{i}.log", env))
            warms.append(timed(command, ours, base / f"c{i}.log", env))
        k = json.loads((theirs / "kelvin" / "report.json").read_text())
        c = json.loads((ours / "kelvin" / "report.json").read_text())
    load_after = os.getloadavg()
    same = all(k[key] == c[key] for key in KEYS)
    kelvin_s, cold_s = median([t for t, *_ in kelvins]), median([t for t, *_ in colds])
    warm_s, warm_cpu = median([t for t, *_ in warms]), median([cpu for *_, cpu in warms])
    pair_speedups = [kt / ct for (kt, *_), (ct, *_) in zip(kelvins, colds, strict=True)]
    results = {
        "kelvin_s": round(kelvin_s, 2),
        "kelvin_runs_s": [round(t, 2) for t, *_ in kelvins],
        "kelvin_calls": kelvins[-1][1],
        "calipers_cold_s": round(cold_s, 2),
        "calipers_cold_runs_s": [round(t, 2) for t, *_ in colds],
        "calipers_cold_calls": colds[-1][1],
        "calipers_warm_s": round(warm_s, 2),
        "calipers_warm_runs_s": [round(t, 2) for t, *_ in warms],
        "calipers_warm_cpu_s": round(warm_cpu, 3),
        "calipers_warm_calls": max(calls for _, calls, _ in warms),
        "speedup": round(kelvin_s / cold_s, 2),
        "pair_speedups": [round(x, 2) for x in pair_speedups],
        "median_pair_speedup": round(median(pair_speedups), 2),
        "same_numbers": same,
        "numbers": {key: c[key] for key in KEYS},
        "bytecode_prefix": "PYTHONPYCACHEPREFIX" in env,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after],
    }

    def runs(xs: list[tuple[float, int, float]]) -> str:
        return ", ".join(f"{t:.2f}" for t, *_ in xs)

    print(f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"kelvin 0.3.0         {kelvin_s:6.2f} s  {kelvins[-1][1]} pipeline calls "
          f"(median of {runs(kelvins)})")  # fmt: skip
    print(f"calipers -j 8, cold  {cold_s:6.2f} s  {colds[-1][1]} pipeline calls "
          f"(median of {runs(colds)})")  # fmt: skip
    print(f"calipers -j 8, warm  {warm_s:6.2f} s  {results['calipers_warm_calls']} pipeline calls "
          f"(median of {runs(warms)}; {warm_cpu:.3f} s CPU)")  # fmt: skip
    print(f"speed-up {kelvin_s / cold_s:.2f}× (median of pairs {median(pair_speedups):.2f}×, "
          f"goal ≥ 3×); same numbers: {same}")  # fmt: skip
    save("check", results)
    if not same:
        sys.exit("the numbers differ")


if __name__ == "__main__":
    main()
