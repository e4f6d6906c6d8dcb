"""Sequential decisions (issue 36): `calipers watch` on a store of 1,000,000 samples, and the cost
a look after every unit adds to `calipers run --stop`.

    .venv/bin/python benchmarks/bench_sequential.py

1. Builds (once) benchmarks/data/watch_1m.duckdb: two runs of 500,000 samples each (one epoch,
   pass/fail `correct`, 0.70 against 0.71), written in SQL. Times the whole `calipers watch`
   command (Python start, imports, staging, the units in the order they were written, a look
   after every unit, the report), best and first of 3. Goal ≤ 2 s.
2. Times `SequentialMonitor.add` + `look` over 20,000 units (pass/fail and scores, the hybrid
   design), per unit. Goal ≤ 1 ms.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _machine import bytecode_env, save

DATA = Path(__file__).parent / "data"
STORE = DATA / "watch_1m.duckdb"
SAMPLES = 500_000


def build(path: Path) -> None:
    from calipers.data.store import Store

    with Store(path) as store:
        store.con.execute(
            f"""
            INSERT INTO samples (run, task, sample_id, epoch, correct)
            SELECT run, 'task', 's' || i, 0,
                   random() < CASE WHEN run = 'control' THEN 0.70 ELSE 0.71 END
            FROM range({SAMPLES}) t(i), (SELECT unnest(['control', 'treatment']) AS run)
            """
        )


def timed_watch() -> float:
    calipers = Path(sys.executable).with_name("calipers")
    cmd = [str(calipers), "watch", "--db", str(STORE), "--metric", "correct",
           "--baseline", "control", "--candidate", "treatment", "--gate", "none",
           "--json", str(DATA / "watch_report.json"), "-q"]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=bytecode_env())
    return time.perf_counter() - start


def per_look(binary: bool, units: int = 20_000) -> float:
    from calipers.verdicts.sequential import SequentialMonitor, parse_design

    rng = np.random.default_rng(1)
    if binary:
        base = (rng.random(units) < 0.7).astype(float)
        cand = (rng.random(units) < 0.7).astype(float)
    else:
        base, cand = rng.beta(5, 3, units), rng.beta(5, 3, units)
    monitor = SequentialMonitor([("a", "b", None)], bounds=(0.0, 1.0), binary=binary,
                                design=parse_design("hybrid", n_planned=units))  # fmt: skip
    start = time.perf_counter()
    for b, c in zip(base.tolist(), cand.tolist(), strict=True):
        monitor.add(0, b, c)
        monitor.look()
    return (time.perf_counter() - start) / units


def per_item_three_pairs(items: int = 3_000) -> float:
    """Three candidates against one baseline, the open-ended sequence: an item adds a unit to
    each pair, then one look (what `run --stop` does per task with three candidates)."""
    from calipers.verdicts.sequential import SequentialMonitor, parse_design

    rng = np.random.default_rng(2)
    x = (rng.random((items, 4)) < 0.6).astype(float)
    monitor = SequentialMonitor([("A", t, None) for t in "BCD"], bounds=(0.0, 1.0), binary=True,
                                design=parse_design("sequence", n_planned=None))  # fmt: skip
    start = time.perf_counter()
    for row in x.tolist():
        for k in range(3):
            monitor.add(k, row[0], row[k + 1])
        monitor.look()
    return (time.perf_counter() - start) / items


def main() -> None:
    DATA.mkdir(exist_ok=True)
    if not STORE.exists():
        t0 = time.perf_counter()
        build(STORE)
        print(f"built {STORE} in {time.perf_counter() - t0:.1f} s")
    timed_watch()  # untimed: fills the bytecode cache
    times = [timed_watch() for _ in range(3)]
    report = json.loads((DATA / "watch_report.json").read_text())
    looks = {"pass/fail": per_look(True), "scores": per_look(False),
             "three pairs, pass/fail": per_item_three_pairs()}  # fmt: skip
    result = {
        "watch_1m": {"samples": 2 * SAMPLES, "first_s": times[0], "best_s": min(times),
                     "verdict": report["verdict"], "n_seen": report["pairs"][0]["n_seen"]},
        "look_per_unit_ms": {k: v * 1000 for k, v in looks.items()},
    }  # fmt: skip
    print(json.dumps(result, indent=2))
    save("sequential", result)


if __name__ == "__main__":
    main()
