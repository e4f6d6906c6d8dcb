"""Import of 1,000,000 samples against DuckDB's own read_json, and ReasonScore over them.

    .venv/bin/python benchmarks/gen_samples.py          # once: benchmarks/data/samples_1m.jsonl
    .venv/bin/python benchmarks/bench_import.py

Each import runs in its own process so that its peak RSS is its own. Goals: calipers import ≤ 1.5×
DuckDB's `CREATE TABLE AS SELECT * FROM read_json(...)` into a fresh database file (issue 39; ≤ 2×
before), peak memory ≤ 1 GB; ReasonScore over the imported store ≤ 2 s. `--data` takes another
file, e.g. 100,000 samples (`gen_samples.py --n 100000 --out benchmarks/data/samples_100k.jsonl`).
Each step's CPU seconds (all its threads) are printed beside its wall time: on a machine that other
work loads, the wall times of two steps run a minute apart can differ twofold, their CPU far less.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import save

CHILD = r"""
import json, resource, sys, time
which, path, db = sys.argv[1:4]
start = time.perf_counter()
cpu0 = time.process_time()
if which == "duckdb":
    import duckdb
    con = duckdb.connect(db)
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_json('{path}', format='newline_delimited')")
    con.close()
elif which == "calipers":
    from calipers.data.store import Store
    with Store(db) as store:
        store.import_files([path])
else:
    from calipers.data.source import open_samples
    from calipers.schemes import get_scheme
    first = time.perf_counter()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        get_scheme("reasonscore").score(open_samples(None, db=db))
        times.append(time.perf_counter() - t0)
    start = first
    print(json.dumps({"first_s": times[0], "best_s": min(times),
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    sys.exit(0)
elapsed = time.perf_counter() - start
cpu = time.process_time() - cpu0
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"s": elapsed, "cpu_s": cpu, "rss_mb": rss_mb}))
"""


def child(which: str, data: Path, db: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, which, str(data), str(db)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("benchmarks/data/samples_1m.jsonl"))
    args = parser.parse_args()
    if not args.data.exists():
        sys.exit(f"{args.data} is missing: run benchmarks/gen_samples.py first")
    rows = sum(1 for _ in args.data.open("rb"))
    with tempfile.TemporaryDirectory(dir=args.data.parent) as tmp:
        duck = child("duckdb", args.data, Path(tmp) / "duckdb.duckdb")
        ours = child("calipers", args.data, Path(tmp) / "calipers.duckdb")
        score = child("reasonscore", args.data, Path(tmp) / "calipers.duckdb")
    body = {
        "samples": rows,
        "file_mb": args.data.stat().st_size / 1e6,
        "duckdb_read_json_s": duck["s"],
        "duckdb_cpu_s": duck["cpu_s"],
        "duckdb_rss_mb": duck["rss_mb"],
        "calipers_import_s": ours["s"],
        "calipers_cpu_s": ours["cpu_s"],
        "calipers_rss_mb": ours["rss_mb"],
        "ratio": ours["s"] / duck["s"],
        "cpu_ratio": ours["cpu_s"] / duck["cpu_s"],
        "load_average": os.getloadavg(),
        "reasonscore_first_call_s": score["first_s"],
        "reasonscore_best_s": score["best_s"],
    }
    path = save("import", body)
    print(f"{rows:,} samples, {body['file_mb']:.0f} MB of JSON Lines")
    print("| step | time | CPU | peak RSS |\n|---|---|---|---|")
    print(
        f"| DuckDB read_json → table | {duck['s']:.2f} s | {duck['cpu_s']:.2f} s "
        f"| {duck['rss_mb']:.0f} MB |"
    )
    print(
        f"| calipers import (validated) | {ours['s']:.2f} s | {ours['cpu_s']:.2f} s "
        f"| {ours['rss_mb']:.0f} MB |"
    )
    print(f"| ratio | {body['ratio']:.2f}× | {body['cpu_ratio']:.2f}× | |")
    print(
        f"| reasonscore over the store | {score['best_s']:.3f} s best of 5, "
        f"{score['first_s']:.3f} s first call | | |"
    )
    print("load average: " + ", ".join(f"{x:.2f}" for x in body["load_average"]))
    print(f"→ {path}")


if __name__ == "__main__":
    main()
