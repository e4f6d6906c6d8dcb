"""The layered inputs of several runs written in one pass (`layer_inputs.refresh`, issue 39) are,
run by run, those of a refresh of that run alone: the same per-sample summaries, judges, counts
and key digests, and ranks equal to the one-run expressions VERSION is made of."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from calipers.data import layer_inputs
from calipers.data.store import Store

# two runs with the same judges (one pass), one with another judge, one with none
JUDGES: dict[str, list[str | None]] = {
    "a": ["x", "y", None],
    "b": ["x", "y", None],
    "c": ["y"],
    "d": [],
}


def _rows() -> list[dict[str, Any]]:
    rows = []
    for run, judges in JUDGES.items():
        for i in range(30 if run != "c" else 20):  # c: other keys, so another digest
            for epoch in range(1 + i % 2):
                rows.append({
                    "run": run, "task": f"t{i % 4}", "sample_id": f"s{i:02d}", "epoch": epoch,
                    "group": f"g{i % 3}", "correct": i % 3 == 0,
                    "assertions": [{"type": "contains", "passed": i % 2 == 0},
                                   {"type": "max_length", "passed": True, "weight": 2.0}],
                    "judgments": [{"judge": j, "score": float(1 + (i + k) % 5)}
                                  for k, j in enumerate(judges)]
                                 + [{"judge": "x", "dimension": "tone", "score": 2.0}],
                    "human": [{"dimension": None, "score": float(i % 5 + 1)}] if i % 4 else None,
                })  # fmt: skip
    return rows


def _tables(con: Any) -> tuple[list[Any], list[Any]]:
    inputs = con.execute(
        "SELECT * FROM layer_inputs ORDER BY run, task, sample_id, epoch"
    ).fetchall()
    runs = con.execute(
        "SELECT run, version, samples, judges, keys FROM layer_input_runs ORDER BY run"
    ).fetchall()
    return inputs, runs


def test_runs_refreshed_together_equal_each_refreshed_alone(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    with Store(tmp_path / "s.duckdb") as store:
        store.import_files([path])  # the four runs in one refresh
        together = _tables(store.con)
        for run in JUDGES:
            store.con.execute("BEGIN TRANSACTION")
            layer_inputs.refresh(store.con, [run])
            store.con.execute("COMMIT")
        alone = _tables(store.con)
        # the one-run expressions that VERSION is made of, run by run
        for run in JUDGES:
            ranks = store.con.execute(
                f"SELECT task, sample_id, epoch, {layer_inputs.KEY_RANK}, "
                f"{layer_inputs.TASK_RANK} FROM samples WHERE run = ? ORDER BY ALL",
                [run],
            ).fetchall()
            stored = store.con.execute(
                "SELECT task, sample_id, epoch, key_rank, task_rank FROM layer_inputs "
                "WHERE run = ? ORDER BY ALL",
                [run],
            ).fetchall()
            assert stored == ranks
            digest = store.con.execute(layer_inputs.KEYS_DIGEST, [run]).fetchall()
            keys = "SELECT keys FROM layer_input_runs WHERE run = ?"
            assert digest == store.con.execute(keys, [run]).fetchall()
    assert together == alone
    inputs, runs = together
    assert len(inputs) == 3 * 45 + 30
    assert [(r[0], r[2], r[3]) for r in runs] == [
        ("a", 45, ["x", "y", None]), ("b", 45, ["x", "y", None]), ("c", 30, ["y"]), ("d", 45, []),
    ]  # fmt: skip
    assert runs[0][4] == runs[1][4] != runs[2][4]  # the same keys, the same digest


def test_a_run_without_samples_is_recorded_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"run": "a", "task": "t", "sample_id": "s", "correct": True}) + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        store.import_files([path])
        store.con.execute("BEGIN TRANSACTION")
        layer_inputs.refresh(store.con, ["a", "gone"])
        store.con.execute("COMMIT")
        rows = store.con.execute(
            "SELECT run, samples, judges, keys IS NULL FROM layer_input_runs ORDER BY run"
        ).fetchall()
    assert rows == [("a", 1, [], False), ("gone", 0, [], True)]
