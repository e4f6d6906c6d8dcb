"""A paired verdict over 10M items × 10 epochs × 2 runs (200M observations, 100M paired item ×
epoch rows) of pass/fail outcomes in a hive-partitioned Parquet dataset, from the summaries
DuckDB computes where the data lie (docs/scale.md).

    .venv/bin/python benchmarks/bench_scale.py                     # 10M items × 10 epochs
    .venv/bin/python benchmarks/bench_scale.py --items 1000000 3000000 10000000  # the slope
    .venv/bin/python benchmarks/bench_scale.py --items 10000000 --epochs 1        # McNemar

Builds (once) benchmarks/data/scale_<items>x<epochs>/run=A|B/part.parquet (git-ignored), then
times the whole command in a fresh process — `calipers compare --parquet DIR --baseline A
--candidate B --metric correct`: Python start, imports, the summary query (one scan, one hash
aggregate over the items, the histogram), the verdict with its interval, the exact sign test (or
McNemar with one epoch), pass@k, and the cluster bootstrap (10,000 resamples) — best of
--repeat, with its peak memory (the child's max RSS) and rows per second. Goal: ≤ 30 s and
≤ 2 GB on 2 cores at 100M paired rows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import bytecode_env, save

DATA = Path(__file__).parent / "data"


def build(root: Path, items: int, epochs: int) -> float:
    """One Parquet file per run under run=A/ and run=B/; each item has a difficulty (its epochs
    are correlated, as real items' are) and B passes 0.6 points more often."""
    import duckdb

    started = time.perf_counter()
    con = duckdb.connect()
    for run, lift in (("A", 0), ("B", 60)):
        target = root / f"run={run}"
        target.mkdir(parents=True, exist_ok=True)
        con.execute(
            f"""COPY (
                SELECT 'task-' || (i % 20) AS task, 's' || i AS sample_id, e::TINYINT AS epoch,
                       (hash(i, e, '{run}') % 10000) < (2000 + hash(i) % 6000 + {lift})
                           AS correct
                FROM range({items}) t(i), range({epochs}) u(e)
            ) TO '{target / "part.parquet"}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)"""
        )
    con.close()
    return time.perf_counter() - started


def timed(root: Path, report: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system: on a machine shared with other work the wall
    time measures the share it got, the CPU time the work) and peak RSS in MB of one command."""
    calipers = Path(sys.executable).with_name("calipers")
    cmd = [str(calipers), "compare", "--parquet", str(root), "--baseline", "A", "--candidate",
           "B", "--metric", "correct", "--json", str(report), "--gate", "none", "-q"]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=bytecode_env())
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss of the children is the largest any child reached so far
    return elapsed, cpu, after.ru_maxrss / 1024


def bench(items: int, epochs: int, repeat: int) -> dict[str, object]:
    root = DATA / f"scale_{items}x{epochs}"
    built = None
    if not (root / "run=B" / "part.parquet").exists():
        built = build(root, items, epochs)
        print(f"built {root} in {built:.1f} s")
    size = sum(p.stat().st_size for p in root.rglob("*.parquet"))
    report_path = DATA / f"scale_{items}x{epochs}_report.json"
    times, cpus, peak = [], [], 0.0
    load = os.getloadavg()
    for _ in range(repeat):
        elapsed, cpu, peak = timed(root, report_path)
        times.append(elapsed)
        cpus.append(cpu)
        print(
            f"{items:,} items × {epochs} epochs: {elapsed:.2f} s ({cpu:.1f} s CPU), peak "
            f"{peak:.0f} MB, load average {os.getloadavg()[0]:.1f}"
        )
    report = json.loads(report_path.read_text())
    observations = 2 * items * epochs
    seconds = [n for n in report["notes"] if n.startswith("summaries:")]
    return {
        "items": items,
        "epochs": epochs,
        "observations": observations,
        "paired_rows": items * epochs,
        "parquet_mb": round(size / 2**20, 1),
        "build_s": built,
        "best_s": min(times),
        "times_s": times,
        "cpu_s": cpus,
        "peak_rss_mb": round(peak),
        "observations_per_s": round(observations / min(times)),
        "summary_note": seconds[0] if seconds else None,
        "summary_rows": report["summary"]["rows"],
        "bootstrap_s": report["bootstrap"]["seconds"],
        "bootstrap_se": report["bootstrap"]["standard_error"],
        "analytic_se": report["bootstrap"]["analytic_standard_error"],
        "verdict": report["verdict"],
        "difference": report["difference"]["estimate"],
        "interval": [report["difference"]["low"], report["difference"]["high"]],
        "formula": (report["difference"]["interval"] or {}).get("formula"),
        "mcnemar": report["tests"]["mcnemar"],
        "sign_p": report["tests"]["sign"]["p_value"],
        "load_average_before": load,
        "load_average_after": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, nargs="+", default=[10_000_000])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    results = [bench(n, args.epochs, args.repeat) for n in args.items]
    print(json.dumps(results, indent=2))
    save(f"scale_{args.epochs}epochs", {"runs": results})


if __name__ == "__main__":
    main()
