"""The bad-input corpus: every malformed file exits 1 with a message naming file, line and field,
and leaves the store exactly as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calipers
from calipers.cli.main import main
from calipers.data.store import Store
from calipers.errors import ValidationError

FIXTURES = Path(__file__).parent / "fixtures"
BAD = FIXTURES / "bad"
GOOD = FIXTURES / "good" / "small.jsonl"

# file → (line or row, field, words the message must contain); None where the notion has no place
CASES: dict[str, tuple[int | None, str | None, str]] = {
    "truncated_line.jsonl": (2, None, "invalid JSON"),
    "wrong_type.jsonl": (2, "tokens_out", "wrong type"),
    "missing_key.jsonl": (2, "sample_id", "missing key field"),
    "nan_and_infinity.jsonl": (2, "cost_usd", "finite"),
    "negative_tokens.jsonl": (2, "tokens_in", "negative"),
    "guess_chance_out_of_range.jsonl": (2, "guess_chance", "[0, 1]"),
    "duplicate_keys.jsonl": (3, "sample_id", "first seen on line 1"),
    "empty.jsonl": (1, None, "empty"),
    "not_an_object.jsonl": (2, None, "JSON object"),
    "bad_judgment_score.jsonl": (1, "judgments[0].score", "outside its scale"),
    "bad_assertion_weight.jsonl": (1, "assertions[0].weight", "positive"),
    "assertion_without_type.jsonl": (1, "assertions[0].type", "needs a type"),
    "unknown_assertion_type.jsonl": (1, "assertions[1].type", "unknown assertion type 'containz'"),
    "assertion_layer_conflict.jsonl": (2, "assertions[0].layer", "'cost_max' is a behavior"),
    "nan_in_scores.jsonl": (2, "scores.f1", "finite"),
    "negative_epoch.jsonl": (1, "epoch", "negative"),
    "not_utf8.jsonl": (2, None, "UTF-8"),
    "missing_column.csv": (1, "task", "missing required column"),
    "csv_wrong_type.csv": (3, "correct", "wrong type"),
    "csv_negative_cost.csv": (3, "cost_usd", "negative"),
    "csv_nan_and_inf.csv": (3, "latency_s", "finite"),
    "group_not_a_string.jsonl": (2, "group", "wrong type (expected a string, got 7)"),
}


def store_fingerprint(db: Path) -> tuple[int, str, int]:
    with Store(db, read_only=True) as store:
        rows = store.con.execute("SELECT * EXCLUDE (imported_at) FROM samples ORDER BY ALL")
        digest = hashlib.sha256(repr(rows.fetchall()).encode()).hexdigest()
        imports = store.con.execute("SELECT count(*) FROM imports").fetchall()[0][0]
        return store.count(), digest, int(imports)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "store.duckdb"
    assert main(["import", str(GOOD), "--db", str(path)]) == 0
    return path


def run_import(args: list[str], db: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["import", *args, "--db", str(db)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_file(name: str, db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = store_fingerprint(db)
    line, field, words = CASES[name]
    code, err = run_import([str(BAD / name)], db, capsys)
    flat = " ".join(err.split())
    assert code == 1, err
    assert str(BAD / name) in flat
    if line is not None:
        assert f"line {line}" in flat, flat
    if field is not None:
        assert f"field '{field}'" in flat, flat
    assert words in flat, flat
    assert "Traceback" not in err
    assert store_fingerprint(db) == before


def test_every_problem_is_reported(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_import([str(BAD / "nan_and_infinity.jsonl")], db, capsys)
    assert code == 1
    assert "2 problems" in err and "line 2" in err and "line 3" in err and "latency_s" in err


def test_parquet_with_wrong_column_type(
    tmp_path: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "wrong_type.parquet"
    pq.write_table(
        pa.table(
            {
                "run": ["m", "m", "m"],
                "task": ["t", "t", "t"],
                "sample_id": ["a", "b", "c"],
                "tokens_out": ["12", "13", "lots"],
            }
        ),
        path,
    )
    before = store_fingerprint(db)
    code, err = run_import([str(path)], db, capsys)
    flat = " ".join(err.split())
    assert code == 1 and "row 3" in flat and "field 'tokens_out'" in flat and "lots" in flat
    assert store_fingerprint(db) == before


def test_directory_missing_file_and_unknown_extension(
    tmp_path: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = store_fingerprint(db)
    for target, words in (
        (tmp_path, "is a directory"),
        (tmp_path / "nope.jsonl", "no such file"),
        (BAD / "unknown_extension.txt", "cannot tell the format"),
    ):
        code, err = run_import([str(target)], db, capsys)
        assert code == 1 and words in err and str(target) in " ".join(err.split())
    assert store_fingerprint(db) == before


def test_second_file_bad_means_first_does_not_land(
    tmp_path: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "first.jsonl"
    first.write_text('{"run": "new", "task": "t", "sample_id": "x"}\n')
    before = store_fingerprint(db)
    code, err = run_import([str(first), str(BAD / "wrong_type.jsonl")], db, capsys)
    assert code == 1 and "wrong_type.jsonl" in err
    assert store_fingerprint(db) == before


def test_same_key_in_two_files_of_one_import(
    tmp_path: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"run": "r", "task": "t", "sample_id": "x"}\n')
    b.write_text('{"run": "r", "task": "t", "sample_id": "x"}\n')
    code, err = run_import([str(a), str(b)], db, capsys)
    assert code == 1 and "in both" in err


def test_scoring_a_bad_file_directly_is_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["score", str(BAD / "wrong_type.jsonl"), "--scheme", "reasonscore"])
    assert code == 1 and "tokens_out" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "got"),
    [
        ("7", "7"),
        ("1.5", "1.5"),
        ("true", "true"),
        ('{"p": 1}', "an object"),
        ('["a"]', "an array"),
    ],
)
def test_a_group_that_is_not_a_string_is_refused_never_read_as_text(
    tmp_path: Path, db: Path, capsys: pytest.CaptureFixture[str], value: str, got: str
) -> None:
    path = tmp_path / "groups.jsonl"
    path.write_text(
        '{"run": "r", "task": "t", "sample_id": "a", "group": "g"}\n'
        '{"run": "r", "task": "t", "sample_id": "b", "group": null}\n'
        f'{{"run": "r", "task": "t", "sample_id": "c", "group": {value}}}\n'
    )
    before = store_fingerprint(db)
    code, err = run_import([str(path)], db, capsys)
    flat = " ".join(err.split())
    assert code == 1, err
    assert f"{path}, line 3, field 'group': wrong type (expected a string, got {got})" in flat
    assert "1 problem" in flat and "line 1" not in flat and "line 2" not in flat
    assert store_fingerprint(db) == before


def test_a_parquet_group_column_of_numbers_is_refused(
    tmp_path: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "groups.parquet"
    base = {"run": ["m", "m"], "task": ["t", "t"], "sample_id": ["a", "b"]}
    pq.write_table(pa.table({**base, "group": pa.array([None, 7], pa.int64())}), path)
    before = store_fingerprint(db)
    code, err = run_import([str(path)], db, capsys)
    flat = " ".join(err.split())
    assert code == 1 and "row 2, field 'group': wrong type (expected a string, got 7)" in flat
    assert store_fingerprint(db) == before
    nulls = tmp_path / "nulls.parquet"  # a column with no value at all has no type to refuse
    pq.write_table(pa.table({**base, "group": pa.array([None, None], pa.null())}), nulls)
    assert run_import([str(nulls)], db, capsys)[0] == 0


def test_a_frame_with_a_numeric_group_is_refused() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"run": ["m"], "task": ["t"], "sample_id": ["a"], "group": [3]})
    with pytest.raises(ValidationError) as raised:
        calipers.open(frame)
    (problem,) = raised.value.problems
    assert (problem.line, problem.field, problem.got) == (1, "group", "3")
