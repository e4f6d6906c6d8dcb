"""`calipers run` on its executors: 48 tasks through a pipeline that sleeps 0.2 s per call
(tests/fixtures/pipelines/answer_pipeline.py, as `python -S`), judged by a command judge.

    .venv/bin/python benchmarks/bench_run.py

In one run, each in a fresh directory (empty caches): serial (`-j 1`), the local thread pool at
`-j 8`, and Ray at `-j 8` (a private local instance, its start-up included); then a warm re-run on
each executor, which must make 0 pipeline invocations. Checks that every executor stores the same
outputs and judgments. Ray cannot beat threads on one machine (the work is waiting on
subprocesses); what it buys is the same run spread over a cluster — this measures its overhead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).parent))
from _machine import save

ROOT = Path(__file__).parent.parent
PIPELINE = ROOT / "tests" / "fixtures" / "pipelines" / "answer_pipeline.py"
JUDGE = ROOT / "tests" / "fixtures" / "judges" / "length_judge.py"
BIN = Path(sys.executable).parent
TASKS = 48


def make_project(root: Path) -> None:
    root.mkdir()
    lines = ["name: bench", "tasks:"]
    for i in range(TASKS):
        topic = ("refund", "capital", "weather")[i % 3]
        lines.append(f'  - id: t{i:02d}\n    input: "A {topic} question, number {i}"')
        lines.append("    assertions:\n      - {type: max_length, value: 80}")
    (root / "suite.yaml").write_text("\n".join(lines) + "\n")


def run(root: Path, *args: str) -> tuple[float, dict[str, object]]:
    command = [
        str(BIN / "calipers"), "run", "suite.yaml", "--run", "bench", "-q", "--json", "r.json",
        "--pipeline", f"{sys.executable} -S {PIPELINE} {{input}} {{output}}",
        "--judge", f"command:{sys.executable} -S {JUDGE}", *args,
    ]  # fmt: skip
    env = {**os.environ, "ANSWER_SLEEP": "0.2"}
    start = time.perf_counter()
    subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
    return time.perf_counter() - start, json.loads((root / "r.json").read_text())


def stored(root: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(root / ".calipers" / "calipers.duckdb"), read_only=True)
    try:
        return con.execute(
            "SELECT task, output, [j.score FOR j IN judgments] FROM samples ORDER BY task"
        ).fetchall()
    finally:
        con.close()


def main() -> None:
    results: dict[str, object] = {"tasks": TASKS, "sleep_s": 0.2}
    contents = []
    with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
        for label, args in (("serial", ["-j", "1"]), ("local_j8", ["-j", "8"]),
                            ("ray_j8", ["-j", "8", "--executor", "ray"])):  # fmt: skip
            root = Path(tmp) / label
            make_project(root)
            cold, report = run(root, *args)
            warm, again = run(root, *args)
            assert again["invocations"] == 0, again
            contents.append(stored(root))
            results[label] = {"cold_s": round(cold, 2), "warm_s": round(warm, 2),
                              "invocations": report["invocations"],
                              "warm_invocations": again["invocations"]}  # fmt: skip
            print(f"{label:9} cold {cold:6.2f} s ({report['invocations']} invocations, "
                  f"{TASKS} judge calls) · warm {warm:5.2f} s (0 invocations)")  # fmt: skip
    same = all(c == contents[0] for c in contents)
    results["same_samples"] = same
    print(f"same outputs and judgments on every executor: {same}")
    save("run", results)
    if not same:
        sys.exit("the executors stored different samples")


if __name__ == "__main__":
    main()
