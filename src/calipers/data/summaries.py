"""The summary table of a compared pair, computed where the data live (docs/scale.md).

One query, written once in DuckDB's SQL with explicit GROUP BY lists: DuckDB runs it on the store,
on Parquet files and globs, on hive-partitioned Parquet datasets (local, or on object storage
through DuckDB's httpfs extension); `calipers sql --dialect spark|bigquery|snowflake|trino`
prints it transpiled by SQLGlot for a warehouse, whose result `calipers compare --summaries`
reads. The table's definition, and the statistics that are functions of it, are in
`calipers.stats.summary_stats`.

Run names are data: they enter the SQL as escaped string literals, never pasted in; column and
table names as quoted identifiers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from calipers.data.files import sql_literal, sql_name
from calipers.data.model import CLUSTER_UNITS
from calipers.errors import DataError, InputError

COLUMNS = ("task", "unit", "n_a", "n_b", "sum_a", "sum_b", "sum_aa", "sum_bb", "sum_ab",
           "items", "count")  # fmt: skip
DIALECTS = ("duckdb", "spark", "bigquery", "snowflake", "trino")
UNITS = CLUSTER_UNITS
# DuckDB's memory for the summary query over Parquet (CALIPERS_MEMORY_LIMIT overrides): the
# per-item hash aggregate of 10M items spills past it at no measurable cost (20 s of CPU either
# way), and the whole command stays under 2 GB (benchmarks/README.md)
SUMMARY_MEMORY_LIMIT = "1GB"
REMOTE = ("s3://", "s3a://", "gs://", "gcs://", "r2://", "az://", "azure://", "abfss://",
          "http://", "https://", "hf://")  # fmt: skip


def summary_query(
    source: str,
    *,
    baseline: str,
    candidate: str,
    value: str,
    unit: str | None,
) -> str:
    """The summary query over `source` (a table name or a table function, as SQL) with columns
    run, task, sample_id and the metric: `value` is its SQL expression, `unit` the cluster's
    (None: items are the units, identical ones collapsed). Pairs are items with a value in both
    runs; each side's epochs are averaged per item."""
    a, b = sql_literal(baseline), sql_literal(candidate)
    # the cluster travels with each item only when there is one: a constant key costs time
    unit_col = "" if unit is None else f'CAST({unit} AS VARCHAR) AS "unit", '
    unit_key = "" if unit is None else '"unit", '
    head = f"""WITH "observations" AS (
  SELECT "task", "sample_id", {unit_col}"run", CAST({value} AS DOUBLE) AS "x"
  FROM {source}
  WHERE "run" IN ({a}, {b}) AND {value} IS NOT NULL
),
"items" AS (
  SELECT
    "task", {unit_key}"sample_id",
    COUNT(CASE WHEN "run" = {a} THEN "x" END) AS "n_a",
    COUNT(CASE WHEN "run" = {b} THEN "x" END) AS "n_b",
    SUM(CASE WHEN "run" = {a} THEN "x" END) AS "s_a",
    SUM(CASE WHEN "run" = {b} THEN "x" END) AS "s_b"
  FROM "observations"
  GROUP BY "task", {unit_key}"sample_id"
),
"paired" AS (
  SELECT "task", {unit_key}"n_a", "n_b", "s_a", "s_b"
  FROM "items"
  WHERE "n_a" > 0 AND "n_b" > 0
)
"""
    if unit is None:
        body = """SELECT
  "task",
  CAST(NULL AS VARCHAR) AS "unit",
  "n_a",
  "n_b",
  "s_a" / "n_a" AS "sum_a",
  "s_b" / "n_b" AS "sum_b",
  ("s_a" / "n_a") * ("s_a" / "n_a") AS "sum_aa",
  ("s_b" / "n_b") * ("s_b" / "n_b") AS "sum_bb",
  ("s_a" / "n_a") * ("s_b" / "n_b") AS "sum_ab",
  CAST(1 AS BIGINT) AS "items",
  COUNT(*) AS "count"
FROM "paired"
GROUP BY "task", "n_a", "n_b", "s_a", "s_b"
ORDER BY "task", "n_a", "n_b", "sum_a", "sum_b\""""
    else:
        body = """SELECT
  "task",
  "unit",
  CAST(SUM("n_a") AS BIGINT) AS "n_a",
  CAST(SUM("n_b") AS BIGINT) AS "n_b",
  SUM("s_a" / "n_a") AS "sum_a",
  SUM("s_b" / "n_b") AS "sum_b",
  SUM(("s_a" / "n_a") * ("s_a" / "n_a")) AS "sum_aa",
  SUM(("s_b" / "n_b") * ("s_b" / "n_b")) AS "sum_bb",
  SUM(("s_a" / "n_a") * ("s_b" / "n_b")) AS "sum_ab",
  COUNT(*) AS "items",
  CAST(1 AS BIGINT) AS "count"
FROM "paired"
GROUP BY "task", "unit"
ORDER BY "task", "unit\""""
    return head + body


def table_name(name: str) -> str:
    """A table name given by the user (`db.schema.table`) as quoted identifiers, part by part."""
    parts = [p for p in name.split(".")]
    if not name or any(not p for p in parts):
        raise InputError(
            f"--table {name!r}: not a table name",
            hint="Give the table as NAME or SCHEMA.NAME (or CATALOG.SCHEMA.NAME).",
            parameters=["table"],
        )
    return ".".join(sql_name(p) for p in parts)


def portable_query(
    *,
    table: str,
    baseline: str,
    candidate: str,
    metric: str,
    cluster: str = "sample_id",
    dialect: str = "duckdb",
) -> str:
    """The summary query over a warehouse table (columns run, task, sample_id, the metric as a
    numeric column — 0/1 for pass/fail — and `group` to cluster by it), in `dialect`: written in
    DuckDB's SQL and transpiled by SQLGlot, which also re-escapes the run names' literals and
    re-quotes the identifiers in the dialect's own way."""
    if dialect not in DIALECTS:
        raise InputError(
            f"unknown SQL dialect '{dialect}'", hint="Dialects: " + ", ".join(DIALECTS) + "."
        )
    if cluster not in UNITS:
        raise InputError(f"unknown cluster '{cluster}'", hint="Cluster by " + ", ".join(UNITS))
    unit = None if cluster == "sample_id" else sql_name(cluster)
    sql = summary_query(
        table_name(table), baseline=baseline, candidate=candidate, value=sql_name(metric),
        unit=unit,
    )  # fmt: skip
    import sqlglot  # only this command pays for SQLGlot's import

    return str(sqlglot.transpile(sql, read="duckdb", write=dialect, pretty=True)[0]) + ";\n"


# ------------------------------------------------------------------------------ DuckDB engine


@dataclass
class ClusterUnit:
    """The independent unit the summaries use: its SQL expression (None: the items), its name
    and why (as `calipers.verdicts.persample.ClusterChoice` says it for the rows)."""

    sql: str | None
    cluster: str
    reason: str
    note: str | None = None


@dataclass
class ComputedSummaries:
    """The summary table as numpy columns, with where it came from and how long it took."""

    columns: dict[str, Any]
    origin: str
    engine: str
    cluster: ClusterUnit
    metric: str
    query: str
    seconds: float
    notes: list[str] = field(default_factory=list)


def parquet_source(path: str, *, hive: bool | None = None) -> str:
    """`read_parquet` over a file, a glob or a directory (every .parquet below it), with hive
    partitions (`run=A/part-0.parquet`) read as columns; on object storage through httpfs."""
    target = path.rstrip("/")
    if not any(ch in target for ch in "*?[") and not target.endswith(".parquet"):
        target += "/**/*.parquet"  # a dataset's directory
    # DuckDB detects hive partitions (key=value/ directories) from the paths when not told
    hive_option = "" if hive is None else f", hive_partitioning = {'true' if hive else 'false'}"
    options = f"{hive_option}, union_by_name = true"
    return f"read_parquet({sql_literal(target)}{options})"


def is_remote(path: str) -> bool:
    return path.lower().startswith(REMOTE)


def load_httpfs(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """Object storage is read by DuckDB's httpfs extension, loaded on purpose (calipers' DuckDB
    never loads one on its own): installed once with `INSTALL httpfs` (or `calipers` fails here
    saying so); credentials as DuckDB takes them (CREATE SECRET, the AWS environment)."""
    try:
        con.execute("LOAD httpfs")
    except duckdb.Error as exc:
        raise InputError(
            f"{path}: reading object storage needs DuckDB's httpfs extension ({exc})",
            hint="Install it once: python -c \"import duckdb; duckdb.install_extension('httpfs')\" "
            "(docs/scale.md).",
        ) from exc


def relation_columns(con: duckdb.DuckDBPyConnection, source: str) -> dict[str, str]:
    try:
        rows = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
    except duckdb.Error as exc:
        raise InputError(f"cannot read {source}: {str(exc).splitlines()[0]}") from exc
    return {str(r[0]): str(r[1]) for r in rows}


def metric_sql(columns: dict[str, str], metric: str, origin: str) -> str:
    """The metric's SQL expression: `correct`, a `scores.NAME` column, `scores[NAME]` of a map,
    or a column of that name."""
    if metric == "correct" and "correct" in columns:
        return sql_name("correct")
    if f"scores.{metric}" in columns:
        return sql_name(f"scores.{metric}")
    if columns.get("scores", "").upper().startswith("MAP"):
        return f"{sql_name('scores')}[{sql_literal(metric)}]"
    if metric in columns and metric not in ("run", "task", "sample_id", "epoch", "group"):
        return sql_name(metric)
    numeric = [c for c, t in columns.items() if t.upper() in _NUMERIC and c != "epoch"]
    raise InputError(
        f"{origin} has no metric '{metric}'",
        hint="Metrics are `correct`, scores.NAME columns, the `scores` map or a numeric column; "
        + (f"numeric columns there: {', '.join(numeric)}." if numeric else "it has none."),
        parameters=["metric"],
    )


_NUMERIC = {"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE",
            "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"}  # fmt: skip


def resolve_unit(
    con: duckdb.DuckDBPyConnection,
    source: str,
    columns: dict[str, str],
    *,
    runs: tuple[str, str],
    cluster: str,
) -> ClusterUnit:
    """The unit `cluster` means here, as `resolve_cluster` decides it for rows: `auto` clusters
    by `group` when every sample of the two runs names one (one scan of that column), else by
    sample."""

    def count_groups() -> tuple[int, int]:
        where = f'"run" IN ({sql_literal(runs[0])}, {sql_literal(runs[1])})'
        row = con.execute(
            f'SELECT count(*) FILTER (WHERE "group" IS NULL), count(DISTINCT "group") '
            f"FROM {source} WHERE {where}"
        ).fetchall()[0]
        return int(row[0]), int(row[1])

    return decide_unit(cluster, has_group="group" in columns, count_groups=count_groups)


def decide_unit(
    cluster: str, *, has_group: bool, count_groups: Callable[[], tuple[int, int]]
) -> ClusterUnit:
    """The rules every engine shares: `count_groups()` (asked only where needed) gives the
    observations of the two runs without a `group` and the distinct groups among the others."""
    if cluster == "sample_id":
        return ClusterUnit(None, "sample_id", "--cluster sample_id")
    if cluster == "task":
        return ClusterUnit(sql_name("task"), "task", "--cluster task: the tasks are the units")
    if cluster not in ("auto", "group"):
        raise InputError(f"unknown `cluster` '{cluster}'",
                         hint="Cluster by auto, sample_id, group or task.",
                         parameters=["cluster"])  # fmt: skip
    if not has_group:
        if cluster == "group":
            raise InputError(
                "`cluster` group: the samples have no `group` column",
                hint="Cluster by sample_id or task.",
                parameters=["cluster"],
            )
        return ClusterUnit(None, "sample_id", "no sample names a group")
    unnamed, groups = count_groups()
    if cluster == "group":
        if unnamed:
            raise InputError(
                f"`cluster` group: {unnamed} observation(s) of the two runs have no `group`",
                hint="Give every sample a `group`, or cluster by sample_id or task.",
                parameters=["cluster"],
            )
        return ClusterUnit(sql_name("group"), "group", f"--cluster group: {groups} groups")
    if groups == 0:
        return ClusterUnit(None, "sample_id", "no sample names a group")
    if unnamed:
        return ClusterUnit(
            None, "sample_id", "only some samples name a group",
            "clustered by sample_id: only some samples name a group, so items of a group are "
            "treated as independent; give every sample a `group` to cluster by group",
        )  # fmt: skip
    if groups < 2:
        return ClusterUnit(None, "sample_id", "every sample names the same group: one group")
    return ClusterUnit(sql_name("group"), "group", f"the samples name {groups} groups")


def duckdb_summaries(
    con: duckdb.DuckDBPyConnection,
    source: str,
    *,
    origin: str,
    baseline: str,
    candidate: str,
    metric: str,
    cluster: str = "auto",
    engine: str = "duckdb",
) -> ComputedSummaries:
    """The summary table of (`baseline`, `candidate`) over `source` (SQL: a table, a view or a
    `read_parquet`), computed by DuckDB where the data lie."""
    if baseline == candidate:
        raise InputError("the baseline and the candidate are the same run",
                         parameters=["baseline", "candidates"])  # fmt: skip
    started = time.perf_counter()
    columns = relation_columns(con, source)
    lacking = [c for c in ("run", "task", "sample_id") if c not in columns]
    if lacking:
        raise InputError(
            f"{origin} lacks the column(s) {', '.join(lacking)}",
            hint="The summaries read run, task, sample_id and the metric (and `group` to cluster "
            "by it); a hive-partitioned dataset may give `run` as its partition key (run=NAME/).",
        )
    value = metric_sql(columns, metric, origin)
    unit = resolve_unit(con, source, columns, runs=(baseline, candidate), cluster=cluster)
    query = summary_query(source, baseline=baseline, candidate=candidate, value=value,
                          unit=unit.sql)  # fmt: skip
    try:
        table = con.execute(query).fetchnumpy()
    except duckdb.Error as exc:
        raise InputError(
            f"the summary query failed on {origin}: {str(exc).splitlines()[0]}",
            hint="Check the metric's type: a number or a boolean.",
        ) from exc
    if len(table["count"]) == 0:
        found = [r[0] for r in con.execute(
            f'SELECT DISTINCT "run" FROM {source} ORDER BY 1 LIMIT 50').fetchall()]  # fmt: skip
        missing = [r for r in (baseline, candidate) if r not in found]
        raise DataError(
            f"runs '{baseline}' and '{candidate}' share no item with '{metric}' in {origin}"
            + (f" (no run {', '.join(repr(m) for m in missing)})" if missing else ""),
            hint=f"Runs there: {', '.join(map(str, found)) or '(none)'}.",
        )
    out = {c: table[c] for c in COLUMNS}
    sums = np.column_stack([np.asarray(out[c], dtype=np.float64) for c in COLUMNS[4:9]])
    if not np.isfinite(sums).all():
        raise InputError(
            f"'{metric}' has NaN or infinite values in {origin}",
            hint="A missing value is NULL, not NaN: replace NaN by NULL where the data are.",
            parameters=["metric"],
        )
    out["unit"] = np.asarray(
        [None if v is None else str(v) for v in _objects(table["unit"])], dtype=object
    )
    return ComputedSummaries(
        out, origin, engine, unit, metric, query, time.perf_counter() - started,
        [unit.note] if unit.note else [],
    )  # fmt: skip


def _objects(column: Any) -> list[Any]:
    if isinstance(column, np.ma.MaskedArray):  # NULLs (np.ma.filled would put '?' for None)
        data = np.asarray(column.data, dtype=object)
        data[np.ma.getmaskarray(column)] = None
        return list(data)
    return list(column)


def parquet_summaries(
    path: str,
    *,
    baseline: str,
    candidate: str,
    metric: str,
    cluster: str = "auto",
    hive: bool | None = None,
    threads: int | None = None,
    memory_limit: str | None = None,
) -> ComputedSummaries:
    """The summaries over Parquet: a file, a glob, a directory, a hive-partitioned dataset
    (`run=NAME/…`), local or on object storage (s3://, gs://, https://: httpfs)."""
    import os
    import tempfile

    from calipers.data.duck import connect

    limit = memory_limit or os.environ.get("CALIPERS_MEMORY_LIMIT", SUMMARY_MEMORY_LIMIT)
    con = connect()
    # beyond the limit DuckDB's aggregate spills to disk — here, not in the working directory
    with tempfile.TemporaryDirectory(prefix="calipers-summaries-") as spill:
        try:
            con.execute("SET enable_progress_bar = false")
            con.execute(f"SET temp_directory = {sql_literal(spill)}")
            try:
                con.execute(f"SET memory_limit = {sql_literal(limit)}")
            except duckdb.Error as exc:
                raise InputError(f"CALIPERS_MEMORY_LIMIT={limit!r} is not a memory size",
                                 hint="Use e.g. 600MB or 4GB.") from exc  # fmt: skip
            if threads is not None:
                con.execute(f"SET threads = {int(threads)}")
            if is_remote(path):
                load_httpfs(con, path)
            return duckdb_summaries(
                con, parquet_source(path, hive=hive), origin=path, baseline=baseline,
                candidate=candidate, metric=metric, cluster=cluster,
            )  # fmt: skip
        finally:
            con.close()


def parquet_rows(path: str, metric: str) -> Any:
    """The rows of a Parquet dataset as samples (the model's columns, as `calipers.data.readers`
    reads a Parquet file), for a comparison the summaries cannot decide: every row is read into
    memory by the engine that stages them. A metric in a plain column becomes `scores{NAME}`."""
    from calipers.data.duck import connect
    from calipers.data.sampleset import SampleSet
    from calipers.data.tabular import _select_from

    con = connect()
    con.execute("SET enable_progress_bar = false")
    if is_remote(path):
        load_httpfs(con, path)
    source = parquet_source(path)
    present = relation_columns(con, source)
    known = {"correct", "scores"} | {c for c in present if c.startswith("scores.")}
    if metric not in known and f"scores.{metric}" not in present and metric in present:
        source = f"(SELECT *, {sql_name(metric)} AS {sql_name('scores.' + metric)} FROM {source})"
        present[f"scores.{metric}"] = present[metric]
    con.execute(f"CREATE TEMP VIEW parquet_samples AS {_select_from(source, present, None)}")
    return SampleSet(con, "parquet_samples", path)
