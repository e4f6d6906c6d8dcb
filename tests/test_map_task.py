"""`--task NAME` gives every sample read one task (a table without a task column is read), and
`--map` takes nested fields with dots (`scores.s=outputs.score`), on the command line and in
Python, for JSON Lines, CSV and Parquet; a bad one is a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calipers
from calipers.cli.main import main
from calipers.errors import InputError

ROWS = [
    {"id": "q1", "model": "m", "outputs": {"score": 1.0, "label": "x"}},
    {"id": "q2", "model": "m", "outputs": {"score": 0.5, "label": "y"}},
    {"id": "q3", "model": "m", "outputs": {"score": 0.0, "label": "y"}},
]
MAP = "sample_id=id,run=model,scores.s=outputs.score"


def _jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def test_a_table_without_a_task_column_is_read_with_task(tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    csv.write_text("id,model,acc\nq1,m,1\nq2,m,0\n")
    with pytest.raises(Exception, match="task"):  # without --task: the task is missing
        calipers.load(csv, map="sample_id=id,run=model,scores.acc=acc")
    table = calipers.load(csv, map="sample_id=id,run=model,scores.acc=acc", task="qa")
    assert table.column("task").to_pylist() == ["qa", "qa"]
    db = tmp_path / "s.duckdb"
    assert main(["import", str(csv), "--map", "sample_id=id,run=model,scores.acc=acc",
                 "--task", "qa", "--db", str(db), "-q"]) == 0  # fmt: skip
    assert calipers.load(db).column("task").to_pylist() == ["qa", "qa"]


def test_task_replaces_the_files_task_and_names_another_tools_rows(tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    csv.write_text("id,model,acc,task\nq1,m,1,old\nq2,m,0,old\n")
    table = calipers.load(csv, map="sample_id=id,run=model,scores.acc=acc", task="new")
    assert table.column("task").to_pylist() == ["new", "new"]
    phoenix = Path(__file__).parent / "fixtures/importers/phoenix/lookup.json"
    assert set(calipers.load(phoenix, task="qa").column("task").to_pylist()) == {"qa"}


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_map_takes_nested_fields(tmp_path: Path, kind: str) -> None:
    path = _jsonl(tmp_path)
    if kind == "parquet":
        path = tmp_path / "d.parquet"
        pq.write_table(pa.Table.from_pylist(ROWS), path)
    table = calipers.load(path, map=MAP, task="t")
    assert [dict(s)["s"] for s in table.column("scores").to_pylist()] == [1.0, 0.5, 0.0]
    assert main(["score", str(path), "--map", MAP, "--task", "t", "--scheme", "metric",
                 "--metric", "s", "-q"]) == 0  # fmt: skip


def test_a_key_with_a_dot_is_taken_whole_first(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    rows = [{"id": "q1", "model": "m", "outputs.score": 1, "outputs": {"score": 0}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = calipers.load(path, map=MAP, task="t")
    assert dict(table.column("scores").to_pylist()[0])["s"] == 1.0


def test_bad_nested_fields_and_task_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _jsonl(tmp_path)
    with pytest.raises(InputError, match=r"not in the file: outputs\.nope"):
        calipers.load(path, map="sample_id=id,run=model,scores.s=outputs.nope", task="t")
    with pytest.raises(InputError, match="--task both give the task"):
        calipers.load(path, map="sample_id=id,run=model,task=outputs.label", task="t")
    with pytest.raises(InputError, match="task name is empty"):
        calipers.load(path, map=MAP, task=" ")
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "d.parquet")
    assert main(["import", str(tmp_path / "d.parquet"), "--map",
                 "sample_id=id,run=model,scores.s=outputs.nope", "--task", "t",
                 "--db", str(tmp_path / "s.duckdb")]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert "outputs.nope" in err and "Traceback" not in err


def test_task_with_the_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _jsonl(tmp_path)
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(path), "--map", MAP, "--task", "t", "--db", db, "-q"]) == 0
    code = main(["score", "--task", "x", "--scheme", "metric", "--metric", "s", "--db", db])
    assert code == 1
    assert "--task names the task of what is read from a FILE" in capsys.readouterr().err
