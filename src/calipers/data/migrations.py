"""The store's schema, as named migrations applied in order and recorded in `schema_migrations`.

Never edit a shipped migration; add a new one. Each migration is literal SQL, written out in full:
it must not be built from `calipers.data.model` (or anything else that changes), because a store
made by an older calipers is upgraded by running exactly the migrations it lacks, and a fresh store
must come out the same. `tests/test_store_schema.py` checks that a fresh store's `samples` table
is what `model.FIELDS` says (so a model change without a migration fails it), that a store made by
the first migration alone and upgraded equals a fresh one, and that no shipped migration's text
changed.

The pending migrations run in one transaction with their records, so a store is always at a named
version: the one it had, or this calipers' newest.
A store with a migration this calipers does not know came from a newer calipers: it is refused for
writing, and for reading unless the migration is declared readable (READABLE_SUFFIX).
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb

# The first version of the store: the sample's fields of the time, then the bookkeeping columns.
_0001_SAMPLES = """\
CREATE TABLE samples (
    run VARCHAR,
    task VARCHAR,
    sample_id VARCHAR,
    epoch INTEGER,
    tier VARCHAR,
    point VARCHAR,
    correct BOOLEAN,
    guess_chance DOUBLE,
    truncated BOOLEAN,
    output VARCHAR,
    decision JSON,
    perturbation VARCHAR,
    perturbation_of VARCHAR,
    tokens_in BIGINT,
    tokens_out BIGINT,
    cost_usd DOUBLE,
    latency_s DOUBLE,
    tool_calls INTEGER,
    steps INTEGER,
    error VARCHAR,
    assertions STRUCT(name VARCHAR, type VARCHAR, layer VARCHAR, weight DOUBLE, passed BOOLEAN, value JSON, detail VARCHAR)[],
    judgments STRUCT(judge VARCHAR, dimension VARCHAR, score DOUBLE, scale_min DOUBLE, scale_max DOUBLE, rationale VARCHAR, red_flags VARCHAR[], bonuses VARCHAR[], error VARCHAR, prompt_hash VARCHAR, repeat INTEGER)[],
    human STRUCT(dimension VARCHAR, score DOUBLE)[],
    scores MAP(VARCHAR, DOUBLE),
    source VARCHAR,
    imported_at TIMESTAMP
)"""  # noqa: E501

_0002_IMPORTS_LOG = (
    "CREATE TABLE imports (id INTEGER, imported_at TIMESTAMP, source VARCHAR, "
    "format VARCHAR, run_override VARCHAR, samples BIGINT, replaced BIGINT)"
)

_0003_TOOLS = (
    "ALTER TABLE samples ADD COLUMN tools STRUCT(name VARCHAR, input JSON, output VARCHAR)[]"
)

# One row per rubric evaluation ever scored; `seq` orders them (earlier = smaller).
_0004_RUBRIC_HISTORY = (
    "CREATE TABLE rubric_history (seq BIGINT NOT NULL, scored_at TIMESTAMP NOT NULL, "
    "run VARCHAR NOT NULL, task VARCHAR NOT NULL, sample_id VARCHAR NOT NULL, "
    "epoch INTEGER NOT NULL, rubric_sha256 VARCHAR, correctness DOUBLE, "
    "completeness DOUBLE, adherence DOUBLE, actionability DOUBLE, efficiency DOUBLE, "
    "safety DOUBLE, consistency DOUBLE, composite DOUBLE, final DOUBLE, grade VARCHAR, "
    "PRIMARY KEY (run, task, sample_id, epoch))"
)

_0005_INPUT = "ALTER TABLE samples ADD COLUMN input VARCHAR"
_0005_EXPECTED = "ALTER TABLE samples ADD COLUMN expected VARCHAR"

# `group` is an SQL keyword: quoted here, and wherever SQL names the column.
_0006_GROUP = 'ALTER TABLE samples ADD COLUMN "group" VARCHAR'

# Usage of graders and judges (a model-graded scorer), kept apart from the system under test's.
_0007_GRADER_TOKENS_IN = "ALTER TABLE samples ADD COLUMN grader_tokens_in BIGINT"
_0007_GRADER_TOKENS_OUT = "ALTER TABLE samples ADD COLUMN grader_tokens_out BIGINT"
_0007_GRADER_COST = "ALTER TABLE samples ADD COLUMN grader_cost_usd DOUBLE"

# A sample's weight in the mean of each named score (promptfoo's assertion weights).
_0008_SCORE_WEIGHTS = "ALTER TABLE samples ADD COLUMN score_weights MAP(VARCHAR, DOUBLE)"

# Pairwise judging (`calipers grade --pairwise`): one row per judge, pair of runs (run_a < run_b),
# shared draw and repeat; the verdict of each order in run terms (ab: run_a's output shown first).
_0009_PAIRWISE = """\
CREATE TABLE pairwise (
    judge VARCHAR NOT NULL,
    run_a VARCHAR NOT NULL,
    run_b VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    sample_id VARCHAR NOT NULL,
    epoch INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    verdict_ab VARCHAR CHECK (verdict_ab IN ('a', 'b', 'tie')),
    verdict_ba VARCHAR CHECK (verdict_ba IN ('a', 'b', 'tie')),
    rationale_ab VARCHAR,
    rationale_ba VARCHAR,
    error_ab VARCHAR,
    error_ba VARCHAR,
    prompt_hash VARCHAR NOT NULL,
    judged_at TIMESTAMP NOT NULL,
    CHECK (run_a < run_b),
    PRIMARY KEY (judge, run_a, run_b, task, sample_id, epoch, repeat)
)"""

# Each sample's layered-scheme inputs, flat, written with the samples (calipers.data.layer_inputs):
# the counts over its assertions and, per judge of its run, the sums over its judgments. And per
# run: the version of the SQL they were computed with, the samples summarised, the run's judges.
_0010_LAYER_INPUTS = """\
CREATE TABLE layer_inputs (
    run VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    sample_id VARCHAR NOT NULL,
    epoch INTEGER NOT NULL,
    "group" VARCHAR,
    packed BIGINT,
    n_assertions BIGINT,
    human DOUBLE,
    judge_sum DOUBLE[],
    judge_count BIGINT[],
    judge_min DOUBLE[],
    judge_max DOUBLE[],
    judge_ss DOUBLE[]
)"""
_0010_LAYER_INPUT_RUNS = """\
CREATE TABLE layer_input_runs (
    run VARCHAR NOT NULL,
    version VARCHAR NOT NULL,
    samples BIGINT NOT NULL,
    judges VARCHAR[] NOT NULL
)"""

# Each summarised sample's rank among its run's (task, sample_id) keys and its task's among the
# run's tasks, and per run a digest of its keys: runs with the same keys are paired on these ranks
# without a join over every row.
_0011_KEY_RANK = "ALTER TABLE layer_inputs ADD COLUMN key_rank BIGINT"
_0011_TASK_RANK = "ALTER TABLE layer_inputs ADD COLUMN task_rank BIGINT"
_0011_KEYS = "ALTER TABLE layer_input_runs ADD COLUMN keys VARCHAR"

# A store-wide integer key per distinct (task, sample_id), on every sample row (`sample_key`), so
# that runs pair on integers rather than strings (calipers.data.sample_keys; docs/store.md). `key`
# is given once and never changes; `key_order` and `task_order` rank the keys as (task, sample_id)
# and task sort, over the whole table, and are ranked again whenever an import adds keys. Existing
# samples get their keys here, numbered in that order. Readable by an older calipers: it only adds
# a table and a column that older code does not read (and it never writes a newer store).
_0012_SAMPLE_KEYS = """\
CREATE TABLE sample_keys (
    key BIGINT NOT NULL,
    task VARCHAR NOT NULL,
    sample_id VARCHAR NOT NULL,
    key_order BIGINT NOT NULL,
    task_order BIGINT NOT NULL
)"""
_0012_SAMPLE_KEY = "ALTER TABLE samples ADD COLUMN sample_key BIGINT"
_0012_FILL_KEYS = """\
INSERT INTO sample_keys (key, task, sample_id, key_order, task_order)
SELECT (row_number() OVER (ORDER BY task, sample_id) - 1)::BIGINT,
       task, sample_id,
       (row_number() OVER (ORDER BY task, sample_id) - 1)::BIGINT,
       (dense_rank() OVER (ORDER BY task) - 1)::BIGINT
FROM (SELECT DISTINCT task, sample_id FROM samples
      WHERE task IS NOT NULL AND sample_id IS NOT NULL)"""
_0012_SET_KEYS = """\
UPDATE samples SET sample_key = k.key FROM sample_keys k
WHERE samples.task = k.task AND samples.sample_id = k.sample_id"""

MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0001_samples", (_0001_SAMPLES,)),
    ("0002_imports_log", (_0002_IMPORTS_LOG,)),
    ("0003_tools", (_0003_TOOLS,)),
    ("0004_rubric_history", (_0004_RUBRIC_HISTORY,)),
    ("0005_input_expected", (_0005_INPUT, _0005_EXPECTED)),
    ("0006_group", (_0006_GROUP,)),
    ("0007_grader_usage", (_0007_GRADER_TOKENS_IN, _0007_GRADER_TOKENS_OUT, _0007_GRADER_COST)),
    ("0008_score_weights", (_0008_SCORE_WEIGHTS,)),
    ("0009_pairwise", (_0009_PAIRWISE,)),
    ("0010_layer_inputs", (_0010_LAYER_INPUTS, _0010_LAYER_INPUT_RUNS)),
    ("0011_layer_input_keys", (_0011_KEY_RANK, _0011_TASK_RANK, _0011_KEYS)),
    (
        "0012_sample_keys+readable",
        (_0012_SAMPLE_KEYS, _0012_SAMPLE_KEY, _0012_FILL_KEYS, _0012_SET_KEYS),
    ),
)

_BOOKKEEPING = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMP)"
)

KNOWN = frozenset(name for name, _ in MIGRATIONS)
# A store that a newer calipers migrated has rows here this calipers does not know: it is never
# written (the newer schema's rules are unknown here), and read only where each unknown migration
# is declared readable by an older calipers — it only adds tables, or columns with a default, that
# older code does not read — by a name that ends with this suffix ("0012_notes+readable").
READABLE_SUFFIX = "+readable"


def tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables of the connection's current database (not its temporary ones), by name."""
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
        "AND table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name"
    ).fetchall()
    return [str(r[0]) for r in rows]


def applied(con: duckdb.DuckDBPyConnection) -> list[str]:
    if "schema_migrations" not in tables(con):
        return []
    return [
        r[0] for r in con.execute("SELECT name FROM schema_migrations ORDER BY name").fetchall()
    ]


def unknown(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Migrations the store records that this calipers does not know (a newer one applied them),
    in name order."""
    return [name for name in applied(con) if name not in KNOWN]


def readable(names: list[str]) -> bool:
    """Whether a store with these unknown migrations can be read by this calipers."""
    return all(name.endswith(READABLE_SUFFIX) for name in names)


def pending(con: duckdb.DuckDBPyConnection) -> list[str]:
    done = set(applied(con))
    return [name for name, _ in MIGRATIONS if name not in done]


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every pending migration, all in one transaction; return their names."""
    con.execute(_BOOKKEEPING)
    done = set(applied(con))
    todo = [(name, statements) for name, statements in MIGRATIONS if name not in done]
    if not todo:
        return []
    # One commit for all of them: a new store's twelve commits were 27 ms of its 68 (each
    # writes and syncs the log), and every store a command makes begins with them.
    con.execute("BEGIN TRANSACTION")
    try:
        for name, statements in todo:
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
    return [name for name, _ in todo]
