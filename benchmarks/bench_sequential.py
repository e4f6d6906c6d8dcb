"""Sequential decisions (issue 36): `calipers watch` on a store of 1,000,000 samples, and the cost
a look after every unit adds to `calipers run --stop`.

    .venv/bin/python benchmarks/bench_sequential.py

1. Builds (once) benchmarks/data/watch_1m.duckdb: two runs of 500,000 samples each (one epoch,
   pass/fail `correct`, 0.70 against 0.71), written in SQL; the pair is decided (NOISE) early.
   Times the whole `calipers watch` command (Python start, imports, staging, the units in the
   order they were written, a look after every unit, the report), best and first of 3. Goal
   ≤ 2 s. Then once with --full-path (the sequence traced past the stop to the last unit).
2. The same in process (the command's path: the one-query staging of
   `calipers.verdicts.sequential_staging`, the decision, `to_dict()`; imports done), best of 3,
   where the time goes, and the scheme's generic `PairedScheme.watch` once beside it.
3. Builds (once) benchmarks/data/watch_1m_undecided.duckdb: two runs of 500,000 samples that
   never decide with --min-effect 0.001 (the same outcomes but for one discordant pair in
   every ten samples, alternately for each run: a gain of exactly 0 on every 20 samples), and
   times the command (best of 3, with its CPU time) and the call once: an undecided pair's
   report needs the interval at its last unit and the whole path.
4. Times `SequentialMonitor.add` + `look` over 20,000 units (pass/fail and scores, the hybrid
   design), per unit. Goal ≤ 1 ms.

    .venv/bin/python benchmarks/bench_sequential.py --watch-only   # 1–3 only
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _machine import bytecode_env, save

DATA = Path(__file__).parent / "data"
STORE = DATA / "watch_1m.duckdb"
UNDECIDED = DATA / "watch_1m_undecided.duckdb"
SAMPLES = 500_000
ARGS = ["--metric", "correct", "--baseline", "control", "--candidate", "treatment"]


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


def build_undecided(path: Path) -> None:
    """Outcomes 7 in 10 for both runs, but the treatment passes sample 7 and fails sample 3 of
    every 20: discordant pairs in both directions, a mean gain of 0, no decision at ±0.001."""
    from calipers.data.store import Store

    with Store(path) as store:
        store.con.execute(
            f"""
            INSERT INTO samples (run, task, sample_id, epoch, correct)
            SELECT run, 'task', 's' || i, 0,
                   CASE WHEN run = 'treatment' AND i % 20 = 7 THEN true
                        WHEN run = 'treatment' AND i % 20 = 3 THEN false
                        ELSE i % 10 < 7 END
            FROM range({SAMPLES}) t(i), (SELECT unnest(['control', 'treatment']) AS run)
            """
        )


def timed_watch(store: Path = STORE, *extra: str) -> float:
    return timed_watch_cpu(store, *extra)[0]


def timed_watch_cpu(store: Path = STORE, *extra: str) -> tuple[float, float]:
    """The whole command's wall time and its CPU time (user + system, every thread)."""
    calipers = Path(sys.executable).with_name("calipers")
    cmd = [str(calipers), "watch", "--db", str(store), *ARGS, "--gate", "none",
           "--json", str(DATA / "watch_report.json"), "-q", *extra]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=bytecode_env())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def in_process(store: Path, repeat: int, **options: Any) -> dict[str, float]:
    """What `calipers watch` does in this process (imports done): the best total of `repeat`
    (the one-query staging of `calipers.verdicts.sequential_staging`, the decision, the report),
    the parts of the last (`staging_s` the staging alone, `watch_s` staging and decision,
    `report_s`), and the scheme's generic `PairedScheme.watch` with its report once
    (`generic_watch_s`: the generic staging, the same report)."""
    from calipers.data.store import Store
    from calipers.schemes.layered import PairedScheme
    from calipers.schemes.metric import MetricScheme
    from calipers.verdicts.sequential_staging import fast_metric_units

    full = bool(options.pop("full_path", False))
    opts = {"metric": "correct", "by_task": False, **options}
    best = float("inf")
    parts: dict[str, float] = {}
    for _ in range(repeat):
        with Store(store, read_only=True) as opened:
            samples = opened.samples(["control", "treatment"])
            t0 = time.perf_counter()
            fast_metric_units(samples, control="control", treatments=["treatment"],
                              metric="correct", bounds=None, cluster="auto", errors="missing",
                              order="arrival", seed=0, by_task=False)  # fmt: skip
            t1 = time.perf_counter()
            result = MetricScheme().watch(samples, baseline="control", candidates=["treatment"],
                                          **opts)  # fmt: skip
            result.result.trace_full(full)
            t2 = time.perf_counter()
            result.to_dict()
            t3 = time.perf_counter()
        best = min(best, t3 - t1)
        parts = {"staging_s": t1 - t0, "watch_s": t2 - t1, "report_s": t3 - t2}
    with Store(store, read_only=True) as opened:
        samples = opened.samples(["control", "treatment"])
        t4 = time.perf_counter()
        generic = PairedScheme.watch(MetricScheme(), samples, baseline="control",
                                     candidates=["treatment"], **opts)  # fmt: skip
        generic.result.trace_full(full)
        generic.to_dict()
        t5 = time.perf_counter()
    return {"best_s": best, **parts, "generic_watch_s": t5 - t4}


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
    for path, make in ((STORE, build), (UNDECIDED, build_undecided)):
        if not path.exists():
            t0 = time.perf_counter()
            make(path)
            print(f"built {path} in {time.perf_counter() - t0:.1f} s")
    timed_watch()  # untimed: fills the bytecode cache
    runs = [timed_watch_cpu() for _ in range(3)]
    report = json.loads((DATA / "watch_report.json").read_text())
    pair = report["pairs"][0]
    full_path = timed_watch(STORE, "--full-path")
    open_runs = [timed_watch_cpu(UNDECIDED, "--min-effect", "0.001") for _ in range(3)]
    open_pair = json.loads((DATA / "watch_report.json").read_text())["pairs"][0]
    result: dict[str, object] = {
        "watch_1m": {"samples": 2 * SAMPLES, "first_s": runs[0][0],
                     "best_s": min(w for w, _ in runs), "best_cpu_s": min(c for _, c in runs),
                     "verdict": report["verdict"], "stopped_at": pair["stopped_at"],
                     "traced_to": pair["traced_to"], "n_seen": pair["n_seen"],
                     "full_path_s": full_path,
                     "in_process": in_process(STORE, 3, full_path=False),
                     "in_process_full_path": in_process(STORE, 1, full_path=True)},
        "watch_1m_undecided": {"command_s": open_runs[0][0],
                               "best_s": min(w for w, _ in open_runs),
                               "best_cpu_s": min(c for _, c in open_runs),
                               "verdict": open_pair["decision"]["verdict"],
                               "n_seen": open_pair["n_seen"],
                               "in_process": in_process(UNDECIDED, 1, min_effect=0.001)},
    }  # fmt: skip
    if "--watch-only" not in sys.argv:
        looks = {"pass/fail": per_look(True), "scores": per_look(False),
                 "three pairs, pass/fail": per_item_three_pairs()}  # fmt: skip
        result["look_per_unit_ms"] = {k: v * 1000 for k, v in looks.items()}
    result["load_average"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    save("sequential", result)


if __name__ == "__main__":
    main()
