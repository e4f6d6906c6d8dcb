"""`calipers run`'s own CPU per pipeline call: everything calipers does around one invocation (job
directory, input file, cache key and lookup, spawning and reaping the child, reading and parsing
its output, the cache entry, grading, the store row), without the pipeline's own CPU.

    .venv/bin/python benchmarks/bench_overhead.py [--tasks 200] [--repeats 3]

calipers runs in-process under a small wrapper that records, at exit, `getrusage(RUSAGE_SELF)`
(calipers' own CPU, every thread included) and `getrusage(RUSAGE_CHILDREN)` (the pipelines and
their shells, which calipers waits for) separately. CPU time, unlike wall time, barely depends on
what else the machine runs. Per call = (CPU of an N-task run − CPU of a 1-task run) / (N − 1):
the start-up (imports, suite, store, report) cancels out. Cold runs (empty cache: N invocations)
and warm re-runs (N cache hits, 0 invocations) at `-j 1` and `-j 8`, each the median of
`--repeats` fresh directories.

Two pipelines: `sh`, a shell `printf` (no interpreter: its CPU is ~1 ms, so the child's share is
small and the subtraction clean) and `python`, tests/fixtures/pipelines/answer_pipeline.py as
`python -S` (a realistic child, ~20–30 ms of its own start-up CPU, all of it in RUSAGE_CHILDREN).
Goal: ≤ 5 ms of calipers' CPU per pipeline call. The slope is everything that grows with the
tasks, so it includes per-task work beyond the invocation itself: reading the task from the suite
YAML (~0.25 ms with PyYAML's pure-Python loader), grading its assertion and its row in the store.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import save

ROOT = Path(__file__).parent.parent
ANSWER = ROOT / "tests" / "fixtures" / "pipelines" / "answer_pipeline.py"
PIPELINES = {
    "sh": 'printf \'{{"output": "ok"}}\' > {output}',  # braces doubled: a template
    "python": f"{sys.executable} -S {ANSWER} {{input}} {{output}}",
}

# calipers' console script, plus its CPU and its children's at exit (atexit runs after main's
# SystemExit; the reaper is still alive then, so it never counts as a child).
WRAPPER = """
import atexit, json, resource, sys
usage = sys.argv.pop(1)
def _dump():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(usage, "w") as fh:
        json.dump({"self": s.ru_utime + s.ru_stime, "children": c.ru_utime + c.ru_stime}, fh)
atexit.register(_dump)
sys.argv[0] = "calipers"
from calipers.cli.main import run
run()
"""


def make_suite(root: Path, tasks: int) -> None:
    root.mkdir(parents=True)
    lines = ["name: overhead", "tasks:"]
    for i in range(tasks):
        lines.append(f'  - id: t{i:04d}\n    input: "Question number {i}"')
        lines.append("    assertions:\n      - {type: max_length, value: 80}")
    (root / "suite.yaml").write_text("\n".join(lines) + "\n")


def measure(root: Path, pipeline: str, jobs: int) -> tuple[float, float, float]:
    """(calipers' CPU s, its children's CPU s, wall s) of one `calipers run` in `root`."""
    usage = root / "usage.json"
    command = [
        sys.executable, "-c", WRAPPER, str(usage), "run", "suite.yaml", "--run", "overhead",
        "-q", "-j", str(jobs), "--pipeline", pipeline,
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, cwd=root, check=True, capture_output=True)
    wall = time.perf_counter() - start
    got = json.loads(usage.read_text())
    return got["self"], got["children"], wall


def per_call(base: Path, pipeline: str, jobs: int, tasks: int, repeats: int) -> dict[str, float]:
    cold, warm, child, walls = [], [], [], []
    for i in range(repeats):
        one, many = base / f"j{jobs}-{i}-one", base / f"j{jobs}-{i}-many"
        make_suite(one, 1)
        make_suite(many, tasks)
        c1, k1, _ = measure(one, pipeline, jobs)
        cn, kn, wall = measure(many, pipeline, jobs)
        w1, _, _ = measure(one, pipeline, jobs)  # the same again: every call a cache hit
        wn, _, _ = measure(many, pipeline, jobs)
        cold.append((cn - c1) / (tasks - 1))
        warm.append((wn - w1) / (tasks - 1))
        child.append((kn - k1) / (tasks - 1))
        walls.append(wall)
    return {
        "cold_ms": round(1000 * statistics.median(cold), 2),
        "cold_runs_ms": [round(1000 * x, 2) for x in cold],
        "warm_ms": round(1000 * statistics.median(warm), 2),
        "child_ms": round(1000 * statistics.median(child), 2),
        "cold_wall_s": round(statistics.median(walls), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pipelines", default="sh,python")
    args = parser.parse_args()
    load = os.getloadavg()
    results: dict[str, object] = {"tasks": args.tasks, "repeats": args.repeats,
                                  "load_before": [round(x, 2) for x in load]}  # fmt: skip
    print(f"{args.tasks} tasks, median of {args.repeats}; load average {load[0]:.2f}")
    print("pipeline  -j  calipers CPU/call cold  (runs)              warm   child CPU/call")
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        for name in args.pipelines.split(","):
            for jobs in (1, 8):
                got = per_call(Path(tmp) / name, PIPELINES[name], jobs, args.tasks, args.repeats)
                results[f"{name}_j{jobs}"] = got
                runs = ", ".join(f"{x:.2f}" for x in got["cold_runs_ms"])  # type: ignore[attr-defined]
                print(f"{name:8s} {jobs:3d}  {got['cold_ms']:8.2f} ms  ({runs})  "
                      f"{got['warm_ms']:6.2f} ms  {got['child_ms']:6.2f} ms")  # fmt: skip
    results["load_after"] = [round(x, 2) for x in os.getloadavg()]
    save("overhead", results)


if __name__ == "__main__":
    main()
