"""Ray Data on this machine: the summaries engine (`compare --parquet --engine ray`) against
DuckDB's on the same Parquet datasets, and `calipers run --executor ray-data` against the local
thread pool on the same cases.

    .venv/bin/python benchmarks/bench_ray_data.py summaries --items 1000000   # 20M observations
    .venv/bin/python benchmarks/bench_ray_data.py run --cases 2000

summaries: the datasets of bench_scale.py (items × 10 epochs × 2 runs of pass/fail under run=A/,
run=B/; built once into benchmarks/data/, git-ignored). Each engine runs in a fresh process: a
private local Ray instance (2 CPUs, a 1 GB object store) is started first and timed apart, then
`parquet_summaries` is timed twice (cold: Ray's workers start and import; warm). Peak memory is
the largest sum, over the child and every process it started (Ray's raylet, GCS and workers), of
their proportional set size (PSS: shared pages, the object store's among them, counted once) —
sampled every 0.2 s. The two engines' tables are checked equal.

run: CASES cases, one epoch, through tests/fixtures/pipelines/answer_pipeline.py (as `python -S`),
by `calipers run --executor ray-data` (its own local Ray, start-up included) and by `calipers run`
on the local thread pool (a suite whose cases_file holds the same cases, -j 8); the samples of
both are imported and checked equal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _machine import bytecode_env, save

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"
BIN = Path(sys.executable).parent
PIPELINE = ROOT / "tests" / "fixtures" / "pipelines" / "answer_pipeline.py"

CHILD = """
import json, sys, time
engine, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
times = {}
if engine == "ray":
    import ray
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             object_store_memory=1024**3)
    times["ray_start"] = time.perf_counter() - started
    from calipers.data.ray_summaries import parquet_summaries
else:
    from calipers.data.summaries import parquet_summaries
for label in ("cold", "warm"):
    started = time.perf_counter()
    computed = parquet_summaries(path, baseline="A", candidate="B", metric="correct",
                                 cluster="sample_id")
    times[label] = time.perf_counter() - started
columns = {k: [None if v is None else (v if isinstance(v, str) else float(v)) for v in col]
           for k, col in computed.columns.items()}
json.dump({"times": times, "columns": columns}, open(out, "w"))
"""


def _pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(root: int) -> list[int]:
    """`root` and every process below it (Ray's daemons are its children's children)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, []))
    return out


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0


def measured(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, the peak PSS (MB) of the command's process tree, and its CPU seconds (each
    process's last user + system time seen: on a shared machine the wall time is the share the
    command got, the CPU time its work)."""
    peak = [0]
    ticks: dict[int, int] = {}
    started = time.perf_counter()
    proc = subprocess.Popen(command, env=env)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            pids = _tree(proc.pid)
            peak[0] = max(peak[0], sum(_pss_kb(p) for p in pids))
            for p in pids:
                ticks[p] = max(ticks.get(p, 0), _cpu_ticks(p))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait()
    done.set()
    sampler.join()
    if code:
        raise SystemExit(f"{command[:4]} exited {code}")
    return (
        time.perf_counter() - started,
        peak[0] / 1024,
        sum(ticks.values()) / os.sysconf("SC_CLK_TCK"),
    )


def summaries(items: list[int], epochs: int) -> dict[str, Any]:
    from bench_scale import build

    results = []
    for n in items:
        root = DATA / f"scale_{n}x{epochs}"
        if not root.exists():
            print(f"building {root} …", flush=True)
            build(root, n, epochs)
        rows = 2 * n * epochs
        found: dict[str, Any] = {}
        for engine in ("duckdb", "ray"):
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "out.json"
                wall, peak, cpu = measured(
                    [sys.executable, "-c", CHILD, engine, str(root), str(out)], bytecode_env()
                )
                found[engine] = json.loads(out.read_text())
            times = found[engine]["times"]
            results.append({
                "engine": engine, "items": n, "epochs": epochs, "observations": rows,
                "wall_s": round(wall, 2), "cpu_s": round(cpu, 1), "peak_pss_mb": round(peak),
                **{k: round(v, 2) for k, v in times.items()},
                "rows_per_s_warm": round(rows / times["warm"]),
                "rows_per_s_cold": round(rows / times["cold"]),
            })  # fmt: skip
            print(results[-1], flush=True)
        assert found["ray"]["columns"] == found["duckdb"]["columns"], "the tables differ"
    return {"summaries": results}


def run(cases: int) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    questions = ("Can I get a refund after 20 days?", "What is the capital of France?",
                 "Where is my parcel?")  # fmt: skip
    rows = [{"id": f"case-{i:05d}", "input": f"{questions[i % 3]} (#{i})"} for i in range(cases)]
    pipeline = f"{sys.executable} -S {PIPELINE} {{input}} {{output}}"
    out: dict[str, Any] = {"cases": cases}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pq.write_table(pa.Table.from_pylist(rows), root / "cases.parquet")
        (root / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (root / "suite.yaml").write_text("name: bench\ncases_file: cases.jsonl\n")
        calipers = str(BIN / "calipers")
        env = bytecode_env()
        started = time.perf_counter()
        subprocess.run([calipers, "run", "--executor", "ray-data", "--input", "cases.parquet",
                        "--output", "shards", "--pipeline", pipeline, "--run", "v1", "-q"],
                       cwd=root, env=env, check=True)  # fmt: skip
        out["ray_data_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        subprocess.run([calipers, "run", "suite.yaml", "--pipeline", pipeline, "--run", "v1",
                        "-j", "8", "--db", "local.duckdb", "-q", "--no-cache"],
                       cwd=root, env=env, check=True)  # fmt: skip
        out["local_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        subprocess.run([calipers, "run", "--executor", "ray-data", "--input", "cases.parquet",
                        "--output", "shards", "--pipeline", pipeline, "--run", "v1", "-q"],
                       cwd=root, env=env, check=True)  # fmt: skip
        out["ray_data_resume_all_done_s"] = round(time.perf_counter() - started, 2)
        subprocess.run([calipers, "import", "shards", "--db", "ray.duckdb", "-q"], cwd=root,
                       env=env, check=True)  # fmt: skip
        out["shards"] = len(list((root / "shards").glob("part-*.parquet")))
        out["equal_samples"] = _samples(root / "ray.duckdb") == _samples(root / "local.duckdb")
    print(out, flush=True)
    return {"run": out}


def _samples(db: Path) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT * EXCLUDE (source, imported_at) FROM samples ORDER BY task, epoch"
        ).fetchall()
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("summaries")
    s.add_argument("--items", type=int, nargs="+", default=[1_000_000])
    s.add_argument("--epochs", type=int, default=10)
    r = sub.add_parser("run")
    r.add_argument("--cases", type=int, default=2000)
    args = parser.parse_args()
    load = os.getloadavg()
    body = summaries(args.items, args.epochs) if args.what == "summaries" else run(args.cases)
    body["load_average_before"] = [round(x, 2) for x in load]
    body["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    save(f"ray_data_{args.what}", body)


if __name__ == "__main__":
    main()
