"""Judge pairs of runs on the samples they share, in both orders, and store the verdicts in the
store's `pairwise` table (migration 0009_pairwise); read them back for ranking.

Every call goes through the same machinery as any judge call (`judge_requests`: the backend, the
progress bar, a cache entry written as each readable reply arrives, retries by the judge's own
client, failures kept as missing with their error and never cached). A call's cache key holds the
judge, the prompt (which differs by order) and the draw, which names the order and the runs shown
first and second: the two orders are two calls, each cached on its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from calipers import writes
from calipers.errors import InputError, Interrupted
from calipers.grading.pairwise import (
    COLUMNS,
    PairVerdict,
    load_template,
    pair_prompt,
    verdict,
)
from calipers.running.executor import Backend
from calipers.running.judging import (
    CallCounts,
    JudgeOptions,
    JudgeRequest,
    JudgingInterrupted,
    judge_requests,
)

_SHARED = """
SELECT a.run AS run_a, b.run AS run_b, a.task, a.sample_id, a.epoch,
       coalesce(a.input, b.input) AS input, coalesce(a.expected, b.expected) AS expected,
       a.output AS output_a, b.output AS output_b
FROM samples a JOIN samples b
  ON a.task = b.task AND a.sample_id = b.sample_id AND a.epoch = b.epoch AND a.run < b.run
WHERE a.output IS NOT NULL AND b.output IS NOT NULL
  AND list_contains($runs, a.run) AND list_contains($runs, b.run)
ORDER BY run_a, run_b, a.task, a.sample_id, a.epoch
"""


class NothingShared(InputError):
    """The runs share no sample with an output: no pair to judge."""


@dataclass(frozen=True)
class PairJudging:
    rows: list[PairVerdict]  # the verdicts stored by this judging
    replaced: int  # earlier rows of the same judges and keys
    runs: list[str]
    run_pairs: int  # pairs of runs with at least one shared draw
    unshared: list[tuple[str, str]]  # pairs of runs without a shared draw
    without_input: int  # draws whose input was not recorded: judged on the task name
    calls: dict[str, CallCounts] = field(default_factory=dict)


def _selected_runs(con: Any, runs: Sequence[str] | None) -> list[str]:
    present = [
        r[0] for r in con.execute("SELECT DISTINCT run FROM samples ORDER BY run").fetchall()
    ]
    chosen = sorted(set(runs)) if runs else present
    missing = [r for r in chosen if r not in present]
    if missing:
        raise InputError(
            f"--run {', '.join(missing)}: no such run in the store",
            hint=f"Runs there: {', '.join(present) or '(none)'} (`calipers runs`).",
        )
    if len(chosen) < 2:
        raise InputError(
            f"pairwise judging needs two runs or more, got {len(chosen)}",
            hint="Give --run twice or more, or store more runs.",
        )
    return chosen


def judge_pairs(
    db: Path,
    options: JudgeOptions,
    backend: Backend,
    *,
    runs: Sequence[str] | None = None,
    progress: bool | None = None,
    only_with: str | None = None,
) -> PairJudging:
    """Judge every pair of the runs (all of the store's, or `runs`) on every draw both have an
    output for, in both orders, with every judge `options.repeats` times. A key's earlier rows
    by judges of the same names are replaced; one transaction. With `only_with`, only the pairs
    that include that run (a new run against its baselines, not the baselines among themselves)."""
    from calipers.data.store import Store

    template = load_template(debias_length=options.debias_length)
    names = [j.name for j in options.judges]
    with Store(db) as store:
        chosen = _selected_runs(store.con, runs)
        cursor = store.con.execute(_SHARED, {"runs": chosen})
        columns = [d[0] for d in cursor.description]
        draws = [dict(zip(columns, r, strict=True)) for r in cursor.fetchall()]
        wanted = [
            p for p in itertools.combinations(chosen, 2) if only_with is None or only_with in p
        ]
        keep = set(wanted)
        draws = [d for d in draws if (d["run_a"], d["run_b"]) in keep]
        seen = {(d["run_a"], d["run_b"]) for d in draws}
        unshared = [p for p in wanted if p not in seen]
        if not draws:
            raise NothingShared(
                f"the runs {', '.join(chosen)} share no sample with an output",
                hint="Pairs are judged on the samples (task, sample_id, epoch) both runs have.",
            )
        requests = []
        for d in draws:
            task = d["input"] if d["input"] is not None else f"(task: {d['task']})"
            key = "\x00".join(str(d[k]) for k in ("task", "sample_id", "epoch"))
            for order, first, second in (("ab", "a", "b"), ("ba", "b", "a")):
                prompt = pair_prompt(
                    template, task=task, first=d[f"output_{first}"],
                    second=d[f"output_{second}"], expected=d["expected"],
                )  # fmt: skip
                shown = f"{d[f'run_{first}']}\x00{d[f'run_{second}']}"
                draw = f"pairwise\x00{order}\x00{shown}\x00{key}"
                requests.append(JudgeRequest(template, prompt, draw))
        counts: dict[str, CallCounts] = {}
        interrupted = False
        try:
            judged: list[list[dict[str, Any]] | None] = list(
                judge_requests(requests, options, backend, progress=progress, counts=counts)
            )
        except JudgingInterrupted as stop:
            judged, interrupted = stop.finished, True
        rows = []
        for n, d in enumerate(draws):
            ab, ba = judged[2 * n], judged[2 * n + 1]
            if ab is None or ba is None:  # interrupted before both orders finished
                continue
            rows += _rows(d, ab, ba, template.sha256)
        replaced = _store(store.con, rows, names)
    if interrupted:
        raise Interrupted(
            f"judging stopped: {len({_key(r) for r in rows})} of {len(draws)} pairs judged in "
            "both orders and stored; the others keep their earlier verdicts",
            hint="Run the same command again: replies already received are cached and not asked "
            "again.",
        )
    return PairJudging(
        rows, replaced, chosen, len(seen), unshared,
        sum(1 for d in draws if d["input"] is None), counts,
    )  # fmt: skip


def _rows(
    d: dict[str, Any], ab: list[dict[str, Any]], ba: list[dict[str, Any]], prompt_hash: str
) -> list[PairVerdict]:
    """One PairVerdict per judge and repeat, from each order's judgments."""
    by_call = {(j["judge"], j["repeat"]): j for j in ba}
    out = []
    for first in ab:
        second = by_call[(first["judge"], first["repeat"])]
        out.append(PairVerdict(
            first["judge"], d["run_a"], d["run_b"], d["task"], d["sample_id"], d["epoch"],
            first["repeat"], verdict(first["score"], "ab"), verdict(second["score"], "ba"),
            first["rationale"], second["rationale"], first["error"], second["error"],
            prompt_hash,
        ))  # fmt: skip
    return out


def _key(r: PairVerdict) -> tuple[str, str, str, str, int]:
    return (r.run_a, r.run_b, r.task, r.sample_id, r.epoch)


def _store(con: Any, rows: Sequence[PairVerdict], judges: Sequence[str]) -> int:
    """Replace the judges' rows of the judged keys (all repeats) by `rows`, in one transaction;
    return how many earlier rows were replaced."""
    import pyarrow as pa

    if not rows:
        return 0
    now = datetime.now(UTC).replace(tzinfo=None)
    key_names = ("judge", "run_a", "run_b", "task", "sample_id", "epoch")
    keys = sorted({(j, *_key(r)) for r in rows for j in judges})
    judged_keys = pa.table({c: [k[i] for k in keys] for i, c in enumerate(key_names)})
    new = pa.table({**{c: [getattr(r, c) for r in rows] for c in COLUMNS},
                    "judged_at": [now] * len(rows)})  # fmt: skip
    con.register("judged_keys", judged_keys)
    con.register("new_pairs", new)
    match = " AND ".join(f"p.{c} = k.{c}" for c in key_names)
    try:
        with writes.transaction(con, f"{len(rows):,} pairwise verdict(s)"):
            found = con.execute(
                f"SELECT count(*) FROM pairwise p SEMI JOIN judged_keys k ON {match}"
            )
            replaced = int(found.fetchone()[0])
            con.execute(f"DELETE FROM pairwise p USING judged_keys k WHERE {match}")
            con.execute(
                f"INSERT INTO pairwise ({', '.join(COLUMNS)}, judged_at) "
                f"SELECT {', '.join(COLUMNS)}, judged_at FROM new_pairs"
            )
    finally:
        con.unregister("judged_keys")
        con.unregister("new_pairs")
    return replaced


def read_pairs(
    db: Path, *, runs: Sequence[str] | None = None, judges: Sequence[str] | None = None
) -> list[PairVerdict]:
    """The stored verdicts between the given runs (both runs of a pair among them; default all)
    by the given judges (default all)."""
    from calipers.data.store import Store

    where, params = [], {}
    if runs:
        where.append("list_contains($runs, run_a) AND list_contains($runs, run_b)")
        params["runs"] = list(runs)
    if judges:
        where.append("list_contains($judges, judge)")
        params["judges"] = list(judges)
    query = (
        f"SELECT {', '.join(COLUMNS)} FROM pairwise"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY judge, run_a, run_b, task, sample_id, epoch, repeat"
    )
    with Store(db, read_only=True) as store:
        return [PairVerdict(*row) for row in store.con.execute(query, params).fetchall()]


def pairwise_input(
    source: Any = None, *, db: Path, runs: Sequence[str] = (), judges: Sequence[str] = ()
) -> tuple[list[PairVerdict], str, dict[str, Any] | None]:
    """What `calipers rank --pairwise` (and `calipers.rank`) ranks: the judgments of a preference
    file (`source` a path; or rows given in Python: a list of dicts, a pandas or polars
    DataFrame, an Arrow table), or with no source the store's verdicts. Returns the rows, the
    source's name and, for a file, what it held (the report's `preferences`)."""
    from calipers.errors import DataError
    from calipers.grading.preferences import preferences_from_records, read_preferences

    if source is None:
        rows = read_pairs(db, runs=runs, judges=judges)
        if not rows:
            raise DataError(
                f"no pairwise verdicts in {db}"
                + (f" for runs {', '.join(runs)}" if runs else "")
                + (f" by {', '.join(judges)}" if judges else ""),
                hint="Judge pairs first (`calipers grade --pairwise --judge SPEC`), or rank a "
                "preference file: `calipers rank --pairwise FILE`.",
            )
        return rows, str(db), None
    if isinstance(source, str | Path):
        preferences = read_preferences(Path(source))
    else:
        records, kind = _records_of(source)
        preferences = preferences_from_records(
            enumerate(records, start=1), origin=f"<{kind} of {len(records)} rows>", unit="row"
        )
    rows = preferences.select(runs=runs, judges=judges)
    if not rows:
        raise DataError(
            f"no judgments in {preferences.origin}"
            + (f" between runs {', '.join(runs)}" if runs else "")
            + (f" by {', '.join(judges)}" if judges else ""),
            hint="A ranking needs judgments between two runs or more.",
        )
    return rows, preferences.origin, preferences.to_dict()


def _records_of(data: Any) -> tuple[list[Any], str]:
    """Rows given in Python as a list of dicts."""
    if hasattr(data, "to_pylist"):  # pyarrow Table
        return list(data.to_pylist()), "Arrow table"
    if hasattr(data, "to_dicts"):  # polars DataFrame
        return list(data.to_dicts()), "polars DataFrame"
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # pandas DataFrame
        return list(data.to_dict("records")), "pandas DataFrame"
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return list(data), "list"
    raise InputError(
        f"cannot read preferences from a {type(data).__name__}",
        hint="Give a file, a list of dicts, or a pandas or polars DataFrame.",
        parameters=["source"],
    )
