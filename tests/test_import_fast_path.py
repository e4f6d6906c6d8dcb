"""The fast staging of JSON Lines (`fast_jsonl`) against the strict one (`readers._jsonl_select`):
the same rows, to the last value, on files with every kind of field; and a file with one value
the fast path is not sure of, anywhere, takes the strict path and gives the error it gave before.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import duckdb
import pytest

from calipers.data import fast_jsonl, readers
from calipers.data.readers import stage_file
from calipers.errors import ValidationError

JUDGMENT = {
    "judge": "judge-é", "dimension": None, "score": 4, "scale_min": 1.0, "scale_max": 5,
    "rationale": "clear \"and\" correct\n— ünïcode 🙂", "red_flags": ["a", "b"], "bonuses": [],
    "error": None, "prompt_hash": "abc", "repeat": 0,
}  # fmt: skip


def _row(i: int) -> dict[str, Any]:
    return {
        "run": ["model-a", "model-b"][i % 2],
        "task": f"task{i % 3}",
        "sample_id": i if i % 4 == 0 else f"s{i}",  # a number as a name's text
        "epoch": i % 2,
        "tier": None if i % 5 == 0 else "hard",
        "point": "length=8",
        "correct": i % 3 == 0,
        "guess_chance": 0.25,
        "truncated": None,
        "output": 'ünïcode \u2028 and "quotes" and \\ back' if i % 2 else "",
        "decision": [{"label": "approve", "n": i}, None, 1.5e-7] if i % 2 else "approve",
        "perturbation": "baseline",
        "perturbation_of": None,
        "tokens_in": 9_000_000_000_000_000_000 if i == 3 else i,
        "tokens_out": -0 if i == 1 else 100,
        "cost_usd": 0.1 + i * 1e-9,
        "latency_s": 1e-300 if i == 2 else 3,
        "tool_calls": 2_147_483_647 if i == 5 else 1,
        "steps": None,
        "error": None,
        "assertions": [
            {
                "name": "mentions 42",
                "type": "contains",
                "layer": "fact",
                "weight": 2,
                "value": {"k": [1, "2", {"deep": True}]},
                "passed": True,
                "detail": None,
                "unknown": [1, 2],
            },
            {"type": "max_length", "value": 4000, "passed": i % 2 == 0},
        ]
        if i % 6
        else [],
        "judgments": [JUDGMENT, {**JUDGMENT, "judge": None, "score": None, "red_flags": None}],
        "human": [{"dimension": None, "score": 2.5}] if i % 2 else None,
        "tools": [
            {"name": "search", "input": {"q": "x", "n": [1, 2]}, "output": "found"},
            {"name": "calc", "input": "2+2", "output": None},
        ],
        "scores": {"accuracy": 1, "f1": 0.77, "missing": None} if i % 3 else {},
        "input": "the question",
        "expected": 42 if i % 2 else "forty-two",
        "group": "g1",
        "grader_tokens_in": 12,
        "grader_tokens_out": None,
        "grader_cost_usd": 0.0,
        "score_weights": {"accuracy": 2.5},
        "metadata": {"anything": [1, {"x": None}]},  # an unknown field, ignored by both
    }


def _write(path: Path, rows: list[dict[str, Any]], *, ensure_ascii: bool = True) -> Path:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=ensure_ascii) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def _strict_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_jsonl, "stage", lambda *a, **k: False)


def _same_tables(con: duckdb.DuckDBPyConnection, a: str, b: str) -> None:
    assert (
        con.execute(f"SELECT count(*) FROM {a}").fetchall()
        == con.execute(f"SELECT count(*) FROM {b}").fetchall()
    )
    for x, y in ((a, b), (b, a)):
        assert con.execute(f"SELECT * FROM {x} EXCEPT ALL SELECT * FROM {y}").fetchall() == []
    # and value by value, in Python's view of them (a NaN or a -0.0 would show here)
    order = "ORDER BY run, task, sample_id, epoch"
    assert repr(con.execute(f"SELECT * FROM {a} {order}").fetchall()) == repr(
        con.execute(f"SELECT * FROM {b} {order}").fetchall()
    )


@pytest.mark.parametrize("ascii_only", [True, False])
@pytest.mark.parametrize("run", [None, "as-given"])
def test_fast_and_strict_stage_the_same_rows(
    tmp_path: Path, ascii_only: bool, run: str | None
) -> None:
    path = _write(tmp_path / "all.jsonl", [_row(i) for i in range(24)], ensure_ascii=ascii_only)
    con = duckdb.connect()
    assert fast_jsonl.stage(con, "fast", path, run, object_size=16 << 20)
    con.execute(f"CREATE TEMP TABLE strict AS {readers._jsonl_select(path, run)}")
    _same_tables(con, "fast", "strict")
    assert con.execute("SELECT count(*) FROM fast").fetchall() == [(24,)]


def test_an_import_by_either_path_stores_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "all.jsonl", [_row(i) for i in range(50)])
    con = duckdb.connect()
    assert stage_file(con, path, "fast").rows == 50
    with monkeypatch.context() as m:
        _strict_only(m)
        assert stage_file(con, path, "strict").rows == 50
    _same_tables(con, "fast", "strict")


# values the fast path leaves to the strict one, which takes them: the same rows either way
TAKEN_BY_STRICT = {
    "an epoch of 1.0": ("epoch", 1.0),
    "a name of 19 digits": ("sample_id", 1234567890123456789),
    "a name with a fraction": ("sample_id", 1.5),
    "a judgment repeat of 2.0": ("judgments", [{**JUDGMENT, "repeat": 2.0}]),
    # a map's text is checked by what follows each key's closing quote: a key with `\":` in it
    # looks like a key followed by a value, and only sends the file to the strict path
    "a map key holding a quote and a colon": ("scores", {'x":t': 1, 'y":"': 2}),
    "a map value of 1e19": ("scores", {"a": 1e19}),  # a real, not an integer beyond 64 bits
}


@pytest.mark.parametrize("case", sorted(TAKEN_BY_STRICT))
def test_what_only_the_strict_path_takes_is_taken(tmp_path: Path, case: str) -> None:
    key, value = TAKEN_BY_STRICT[case]
    rows = [_row(i) for i in range(6)]
    rows[3][key] = value
    path = _write(tmp_path / "s.jsonl", rows)
    con = duckdb.connect()
    assert not fast_jsonl.stage(con, "fast", path, None, object_size=16 << 20)
    staged = stage_file(con, path, "staged")
    assert staged.rows == 6
    con.execute(f"CREATE TEMP TABLE strict AS {readers._jsonl_select(path, None)}")
    _same_tables(con, "staged", "strict")


def _judgments_deep(score: object) -> list[dict[str, Any]]:
    return [JUDGMENT, {**JUDGMENT, "red_flags": ["a", score]}]


# one value a type rule refuses, at the first line, the last line, or deep in a nested list
REFUSED = {
    "a number as a string, first line": (0, "epoch", "1"),
    "a bool as 0/1, last line": (-1, "correct", 1),
    "a bool as a string": (-1, "truncated", "true"),
    "a number in a string-only field": (0, "group", 5),
    "a bool as a name": (-1, "run", True),
    "an object as text": (0, "output", {"a": 1}),
    "a score as a string, deep": (-1, "judgments", [JUDGMENT, {**JUDGMENT, "score": "4"}]),
    "a number in a list of strings, deep": (-1, "judgments", _judgments_deep(3)),
    "null in a list of strings, deep": (-1, "judgments", _judgments_deep(None)),
    "a passed of 0, deep": (0, "assertions", [{"type": "contains", "passed": 0}]),
    "null as an assertion": (-1, "assertions", [{"type": "contains", "passed": True}, None]),
    "a map value as a string": (-1, "scores", {"a": 1, "b": "0.5"}),
    "a map value true": (0, "score_weights", {"a": True}),
    "a tool name as a list": (-1, "tools", [{"name": ["x"]}]),
    "a fractional epoch": (-1, "epoch", 1.5),
    "a cost beyond 64 bits": (-1, "cost_usd", 10**20),
    "tokens of 2**64": (0, "tokens_out", 2**64),
    "an epoch beyond 32 bits": (-1, "epoch", 2**33),
    "a human score null": (-1, "human", [{"score": None}]),  # a value rule, after staging
    "a map value as a list": (-1, "scores", {"a": [1]}),
    "a map value as an object": (0, "score_weights", {"a": {"b": 1}}),
    "a map value false, after a null": (-1, "scores", {"a": None, "b": False}),
    "a map value NaN": (-1, "scores", {"a": float("nan")}),
    "a map value Infinity": (0, "scores", {"a": float("-inf")}),
    "a map value beyond 64 bits": (-1, "scores", {"a": 10**20}),
    "a map that is a list": (0, "scores", [{"a": 1}]),
    "a map that is a string": (-1, "score_weights", "{}"),
}
VALUE_RULES = {"a human score null"}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_one_unsafe_value_anywhere_gives_the_error_it_gave_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    where, key, value = REFUSED[case]
    rows = [_row(i) for i in range(8)]
    rows[where][key] = value
    path = _write(tmp_path / "bad.jsonl", rows)
    taken = fast_jsonl.stage(duckdb.connect(), "fast", path, None, object_size=16 << 20)
    assert taken == (case in VALUE_RULES)
    with pytest.raises(ValidationError) as now:
        stage_file(duckdb.connect(), path, "staged")
    with monkeypatch.context() as m:
        _strict_only(m)
        with pytest.raises(ValidationError) as before:
            stage_file(duckdb.connect(), path, "staged")
    assert str(now.value) == str(before.value)
    assert [vars(p) for p in now.value.problems] == [vars(p) for p in before.value.problems]
    line = (where % len(rows)) + 1
    assert any(p.line == line for p in now.value.problems), now.value


def test_a_line_that_is_not_an_object_gives_the_same_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_row(0)) + "\n[1, 2]\n" + json.dumps(_row(1)) + "\n")
    with pytest.raises(ValidationError) as now:
        stage_file(duckdb.connect(), path, "staged")
    with monkeypatch.context() as m:
        _strict_only(m)
        with pytest.raises(ValidationError) as before:
            stage_file(duckdb.connect(), path, "staged")
    assert str(now.value) == str(before.value)


# map keys that hold the characters a value follows (`:`, then `t`, `f`, `{`, `[` or a quote),
# but not after a key's closing quote: the fast path takes them, and stores what the strict does
MAP_KEYS = {"rouge:f1": 0.5, "k:true": 1, "a:{b": 2, "c:[d": 3, 'e"f': 4, 'g:"h': 5, "": None}


def test_map_keys_that_look_like_values_are_taken_by_the_fast_path(tmp_path: Path) -> None:
    rows = [_row(i) for i in range(6)]
    for row in rows:
        row["scores"] = MAP_KEYS
    path = _write(tmp_path / "keys.jsonl", rows)
    con = duckdb.connect()
    assert fast_jsonl.stage(con, "fast", path, None, object_size=16 << 20)
    con.execute(f"CREATE TEMP TABLE strict AS {readers._jsonl_select(path, None)}")
    _same_tables(con, "fast", "strict")
    assert con.execute("SELECT scores FROM fast LIMIT 1").fetchall() == [(MAP_KEYS,)]


@pytest.mark.parametrize(
    "scores",
    ['{"a": 1, "a": 2}', '{"a": 1, "b": {"c": 1, "c": 2}}', '{"a": 1,}', '{"a": 01}'],
)
def test_a_map_the_reader_takes_leniently_is_left_to_the_strict_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scores: str
) -> None:
    """A key given twice (DuckDB's cast to a map refuses it, as its MAP read did), and what is not
    JSON: the same answer as the strict path's, taken or refused."""
    line = json.dumps(_row(1)).replace('"scores": {', f'"scores": {scores[:-1]}, "z": 1, ', 1)
    path = tmp_path / "map.jsonl"
    path.write_text(json.dumps(_row(0)) + "\n" + line + "\n", encoding="utf-8")
    results = []
    for strict in (False, True):
        with monkeypatch.context() as m:
            if strict:
                _strict_only(m)
            try:
                stage_file(duckdb.connect(), path, "staged")
                results.append("taken")
            except ValidationError as exc:
                results.append(str(exc))
    assert results[0] == results[1]
    assert not fast_jsonl.stage(duckdb.connect(), "fast", path, None, object_size=16 << 20)


# ------------------------------------------------------------- a small file: the fields it names


def _full_query(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_jsonl, "SCANNED_BYTES", -1)  # every file read for every field


def _minimal(i: int) -> dict[str, Any]:
    return {"run": "m", "task": "t", "sample_id": f"s{i}", "correct": i % 2 == 0,
            "output": 'says "judgments" and scores', "scores": {"a": i / 4}}  # fmt: skip


def test_a_small_file_is_read_for_the_fields_it_names_with_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "few.jsonl", [_minimal(i) for i in range(6)])
    named = fast_jsonl.named_fields(path)
    # a name inside a string is escaped quotes (\"judgments\"): not a key's quoted name
    assert named is not None and named.fields == {
        "run", "task", "sample_id", "correct", "output", "scores"
    }  # fmt: skip
    con = duckdb.connect()
    assert fast_jsonl.stage(con, "named", path, None, object_size=16 << 20)
    assert fast_jsonl.stage(con, "named_run", path, "as-given", object_size=16 << 20)
    with monkeypatch.context() as m:
        _full_query(m)
        assert fast_jsonl.named_fields(path) is None
        assert fast_jsonl.stage(con, "every", path, None, object_size=16 << 20)
        assert fast_jsonl.stage(con, "every_run", path, "as-given", object_size=16 << 20)
    _same_tables(con, "named", "every")
    _same_tables(con, "named_run", "every_run")
    assert con.execute("SELECT DISTINCT epoch, run FROM named_run").fetchall() == [(0, "as-given")]
    # and the file of every kind of field, read for the fields it names, is the strict path's
    full = _write(tmp_path / "all.jsonl", [_row(i) for i in range(24)])
    assert fast_jsonl.named_fields(full) is not None
    assert fast_jsonl.stage(con, "fast", full, None, object_size=16 << 20)
    con.execute(f"CREATE TEMP TABLE strict AS {readers._jsonl_select(full, None)}")
    _same_tables(con, "fast", "strict")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("an ASCII letter as an escape", b'{"run":"m","corr\\u0065ct":true}\n'),
        ("gzip under a plain name", gzip.compress(b'{"run":"m","correct":true}\n', mtime=0)),
        ("not UTF-8", '{"run":"m","task":"t","sample_id":"1","correct":true}\n'.encode("utf-16")),
        ("no field named", b'{"other":1}\n'),
    ],
)  # fmt: skip
def test_where_the_names_cannot_be_told_cheaply_every_field_is_read(
    tmp_path: Path, name: str, content: bytes
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    assert fast_jsonl.named_fields(path) is None, name


def test_a_key_spelled_with_an_escape_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "escaped.jsonl"
    path.write_bytes(b'{"run":"m","task":"t","sample_id":"1","corr\\u0065ct":true}\n')
    con = duckdb.connect()
    stage_file(con, path, "x")
    assert con.execute("SELECT correct FROM x").fetchall() == [(True,)]


def test_a_compressed_or_larger_file_is_read_for_every_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gz = tmp_path / "s.jsonl.gz"
    gz.write_bytes(gzip.compress(json.dumps(_minimal(0)).encode() + b"\n"))
    assert fast_jsonl.named_fields(gz) is None
    con = duckdb.connect()
    stage_file(con, gz, "x")
    assert con.execute("SELECT correct, scores FROM x").fetchall() == [(True, {"a": 0.0})]
    path = _write(tmp_path / "s.jsonl", [_minimal(0)])
    monkeypatch.setattr(fast_jsonl, "SCANNED_BYTES", path.stat().st_size - 1)
    assert fast_jsonl.named_fields(path) is None


def test_a_file_changed_as_it_is_read_is_read_again_for_every_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calipers.cli.main import main
    from calipers.data.store import Store

    path = _write(tmp_path / "s.jsonl", [_minimal(i) for i in range(4)])
    # as if a line naming `correct` and `scores` was written after the file was scanned
    stale = fast_jsonl.Named(frozenset({"run", "task", "sample_id"}), (0, 0, 0))
    monkeypatch.setattr(fast_jsonl, "named_fields", lambda _path: stale)
    con = duckdb.connect()
    assert fast_jsonl.stage(con, "x", path, None, object_size=16 << 20)
    assert con.execute("SELECT count(correct), count(scores) FROM x").fetchall() == [(4, 4)]
    # the one-pass import gives way, and the staged one reads every field
    db = tmp_path / "s.duckdb"
    assert main(["import", str(path), "--db", str(db), "-q"]) == 0
    with Store(db, read_only=True) as store:
        got = store.con.execute("SELECT count(correct), count(scores) FROM samples").fetchall()
    assert got == [(4, 4)]


def test_the_strict_path_reads_a_changed_file_again_for_every_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [_minimal(i) for i in range(4)]
    rows[2]["epoch"] = 1.0  # only the strict path takes it
    path = _write(tmp_path / "s.jsonl", rows)
    stale = fast_jsonl.Named(frozenset({"run", "task", "sample_id", "epoch"}), (0, 0, 0))
    monkeypatch.setattr(fast_jsonl, "named_fields", lambda _path: stale)
    con = duckdb.connect()
    assert stage_file(con, path, "x").rows == 4
    assert con.execute("SELECT count(correct), count(scores) FROM x").fetchall() == [(4, 4)]


def test_a_pipe_is_never_read_for_the_fields_it_names(tmp_path: Path) -> None:
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    assert fast_jsonl.named_fields(fifo) is None  # returns at once: its bytes are not read
