"""Ray Data on one local Ray instance, shared by the module: `calipers run --executor ray-data`
(Parquet cases in, Parquet shards of samples out) gives the samples the local executor gives,
and a run killed midway resumes by writing only the missing shards, to the same result; the
Ray Data summaries engine (`compare --parquet --engine ray`) gives the DuckDB engine's summary
table, and the same statistics to 1e-12, on a 1M-row dataset."""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calipers.cli.main import main
from calipers.data import ray_summaries, summaries
from calipers.data.model import FIELD_NAMES
from calipers.running.blocks import Block, BlockSpec, run_block
from calipers.running.invoke import Pipeline
from calipers.stats.summary_stats import SummaryTable
from calipers.verdicts.summary_compare import compare_summaries
from test_run_suite import JUDGE, PIPELINE, samples

pytestmark = pytest.mark.slow  # one Ray instance for the module (~5–20 s to start on 2 cores)

PY = shlex.quote(sys.executable)
ANSWER_DIR = Path(__file__).parent / "fixtures" / "pipelines"
# A pipeline that interrupts the calipers driver once, as Ctrl-C or a kill would: on an input
# holding STOP, the first time, it waits until the driver has written a shard, sends it SIGTERM
# (its pid is in driver.pid, in the working directory the pipeline shares with it) and hangs
# until it is stopped. It logs every call to calls.log (the environment of a Ray worker is the
# one Ray started with, so the file says what ANSWER_LOG would).
STOPPER = f"""
import os, signal, sys, time
from pathlib import Path
sys.path.insert(0, {str(ANSWER_DIR)!r})
import answer_pipeline
text = Path(sys.argv[1]).read_text(encoding="utf-8")
with open("calls.log", "a", encoding="utf-8") as fh:
    fh.write(text.splitlines()[0][:40] + "\\n")
if "STOP" in text and not Path("stopped").exists():
    Path("stopped").touch()
    deadline = time.time() + 120
    while not list(Path("out").glob("part-*.parquet")) and time.time() < deadline:
        time.sleep(0.05)
    os.kill(int(Path("driver.pid").read_text()), signal.SIGTERM)
    time.sleep(300)
sys.exit(answer_pipeline.main())
"""
QUESTIONS = (
    "Can I get a refund after 20 days?",
    "What is the capital of France?",
    "Where is my parcel?",
    "CRASH on this one",
    "BADTELEMETRY please",
)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             object_store_memory=256 * 1024**2)  # fmt: skip
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cases(n: int) -> list[dict[str, Any]]:
    """Cases as rows: every kind of answer, a crash, mistyped telemetry, assertions, epochs."""
    rows = []
    for i in range(n):
        question = QUESTIONS[i % len(QUESTIONS)]
        rows.append({
            "id": f"case-{i:02d}", "input": f"{question} (#{i})",
            "expected": "Within 30 days." if i % 2 == 0 else None,
            "assertions": json.dumps([{"type": "contains", "value": "30 days"},
                                      {"type": "max_length", "value": 60, "weight": 2}])
            if i % 3 else None,
            "epochs": 1 + i % 3,
        })  # fmt: skip
    return rows


def run_data(*args: str, pipeline: str = PIPELINE + " {input} {output}") -> int:
    return main(["run", "--executor", "ray-data", "--pipeline", pipeline, "--run", "v1", "-q",
                 *args])  # fmt: skip


def shards(out: Path) -> pa.Table:
    keys = [("task", "ascending"), ("epoch", "ascending")]
    return pq.read_table(sorted(out.glob("part-*.parquet"))).sort_by(keys)


def stored(db: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in ("source", "imported_at")}
            for r in samples(db, "v1")]  # fmt: skip


def test_shards_hold_the_samples_the_local_executor_stores(local_ray: Any, workdir: Path) -> None:
    rows = cases(11)
    (workdir / "cases").mkdir()  # a dataset directory of two files; `_`-prefixed files skipped
    pq.write_table(pa.Table.from_pylist(rows[:7]), workdir / "cases" / "a.parquet")
    pq.write_table(pa.Table.from_pylist(rows[7:]), workdir / "cases" / "b.parquet")
    pq.write_table(pa.Table.from_pylist(rows[:1]), workdir / "cases" / "_old.parquet")
    tasks = [{k: v for k, v in r.items() if v is not None} for r in rows]
    for task in tasks:
        if "assertions" in task:
            task["assertions"] = json.loads(task["assertions"])
    Path("cases.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    Path("suite.yaml").write_text("name: support\ncases_file: cases.jsonl\n")
    thread_pool = ["run", "suite.yaml", "--pipeline", PIPELINE + " {input} {output}", "--run", "v1"]
    assert main([*thread_pool, "--db", "local.duckdb", "--judge", JUDGE, "--seed", "7", "-q"]) == 0

    assert run_data("--input", "cases", "--output", "out", "--block-size", "3",
                    "--judge", JUDGE, "--seed", "7") == 0  # fmt: skip
    # blocks of 3 rows, never across files: 7 rows → 3 blocks, 4 rows → 2 blocks
    assert sorted(p.name for p in Path("out").glob("part-*")) == [
        f"part-{i:06d}.parquet" for i in range(5)
    ]
    manifest = json.loads(Path("out/.calipers-manifest.json").read_text())
    assert [(b["file"], b["start"], b["rows"]) for b in manifest["blocks"]] == [
        ("a.parquet", 0, 3), ("a.parquet", 3, 3), ("a.parquet", 6, 1), ("b.parquet", 0, 3),
        ("b.parquet", 3, 1),
    ]  # fmt: skip
    assert pq.read_schema("out/part-000000.parquet").names == list(FIELD_NAMES)
    assert shards(Path("out")).num_rows == sum(r["epochs"] for r in rows) == 21

    assert main(["import", "out", "--db", "ray.duckdb", "-q"]) == 0
    local, ray = stored(Path("local.duckdb")), stored(Path("ray.duckdb"))
    assert ray == local
    assert {r["error"] is not None for r in ray} == {True, False}  # the crash is a sample
    assert all(r["judgments"] for r in ray if r["output"] is not None)


@pytest.mark.extended  # ~30 s on 2 cores: `make test-all` (make test keeps the end-to-end run)
def test_a_killed_run_resumes_writing_only_the_missing_shards(
    local_ray: Any, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"id": f"c{i:02d}", "input": f"c{i:02d} " + QUESTIONS[i % 2] + " STOP" * (i == 10)}
            for i in range(12)]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), "cases.parquet")
    Path("stopper.py").write_text(STOPPER)
    Path("driver.pid").write_text(str(os.getpid()))
    args = ["--input", "cases.parquet", "--block-size", "3", "--epochs", "2"]
    pipeline = f"{PY} stopper.py {{input}} {{output}}"

    assert run_data(*args, "--output", "out", pipeline=pipeline) == 130
    done = {p.name: p.stat() for p in Path("out").glob("part-*.parquet")}
    assert 1 <= len(done) < 4  # the shard of block 3 (case c10, STOP) is never written
    assert not [p for p in Path("out").iterdir() if p.name.endswith(".tmp")]
    calls = len(Path("calls.log").read_text().splitlines())
    kept = set(pq.read_table(sorted(Path("out").glob("part-*.parquet"))).column("task").to_pylist())

    assert run_data(*args, "--output", "out", pipeline=pipeline) == 0
    # No case of a kept shard is invoked again. (The blocks in flight at the interrupt may log a
    # call or two after it, while Ray stops them: their cases are not kept ones either.)
    later = {line.split()[0] for line in Path("calls.log").read_text().splitlines()[calls:]}
    assert len(kept) == 3 * len(done) and not later & kept
    assert later == {r["id"] for r in rows} - kept
    for name, before in done.items():  # untouched: not written again
        after = (Path("out") / name).stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert run_data(*args, "--output", "whole", pipeline=pipeline) == 0  # never interrupted
    assert shards(Path("out")).equals(shards(Path("whole")))
    assert shards(Path("out")).num_rows == 24

    capsys.readouterr()
    assert run_data(*args, "--output", "out", "--seed", "1", pipeline=pipeline) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "holds shards of another configuration (changed: seed)" in err


def test_bad_cases_are_refused_naming_the_file_row_and_field(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def refused(rows: list[dict[str, Any]], *extra: str) -> str:
        pq.write_table(pa.Table.from_pylist(rows), "cases.parquet")
        capsys.readouterr()
        assert run_data("--input", "cases.parquet", "--output", "out", *extra) == 1
        text = " ".join(capsys.readouterr().err.split())
        assert "Traceback" not in text
        return text

    good = {"id": "a", "input": "Where is my parcel?", "assertions": None}
    assert "cases.parquet, row 2, field 'id': case id 'a' appears twice (first at " \
           "cases.parquet, row 1)" in refused([good, good])  # fmt: skip
    assert "cases.parquet: no column `input`" in refused([{"id": "a", "question": "?"}])
    assert "--db do not apply" in refused([good], "--db", "s.duckdb")
    capsys.readouterr()
    assert main(["run", "suite.yaml", "--pipeline", "x", "--run", "v1", "--output", "o"]) == 1
    assert "go with --executor ray-data" in " ".join(capsys.readouterr().err.split())
    # A row's own fields are checked by its block (on a worker): the file, row and field named,
    # returned to the driver as the problem, never raised there.
    bad = {"id": "b", "input": "Hi", "assertions": '[{"type": "contains", "value": "x",}]'}
    pq.write_table(pa.Table.from_pylist([good, bad]), "cases.parquet")
    block = Block(0, str(Path("cases.parquet").resolve()), "cases.parquet", 0, 2)
    spec = BlockSpec("v1", Pipeline(PIPELINE + " {input} {output}"), seed=0, workers=1)
    result = run_block(block, spec)
    assert result.problem is not None and not result.shard
    assert result.problem.startswith("cases.parquet, row 2, field 'assertions': ")


# ------------------------------------------------------------- the Ray Data summaries engine

# 125,000 items × 4 epochs × 2 runs ≈ 1M rows: pass/fail, a score on a dyadic grid in the
# `scores` map, 499 groups, and an item one epoch short on one side per 1,000 (its mean k/24 is
# rounded, so sums over clusters of such means agree to rounding, not to the bit).
SAMPLES_SQL = """
SELECT r AS run, 'task-' || (i % 8) AS task, 's' || i AS sample_id, e::BIGINT AS epoch,
       'g' || (i % 499) AS "group",
       ((hash(i, e, r) % 1000) < (CASE WHEN r = 'A' THEN 600 ELSE 610 END)) AS correct,
       MAP {'score': (((hash(i, e, r, 7) % 8)
                       + (CASE WHEN r = 'B' AND i % 5 = 0 THEN 1 ELSE 0 END)) / 8.0)::DOUBLE}
           AS scores
FROM (SELECT unnest(['A', 'B']) AS r), range(125000) t(i), range(4) u(e)
WHERE NOT (r = 'B' AND i % 1000 = 7 AND e = 3)
"""
TOL = 1e-12


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fixture as a dataset of files whose rows are shuffled (an item's rows in several
    blocks), and as a hive-partitioned one (run=A/, run=B/)."""
    import duckdb

    root = tmp_path_factory.mktemp("samples")
    con = duckdb.connect()
    con.execute(f"CREATE TABLE samples AS {SAMPLES_SQL}")
    con.execute(f"COPY (SELECT * FROM samples ORDER BY hash(sample_id, epoch, run)) TO "
                f"'{root / 'plain'}' (FORMAT parquet, FILE_SIZE_BYTES '2MB')")  # fmt: skip
    con.execute(f"COPY samples TO '{root / 'hive'}' (FORMAT parquet, PARTITION_BY (run))")
    con.close()
    return {"plain": root / "plain", "hive": root / "hive"}


def _close(a: Any, b: Any, path: str = "$") -> list[str]:
    """Where two reports differ beyond TOL (the engine's name and timings aside)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}: keys {sorted(set(a) ^ set(b))}"] if set(a) != set(b) else []
        skip = {"seconds", "source", "engine", "notes", "summary"}
        return out + [p for k in set(a) & set(b) - skip for p in _close(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} {len(b)}"]
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True))
                for p in _close(x, y, f"{path}[{i}]")]  # fmt: skip
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        ok = math.isclose(a, b, rel_tol=TOL, abs_tol=TOL) or (math.isnan(a) and math.isnan(b))
        return [] if ok else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


@pytest.mark.parametrize(
    ("layout", "metric", "cluster", "interval"),
    [
        ("plain", "correct", "auto", "auto"),  # → every row names a group: clustered by group
        ("hive", "correct", "sample_id", "auto"),  # collapsed cells, from run=NAME/ partitions
        # `make test` keeps the two above (each ~5–10 s on 2 cores); these run in `make test-all`
        pytest.param("plain", "score", "task", "t", marks=pytest.mark.extended),  # a `scores` key
        pytest.param("hive", "score", "sample_id", "bca", marks=pytest.mark.extended),
    ],
)
def test_ray_summaries_are_the_duckdb_table(
    local_ray: Any, datasets: dict[str, Path], layout: str, metric: str, cluster: str,
    interval: str,
) -> None:  # fmt: skip
    path = str(datasets[layout])
    pair = {"baseline": "A", "candidate": "B", "metric": metric, "cluster": cluster}
    ray = ray_summaries.parquet_summaries(path, **pair)
    duck = summaries.parquet_summaries(path, **pair)
    assert (ray.engine, duck.engine) == ("ray", "duckdb") and ray.cluster == duck.cluster
    for column in summaries.COLUMNS:
        mine, theirs = ray.columns[column], duck.columns[column]
        if column in ("task", "unit", "n_a", "n_b", "items", "count") or ray.cluster.sql is None:
            assert list(mine) == list(theirs), column  # the cells: exactly, in the same order
        else:  # sums of item means over a cluster: added in another order
            assert np.allclose(mine, theirs, rtol=TOL, atol=0), column
    options: dict[str, Any] = dict(control="A", treatment="B", origin=path, engine="x",
                                   metric=metric, cluster=ray.cluster.cluster, seed=7,
                                   bounds="0,1", n_resamples=2_000, interval=interval)  # fmt: skip
    a = compare_summaries(SummaryTable.from_columns(ray.columns), **options).to_dict()
    b = compare_summaries(SummaryTable.from_columns(duck.columns), **options).to_dict()
    assert _close(a, b) == []


@pytest.mark.extended  # the engine's tables are checked above; this is the CLI's wiring
def test_compare_engine_ray_gives_the_duckdb_verdict(
    local_ray: Any, datasets: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    def report(*extra: str) -> dict[str, Any]:
        capsys.readouterr()
        code = main(["compare", "--parquet", str(datasets["plain"]), "--baseline", "A",
                     "--candidate", "B", "--metric", "correct", "--json", "-", *extra])  # fmt: skip
        assert code in (0, 3)
        return dict(json.loads(capsys.readouterr().out))

    ray, duck = report("--engine", "ray"), report()
    assert _close(ray, duck) == []
    capsys.readouterr()
    assert main(["compare", "--parquet", str(datasets["plain"]), "--engine", "ray",
                 "--baseline", "A", "--candidate", "C", "--metric", "correct"]) == 2  # fmt: skip
    err = " ".join(capsys.readouterr().err.split())
    assert "no run 'C'" in err and "Runs there: A, B" in err
