"""One set of type rules on every path: for every field of the sample model and every kind of
wrong value, the fast path (DuckDB with the `guards` SQL) and the record checker (the diagnostic
pass) give the same verdict, in JSON Lines, CSV and Parquet; and an accepted value is stored
exactly (nothing rounded, stringified or read as a boolean it is not)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calipers.data import diagnose, fast_jsonl
from calipers.data.guards import NESTED
from calipers.data.model import FIELDS, INT32_MAX, KEY
from calipers.data.readers import stage_file
from calipers.data.validate import FLAT_FIELDS, RecordChecker
from calipers.errors import ValidationError

BASE = {"run": "m", "task": "t", "sample_id": "1"}
# one candidate of each JSON kind, and the near misses the issue found cast silently
VALUES: list[Any] = [
    "x", "12", "true", "false", "", 12, 0, 1, 2, -1, 1.5, 12.0, 0.5, 10.7, 2**31, 2**40,
    True, False, None, {"k": 1}, [1, 2], ["a"], [], {}, [{}, 1], [{}, None],
]  # fmt: skip
NESTED_VALUES: list[Any] = ["x", 2, 1.5, 2.0, True, None, [1], ["a"], {"a": 1}, -1]


_CON = duckdb.connect()


def _fast_ok(path: Path) -> bool:
    """The fast path's verdict alone: the diagnostic pass is never asked."""

    def no_diagnosis(*args: Any, **kwargs: Any) -> None:
        raise ValidationError([])

    original = diagnose.raise_diagnosis
    diagnose.raise_diagnosis = no_diagnosis  # type: ignore[assignment]
    try:
        stage_file(_CON, path, "fast")
        _CON.execute("DROP TABLE fast")
        return True
    except ValidationError:
        return False
    finally:
        diagnose.raise_diagnosis = original  # type: ignore[assignment]


def _checker_ok(record: dict[str, Any]) -> bool:
    return RecordChecker("f").check(record, 1) == []


def _jsonl_cases() -> list[tuple[str, Any]]:
    cases = [(f.name, v) for f in FIELDS if f.name not in ("run", "task", "sample_id")
             for v in VALUES]  # fmt: skip
    for name, struct in NESTED.items():
        for key in struct:
            cases += [(f"{name}[].{key}", v) for v in NESTED_VALUES]
    cases += [("scores", {"a": v}) for v in NESTED_VALUES]
    cases += [("score_weights", {"a": v}) for v in [*NESTED_VALUES, 0, 0.0, -0.5, 1e-9, 3]]
    return cases


def _record(field: str, value: Any) -> dict[str, Any]:
    record = dict(BASE)
    if field.endswith(tuple(f"].{k}" for s in NESTED.values() for k in s)):
        name, key = field.split("[].")
        item = {"type": "contains"} if name == "assertions" else {}
        if name == "human":
            item = {"score": 1}
        if name == "tools":
            item = {"name": "t"}
        item[key] = value
        record[name] = [item]
    else:
        record[field] = value
    return record


def _top_level(field: str) -> str:
    return field.split("[]", 1)[0]


# The cases in one test per top-level field (~950 files, each staged alone: a minute in one test),
# so that parallel test workers (pytest-xdist) share them; together they are every case.
JSONL_FIELDS = sorted({_top_level(field) for field, _ in _jsonl_cases()})


def test_the_json_lines_cases_cover_every_field_and_wrong_type() -> None:
    cases = _jsonl_cases()
    assert len(cases) > 600
    assert {_top_level(f.name) for f in FIELDS} - set(JSONL_FIELDS) == {"run", "task", "sample_id"}
    assert sorted({_top_level(field) for field, _ in cases}) == JSONL_FIELDS  # a test each


@pytest.mark.parametrize("top_level", JSONL_FIELDS)
def test_every_field_and_wrong_type_gets_one_verdict_in_json_lines(
    tmp_path: Path, top_level: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    disagreements = []
    cases = [(field, value) for field, value in _jsonl_cases() if _top_level(field) == top_level]
    assert cases
    # The cases the record checker accepts are staged together first, one line each: the fast path
    # reads every field of a line by its own rule, whatever the other lines hold, so it accepts the
    # file only if it accepts each line (a third of the cases, staged at once). Where it refuses
    # the file, each of them is staged alone below to name the one it refuses.
    # (By index: True == 1 in Python, and the checker accepts one and refuses the other.)
    accepted = [n for n, (f, v) in enumerate(cases) if _checker_ok(_record(f, v))]
    together = tmp_path / "accepted.jsonl"
    lines = [{**_record(*cases[n]), "sample_id": str(n)} for n in accepted]  # keys apart
    together.write_text("".join(json.dumps(line) + "\n" for line in lines))
    staged_together = bool(accepted) and _fast_ok(together)
    alone = [c for n, c in enumerate(cases) if not (staged_together and n in accepted)]
    for n, (field, value) in enumerate(alone):
        record = _record(field, value)
        path = tmp_path / f"{n}.jsonl"
        path.write_text(json.dumps(record) + "\n")
        fast, checker = _fast_ok(path), _checker_ok(record)
        if fast != checker:
            disagreements.append((field, value, fast, checker))
    # These small files are read for the fields they name (`fast_jsonl.named_fields`); the query
    # of every field, which a file over 1 MB gets, gives the same verdicts: the accepted cases
    # together and every third refused one.
    monkeypatch.setattr(fast_jsonl, "SCANNED_BYTES", -1)
    if accepted and not _fast_ok(together):
        disagreements.append(("every field", "the accepted cases", False, True))
    for n, (field, value) in enumerate(alone):
        refused = n % 3 == 0 and not _checker_ok(_record(field, value))
        if refused and _fast_ok(tmp_path / f"{n}.jsonl"):
            disagreements.append((field, value, True, False))
    assert disagreements == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("epoch", 1.5), ("tokens_out", 10.7), ("tokens_in", "12"), ("task", {"a": 1}),
     ("correct", 0.5), ("correct", 2), ("correct", "false"), ("truncated", 0.3),
     ("correct", 1), ("epoch", 2**31), ("sample_id", True)],
)  # fmt: skip
def test_the_coercions_found_are_errors_naming_the_field(
    tmp_path: Path, field: str, value: Any
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({**BASE, field: value}) + "\n")
    with pytest.raises(ValidationError) as err:
        stage_file(duckdb.connect(), path, "t")
    assert f"field '{field}'" in err.value.message


def test_red_flags_must_be_strings(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    judgment = {"judge": "j", "score": 3, "scale_min": 1, "scale_max": 5, "red_flags": [1, 2]}
    path.write_text(json.dumps({**BASE, "judgments": [judgment]}) + "\n")
    with pytest.raises(ValidationError, match=r"judgments\[0\]\.red_flags"):
        stage_file(duckdb.connect(), path, "t")


def test_accepted_values_are_stored_exactly(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    record = {**BASE, "sample_id": 17, "epoch": 2.0, "tokens_out": 12, "cost_usd": 1,
              "correct": True, "truncated": False, "tier": 3, "scores": {"a": 1, "b": None},
              "judgments": [{"judge": "j", "score": 4, "scale_min": 1, "scale_max": 5,
                             "repeat": 1.0, "red_flags": ["r"]}]}  # fmt: skip
    path.write_text(json.dumps(record) + "\n")
    con = duckdb.connect()
    stage_file(con, path, "t")
    row = con.execute(
        "SELECT sample_id, epoch, tokens_out, cost_usd, correct, truncated, tier, scores, "
        "judgments[1].score, judgments[1].repeat, judgments[1].red_flags FROM t"
    ).fetchone()
    assert row == ("17", 2, 12, 1.0, True, False, "3", {"a": 1.0, "b": None}, 4.0, 1, ["r"])


CSV_VALUES = [
    "x", "12", "12.0", "1e3", "1.5", "-1", "true", "false", "yes", "no", "t", "f", "1", "0",
    "maybe", "inf", "nan", " 7 ", "1_000", "0x10", str(INT32_MAX + 1),
]  # fmt: skip


def test_every_flat_field_gets_one_verdict_in_csv(tmp_path: Path) -> None:
    disagreements = []
    flat = [f for f in FLAT_FIELDS if f.name not in KEY or f.name == "epoch"]
    for f in flat:
        verdicts = {}
        for text in CSV_VALUES:
            path = tmp_path / f"{f.name}-{len(verdicts)}.csv"
            path.write_text(f'run,task,sample_id,{f.name}\nm,t,1,"{text}"\n')
            verdicts[path] = (text, diagnose._diagnose_csv(path, RecordChecker(str(path))) == [])
        # As for JSON Lines: the texts the checker accepts staged together first (every cell is
        # read as text, with no detection, so one line's verdict is its own), each refused alone.
        accepted = [text for text, ok in verdicts.values() if ok]
        together = tmp_path / f"{f.name}-accepted.csv"
        together.write_text(f"run,task,sample_id,{f.name}\n" + "".join(
            f'm,t,{n},"{text}"\n' for n, text in enumerate(accepted)))  # fmt: skip
        staged_together = bool(accepted) and _fast_ok(together)
        for path, (text, checker) in verdicts.items():
            if staged_together and checker:
                continue
            if (fast := _fast_ok(path)) != checker:
                disagreements.append((f.name, text, fast, checker))
    assert disagreements == []


PARQUET_COLUMNS = {
    "int64": pa.array([3], pa.int64()), "float_integral": pa.array([3.0], pa.float64()),
    "float": pa.array([1.5], pa.float64()), "bool": pa.array([True], pa.bool_()),
    "string": pa.array(["12"], pa.string()), "int8": pa.array([1], pa.int8()),
}  # fmt: skip


def test_every_flat_field_gets_one_verdict_in_parquet(tmp_path: Path) -> None:
    disagreements = []
    flat = [f for f in FLAT_FIELDS if f.name not in KEY or f.name == "epoch"]
    for n, (f, (kind, column)) in enumerate((f, c) for f in flat for c in PARQUET_COLUMNS.items()):
        path = tmp_path / f"{n}.parquet"
        table = pa.table({"run": ["m"], "task": ["t"], "sample_id": ["1"], f.name: column})
        pq.write_table(table, path)
        fast = _fast_ok(path)
        checker = diagnose._diagnose_parquet(path, RecordChecker(str(path))) == []
        if fast != checker:
            disagreements.append((f.name, kind, fast, checker))
    assert disagreements == []
