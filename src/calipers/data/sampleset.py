"""Samples ready for SQL: a DuckDB connection and the name of a relation with the model's columns.

Every scheme reads its input through a `SampleSet`, whether the samples live in the store or were
read straight from a file, so the same SQL scores both. This module is the bottom of the data
layer: readers, the store and the schemes build on it, and it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass
class SampleSet:
    """A relation of samples (columns as in `calipers.data.model.FIELDS`) on a DuckDB connection."""

    con: duckdb.DuckDBPyConnection
    relation: str  # SQL name of a table or view
    origin: str  # the file or store the samples came from, for messages and reports
    warnings: list[str] = field(default_factory=list)
    # the relation is the store's `samples`, filtered by run only: the per-run summaries written
    # with them (calipers.data.layer_inputs) describe it
    whole_runs: bool = False

    def to_arrow(self) -> pa.Table:
        return arrow_table(self.con.sql(f"SELECT * FROM {self.relation}"))

    def runs(self) -> list[str]:
        rows = self.con.execute(f"SELECT DISTINCT run FROM {self.relation} ORDER BY run")
        return [r[0] for r in rows.fetchall()]

    def count(self) -> int:
        return scalar(self.con, f"SELECT count(*) FROM {self.relation}")


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> int:
    """The first column of the first row as an int (0 when there is no row). Fetches the whole
    result, which DuckDB ≥ 2 requires before the connection does anything else."""
    rows = con.execute(sql, params or []).fetchall()
    return int(rows[0][0]) if rows and rows[0][0] is not None else 0


def arrow_table(relation: duckdb.DuckDBPyRelation) -> pa.Table:
    """The relation's rows as an Arrow table (DuckDB 2 renamed fetch_arrow_table)."""
    method = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
    return method()
