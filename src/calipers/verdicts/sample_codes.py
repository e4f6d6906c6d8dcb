"""Sample codes from the store's integer keys (`calipers.data.sample_keys`, migration 0012).

`stage_rows` numbers the samples of the runs it stages 0..k−1 in (task, sample_id) order (`sid`)
and their tasks in task order (`task_code`); pairs match on those codes. On strings that meant a
DISTINCT and a sort of every key of the runs and a join over every row: 1.0–1.2 s of CPU on
2 × 1M samples (2026-11-27). A store's rows carry an integer key whose store-wide ranks follow the
same orders, so the codes are those ranks ranked again among the staged rows, in O(n), and a
code's name is read by its key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt

from calipers.data import layer_inputs
from calipers.data.duck import position_in
from calipers.data.files import sql_literal


def keyed_rows(
    con: Any,
    where: str,
    runs: list[str],
    group_cte: str,
    group_col: str,
    group_join: str,
    exprs: str,
    derived: str,
) -> tuple[dict[str, Any], npt.NDArray[np.int64]] | None:
    """`stage_rows`' columns read from the store's `samples` with their integer keys
    (`calipers.data.sample_keys`), and the store key of each sample code; None where a row has
    no key (written by other SQL) or the store has none. The keys' ranks, store-wide, follow
    (task, sample_id) and task as the strings sort: ranked again among these rows they are the
    codes the string staging numbers (`sid`, `task_code`) — without hashing or sorting a string
    (2 × 1M rows: 0.3 s of CPU against 0.73 s, 2026-11-27)."""
    # Only where calipers wrote the runs' rows as they are (the summaries' row counts hold):
    # rows written around it may carry no key, or a key copied from another row.
    if layer_inputs.current(con, runs) is None:
        return None
    try:
        # The ranks first: a write between the two reads can only add keys (then not found
        # here: the strings answer) and rank the old ones again in the same order.
        ranks = _ranks(con, where, "key, key_order, task_order")
        columns = con.execute(
            f"""
            WITH s AS (SELECT *{derived} FROM samples WHERE {where}){group_cte}
            SELECT {position_in("run", runs)}::INTEGER AS run_code, s.sample_key AS store_key,
                   s.epoch::BIGINT AS epoch {group_col} {exprs}
            FROM s {group_join}
            """
        ).fetchnumpy()
    except (duckdb.CatalogException, duckdb.BinderException):  # not a store with keys
        return None
    key = columns.pop("store_key")
    if np.ma.isMaskedArray(key) and np.ma.getmaskarray(key).any():
        return None
    key = np.asarray(key, dtype=np.int64)
    known = np.asarray(ranks["key"], dtype=np.int64)
    if key.size and (not known.size or int(key.max()) > int(known.max()) or key.min() < 0):
        return None
    order_of = np.full(int(known.max()) + 1 if known.size else 0, -1, dtype=np.int64)
    task_of = np.full(order_of.size, -1, dtype=np.int64)
    order_of[known] = np.asarray(ranks["key_order"], dtype=np.int64)
    task_of[known] = np.asarray(ranks["task_order"], dtype=np.int64)
    order = order_of[key]
    if order.size and int(order.min()) < 0:
        return None
    sid, present = dense_ranks(order)
    # each code's store key: the key of the rows at that rank (one key per rank)
    key_of_rank = np.zeros(int(present[-1]) + 1 if present.size else 0, dtype=np.int64)
    key_of_rank[order] = key
    # the columns in the string staging's order, under its names
    run_code = columns.pop("run_code")
    staged = {"run_code": run_code, "sid": sid, "task_code": dense_ranks(task_of[key])[0]}
    return staged | columns, key_of_rank[present]


def codes_keys(con: Any, runs: Sequence[str]) -> npt.NDArray[np.int64] | None:
    """The store key of each sample code of `runs`, codes numbered in (task, sample_id) order
    over the runs' samples as `stage_rows` numbers them; None where a row has no key. For a
    staging made another way (the layered scheme's, from its summaries' ranks) whose sample
    names are then read by key: one pass over the rows' integers, not a sort of their strings
    (2 × 1M rows: the flips' `load_keys` 0.6 s of CPU on strings). The caller makes sure calipers
    wrote the runs' rows as they are (`layer_inputs.current`), as `keyed_rows` does."""
    where = f"run IN ({', '.join(sql_literal(r) for r in runs)})"
    try:
        ranks = _ranks(con, where, "key, key_order")
        found = con.execute(f"SELECT DISTINCT sample_key FROM samples WHERE {where}").fetchnumpy()
    except (duckdb.CatalogException, duckdb.BinderException):  # not a store with keys
        return None
    key = found["sample_key"]
    if np.ma.isMaskedArray(key) and np.ma.getmaskarray(key).any():
        return None
    key = np.asarray(key, dtype=np.int64)
    known = np.asarray(ranks["key"], dtype=np.int64)
    if not key.size or not known.size or int(key.max()) > int(known.max()) or key.min() < 0:
        return None
    order_of = np.full(int(known.max()) + 1, -1, dtype=np.int64)
    order_of[known] = np.asarray(ranks["key_order"], dtype=np.int64)
    order = order_of[key]
    if int(order.min()) < 0:
        return None
    return key[np.argsort(order, kind="stable")]


def _ranks(con: Any, where: str, columns: str) -> dict[str, Any]:
    """`columns` of the store's keys: the whole table where the runs' rows are not far fewer
    than its keys (one scan), else only the keys the runs' rows carry (a store of many runs of
    other samples: not every key read for a comparison of two)."""
    n_keys = con.execute("SELECT count(*) FROM sample_keys").fetchall()[0][0]
    n_rows = con.execute(f"SELECT count(*) FROM samples WHERE {where}").fetchall()[0][0]
    if n_keys <= 4 * n_rows:
        return dict(con.execute(f"SELECT {columns} FROM sample_keys").fetchnumpy())
    return dict(con.execute(
        f"SELECT {columns} FROM sample_keys SEMI JOIN (SELECT sample_key FROM samples "
        f"WHERE {where}) s ON key = s.sample_key"
    ).fetchnumpy())  # fmt: skip


def dense_ranks(values: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], Any]:
    """Non-negative integers ranked densely (0..k−1 in their order), in O(n + max), and the
    values present, in order."""
    if values.size == 0:
        return values.astype(np.int64), np.zeros(0, dtype=np.int64)
    seen = np.zeros(int(values.max()) + 1, dtype=bool)
    seen[values] = True
    rank = np.cumsum(seen, dtype=np.int64) - 1
    return rank[values], np.flatnonzero(seen)


def names_by_key(
    con: duckdb.DuckDBPyConnection, runs: Sequence[str], keys: npt.NDArray[np.int64]
) -> npt.NDArray[Any]:
    """The sample_id of each code, whose store keys are `keys`, read by key (no string sorted)."""
    where = f"run IN ({', '.join(sql_literal(r) for r in runs)})"
    # the whole table where it is not much more than these keys (a third of the CPU of a
    # semi-join over the rows' keys, 2 × 1M rows); else only the keys of these runs
    whole = con.execute("SELECT count(*) FROM sample_keys").fetchall()[0][0] <= 2 * keys.size
    found = con.execute(
        "SELECT key, sample_id FROM sample_keys" if whole else
        "SELECT key, sample_id FROM sample_keys SEMI JOIN (SELECT sample_key FROM samples "
        f"WHERE {where}) s ON key = s.sample_key"
    ).fetchnumpy()  # fmt: skip
    found_key = np.asarray(found["key"], dtype=np.int64)
    code_of = np.full(max(int(keys.max()), int(found_key.max(initial=0))) + 1, -1, np.int64)
    code_of[keys] = np.arange(keys.size)
    code = code_of[found_key]
    names = np.empty(keys.size, dtype=object)
    names[code[code >= 0]] = np.asarray(found["sample_id"], dtype=object)[code >= 0]
    return names


def names_of_codes(
    con: duckdb.DuckDBPyConnection, keys: npt.NDArray[np.int64], codes: Sequence[int]
) -> dict[int, str]:
    """ "task/sample_id" of each of `codes` (whose store keys are `keys`; others left out)."""
    asked = sorted(int(i) for i in set(codes) if 0 <= int(i) < keys.size)
    by_key = {int(keys[i]): i for i in asked}
    rows = con.execute(
        "SELECT key, task, sample_id FROM sample_keys WHERE key IN "
        f"({', '.join(map(str, by_key)) or 'NULL'})"
    ).fetchall()
    return {by_key[int(key)]: f"{task}/{sample}" for key, task, sample in rows}
