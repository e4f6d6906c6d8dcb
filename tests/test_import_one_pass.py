"""The one-pass import (`direct_import`, issue 39) against the staged one it stands in for: the same
store, table by table and value by value, on files with every kind of field, with replaced samples,
several files and `--as`; and where it gives way (a refusal, a value only the strict reading takes,
a shared key, a file twice) the staged import's own answer, with the store left as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from calipers.data import direct_import
from calipers.data.store import ImportSummary, Store
from calipers.errors import ValidationError
from test_import_fast_path import _row, _write

TABLES = {
    "samples": "SELECT * EXCLUDE (imported_at) FROM samples ORDER BY ALL",
    "imports": "SELECT * EXCLUDE (imported_at) FROM imports ORDER BY id",
    "layer_inputs": "SELECT * FROM layer_inputs ORDER BY run, task, sample_id, epoch",
    "layer_input_runs": "SELECT * FROM layer_input_runs ORDER BY run",
}


def _tables(store: Store) -> dict[str, str]:
    """Every table the import writes, as text, but for when (`imported_at`)."""
    return {t: repr(store.con.execute(q).fetchall()) for t, q in TABLES.items()}


def _temporary(store: Store) -> list[str]:
    """The temporary tables and views the connection holds (the import's own are dropped)."""
    rows = store.con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE temporary "
        "UNION ALL SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal"
    ).fetchall()
    return sorted(r[0] for r in rows)


def _spy(write: Any, taken: list[bool], *, one_pass: bool) -> Any:
    """`direct_import.write`, or (not `one_pass`) a refusal to try; `taken` records each answer."""

    def spy(*args: Any, **kwargs: Any) -> Any:
        result = write(*args, **kwargs) if one_pass else None
        taken.append(result is not None)
        return result

    return spy


def _import(
    db: Path, batches: list[list[Path]], *, one_pass: bool, mp: pytest.MonkeyPatch, **options: Any
) -> tuple[list[ImportSummary], dict[str, str]]:
    """Each batch imported in turn, by the one-pass import or (else) the staged one; the summaries
    and every table's rows as text (a -0.0 or a NaN shows)."""
    taken: list[bool] = []
    summaries = []
    with mp.context() as m:
        m.setattr(direct_import, "write", _spy(direct_import.write, taken, one_pass=one_pass))
        with Store(db) as store:
            for paths in batches:
                summaries.append(store.import_files(paths, **options))
            tables = _tables(store)
    assert taken == [one_pass] * len(batches)
    return summaries, tables


def _both(
    tmp_path: Path, batches: list[list[Path]], mp: pytest.MonkeyPatch, **options: Any
) -> None:
    one = _import(tmp_path / "one.duckdb", batches, one_pass=True, mp=mp, **options)
    staged = _import(tmp_path / "staged.duckdb", batches, one_pass=False, mp=mp, **options)
    assert one == staged


@pytest.mark.parametrize("rename", [None, "as-given"])
def test_one_pass_stores_what_the_staged_import_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rename: str | None
) -> None:
    path = _write(tmp_path / "all.jsonl", [_row(i) for i in range(40)], ensure_ascii=False)
    _both(tmp_path, [[path]], monkeypatch, rename=rename)


def test_replaced_samples_and_several_files_as_staged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _write(tmp_path / "first.jsonl", [_row(i) for i in range(30)])
    # the second import replaces 10 of the first's samples and adds 10, over two files
    again = [{**_row(i), "correct": True, "output": "again"} for i in range(20, 40)]
    a = _write(tmp_path / "a.jsonl", again[:12])
    b = _write(tmp_path / "b.jsonl", again[12:])
    _both(tmp_path, [[first], [a, b]], monkeypatch)
    summaries, _ = _import(tmp_path / "s.duckdb", [[first], [a, b]], one_pass=True, mp=monkeypatch)
    assert [(s.files, s.samples, s.replaced) for s in summaries] == [(1, 30, 0), (2, 20, 10)]


def test_files_named_by_their_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [_write(tmp_path / f"{name}.jsonl", [_row(i) for i in range(10)])
             for name in ("alpha", "beta")]  # fmt: skip
    _both(tmp_path, [paths], monkeypatch, name_by="file")


# where the one-pass import gives way, the staged one answers: (file's rows, error or None)
GIVES_WAY: dict[str, tuple[list[dict[str, Any]], str | None]] = {
    "an epoch of 1.0 (only the strict reading takes it)": ([{**_row(1), "epoch": 1.0}], None),
    "a guess chance above 1": ([{**_row(1), "guess_chance": 1.5}], "guess_chance"),
    "a key twice": ([_row(1), _row(1)], "sample_id"),
    "a string as a boolean": ([{**_row(1), "correct": "yes"}], "correct"),
    "NaN in a decision": ([{**_row(1), "decision": {"x": float("nan")}}], "decision.x"),
    # the rules beyond the types, checked as the one-pass import reads the rows
    "a negative token count": ([{**_row(1), "tokens_out": -3}], "tokens_out"),
    "an empty task": ([{**_row(1), "task": ""}], "task"),
    "a judgment outside its scale": (
        [{**_row(1), "judgments": [{"judge": "j", "score": 7, "scale_min": 1, "scale_max": 5}]}],
        "judgments",
    ),
    "an assertion of weight 0": (
        [{**_row(1), "assertions": [{"type": "contains", "passed": True, "weight": 0}]}],
        "assertions",
    ),
    "a score weight of 0": ([{**_row(1), "score_weights": {"a": 0}}], "score_weights"),
    "a tool without a name": ([{**_row(1), "tools": [{"name": ""}]}], "tools"),
}


@pytest.mark.parametrize("case", sorted(GIVES_WAY))
def test_where_it_gives_way_the_staged_import_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    rows, field = GIVES_WAY[case]
    keep = _write(tmp_path / "keep.jsonl", [_row(i) for i in range(6)])
    path = _write(tmp_path / "x.jsonl", rows)
    answers = []
    for one_pass in (True, False):
        db = tmp_path / f"{one_pass}.duckdb"
        _import(db, [[keep]], one_pass=True, mp=monkeypatch)
        taken: list[bool] = []
        with monkeypatch.context() as m, Store(db) as store:
            m.setattr(direct_import, "write", _spy(direct_import.write, taken, one_pass=one_pass))
            before = _tables(store)
            try:
                store.import_files([path])
                answer: Any = _tables(store)
            except ValidationError as exc:
                answer = [(p.message, p.line, p.field) for p in exc.problems]
                assert _tables(store) == before  # the one-pass try and the staged one left nothing
            assert _temporary(store) == []
        assert taken == [False]  # given way, or not tried
        answers.append(answer)
    assert answers[0] == answers[1]
    if field is not None:
        assert any(f and f.startswith(field) for _, _, f in answers[0])


def test_a_file_twice_and_shared_keys_give_the_staged_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _write(tmp_path / "a.jsonl", [_row(i) for i in range(5)])
    b = _write(tmp_path / "b.jsonl", [_row(i) for i in range(3, 8)])
    for paths in ([a, a], [a, b]):
        with Store(tmp_path / "s.duckdb") as store, pytest.raises(ValidationError) as caught:
            store.import_files(paths)
        assert "in both" in caught.value.problems[0].message
