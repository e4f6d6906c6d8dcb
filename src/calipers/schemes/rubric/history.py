"""Rubric history in the store: every scored evaluation with its time, and per skill (task) a flag
when a dimension lies more than 2 SD from its mean over the last 10 earlier evaluations (seed 001,
"Historical consistency"). Flags are reported; they never change a score.

Order: an evaluation's place in history is fixed when it is first recorded (`seq`); within one
scoring, evaluations are recorded in (run, task, sample_id, epoch) order, so a batch's later
evaluations see its earlier ones. Scoring the same evaluation again updates its scores in place and
keeps its place, so re-running a report does not count an evaluation twice.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from calipers import writes
from calipers.data.store import Store
from calipers.schemes.rubric.definition import DIMENSIONS
from calipers.schemes.rubric.scoring import Evaluation, HistoryFlag, RubricResult

WINDOW = 10  # earlier evaluations the rolling mean and SD cover
MIN_HISTORY = 2  # an SD needs at least two
SD_LIMIT = 2.0

_KEY = ("run", "task", "sample_id", "epoch")
_VALUES = (*DIMENSIONS, "composite", "final", "grade", "rubric_sha256")


def _batch(evaluations: list[Evaluation], rubric_sha256: str) -> pa.Table:
    ordered = sorted(evaluations, key=lambda e: e.key)
    columns: dict[str, list[object]] = {name: [] for name in (*_KEY, *_VALUES)}
    for e in ordered:
        for name, value in zip(_KEY, e.key, strict=True):
            columns[name].append(value)
        for d in DIMENSIONS:
            columns[d].append(float(e.dimensions[d]))
        columns["composite"].append(float(e.composite))
        columns["final"].append(float(e.final))
        columns["grade"].append(e.grade)
        columns["rubric_sha256"].append(rubric_sha256)
    return pa.table(columns)


def record_history(
    db: str | Path,
    evaluations: list[Evaluation],
    *,
    rubric_sha256: str,
    now: datetime | None = None,
) -> int:
    """Record `evaluations` in the store at `db` (one transaction) and set each one's
    `history_flags`. Returns how many were new to the store."""
    stamp = (now or datetime.now(UTC)).replace(tzinfo=None)
    batch = _batch(evaluations, rubric_sha256)
    with Store(db) as store:
        con = store.con
        con.register("calipers_rubric_batch", batch)
        try:
            what = f"{len(evaluations):,} rubric evaluation(s) in the history of {store.path}"
            with writes.transaction(con, what):
                keys = " AND ".join(f"h.{k} = b.{k}" for k in _KEY)
                sets = ", ".join(f"{v} = b.{v}" for v in _VALUES)
                con.execute(
                    f"UPDATE rubric_history h SET {sets} FROM calipers_rubric_batch b WHERE {keys}"
                )
                new = con.execute(
                    f"""
                    INSERT INTO rubric_history
                    SELECT (SELECT coalesce(max(seq), 0) FROM rubric_history)
                               + row_number() OVER (ORDER BY b.run, b.task, b.sample_id, b.epoch),
                           ?::TIMESTAMP, b.run, b.task, b.sample_id, b.epoch, b.rubric_sha256,
                           {", ".join(f"b.{d}" for d in DIMENSIONS)}, b.composite, b.final, b.grade
                    FROM calipers_rubric_batch b
                    WHERE NOT EXISTS (SELECT 1 FROM rubric_history h WHERE {keys})
                    """,
                    [stamp],
                ).fetchall()
        finally:
            con.unregister("calipers_rubric_batch")
        rows = con.execute(
            f"SELECT task, seq, run, sample_id, epoch, {', '.join(DIMENSIONS)} FROM rubric_history "
            "WHERE list_contains(?, task) ORDER BY task, seq",
            [sorted({e.task for e in evaluations})],
        ).fetchall()
    _flag(evaluations, rows)
    return int(new[0][0]) if new and new[0] else 0


def _flag(evaluations: list[Evaluation], rows: list[tuple[Any, ...]]) -> None:
    by_task: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    seq_of: dict[tuple[Any, ...], int] = {}
    for row in rows:
        by_task[row[0]].append(row)
        seq_of[(row[2], row[0], row[3], row[4])] = row[1]
    for e in evaluations:
        seq = seq_of[e.key]
        earlier = [r for r in by_task[e.task] if r[1] < seq][-WINDOW:]
        e.history_flags = history_flags(e, np.array([r[5:] for r in earlier], dtype=float))


def history_flags(evaluation: Evaluation, earlier: npt.NDArray[np.float64]) -> list[HistoryFlag]:
    """Flags for `evaluation` against `earlier` (rows: evaluations, columns: DIMENSIONS)."""
    if earlier.shape[0] < MIN_HISTORY:
        return []
    flags = []
    for i, d in enumerate(DIMENSIONS):
        column = earlier[:, i]
        mean, sd = float(column.mean()), float(column.std(ddof=1))
        score = float(evaluation.dimensions[d])
        deviation = abs(score - mean)
        if deviation > SD_LIMIT * sd and deviation > 1e-12:
            flags.append(
                HistoryFlag(d, score, mean, sd, int(column.size), deviation / sd if sd else None)
            )
    return flags


SERIES_LIMIT = 60  # evaluations per task kept for a report's history plot


def history_series(
    db: str | Path | Store, tasks: list[str], *, limit: int = SERIES_LIMIT
) -> dict[str, list[dict[str, Any]]]:
    """Per task, its last `limit` evaluations in history order, each with its dimensions and the
    band the flags use: per dimension the mean and SD of the `WINDOW` evaluations before it
    (None until there are `MIN_HISTORY`). The band is computed over the whole history, so the
    first evaluations shown still have theirs."""
    if not tasks:
        return {}
    sql = (
        f"SELECT task, seq, scored_at, run, sample_id, epoch, final, grade, "
        f"{', '.join(DIMENSIONS)} FROM rubric_history WHERE list_contains(?, task) "
        "ORDER BY task, seq"
    )
    if isinstance(db, Store):
        rows = db.con.execute(sql, [sorted(set(tasks))]).fetchall()
    else:
        with Store(db, read_only=True) as store:
            rows = store.con.execute(sql, [sorted(set(tasks))]).fetchall()
    by_task: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for row in rows:
        by_task[row[0]].append(row)
    out = {}
    for task, task_rows in by_task.items():
        values = np.array([r[8:] for r in task_rows], dtype=float)
        entries = []
        for i, r in enumerate(task_rows):
            earlier = values[max(0, i - WINDOW) : i]
            enough = earlier.shape[0] >= MIN_HISTORY
            entries.append(
                {
                    "seq": int(r[1]),
                    "scored_at": r[2].isoformat(),
                    "run": r[3],
                    "sample_id": r[4],
                    "epoch": int(r[5]),
                    "final": float(r[6]),
                    "grade": r[7],
                    "dimensions": {d: float(v) for d, v in zip(DIMENSIONS, r[8:], strict=True)},
                    "band": {
                        d: {
                            "mean": float(earlier[:, j].mean()) if enough else None,
                            "sd": float(earlier[:, j].std(ddof=1)) if enough else None,
                        }
                        for j, d in enumerate(DIMENSIONS)
                    },
                }
            )
        out[task] = entries[-limit:]
    return out


def record_in_history(result: RubricResult, db: str | Path) -> None:
    """Record the result's evaluations in the store's history and flag each dimension more than
    2 SD from the 10 evaluations of its task before it; the result gains the flags, the history
    series of its tasks, and a note."""
    new = record_history(db, result.evaluations, rubric_sha256=result.rubric["sha256"])
    result.history = history_series(db, sorted({e.task for e in result.evaluations}))
    flagged = sum(1 for e in result.evaluations if e.history_flags)
    result.parameters["history"] = str(db)
    result.notes.append(
        f"history: {new} new evaluation(s) recorded in {db}; {flagged} flagged for review"
    )
