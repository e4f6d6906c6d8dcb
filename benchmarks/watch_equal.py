"""`calipers watch --json` of this tree against another's (a worktree of the commit before a
change), byte for byte, on the benchmark stores and on stores built here for every path of the
staging: one epoch and several, groups, scores with NULLs and weights, declared bounds, several
candidates, runs missing samples, rows written out of order, random orders, margins, hybrid and
group designs, a JSON Lines file, and the inputs that must fail (exit code and message compared).

    git worktree add /tmp/old HEAD
    .venv/bin/python benchmarks/watch_equal.py --old /tmp/old/src [--quick]

`--quick` leaves out the two 1M-sample stores' slow cases (the undecided pair and --full-path).
Exits 1 on any difference, naming the case.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
DATA = HERE / "data"
CALIPERS = Path(sys.executable).with_name("calipers")
PAIR = ["--baseline", "control", "--candidate", "treatment"]


def _store(path: Path, sql: str) -> Path:
    from calipers.data.store import Store

    with Store(path) as store:
        store.con.execute(sql)
    return path


def build(tmp: Path) -> dict[str, Path]:
    """Small stores, each exercising one branch (the fast path or a fallback to the generic)."""
    ins = (
        'INSERT INTO samples (run, task, sample_id, epoch, correct, scores, score_weights, "group")'
    )

    rng = random.Random(7)
    stores: dict[str, Path] = {}
    # pass/fail, rows written out of order (a run's rows interleaved at random), a sample
    # missing from one run, a NULL outcome, three candidates
    rows = []
    for i in range(3000):
        for run, p in (("control", 0.6), ("treatment", 0.7), ("t2", 0.6), ("t3", 0.5)):
            if (run == "t2" and i % 97 == 0) or (run == "control" and i % 501 == 0):
                continue
            value = "NULL" if (run == "treatment" and i % 333 == 0) else str(rng.random() < p)
            rows.append(f"('{run}', 'task{i % 3}', 's{i}', 0, {value}, NULL, NULL, NULL)")
    rng.shuffle(rows)
    stores["passfail"] = _store(tmp / "passfail.duckdb", f"{ins} VALUES {', '.join(rows)}")
    # scores in [0, 1] (a proportion by name: `accuracy`), NaN and NULL values, -0.0, weights
    rows = []
    for i in range(2500):
        for run, mu in (("control", 0.5), ("treatment", 0.53)):
            v = min(1.0, max(0.0, rng.gauss(mu, 0.2)))
            text = "NULL" if i % 211 == 0 else ("'NaN'" if i % 307 == 0 else repr(v))
            w = "MAP {'accuracy': 2.0}" if (i == 5 and run == "control") else "NULL"
            value = f"MAP {{'accuracy': {text}::DOUBLE}}"
            rows.append(f"('{run}', 't', 'id{i:05d}', 0, NULL, {value}, {w}, NULL)")
    stores["scores"] = _store(tmp / "scores.duckdb", f"{ins} VALUES {', '.join(rows)}")
    # a metric on 0–10 (needs --bounds), with -0.0 values on a -1–10 scale
    rows = []
    for i in range(2000):
        for run, mu in (("control", 5.0), ("treatment", 5.6)):
            v = -0.0 if i % 50 == 0 else round(min(10.0, max(0.0, rng.gauss(mu, 2.5))), 1)
            rows.append(f"('{run}', 't', 'x{i}', 0, NULL, MAP {{'points': {v!r}}}, NULL, NULL)")
    stores["points"] = _store(tmp / "points.duckdb", f"{ins} VALUES {', '.join(rows)}")
    # three epochs per sample (the generic path: a unit is a mean)
    stores["epochs"] = _store(
        tmp / "epochs.duckdb",
        f"""{ins} SELECT run, 't', 's' || i, e, random() < (CASE WHEN run = 'control' THEN 0.5
                ELSE 0.65 END), NULL, NULL, NULL
            FROM range(800) t(i), range(3) u(e),
                 (SELECT unnest(['control', 'treatment']) AS run)""",
    )
    # groups (auto clusters by them: the generic path)
    stores["groups"] = _store(
        tmp / "groups.duckdb",
        f"""{ins} SELECT run, 't', 's' || i, 0, random() < (CASE WHEN run = 'control' THEN 0.5
                ELSE 0.7 END), NULL, NULL, 'g' || (i // 10)
            FROM range(1500) t(i), (SELECT unnest(['control', 'treatment']) AS run)""",
    )
    # a sample twice in one run (the generic path)
    stores["twice"] = _store(
        tmp / "twice.duckdb",
        f"""{ins} SELECT run, 't', 's' || (CASE WHEN i = 7 THEN 6 ELSE i END), 0,
                random() < 0.6, NULL, NULL, NULL
            FROM range(500) t(i), (SELECT unnest(['control', 'treatment']) AS run)""",
    )
    # values outside the declared bounds, and an unbounded metric: errors
    stores["unbounded"] = _store(
        tmp / "unbounded.duckdb",
        f"""{ins} SELECT run, 't', 's' || i, 0, NULL, MAP {{'tokens': (i * 3 % 17)::DOUBLE}},
                NULL, NULL
            FROM range(300) t(i), (SELECT unnest(['control', 'treatment']) AS run)""",
    )
    lines = []
    for i in range(1200):
        for run, p in (("control", 0.55), ("treatment", 0.68)):
            lines.append(json.dumps({"run": run, "task": "t", "sample_id": f"q{i}", "epoch": 0,
                                     "correct": rng.random() < p}))  # fmt: skip
    jsonl = tmp / "runs.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    stores["jsonl"] = jsonl
    return stores


def cases(stores: dict[str, Path], quick: bool) -> list[tuple[str, list[str]]]:
    big, undecided = DATA / "watch_1m.duckdb", DATA / "watch_1m_undecided.duckdb"
    pair, three = "--baseline control --candidate treatment", "--candidate t2 --candidate t3"
    passfail, scores, points = (f"--db {stores[k]}" for k in ("passfail", "scores", "points"))
    table = [
        ("1m decided", f"--db {big} --metric correct {pair}"),
        ("1m random", f"--db {big} --metric correct {pair} --order random --seed 5"),
        ("1m hybrid margin", f"--db {big} --metric correct {pair} --n-planned 600000 "
         "--margin 0.02 --every 7 --gate none"),
        ("passfail 3 candidates", f"{passfail} --metric correct {pair} {three} --full-path"),
        ("passfail random", f"{passfail} --metric correct {pair} --order random --seed 3 "
         "--full-path"),
        ("passfail obf", f"{passfail} --metric correct {pair} --design obf:5 --n-planned 2900"),
        ("passfail by task", f"{passfail} --metric correct {pair} --by task"),
        ("passfail cluster sample_id", f"{passfail} --metric correct {pair} --cluster sample_id "
         "--min-effect 0.2"),
        ("passfail gate ship", f"{passfail} --metric correct --baseline treatment "
         "--candidate control --gate ship"),
        ("scores", f"{scores} --metric accuracy {pair} --full-path"),
        ("scores margin equivalence", f"{scores} --metric accuracy {pair} --margin 5% "
         "--equivalence --n-planned 2500 --gate none"),
        ("points bounds", f"{points} --metric points {pair} --bounds -1,10 --full-path"),
        ("points unbounded", f"{points} --metric points {pair}"),
        ("points outside", f"{points} --metric points {pair} --bounds 0,5"),
        ("epochs", f"--db {stores['epochs']} --metric correct {pair} --full-path"),
        ("groups", f"--db {stores['groups']} --metric correct {pair}"),
        ("groups by sample", f"--db {stores['groups']} --metric correct {pair} "
         "--cluster sample_id"),
        ("twice", f"--db {stores['twice']} --metric correct {pair}"),
        ("unbounded", f"--db {stores['unbounded']} --metric tokens {pair}"),
        ("no such metric", f"{passfail} --metric nothing {pair}"),
        ("no such run", f"{passfail} --metric correct --baseline control --candidate absent"),
        ("jsonl", f"{stores['jsonl']} --metric correct {pair} --full-path"),
    ]  # fmt: skip
    if not quick:
        table += [
            ("1m undecided", f"--db {undecided} --metric correct {pair} --min-effect 0.001"),
            ("1m full path", f"--db {big} --metric correct {pair} --full-path"),
        ]
    found = [(label, args.split()) for label, args in table]
    return found


def run(args: list[str], out: Path, src: str | None) -> tuple[int, str, bytes]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    done = subprocess.run(
        [str(CALIPERS), "watch", *args, "--json", str(out), "-q"],
        capture_output=True, env=env, text=True, check=False,
    )  # fmt: skip
    body = out.read_bytes() if out.exists() else b""
    # what it said on stderr; of a traceback, its last line (its frames name each tree's files)
    said = done.stderr.strip()
    if "Traceback" in said:
        said = said.splitlines()[-1]
    return done.returncode, said, body


def main() -> None:
    if "--old" not in sys.argv:
        sys.exit(__doc__)
    old = sys.argv[sys.argv.index("--old") + 1]
    quick = "--quick" in sys.argv
    failed = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        stores = build(tmp)
        for label, args in cases(stores, quick):
            a = run(args, tmp / "new.json", None)
            (tmp / "new.json").unlink(missing_ok=True)
            b = run(args, tmp / "old.json", old)
            (tmp / "old.json").unlink(missing_ok=True)
            same = a == b
            verdict = json.loads(a[2])["verdict"] if a[2] else f"exit {a[0]}: {a[1][:80]!r}"
            print(f"{'same' if same else 'DIFFERENT':9} {label}: {verdict}", flush=True)
            if not same:
                failed.append(label)
                print(f"    new: exit {a[0]} {a[1]!r}\n    old: exit {b[0]} {b[1]!r}")
    if failed:
        sys.exit(f"{len(failed)} case(s) differ: {', '.join(failed)}")
    print("every case byte for byte the same")


if __name__ == "__main__":
    main()
