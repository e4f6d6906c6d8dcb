"""Sequential decisions (issue 36): `calipers watch` on a store of 1,000,000 samples, and the cost
a look after every unit adds to `calipers run --stop`.

    .venv/bin/python benchmarks/bench_sequential.py

1. Builds (once) benchmarks/data/watch_1m.duckdb: two runs of 500,000 samples each (one epoch,
   pass/fail `correct`, 0.70 against 0.71), written in SQL; the pair is decided (NOISE) early.
   Times the whole `calipers watch` command (Python start, imports, staging, the units in the
   order they were written, a look after every unit, the report), best and first of 3. Goal
   ≤ 2 s. Then once with --full-path (the sequence traced past the stop to the last unit).
2. The same in process (`calipers.watch` + `to_dict()`, imports done), best of 3, and where the
   time goes (staging, the units' order, the decision, the report).
3. Builds (once) benchmarks/data/watch_1m_undecided.duckdb: two runs of 500,000 samples that
   never decide with --min-effect 0.001 (the same outcomes but for one discordant pair in
   every ten samples, alternately for each run: a gain of exactly 0 on every 20 samples), and
   times the command and the call once each: an undecided pair's report needs the interval at
   its last unit and the whole path.
4. Times `SequentialMonitor.add` + `look` over 20,000 units (pass/fail and scores, the hybrid
   design), per unit. Goal ≤ 1 ms.

    .venv/bin/python benchmarks/bench_sequential.py --watch-only   # 1–3 only
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
    calipers = Path(sys.executable).with_name("calipers")
    cmd = [str(calipers), "watch", "--db", str(store), *ARGS, "--gate", "none",
           "--json", str(DATA / "watch_report.json"), "-q", *extra]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=bytecode_env())
    return time.perf_counter() - start


def in_process(store: Path, repeat: int, **options: object) -> dict[str, float]:
    """`calipers.watch` and its report in this process (imports done): the best total of
    `repeat`, and the parts of the last."""
    import calipers
    from calipers.data.store import Store
    from calipers.schemes.registry import get_scheme
    from calipers.verdicts import sequential_units

    best = float("inf")
    for _ in range(repeat):
        with Store(store, read_only=True) as opened:
            samples = opened.samples(["control", "treatment"])
            t0 = time.perf_counter()
            result = calipers.watch(samples, "metric", baseline="control",
                                    candidates=["treatment"], metric="correct",
                                    **options)  # type: ignore[arg-type]  # fmt: skip
            t1 = time.perf_counter()
            result.to_dict()
            t2 = time.perf_counter()
            best = min(best, t2 - t0)
    with Store(store, read_only=True) as opened:
        samples = opened.samples(["control", "treatment"])
        scheme = get_scheme("metric")
        o = scheme.compare_options(metric="correct")
        t3 = time.perf_counter()
        staged = scheme.stage(samples, ["control", "treatment"], o)
        t4 = time.perf_counter()
        sequential_units.arrival_positions(samples, ["control", "treatment"])
        t5 = time.perf_counter()
        sequential_units.paired_units(staged, samples, control="control",
                                      treatments=["treatment"], cluster="sample_id")  # fmt: skip
        t6 = time.perf_counter()
    return {"best_s": best, "watch_s": t1 - t0, "report_s": t2 - t1, "staging_s": t4 - t3,
            "arrival_order_s": t5 - t4, "units_s": t6 - t5}  # fmt: skip


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
    times = [timed_watch() for _ in range(3)]
    report = json.loads((DATA / "watch_report.json").read_text())
    pair = report["pairs"][0]
    full_path = timed_watch(STORE, "--full-path")
    undecided = timed_watch(UNDECIDED, "--min-effect", "0.001")
    open_pair = json.loads((DATA / "watch_report.json").read_text())["pairs"][0]
    result: dict[str, object] = {
        "watch_1m": {"samples": 2 * SAMPLES, "first_s": times[0], "best_s": min(times),
                     "verdict": report["verdict"], "stopped_at": pair["stopped_at"],
                     "traced_to": pair["traced_to"], "n_seen": pair["n_seen"],
                     "full_path_s": full_path,
                     "in_process": in_process(STORE, 3, full_path=False),
                     "in_process_full_path": in_process(STORE, 1, full_path=True)},
        "watch_1m_undecided": {"command_s": undecided,
                               "verdict": open_pair["decision"]["verdict"],
                               "n_seen": open_pair["n_seen"],
                               "in_process": in_process(UNDECIDED, 1, min_effect=0.001)},
    }  # fmt: skip
    if "--watch-only" not in sys.argv:
        looks = {"pass/fail": per_look(True), "scores": per_look(False),
                 "three pairs, pass/fail": per_item_three_pairs()}  # fmt: skip
        result["look_per_unit_ms"] = {k: v * 1000 for k, v in looks.items()}
    print(json.dumps(result, indent=2))
    save("sequential", result)


if __name__ == "__main__":
    main()
