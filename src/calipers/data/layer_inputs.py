"""Each stored sample's layered-scheme inputs, summarised once when it is written.

The layered composite reads, per sample, counts over its assertion list and sums over its
judgment list. Computing them means a pass of DuckDB list lambdas over every nested assertion and
judgment — 2.6 s of a 4.7 s `compare` over 2 × 1,000,000 samples, repeated at every compare. So the
store keeps them flat, per sample, in `layer_inputs` (migration 0010), written in the same
transaction as the samples by every write (`Store.import_files`, `Store.update_column`), and
`layer_input_runs` records, per run, the SQL version they were computed with, the number of samples
and the run's judges. A compare reads them when every compared run's summary is current (same
version, same sample count) and the samples are a whole-run view of the store; otherwise it computes
the same expressions from the nested lists, as before. The values are the very SQL expressions the
scheme used to evaluate at compare time, so either path gives the same numbers to the last bit
(tests/test_layer_inputs.py).

Per sample: `packed` (six 10-bit counters: fact passed/failed, behavior passed/failed, bad,
weighted), `n_assertions`, `human` (mean of the overall human labels), and per judge of the run —
in the order of `layer_input_runs.judges` (sorted, the unnamed judge last) — the sum, count, min,
max and sum of squares of its overall judgments rescaled to 1–5.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from calipers.data.files import sql_literal
from calipers.data.model import BEHAVIOR_ASSERTIONS, FACT_ASSERTIONS

SLOTS = ("fact_passed", "fact_failed", "behavior_passed", "behavior_failed", "bad", "weighted")
BITS = 10
MAX_PACKED = (1 << BITS) - 1
JUDGE_OK = "j.dimension IS NULL AND j.score IS NOT NULL AND j.error IS NULL"
IN_SCALE = "j.score BETWEEN coalesce(j.scale_min, 1.0) AND coalesce(j.scale_max, 5.0)"
JUDGE_AGGREGATES = ("sum", "count", "min", "max", "ss")
HUMAN_OVERALL = (
    "list_avg(list_transform(list_filter(human, lambda h: h.dimension IS NULL), lambda h: h.score))"
)


def judge_score(j: str) -> str:
    lo, hi = f"coalesce({j}.scale_min, 1.0)", f"coalesce({j}.scale_max, 5.0)"
    return f"1.0 + 4.0 * ({j}.score - {lo}) / ({hi} - {lo})"


def judge_scores(name: str | None) -> str:
    """A sample's overall judgments by one judge (None: by an unnamed one), rescaled to 1–5."""
    who = "j.judge IS NULL" if name is None else f"j.judge = {sql_literal(name)}"
    return (
        f"list_transform(judgments, lambda j: CASE WHEN {JUDGE_OK} AND {who} "
        f"THEN {judge_score('j')} END)"
    )


def judge_aggregate(scores: str, aggregate: str) -> str:
    """One of JUDGE_AGGREGATES over a list of a judge's scores (the name of a computed list)."""
    if aggregate == "ss":  # the repeats of one judge on one sample: their spread is its noise
        return f"list_sum(list_transform({scores}, lambda x: x * x))"
    return f"list_{aggregate}({scores})"


def packed_assertions() -> str:
    """Assertions counted in one pass per sample: each adds 1 to one of six 10-bit counters
    packed in a BIGINT (a list_transform over millions of assertions costs about as much per pass
    as the rest of staging together). Weights other than 1, or more than 1,023 assertions in a
    sample, take the general path of weighted sums."""
    fact = ", ".join(f"'{t}'" for t in FACT_ASSERTIONS)
    behavior = ", ".join(f"'{t}'" for t in BEHAVIOR_ASSERTIONS)
    one = {slot: f"{1 << (BITS * i)}::BIGINT" for i, slot in enumerate(SLOTS)}
    return (
        "list_sum(list_transform(assertions, lambda a: CASE "
        f"WHEN a.passed IS NULL OR a.type IS NULL THEN {one['bad']} "
        f"WHEN a.type IN ({fact}) THEN CASE WHEN a.passed THEN {one['fact_passed']} "
        f"ELSE {one['fact_failed']} END "
        f"WHEN a.type IN ({behavior}) THEN CASE WHEN a.passed THEN {one['behavior_passed']} "
        f"ELSE {one['behavior_failed']} END "
        f"ELSE {one['bad']} END + CASE WHEN a.weight IS NOT NULL AND a.weight <> 1 "
        f"THEN {one['weighted']} ELSE 0::BIGINT END))::BIGINT"
    )


N_ASSERTIONS = "len(assertions)"

# The ranks of a sample's key and task among its run's (runs with the same keys pair on them)
KEY_RANK = "(dense_rank() OVER (ORDER BY task, sample_id) - 1)::BIGINT"
TASK_RANK = "(dense_rank() OVER (ORDER BY task) - 1)::BIGINT"
KEYS_DIGEST = (
    "SELECT md5(string_agg(task || chr(0) || sample_id, chr(1) ORDER BY task, sample_id)) "
    "FROM (SELECT DISTINCT task, sample_id FROM samples WHERE run = ?)"
)

# The summaries' version: any change to what they compute makes the stored ones stale.
VERSION = hashlib.sha256(
    "\x00".join(
        [packed_assertions(), N_ASSERTIONS, HUMAN_OVERALL, judge_scores("x"), judge_scores(None),
         *(judge_aggregate("s", a) for a in JUDGE_AGGREGATES), KEY_RANK, TASK_RANK, KEYS_DIGEST]
    ).encode()
).hexdigest()[:16]  # fmt: skip


def judge_names(con: duckdb.DuckDBPyConnection, relation: str, where: str) -> list[str | None]:
    """The judges with an overall judgment, sorted, the unnamed judge (None) last."""
    rows = con.execute(
        f"SELECT DISTINCT j.judge FROM (SELECT unnest(judgments) AS j FROM {relation} "
        f"WHERE {where}) WHERE {JUDGE_OK} ORDER BY 1 NULLS LAST"
    ).fetchall()
    return [r[0] for r in rows]


def _in(runs: Sequence[str]) -> str:
    return f"run IN ({', '.join(sql_literal(r) for r in runs)})"


# The same ranks and digest computed for several runs at once: equal, run by run, to the one-run
# forms above (which stay the ones VERSION is made of, so that stored summaries stay current).
_KEY_RANK_BY_RUN = KEY_RANK.replace("OVER (", "OVER (PARTITION BY run ")
_TASK_RANK_BY_RUN = TASK_RANK.replace("OVER (", "OVER (PARTITION BY run ")
# Read from the summaries just written: each of a run's samples has a row there, and the key rank
# orders its keys as (task, sample_id) does, so the digest is the same string sorted by an integer
# (at 1M samples 0.4 s of CPU against 0.85 s for the keys read from `samples` and sorted as text).
_RUN_RECORDS = (
    "SELECT run, sum(n)::BIGINT, md5(string_agg(task || chr(0) || sample_id, chr(1) "
    "ORDER BY key_rank)) FROM (SELECT run, task, sample_id, key_rank, count(*) AS n "
    "FROM layer_inputs WHERE {where} GROUP BY ALL) GROUP BY run"
)


def _judges_by_run(con: duckdb.DuckDBPyConnection, where: str) -> dict[str, list[str | None]]:
    """`judge_names` of each run, in one pass: a run without a judge is absent."""
    rows = con.execute(
        f"SELECT DISTINCT run, j.judge FROM (SELECT run, unnest(judgments) AS j FROM samples "
        f"WHERE {where}) WHERE {JUDGE_OK} ORDER BY 1, 2 NULLS LAST"
    ).fetchall()
    found: dict[str, list[str | None]] = {}
    for run, judge in rows:
        found.setdefault(run, []).append(judge)
    return found


def refresh(con: duckdb.DuckDBPyConnection, runs: Sequence[str]) -> None:
    """Summarise every sample of `runs` again (inside the caller's transaction).

    The runs that have the same judges are summarised by one statement (a judge's lists are
    columns, so runs with other judges need their own): an import of four runs read the samples
    four times for the summaries, and four times more for the judges, counts and key digests,
    which now take one query each."""
    if not runs:
        return
    where = _in(runs)
    con.execute(f"DELETE FROM layer_inputs WHERE {where}")
    con.execute(f"DELETE FROM layer_input_runs WHERE {where}")
    judges_of = _judges_by_run(con, where)
    by_judges: dict[tuple[str | None, ...], list[str]] = {}
    for run in runs:
        by_judges.setdefault(tuple(judges_of.get(run, [])), []).append(run)
    for judged, group in by_judges.items():
        judges = list(judged)
        lists = "".join(f", {judge_scores(n)} AS j{i}" for i, n in enumerate(judges))
        sums = ", ".join(
            "[" + ", ".join(judge_aggregate(f"j{i}", a) for i in range(len(judges))) + "]"
            + ("" if judges else "::DOUBLE[]") + f" AS judge_{a}"
            for a in JUDGE_AGGREGATES
        )  # fmt: skip
        # The ranks come from the distinct keys (a dense rank depends only on them), joined to
        # the per-sample sums: a window over the samples themselves sorted every sample with its
        # judge lists (at 1M samples, beyond the memory limit). Sorted as a compare reads them
        # (by run, task, sample_id, epoch: the key rank follows task, sample_id), so that its
        # ORDER BY finds them in order.
        one = _in(group)
        con.execute(
            f"""
            INSERT INTO layer_inputs (run, task, sample_id, epoch, "group", packed,
                n_assertions, human, judge_sum, judge_count, judge_min, judge_max, judge_ss,
                key_rank, task_rank)
            SELECT s.run, s.task, s.sample_id, s.epoch, s."group", s.packed, s.n_assertions,
                   s.human, s.judge_sum, s.judge_count, s.judge_min, s.judge_max, s.judge_ss,
                   k.key_rank, k.task_rank
            FROM (SELECT run, task, sample_id, epoch, "group", {packed_assertions()} AS packed,
                         {N_ASSERTIONS} AS n_assertions, {HUMAN_OVERALL} AS human, {sums}
                  FROM (SELECT *{lists} FROM samples WHERE {one})) s
            JOIN (SELECT run, task, sample_id, {_KEY_RANK_BY_RUN} AS key_rank,
                         {_TASK_RANK_BY_RUN} AS task_rank
                  FROM (SELECT DISTINCT run, task, sample_id FROM samples WHERE {one})) k
              ON s.run = k.run AND s.task IS NOT DISTINCT FROM k.task
             AND s.sample_id IS NOT DISTINCT FROM k.sample_id
            ORDER BY s.run, k.key_rank, s.epoch
            """
        )
    found = {r[0]: r[1:] for r in con.execute(_RUN_RECORDS.format(where=where)).fetchall()}
    records = []
    for run in runs:  # a run without samples is recorded as one summarised with none
        n, keys = found.get(run, (0, None))
        records.append([run, VERSION, n, judges_of.get(run, []), keys])
    con.executemany(
        "INSERT INTO layer_input_runs (run, version, samples, judges, keys) VALUES (?, ?, ?, ?, ?)",
        records,
    )


def stale_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Runs of the store whose summaries are missing, of another version, or not of all their
    samples (e.g. a store made before migration 0010, or written by SQL of its own)."""
    rows = con.execute(
        """
        SELECT s.run FROM (SELECT run, count(*) AS n FROM samples GROUP BY run) s
        LEFT JOIN layer_input_runs r ON r.run = s.run
        WHERE r.run IS NULL OR r.version <> ? OR r.samples <> s.n
        ORDER BY s.run
        """,
        [VERSION],
    ).fetchall()
    return [r[0] for r in rows]


@dataclass(frozen=True)
class RunSummaries:
    judges: list[str | None]  # in the order of the per-judge lists
    keys: str | None  # digest of the run's (task, sample_id) keys


def current(con: duckdb.DuckDBPyConnection, runs: Sequence[str]) -> dict[str, RunSummaries] | None:
    """Each run's summary record when every one of `runs` has current summaries, else None (then
    the inputs are computed from the nested lists)."""
    try:
        rows = con.execute(
            f"""
            SELECT r.run, r.judges, r.keys FROM layer_input_runs r
            JOIN (SELECT run, count(*) AS n FROM samples WHERE {_in(runs)} GROUP BY run) s
              ON s.run = r.run AND s.n = r.samples
            WHERE r.version = ?
            """,
            [VERSION],
        ).fetchall()
    except duckdb.CatalogException:  # not a store (a FILE read in memory), or one before 0010
        return None
    found = {r[0]: RunSummaries(list(r[1]), r[2]) for r in rows}
    return found if all(r in found for r in runs) else None
