"""`calipers compare` over 1,000,000 samples × 2 runs, in a fresh process, for two kinds of sample.

    .venv/bin/python benchmarks/bench_compare.py

Builds (once) two stores under benchmarks/data/, each with two runs of 500,000 samples × 2 epochs,
generated in SQL so that building them takes seconds:

- metric: one per-sample score (`scores{accuracy}`), what results imported from another harness
  carry; compared with `--scheme metric --metric accuracy`;
- layered: 3 fact and 2 behavior assertions and an overall judgment from two judges per sample;
  compared with `--scheme layered`.

Then times the whole command — Python start, imports, opening the store, staging, summaries and
the paired bootstraps (10,000 resamples, clusters = samples) — best and first of 3 runs.
Goal ≤ 3 s.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _machine import bytecode_env, save

DATA = Path(__file__).parent / "data"
SAMPLES, EPOCHS = 500_000, 2


def build_metric_store(path: Path) -> None:
    from calipers.data.store import Store

    with Store(path) as store:
        store.con.execute(
            f"""
            INSERT INTO samples (run, task, sample_id, epoch, scores)
            SELECT run, 'task-' || (i % 20), 's' || i, e,
                   MAP {{'accuracy': (random() < CASE WHEN run = 'control' THEN 0.70
                                                      ELSE 0.71 END)::DOUBLE}}
            FROM (SELECT unnest(['control', 'treatment']) AS run),
                 range({SAMPLES}) t(i), range({EPOCHS}) u(e)
            """
        )


def build_layered_store(path: Path) -> None:
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
        # what an import does with the samples it writes (rows written by SQL are not summarised)
        store.refresh_layer_inputs()


SCENARIOS = {
    "metric": (DATA / "compare_metric_2x1m.duckdb", build_metric_store, ["--metric", "accuracy"]),
    "layered": (DATA / "compare_2x1m.duckdb", build_layered_store, []),
}


def timed_compare(scheme: str, db: Path, options: list[str]) -> tuple[float, float]:
    calipers = Path(sys.executable).with_name("calipers")
    cmd = [str(calipers), "compare", "--db", str(db), "--scheme", scheme, *options]
    cmd += ["--control", "control", "--treatment", "treatment"]
    cmd += ["--json", str(DATA / f"compare_{scheme}_report.json"), "--gate", "none", "-q"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=bytecode_env())
    elapsed = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return elapsed, rss


def bench(scheme: str) -> dict[str, object]:
    db, build, options = SCENARIOS[scheme]
    if not db.exists():
        t0 = time.perf_counter()
        build(db)
        print(f"built {db} in {time.perf_counter() - t0:.1f} s")
    from calipers.data.store import Store

    with Store(db) as store:  # untimed: a store from an older calipers is upgraded (and
        store.refresh_layer_inputs()  # summarised) by the first write, as a user's would be
    times = []
    rss = 0.0
    timed_compare(scheme, db, options)  # untimed: fills the bytecode cache (see bytecode_env)
    for _ in range(3):
        elapsed, rss = timed_compare(scheme, db, options)
        times.append(elapsed)
        print(f"{scheme} compare: {elapsed:.2f} s")
    report = json.loads((DATA / f"compare_{scheme}_report.json").read_text())
    pair = report["pairs"][0]
    return {
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


def main() -> None:
    DATA.mkdir(exist_ok=True)
    result = {scheme: bench(scheme) for scheme in SCENARIOS}
    print(json.dumps(result, indent=2))
    save("compare", result)


if __name__ == "__main__":
    main()
