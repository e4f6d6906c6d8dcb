"""`calipers sql`: the summary query in each dialect, golden-tested as text; the DuckDB one (as
written, and after SQLGlot's round trip) executed on a fixture; every dialect's text read back by
SQLGlot into DuckDB gives the same table (its literals and names survived the transpiling); run
names are data, escaped, never SQL. Regenerate the goldens with CALIPERS_UPDATE_GOLDEN=1."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import numpy as np
import pytest

from calipers.cli.main import main
from calipers.data.summaries import (
    COLUMNS,
    DIALECTS,
    duckdb_summaries,
    portable_query,
    summary_query,
    table_name,
)

GOLDEN = Path(__file__).parent / "fixtures" / "summary_sql"
HOSTILE = "it's b\\2'); DROP TABLE evals.samples; --"  # a run name is data


def _query(dialect: str, cluster: str, baseline: str = "model-a", candidate: str = HOSTILE) -> str:
    return portable_query(table="evals.samples", baseline=baseline, candidate=candidate,
                          metric="correct", cluster=cluster, dialect=dialect)  # fmt: skip


@pytest.mark.parametrize("cluster", ["sample_id", "group"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect_is_its_golden(dialect: str, cluster: str) -> None:
    text = _query(dialect, cluster)
    path = GOLDEN / f"{dialect}-{cluster}.sql"
    if os.environ.get("CALIPERS_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
    assert "GROUP BY" in text and "SELECT *" not in text


def test_the_command_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "sql",
            "--dialect",
            "bigquery",
            "--table",
            "evals.samples",
            "--baseline",
            "model-a",
            "--candidate",
            HOSTILE,
            "--metric",
            "correct",
            "--cluster",
            "group",
        ]
    )
    assert code == 0
    assert capsys.readouterr().out == (GOLDEN / "bigquery-group.sql").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA evals")
    con.execute(
        f"""CREATE TABLE evals.samples AS
        SELECT r AS run, 'task-' || (i % 3) AS task, 's' || i AS sample_id, e AS epoch,
               'g' || (i % 17) AS "group",
               CAST((hash(i, e, r) % 100) < (CASE WHEN r = 'model-a' THEN 55 ELSE 60 END)
                    AS DOUBLE) AS correct
        FROM (SELECT unnest(['model-a', {_literal(HOSTILE)}, 'other']) AS r), range(600) t(i),
             range(3) u(e)"""
    )
    return con


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    found = con.execute(sql.rstrip().rstrip(";")).fetchall()
    return sorted(found, key=lambda r: (str(r[0]), str(r[1]), r[2], r[3], round(r[4], 9),
                                        round(r[5], 9)))  # fmt: skip


def _same(a: list[tuple[object, ...]], b: list[tuple[object, ...]]) -> bool:
    """Equal rows: names exactly, numbers to 1e-12 (DuckDB adds a cluster's item means in the
    order its threads meet them)."""
    return len(a) == len(b) and all(
        x[:2] == y[:2] and np.allclose(np.asarray(x[2:], float), np.asarray(y[2:], float),
                                       rtol=1e-12, atol=1e-12)
        for x, y in zip(a, b, strict=True)
    )  # fmt: skip


@pytest.mark.parametrize("cluster", ["sample_id", "group", "task"])
def test_the_duckdb_query_runs_as_written_and_after_the_round_trip(
    con: duckdb.DuckDBPyConnection, cluster: str
) -> None:
    unit = None if cluster == "sample_id" else f'"{cluster}"'
    written = summary_query(table_name("evals.samples"), baseline="model-a", candidate=HOSTILE,
                            value='"correct"', unit=unit)  # fmt: skip
    direct = _rows(con, written)
    assert _same(direct, _rows(con, _query("duckdb", cluster)))
    engine = duckdb_summaries(con, "evals.samples", origin="x", baseline="model-a",
                              candidate=HOSTILE, metric="correct", cluster=cluster)  # fmt: skip
    n = len(engine.columns["count"])
    assert len(direct) == n > 0
    # the table says what it should: 600 items, 3 epochs a side
    items = np.asarray([r[COLUMNS.index("items")] for r in direct], dtype=float)
    count = np.asarray([r[COLUMNS.index("count")] for r in direct], dtype=float)
    n_a = np.asarray([r[COLUMNS.index("n_a")] for r in direct], dtype=float)
    assert float(items @ count) == 600 and float(n_a @ count) == 1800


@pytest.mark.parametrize("dialect", [d for d in DIALECTS if d != "duckdb"])
def test_each_dialect_read_back_gives_the_same_table(
    con: duckdb.DuckDBPyConnection, dialect: str
) -> None:
    import sqlglot

    for cluster in ("sample_id", "group"):
        back = sqlglot.transpile(_query(dialect, cluster).rstrip().rstrip(";"), read=dialect,
                                 write="duckdb")[0]  # fmt: skip
        assert _same(_rows(con, back), _rows(con, _query("duckdb", cluster)))


def test_a_run_name_is_data(con: duckdb.DuckDBPyConnection) -> None:
    found = _rows(con, _query("duckdb", "sample_id"))
    assert found and con.execute("SELECT count(*) FROM evals.samples").fetchone() == (5400,)
    none = _rows(con, _query("duckdb", "sample_id", candidate="it's b"))  # a prefix matches nothing
    assert none == []


def test_a_bad_table_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sql", "--table", "evals..samples", "--baseline", "a", "--candidate", "b",
                 "--metric", "correct"])  # fmt: skip
    assert code == 1
    assert "not a table name" in capsys.readouterr().err
