"""`calipers compare --scheme layered` over 1,000,000 samples × 2 runs, in a fresh process.

    .venv/bin/python benchmarks/bench_compare.py

Builds (once) a store under benchmarks/data/ with two runs of 500,000 samples × 2 epochs each,
every sample carrying 3 fact and 2 behavior assertions and an overall judgment from two judges,
generated in SQL so that building it takes seconds. Then times the whole command — Python start,
imports, opening the store, staging the layers, summaries and the paired bootstrap (10,000
resamples, clusters = samples) — best and first of 3 runs. Goal ≤ 3 s.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import save

DATA = Path(__file__).parent / "data"
DB = DATA / "compare_2x1m.duckdb"
SAMPLES, EPOCHS = 500_000, 2


def build_store(path: Path) -> None:
    from calipers.data.store import Store

    with Store(path) as store:
        store.con.execute(
            f"""
            INSERT INTO samples (run, task, sample_id, epoch, assertions, judgments)
            SELECT run, 'task-' || (i % 20), 's' || i, e,
                   [{{'name': 'f' || k, 'type': 'contains', 'layer': NULL, 'weight': 1.0,
                      'passed': random() < CASE WHEN run = 'control' THEN 0.7 ELSE 0.72 END,
                      'value': NULL, 'detail': NULL}} FOR k IN range(3)]
                   || [{{'name': 'b' || k, 'type': 'max_length', 'layer': NULL, 'weight': 1.0,
                         'passed': random() < 0.9, 'value': NULL, 'detail': NULL}}
                       FOR k IN range(2)],
                   [{{'judge': j, 'dimension': NULL,
                      'score': least(5, 1 + floor(random() * 4.2
                               + CASE WHEN run = 'control' THEN 0 ELSE 0.05 END)),
                      'scale_min': NULL, 'scale_max': NULL, 'rationale': NULL,
                      'red_flags': NULL, 'bonuses': NULL, 'error': NULL,
                      'prompt_hash': NULL, 'repeat': 0}} FOR j IN ['judge-a', 'judge-b']]
            FROM (SELECT unnest(['control', 'treatment']) AS run),
                 range({SAMPLES}) t(i), range({EPOCHS}) u(e)
            """
        )


def timed_compare() -> tuple[float, float]:
    calipers = Path(sys.executable).with_name("calipers")
    cmd = [str(calipers), "compare", "--db", str(DB)]
    cmd += ["--scheme", "layered", "--control", "control", "--treatment", "treatment"]
    cmd += ["--json", str(DATA / "compare_report.json"), "--gate", "none", "-q"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    elapsed = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return elapsed, rss


def main() -> None:
    DATA.mkdir(exist_ok=True)
    if not DB.exists():
        t0 = time.perf_counter()
        build_store(DB)
        print(f"built {DB} in {time.perf_counter() - t0:.1f} s")
    times = []
    rss = 0.0
    for _ in range(3):
        elapsed, rss = timed_compare()
        times.append(elapsed)
        print(f"compare: {elapsed:.2f} s")
    report = json.loads((DATA / "compare_report.json").read_text())
    pair = report["pairs"][0]
    result = {
        "samples_per_run": SAMPLES * EPOCHS,
        "sample_ids": SAMPLES,
        "epochs": EPOCHS,
        "first_s": times[0],
        "best_s": min(times),
        "peak_rss_mb": rss,
        "verdict": report["verdict"],
        "composite_diff": pair["composite"],
        "n_pairs": pair["n_pairs"],
    }
    print(json.dumps(result, indent=2))
    save("compare", result)


if __name__ == "__main__":
    main()
