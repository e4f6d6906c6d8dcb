"""Samples ready for SQL: a DuckDB connection and the name of a relation with the model's columns.

Every scheme reads its input through a `SampleSet`, whether the samples live in the store or were
read straight from a file, so the same SQL scores both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa


@dataclass
class SampleSet:
    """A relation of samples (columns as in `calipers.data.model.FIELDS`) on a DuckDB connection."""

    con: duckdb.DuckDBPyConnection
    relation: str  # SQL name of a table or view; already quoted if it needs quoting
    origin: str  # the file or store the samples came from, for messages and reports

    def to_arrow(self) -> pa.Table:
        return self.con.sql(f"SELECT * FROM {self.relation}").fetch_arrow_table()

    def runs(self) -> list[str]:
        rows = self.con.sql(f"SELECT DISTINCT run FROM {self.relation} ORDER BY run").fetchall()
        return [r[0] for r in rows]

    def count(self) -> int:
        row = self.con.sql(f"SELECT count(*) FROM {self.relation}").fetchone()
        return int(row[0]) if row else 0

    def restricted(self, runs: Sequence[str]) -> SampleSet:
        """The same samples limited to `runs` (a view on the same connection)."""
        name = f"samples_runs_{abs(hash(tuple(runs))) % 10**9}"
        self.con.execute(
            f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM {self.relation} "
            "WHERE run IN (SELECT unnest($runs))",
            {"runs": list(runs)},
        )
        return SampleSet(self.con, name, self.origin)
