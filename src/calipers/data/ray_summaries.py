"""The summary table of a compared pair computed by Ray Data over a Parquet dataset of samples
(`calipers compare --parquet PATH --engine ray`): the same table as the DuckDB engine's query
(`calipers.data.summaries.summary_query`), row for row, for data that live on a Ray cluster.

Two stages, as the query's two GROUP BYs:

1. `ray.data.read_parquet` and `map_batches`, where the files are: each block keeps the two
   runs' rows with a value (`CAST(metric AS DOUBLE)`, NULL dropped), splits the values by side
   and pre-aggregates them per item (task, unit, sample_id) — a count and a sum per side — and
   tags each item with its partition, a stable hash of (task, cluster) or of (task, sample_id).
2. One Ray task per partition merges its items' partial counts and sums, keeps the paired items
   (a value on both sides), and reduces them to its rows of the table: the collapsed cells
   (task, n_a, n_b, Σa, Σb) with their count, or one row per (task, cluster) with the sums of
   the item means. Every cluster lies whole in one partition, and the driver adds the cells'
   counts together and sorts as the query does. Each block is cut by partition as it arrives,
   so a reduce task fetches its own slices, not every block.

The partitioned reduce runs as Ray tasks over the blocks' object references rather than through
Ray Data's `groupby`: over 1M rows on 2 cores, the hash shuffle behind `groupby().map_groups()`
took 26–40 s where these tasks take 3–4 s (benchmarks/README.md).

Sums: counts and the sums of 0/1 outcomes are exact whatever the order; a per-item sum of scores
and the sums of item means are added in another order than DuckDB's, so the two engines agree
to rounding there (tests/test_ray_data.py: equal tables, statistics to 1e-12).
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from calipers.data.ray_session import connect_ray, import_ray
from calipers.data.summaries import (
    COLUMNS,
    ClusterUnit,
    ComputedSummaries,
    decide_unit,
    is_remote,
)
from calipers.errors import DataError, InputError

ENGINE = "ray"
_KEYS = ("run", "task", "sample_id")
# a local instance for the summaries: the blocks' partial aggregates wait in the object store
# for the reduce (Ray spills them to disk beyond this)
_OBJECT_STORE_BYTES = 1024**3
_BLOCK_ROWS = 1_000_000


def parquet_summaries(
    path: str | Sequence[str],
    *,
    baseline: str,
    candidate: str,
    metric: str,
    cluster: str = "auto",
    address: str | None = None,
    partitions: int | None = None,
) -> ComputedSummaries:
    """The summary table of (`baseline`, `candidate`) over Parquet — a file, a directory (every
    .parquet below it), a local glob, or a list of them; hive partitions (`run=NAME/`) read as
    columns — computed on Ray (`address`, else RAY_ADDRESS, else a private local instance).
    `partitions`: reduce tasks (default: the cluster's CPUs)."""
    if baseline == candidate:
        raise InputError("the baseline and the candidate are the same run",
                         parameters=["baseline", "candidates"])  # fmt: skip
    origin = path if isinstance(path, str) else ", ".join(path)
    paths = _paths(path)
    ray = import_ray("--engine ray")
    started = connect_ray(
        ray, address or os.environ.get("RAY_ADDRESS") or None, num_cpus=os.cpu_count() or 1,
        flag="--engine ray", object_store_bytes=_OBJECT_STORE_BYTES,
    )  # fmt: skip
    try:
        with _quiet_data_context(ray, _read_blocks(ray, paths)):
            return _summaries(ray, paths, origin, baseline, candidate, metric, cluster,
                              partitions)  # fmt: skip
    finally:
        if started:
            ray.shutdown()


def _paths(path: str | Sequence[str]) -> list[str]:
    """Local globs expanded (Ray reads files and directories, not patterns)."""
    given = [path] if isinstance(path, str) else list(path)
    out: list[str] = []
    for p in given:
        if not is_remote(p) and any(ch in p for ch in "*?["):
            found = sorted(glob.glob(p, recursive=True))
            if not found:
                raise InputError(f"--parquet {p}: no file matches", hint="Check the pattern.")
            out.extend(found)
        elif not is_remote(p) and not os.path.exists(p):
            raise InputError(f"--parquet {p}: no such file or directory")
        else:
            out.append(p)
    return out


def _read_blocks(ray: Any, paths: list[str]) -> int | None:
    """How many blocks to read local files in: about a million rows each (a map task's memory:
    ~100 MB of them), and at least two per CPU. Ray's own rule — at least 200 — cuts 1M rows into
    ~50 reads whose start-up outweighs their work; with fewer, a block of 15M rows took 1.7 GB.
    None (Ray's rule) for object storage, whose footers are not read here."""
    import pyarrow.dataset as pds

    if any(is_remote(p) for p in paths):
        return None
    try:
        rows = sum(
            int(pds.dataset(p, format="parquet", partitioning="hive").count_rows()) for p in paths
        )
    except (OSError, ValueError):  # what Ray's own reader will say better
        return None
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    return max(2 * cpus, -(-rows // _BLOCK_ROWS))


@contextmanager
def _quiet_data_context(ray: Any, blocks: int | None) -> Iterator[None]:
    """Ray Data's settings for these reads, restored after: no progress bars or INFO lines, the
    V1 Parquet reader — V2 provisions 32 footer-reading actors per read, ~8 s of start-up on 2
    cores for a few files — and `blocks` read blocks at least."""
    import logging

    import ray.data

    context = ray.data.DataContext.get_current()
    saved = (context.enable_progress_bars, context.use_datasource_v2,
             context.read_op_min_num_blocks)  # fmt: skip
    logger = logging.getLogger("ray.data")
    level = logger.level
    context.enable_progress_bars, context.use_datasource_v2 = False, False
    if blocks is not None:
        context.read_op_min_num_blocks = blocks
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        (context.enable_progress_bars, context.use_datasource_v2,
         context.read_op_min_num_blocks) = saved  # fmt: skip
        logger.setLevel(level)


def _summaries(
    ray: Any, paths: list[str], origin: str, baseline: str, candidate: str, metric: str,
    cluster: str, partitions: int | None,
) -> ComputedSummaries:  # fmt: skip
    import pyarrow as pa

    started = time.perf_counter()
    dataset = ray.data.read_parquet(paths if len(paths) > 1 else paths[0])
    schema = dataset.schema()
    types = dict(zip(schema.names, schema.types, strict=True))
    lacking = [c for c in _KEYS if c not in types]
    if lacking:
        raise InputError(
            f"{origin} lacks the column(s) {', '.join(lacking)}",
            hint="The summaries read run, task, sample_id and the metric (and `group` to cluster "
            "by it); a hive-partitioned dataset may give `run` as its partition key (run=NAME/).",
        )
    value = metric_of(types, metric, origin)
    unit = resolve_unit(dataset, types, runs=(baseline, candidate), cluster=cluster)
    column = "scores" if value[0] == "map" else value[1]
    wanted = [*_KEYS, column] + (["group"] if unit.cluster == "group" else [])
    count = partitions or 4 * max(1, int(ray.cluster_resources().get("CPU", 1)))
    fn: Any = partial_items
    blocks = dataset.select_columns(list(dict.fromkeys(wanted))).map_batches(
        fn, batch_format="pyarrow", batch_size=None, fn_kwargs={
            "runs": (baseline, candidate), "value": value, "unit": unit.cluster,
            "partitions": count,
        },
    )  # fmt: skip
    try:
        parts = ray.get(_reduce(ray, blocks, unit.cluster, count))
    except Exception as exc:  # a task's error arrives wrapped (RayTaskError)
        cause = getattr(exc, "cause", None) or exc
        if isinstance(cause, (pa.ArrowInvalid, pa.ArrowNotImplementedError)):
            raise InputError(
                f"the summary computation failed on {origin}: {str(cause).splitlines()[0]}",
                hint="Check the metric's type: a number or a boolean.",
            ) from None
        raise
    collapsed = unit.cluster == "sample_id"
    merged = pa.concat_tables(parts, promote_options="permissive") if parts else None
    table = None if merged is None else _final(merged, collapsed=collapsed)
    if table is None or table.num_rows == 0:
        found = _runs(dataset)[:50]
        missing = [r for r in (baseline, candidate) if r not in found]
        raise DataError(
            f"runs '{baseline}' and '{candidate}' share no item with '{metric}' in {origin}"
            + (f" (no run {', '.join(repr(m) for m in missing)})" if missing else ""),
            hint=f"Runs there: {', '.join(found) or '(none)'}.",
        )
    columns = {c: table.column(c).to_numpy(zero_copy_only=False) for c in COLUMNS}
    columns["task"] = np.asarray(table.column("task").to_pylist(), dtype=object)
    columns["unit"] = np.asarray(table.column("unit").to_pylist(), dtype=object)
    described = f"ray.data.read_parquet({origin!r}) → map_batches → {count} reduce task(s)"
    return ComputedSummaries(
        columns, origin, ENGINE, unit, metric, described, time.perf_counter() - started,
        [unit.note] if unit.note else [],
    )  # fmt: skip


def _reduce(ray: Any, blocks: Any, unit: str, count: int) -> list[Any]:
    """The reduce tasks' results (object references), fed as the blocks stream in: each block's
    items are split by partition as it arrives (one small task, `count` objects) and the block
    is let go, so that each reduce task fetches its own slices only — handing every block to
    every reduce task made each read them all (10 GB spilled and read back at 200M rows)."""
    split = ray.remote(split_partitions).options(num_returns=count)
    pieces: list[list[Any]] = []
    for bundle in blocks.iter_internal_ref_bundles():
        for ref in bundle.block_refs:
            out = split.remote(ref, count)
            pieces.append(out if count > 1 else [out])
    if not pieces:  # no block at all: no row
        return []
    reduce = ray.remote(reduce_partition)
    return [reduce.remote(unit, *[piece[p] for piece in pieces]) for p in range(count)]


def _runs(dataset: Any) -> list[str]:
    """The runs the dataset holds (for an error): each block's, merged here — Ray Data's own
    `unique` shuffles, seconds more for a few names."""
    fn: Any = block_runs
    listed = dataset.select_columns(["run"]).map_batches(
        fn, batch_format="pyarrow", batch_size=None
    )
    return sorted({name for row in listed.iter_rows() for name in row["runs"]})


def metric_of(types: dict[str, Any], metric: str, origin: str) -> tuple[str, str]:
    """Where the metric is, as `summaries.metric_sql` finds it: ("column", NAME) or ("map",
    NAME) for a key of the `scores` map. Only numbers and booleans are read."""
    import pyarrow as pa

    def readable(name: str) -> tuple[str, str]:
        kind = types[name]
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                or pa.types.is_boolean(kind) or pa.types.is_decimal(kind)
                or pa.types.is_null(kind)):  # fmt: skip
            raise InputError(
                f"the summary computation failed on {origin}: column {name} is {kind}",
                hint="Check the metric's type: a number or a boolean.",
            )
        return ("column", name)

    if metric == "correct" and "correct" in types:
        return readable("correct")
    if f"scores.{metric}" in types:
        return readable(f"scores.{metric}")
    if "scores" in types and pa.types.is_map(types["scores"]):
        return ("map", metric)
    if metric in types and metric not in ("run", "task", "sample_id", "epoch", "group"):
        return readable(metric)
    numeric = [
        c for c, t in types.items()
        if (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t))
        and c != "epoch"
    ]  # fmt: skip
    raise InputError(
        f"{origin} has no metric '{metric}'",
        hint="Metrics are `correct`, scores.NAME columns, the `scores` map or a numeric column; "
        + (f"numeric columns there: {', '.join(numeric)}." if numeric else "it has none."),
        parameters=["metric"],
    )


def resolve_unit(
    dataset: Any, types: dict[str, Any], *, runs: tuple[str, str], cluster: str
) -> ClusterUnit:
    """The unit `cluster` means, decided by `summaries.decide_unit` (the same rules and words):
    `auto` clusters by `group` when every row of the two runs names one — counted here by one
    pass of Ray Data over the run and group columns."""

    def count_groups() -> tuple[int, int]:
        fn: Any = group_counts
        counted = dataset.select_columns(["run", "group"]).map_batches(
            fn, batch_format="pyarrow", batch_size=None, fn_kwargs={"runs": runs}
        )
        unnamed, names = 0, set()
        for row in counted.iter_rows():
            unnamed += int(row["unnamed"])
            names.update(row["groups"])
        return unnamed, len(names)

    return decide_unit(cluster, has_group="group" in types, count_groups=count_groups)


# ------------------------------------------------------------------- on the workers (stage 1)


def block_runs(batch: Any) -> dict[str, list[Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pc.unique(pc.cast(batch.column("run"), pa.string()))
    return {"runs": [[str(n) for n in names.to_pylist() if n is not None]]}


def group_counts(batch: Any, runs: tuple[str, str]) -> dict[str, list[Any]]:
    """One block's rows of the two runs: how many have no group, and the groups they name."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = batch.filter(pc.is_in(batch.column("run"), value_set=pa.array(list(runs))))
    group = pc.cast(rows.column("group"), pa.string())
    named = pc.unique(group.filter(pc.is_valid(group))).to_pylist()
    return {"unnamed": [int(group.null_count)], "groups": [named]}


def partial_items(
    batch: Any, runs: tuple[str, str], value: tuple[str, str], unit: str, partitions: int
) -> Any:
    """One block's observations of the two runs, as per-item partial counts and sums per side,
    each item tagged with its reduce partition."""
    import pyarrow as pa
    import pyarrow.compute as pc

    baseline, candidate = runs
    run = batch.column("run")
    keep = pc.is_in(run, value_set=pa.array([baseline, candidate]))
    kind, name = value
    raw = batch.column("scores") if kind == "map" else batch.column(name)
    if kind == "map":
        raw = pc.map_lookup(raw, query_key=pa.scalar(name, raw.type.key_type), occurrence="first")
    x = pc.cast(raw, pa.float64())
    keep = pc.and_(keep, pc.is_valid(x))
    x, candidate_side = x.filter(keep), pc.equal(run.filter(keep), candidate)
    none = pa.scalar(None, pa.float64())
    if unit == "group":
        units = pc.cast(batch.column("group").filter(keep), pa.string())
    elif unit == "task":
        units = pc.cast(batch.column("task").filter(keep), pa.string())
    else:
        units = pa.nulls(len(x), pa.string())
    observed = pa.table({
        "task": batch.column("task").filter(keep), "unit": units,
        "sample_id": batch.column("sample_id").filter(keep),
        "x_a": pc.if_else(candidate_side, none, x), "x_b": pc.if_else(candidate_side, x, none),
    })  # fmt: skip
    items = observed.group_by(["task", "unit", "sample_id"], use_threads=False).aggregate(
        [("x_a", "count"), ("x_a", "sum"), ("x_b", "count"), ("x_b", "sum")]
    )
    items = items.rename_columns(["task", "unit", "sample_id", "n_a", "s_a", "n_b", "s_b"])
    # a cluster's items reduce together (its sums are added in one place); items as units
    # spread by item
    spread = items.column("unit") if unit != "sample_id" else items.column("sample_id")
    tagged = items.append_column(
        "partition", pa.array(_partition(items.column("task"), spread, partitions))
    )
    return tagged.sort_by("partition")  # cut into slices by `split_partitions`


def _partition(task: Any, key: Any, partitions: int) -> Any:
    """A stable hash of (task, key) modulo `partitions`: the same on every worker and run
    (pandas' hash_array is keyed with a fixed key, unlike Python's `hash`)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    joined = pc.binary_join_element_wise(
        pc.cast(task, pa.string()), pc.cast(key, pa.string()), "\x00", null_handling="replace",
        null_replacement="\x01",
    )  # fmt: skip
    hashed = pd.util.hash_array(np.asarray(joined.to_numpy(zero_copy_only=False), dtype=object))
    return (hashed % np.uint64(partitions)).astype(np.int64)


def split_partitions(block: Any, count: int) -> Any:
    """A block's items, cut by partition (they come sorted by it): `count` tables."""
    partition = block.column("partition").to_numpy()
    bounds = np.searchsorted(partition, np.arange(count + 1), side="left")
    pieces = [block.slice(int(bounds[p]), int(bounds[p + 1] - bounds[p])) for p in range(count)]
    return tuple(pieces) if count > 1 else pieces[0]


# ------------------------------------------------------------------- on the workers (stage 2)


def reduce_partition(unit: str, *blocks: Any) -> Any:
    """A partition's items (its slice of every block) merged, the paired ones kept, and reduced
    to its rows of the table: cells with their count (items as units) or one row per cluster."""
    import pyarrow as pa
    import pyarrow.compute as pc

    # (a text column read as string from one file and large_string from another: one type)
    items = pa.concat_tables(blocks, promote_options="permissive").drop_columns(["partition"])
    items = items.group_by(["task", "unit", "sample_id"], use_threads=False).aggregate(
        [("n_a", "sum"), ("s_a", "sum"), ("n_b", "sum"), ("s_b", "sum")]
    )
    items = items.rename_columns(["task", "unit", "sample_id", "n_a", "s_a", "n_b", "s_b"])
    items = items.filter(pc.and_(pc.greater(items.column("n_a"), 0),
                                 pc.greater(items.column("n_b"), 0)))  # fmt: skip
    if unit == "sample_id":
        cells = items.group_by(["task", "n_a", "n_b", "s_a", "s_b"], use_threads=False)
        return cells.aggregate([([], "count_all")]).rename_columns(
            ["task", "n_a", "n_b", "s_a", "s_b", "count"]
        )
    # in the order of the items, whatever the order the blocks came in: the same sums each time
    items = items.sort_by([("task", "ascending"), ("unit", "ascending"),
                           ("sample_id", "ascending")])  # fmt: skip
    a = pc.divide(items.column("s_a"), items.column("n_a"))
    b = pc.divide(items.column("s_b"), items.column("n_b"))
    means = pa.table({
        "task": items.column("task"), "unit": items.column("unit"),
        "n_a": items.column("n_a"), "n_b": items.column("n_b"), "a": a, "b": b,
        "aa": pc.multiply(a, a), "bb": pc.multiply(b, b), "ab": pc.multiply(a, b),
    })  # fmt: skip
    clusters = means.group_by(["task", "unit"], use_threads=False).aggregate(
        [("n_a", "sum"), ("n_b", "sum"), ("a", "sum"), ("b", "sum"), ("aa", "sum"),
         ("bb", "sum"), ("ab", "sum"), ([], "count_all")]
    )  # fmt: skip
    return clusters.rename_columns(["task", "unit", "n_a", "n_b", "sum_a", "sum_b", "sum_aa",
                                    "sum_bb", "sum_ab", "items"])  # fmt: skip


# ------------------------------------------------------------------------ on the driver


def _final(parts: Any, *, collapsed: bool) -> Any:
    """The table as the query returns it: cells merged across partitions and their sums made as
    the SQL makes them (Σa/n_a, then products), or the clusters with items and count; sorted."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not collapsed:
        table = parts.append_column("count", pa.array(np.ones(parts.num_rows, dtype=np.int64)))
        return table.select(list(COLUMNS)).sort_by([("task", "ascending"), ("unit", "ascending")])
    cells = parts.group_by(["task", "n_a", "n_b", "s_a", "s_b"], use_threads=False)
    cells = cells.aggregate([("count", "sum")]).rename_columns(
        ["task", "n_a", "n_b", "s_a", "s_b", "count"]
    )
    a = pc.divide(cells.column("s_a"), cells.column("n_a"))
    b = pc.divide(cells.column("s_b"), cells.column("n_b"))
    table = pa.table({
        "task": cells.column("task"), "unit": pa.nulls(cells.num_rows, pa.string()),
        "n_a": cells.column("n_a"), "n_b": cells.column("n_b"), "sum_a": a, "sum_b": b,
        "sum_aa": pc.multiply(a, a), "sum_bb": pc.multiply(b, b), "sum_ab": pc.multiply(a, b),
        "items": pa.array(np.ones(cells.num_rows, dtype=np.int64)),
        "count": cells.column("count"),
    })  # fmt: skip
    order = [("task", "ascending"), ("n_a", "ascending"), ("n_b", "ascending"),
             ("sum_a", "ascending"), ("sum_b", "ascending")]  # fmt: skip
    return table.sort_by(order)
