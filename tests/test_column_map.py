"""`--map FIELD=COLUMN,…` reads any JSON Lines, CSV or Parquet file with other column names,
through the same validation (errors name the user's file and line), on the command line and in
Python; a bad map is a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calipers
from calipers.cli.main import main
from calipers.errors import InputError

MAP = "sample_id=doc_id,scores.acc=acc,run=model,task=topic"
ROWS = [
    {"model": "a", "doc_id": 1, "acc": 1, "topic": "x"},
    {"model": "a", "doc_id": 2, "acc": 0, "topic": "x"},
    {"model": "b", "doc_id": 1, "acc": 1, "topic": "x"},
    {"model": "b", "doc_id": 2, "acc": 1, "topic": "x"},
]


def _files(tmp_path: Path) -> dict[str, Path]:
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    csv = tmp_path / "d.csv"
    csv.write_text("model,doc_id,acc,topic\n" + "".join(
        f"{r['model']},{r['doc_id']},{r['acc']},{r['topic']}\n" for r in ROWS))  # fmt: skip
    parquet = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), parquet)
    return {"jsonl": jsonl, "csv": csv, "parquet": parquet}


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_a_mapped_file_scores_and_imports(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _files(tmp_path)[kind]
    table = calipers.load(path, map=MAP)
    assert sorted(table.column("run").to_pylist()) == ["a", "a", "b", "b"]
    assert sorted(table.column("sample_id").to_pylist()) == ["1", "1", "2", "2"]
    assert [dict(s)["acc"] for s in table.column("scores").to_pylist()] == [1.0, 0.0, 1.0, 1.0]
    db = tmp_path / "s.duckdb"
    assert main(["import", str(path), "--map", MAP, "--run", "b", "--db", str(db), "-q"]) == 0
    capsys.readouterr()
    assert main(["runs", "--db", str(db), "--json"]) == 0
    assert [r["run"] for r in json.loads(capsys.readouterr().out)] == ["b"]
    # the Python API also takes {field: column}
    as_dict = {"sample_id": "doc_id", "scores.acc": "acc", "run": "model", "task": "topic"}
    assert calipers.load(path, map=as_dict).num_rows == 4


def test_errors_name_the_users_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    bad = [*ROWS[:2], {**ROWS[2], "acc": "high"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in bad))
    with pytest.raises(InputError) as err:
        calipers.load(path, map=MAP)
    assert f"{path}, line 3, field 'scores.acc'" in err.value.message
    assert "calipers-map" not in err.value.message
    for given, expected in [
        ("sample_id", "not FIELD=COLUMN"), ("nope=doc_id", "not a sample field"),
        ("sample_id=doc_id,task=doc_id", "mapped twice"), ("run=absent", "not in the file"),
    ]:  # fmt: skip
        with pytest.raises(InputError, match=expected):
            calipers.load(path, map=given)


def test_a_map_with_the_store_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _files(tmp_path)["jsonl"]
    db = tmp_path / "s.duckdb"
    assert main(["import", str(path), "--map", MAP, "--db", str(db), "-q"]) == 0
    assert main(["score", "--scheme", "metric", "--db", str(db), "--map", MAP]) == 1
    assert "--map renames a FILE's columns" in capsys.readouterr().err
