"""The store's schema, as named migrations applied in order and recorded in `schema_migrations`.

Never edit a migration that has shipped: add a new one. Each runs in the same transaction as its
record, so a store is always at a named version.
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

from calipers.data.model import FIELD_BY_NAME, FIELDS


def _samples_table() -> str:
    # Only the columns of the first version: later fields arrive through their own migration.
    cols = ",\n    ".join(f"{f.name} {f.duckdb_type}" for f in FIELDS if f.since is None)
    return f"CREATE TABLE samples (\n    {cols},\n    source VARCHAR,\n    imported_at TIMESTAMP\n)"


MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0001_samples", (_samples_table(),)),
    (
        "0002_imports_log",
        (
            "CREATE TABLE imports (id INTEGER, imported_at TIMESTAMP, source VARCHAR, "
            "format VARCHAR, run_override VARCHAR, samples BIGINT, replaced BIGINT)",
        ),
    ),
    ("0003_tools", (f"ALTER TABLE samples ADD COLUMN tools {FIELD_BY_NAME['tools'].duckdb_type}",)),
    (
        "0004_rubric_history",
        (
            # One row per rubric evaluation ever scored; `seq` orders them (earlier = smaller).
            "CREATE TABLE rubric_history (seq BIGINT NOT NULL, scored_at TIMESTAMP NOT NULL, "
            "run VARCHAR NOT NULL, task VARCHAR NOT NULL, sample_id VARCHAR NOT NULL, "
            "epoch INTEGER NOT NULL, rubric_sha256 VARCHAR, correctness DOUBLE, "
            "completeness DOUBLE, adherence DOUBLE, actionability DOUBLE, efficiency DOUBLE, "
            "safety DOUBLE, consistency DOUBLE, composite DOUBLE, final DOUBLE, grade VARCHAR, "
            "PRIMARY KEY (run, task, sample_id, epoch))",
        ),
    ),
    (
        "0005_input_expected",
        tuple(
            f"ALTER TABLE samples ADD COLUMN {name} {FIELD_BY_NAME[name].duckdb_type}"
            for name in ("input", "expected")
        ),
    ),
)


def applied(con: duckdb.DuckDBPyConnection) -> list[str]:
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'"
    ).fetchall()
    if not exists or not exists[0][0]:
        return []
    return [
        r[0] for r in con.execute("SELECT name FROM schema_migrations ORDER BY name").fetchall()
    ]


def pending(con: duckdb.DuckDBPyConnection) -> list[str]:
    done = set(applied(con))
    return [name for name, _ in MIGRATIONS if name not in done]


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every pending migration; return their names."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name VARCHAR PRIMARY KEY, "
        "applied_at TIMESTAMP)"
    )
    done = set(applied(con))
    ran = []
    for name, statements in MIGRATIONS:
        if name in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            for statement in statements:
                con.execute(statement)
            con.execute(
                "INSERT INTO schema_migrations VALUES (?, ?)",
                [name, datetime.now(UTC).replace(tzinfo=None)],
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        ran.append(name)
    return ran
