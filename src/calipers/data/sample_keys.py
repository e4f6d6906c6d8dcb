"""The store's integer key per sample: one BIGINT per distinct (task, sample_id), store-wide,
written on every sample row at import (`samples.sample_key`, table `sample_keys`; migration 0012).

Two runs pair on their samples' (task, sample_id). Matched as strings, each comparison hashed and
sorted every key of both runs: 1.0–1.2 s of CPU of the viewer's first flips page on 2 × 1M samples
(2026-11-27). Keyed here once, at import, a staging reads integers and ranks them in O(n).

- `key` is given once, when an import first brings the (task, sample_id), and never changes: a
  re-import, another run with the same sample, or a run with other samples keeps every key.
- `key_order` and `task_order` are each key's rank under `ORDER BY task, sample_id` and under
  `ORDER BY task` over the whole table (DuckDB's own string order: the one the string staging
  used), ranked again by every write that adds a key. A staging dense-ranks the ranks its runs
  have, and so numbers their samples exactly as it did on strings (`verdicts.sample_codes`).
- An import keys its rows in a transaction of its own, just after its own (`assign_apart`).

Why not ids that are themselves in string order: a new key between two old ones would renumber
the samples that follow it, rows of every run, at every import; ranks in this small table are
renumbered instead. Why not a hash of the strings: a collision would join two samples silently.

Keys are read only for runs whose layered summaries are current (`layer_inputs.current`: the run
has the row count calipers last wrote), else the strings answer: rows written by other SQL than
calipers' (a benchmark's INSERT) have no key, or one copied from another row (`INSERT ... SELECT
*`), until the next write through the store (or `Store.refresh_layer_inputs`) keys those runs
again. A row with a NULL task or sample_id never gets a key.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from calipers import writes
from calipers.data.files import sql_literal
from calipers.data.sampleset import scalar

_MISSING = (
    "SELECT DISTINCT task, sample_id FROM samples "
    "WHERE sample_key IS NULL AND task IS NOT NULL AND sample_id IS NOT NULL"
)
# The first keys of a store, numbered in string order: their ranks are their keys (one sort).
_FIRST = f"""
INSERT INTO sample_keys (key, task, sample_id, key_order, task_order)
SELECT (row_number() OVER (ORDER BY task, sample_id) - 1)::BIGINT, task, sample_id,
       (row_number() OVER (ORDER BY task, sample_id) - 1)::BIGINT,
       (dense_rank() OVER (ORDER BY task) - 1)::BIGINT
FROM ({_MISSING})
"""
# Keys new to a store with keys: numbered after the last (in string order among themselves, so
# that a store's keys follow from its imports alone), ranked below.
_MORE = f"""
INSERT INTO sample_keys (key, task, sample_id, key_order, task_order)
SELECT $first + (row_number() OVER (ORDER BY n.task, n.sample_id) - 1)::BIGINT,
       n.task, n.sample_id, -1, -1
FROM ({_MISSING}) n ANTI JOIN sample_keys k ON k.task = n.task AND k.sample_id = n.sample_id
"""
_RANK = """
UPDATE sample_keys SET key_order = r.key_order, task_order = r.task_order
FROM (SELECT key, (row_number() OVER (ORDER BY task, sample_id) - 1)::BIGINT AS key_order,
             (dense_rank() OVER (ORDER BY task) - 1)::BIGINT AS task_order FROM sample_keys) r
WHERE sample_keys.key = r.key
"""
_SET = """
UPDATE samples SET sample_key = k.key FROM sample_keys k
WHERE samples.sample_key IS NULL AND samples.task = k.task AND samples.sample_id = k.sample_id
"""


def forget(con: duckdb.DuckDBPyConnection, runs: Sequence[str]) -> None:
    """Drop the keys of every row of `runs` (inside the caller's transaction, the one that
    summarises them again): runs written around calipers since its last write
    (`layer_inputs.stale_runs`: their row count is not the one summarised), whose rows may carry
    a key copied from another row (`INSERT ... SELECT * REPLACE (...)`). `assign` keys them
    again from their strings."""
    if runs:
        con.execute(
            "UPDATE samples SET sample_key = NULL WHERE run IN "
            f"({', '.join(sql_literal(r) for r in runs)}) AND sample_key IS NOT NULL"
        )


def assign(con: duckdb.DuckDBPyConnection) -> int:
    """Give every sample row without a key its key (inside the caller's transaction), adding the
    keys the store lacks and ranking them again when it does; the number of keys added."""
    if not scalar(con, "SELECT count(*) FROM samples WHERE sample_key IS NULL"):
        return 0
    first = scalar(con, "SELECT coalesce(max(key) + 1, 0) FROM sample_keys")
    if first == 0:
        added = _count(con.execute(_FIRST))
    else:
        added = _count(con.execute(_MORE, {"first": first}))
        if added:
            con.execute(_RANK)
    con.execute(_SET)
    return added


def assign_apart(con: duckdb.DuckDBPyConnection, store: Path) -> int:
    """`assign` in a transaction of its own, run just after an import's. In the import's own
    transaction the UPDATE of rows appended there cost 1.1 s of CPU more at its commit than here
    (DuckDB rewrites the appended rows; 1M samples, 2026-11-27): 0.55 s in all against 1.5 s.
    Until it commits the rows have no key and are read by their strings; were it interrupted,
    the next write keys them."""
    with writes.transaction(con, f"the sample keys of {store}"):
        return assign(con)


def _count(result: duckdb.DuckDBPyConnection) -> int:
    row = result.fetchone()
    return int(row[0]) if row else 0
