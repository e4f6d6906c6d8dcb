"""`calipers sql`: print the summary query of a compared pair for a warehouse, so that a team runs
the heavy part in its own engine and `calipers compare --summaries FILE` decides from the small
table it returns (docs/scale.md)."""

from __future__ import annotations

import sys

import click

from calipers.cli.main import cli
from calipers.data.summaries import DIALECTS, UNITS, portable_query


@cli.command("sql")
@click.option(
    "--dialect",
    type=click.Choice(DIALECTS),
    default="duckdb",
    show_default=True,
    help="The SQL dialect (transpiled from DuckDB's by SQLGlot).",
)
@click.option(
    "--baseline",
    "--control",
    "baseline",
    required=True,
    help="The run to compare against (a value of the `run` column).",
)
@click.option(
    "--candidate", "--treatment", "candidate", required=True, help="The run compared with it."
)
@click.option(
    "--metric", required=True, help="The metric's column: a number per row (0/1 for pass/fail)."
)
@click.option(
    "--table",
    default="samples",
    show_default=True,
    metavar="[CATALOG.]SCHEMA.TABLE",
    help="The table or view with columns run, task, sample_id and the metric.",
)
@click.option(
    "--cluster",
    type=click.Choice(UNITS),
    default="sample_id",
    show_default=True,
    help="The independent unit: each item (its epochs together; identical items "
    "collapse into one row), the `group` column, or the task.",
)
def sql_command(
    dialect: str, baseline: str, candidate: str, metric: str, table: str, cluster: str
) -> None:  # fmt: skip
    """Print the query that computes the pair's summary table — one row per (task, unit, cell):
    task, unit, n_a, n_b, sum_a, sum_b, sum_aa, sum_bb, sum_ab, items, count — in the dialect of
    DuckDB, Spark, BigQuery, Snowflake or Trino. Save its result as CSV, Parquet or JSON Lines
    and run `calipers compare --summaries FILE --baseline A --candidate B --metric NAME`.

    Run names enter the query as escaped string literals and column names as quoted
    identifiers (Snowflake: quoted names are case-sensitive; the columns are named in lower
    case)."""
    query = portable_query(
        table=table, baseline=baseline, candidate=candidate, metric=metric, cluster=cluster,
        dialect=dialect,
    )  # fmt: skip
    sys.stdout.write(query)
