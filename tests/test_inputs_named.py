"""Where a run must be named and the input holds only one, that one is taken and said; the
Python round trip `calipers.open(calipers.load(x))` (and of its pandas, polars and list forms)
gives the same samples back, and a frame's problem names the frame's row; `--map` on a CRLF CSV
(what Python's csv module writes), on `compare` and `plan`; a required column the file lacks
suggests `--map`; a milliseconds column mapped to `latency_s` is converted, never read as
seconds."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calipers
from calipers.cli.main import main
from calipers.errors import ValidationError

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
RUN_A = FIXTURES / "inspect" / "run-a.eval"
MAP = "sample_id=doc_id,scores.acc=acc,run=model,task=topic"


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, " ".join(err.split())


def test_plan_and_compare_take_the_only_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "plan", str(RUN_A), "--effect", "0.08", "--metric", "match")
    assert code == 0, err
    assert "plan: 172 items × 3 epochs" in " ".join(out.split())
    assert (
        f"note: baseline run 'mockllm/model-a': the only run in {RUN_A} (another: --baseline RUN)"
    ) in " ".join(out.split())
    plan = calipers.plan(str(RUN_A), effect=0.08, metric="match")
    assert plan.design.notes[0].startswith("baseline run 'mockllm/model-a': the only run")
    code, out, err = _cli(capsys, "compare", str(RUN_A), "--scheme", "metric", "--metric",
                          "match", "--json", "-")  # fmt: skip
    assert code == 0 and json.loads(out)["control"] == "mockllm/model-a"
    assert f"baseline run 'mockllm/model-a': the only run in {RUN_A}" in err
    # two runs: still asked for, with the runs there
    two = str(FIXTURES / "promptfoo" / "results-weights.json")  # providers echo and lookup
    code, _, err = _cli(capsys, "plan", two, "--effect", "0.08", "--metric", "score")
    assert code == 1 and "give the baseline run to plan from: --baseline RUN" in err
    assert "holds 2 runs: echo, lookup" in err
    both = [str(RUN_A), str(FIXTURES / "inspect" / "run-b.eval")]
    code, _, err = _cli(capsys, "compare", *both, "--scheme", "metric", "--metric", "match")
    assert code == 1 and "give the run to compare against: --baseline RUN" in err
    assert "holds 2 runs: mockllm/model-a, mockllm/model-b" in err


@pytest.mark.parametrize("source", ["inspect/run-a.eval", "promptfoo/results-weights.json",
                                    "lm_eval/run-a"])  # fmt: skip
def test_the_python_round_trip(source: str) -> None:
    import polars as pl

    table = calipers.load(FIXTURES / source)
    for given in (table, table.to_pandas(), table.to_pylist(), pl.from_arrow(table)):
        with calipers.open(given) as samples:
            assert samples.to_arrow().equals(table), type(given)
        assert calipers.load(given).equals(table)
    # scores as a frame holds them (lists of pairs), with a bad value: named by the frame's row
    frame = table.to_pandas()
    frame.at[2, "scores"] = [("match", "high")]
    with pytest.raises(ValidationError) as err:
        calipers.open(frame)
    problem = err.value.problems[0]
    assert (problem.file, problem.unit, problem.line) == (
        f"<pandas DataFrame of {len(frame)} rows>", "row", 3,  # counted from 1: iloc[2]
    )  # fmt: skip
    assert "calipers-open" not in err.value.message


def _crlf_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as fh:  # the csv module's default line end: \r\n
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert b"\r\n" in path.read_bytes()
    return path


ROWS = [
    {"model": m, "doc_id": i, "acc": (i + (m == "b")) % 2, "topic": "x", "latency_ms": 390 + i,
     "wall_s": 1.5}
    for m in "ab" for i in range(6)
]  # fmt: skip


def test_map_on_a_crlf_csv_everywhere_files_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _crlf_csv(tmp_path / "d.csv", ROWS)
    db = str(tmp_path / "s.duckdb")
    code, _, err = _cli(capsys, "import", str(path), "--map", MAP, "--db", db, "-q")
    assert code == 0, err
    for command in (["compare", "--baseline", "a", "--candidate", "b"], ["score"]):
        code, out, err = _cli(capsys, command[0], str(path), "--map", MAP, "--scheme", "metric",
                              "--metric", "acc", *command[1:], "--json", "-")  # fmt: skip
        assert code == 0, err
    code, out, err = _cli(capsys, "plan", str(path), "--map", MAP, "--baseline", "a",
                          "--effect", "0.2", "--metric", "acc")  # fmt: skip
    assert code == 0 and "plan:" in out, err
    # a CRLF CSV with the model's own names reads too
    own = _crlf_csv(tmp_path / "own.csv", [{"run": "a", "task": "x", "sample_id": "1",
                                            "scores.acc": 1}])  # fmt: skip
    assert calipers.load(own).num_rows == 1


def test_a_missing_required_column_suggests_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _crlf_csv(tmp_path / "d.csv", ROWS)
    code, _, err = _cli(capsys, "score", str(path), "--scheme", "metric", "--metric", "acc")
    assert code == 1 and "missing required column" in err
    assert "map its columns: --map FIELD=COLUMN" in err and "Columns there: model, doc_id" in err
    lines = tmp_path / "d.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    code, _, err = _cli(capsys, "score", str(lines), "--scheme", "metric", "--metric", "acc")
    assert code == 1 and "missing key field" in err and "--map FIELD=COLUMN" in err


@pytest.mark.parametrize("kind", ["csv", "jsonl", "parquet"])
def test_milliseconds_mapped_to_latency_s_are_seconds(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"d.{kind}"
    if kind == "csv":
        _crlf_csv(path, ROWS)
    elif kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    else:
        pq.write_table(pa.Table.from_pylist(ROWS), path)
    table = calipers.load(path, map=MAP + ",latency_s=latency_ms")
    assert sorted(table.column("latency_s").to_pylist())[:2] == [0.39, 0.39]  # 390 ms, not 390 s
    code, _, err = _cli(capsys, "import", str(path), "--map", MAP + ",latency_s=latency_ms",
                        "--db", str(tmp_path / "s.duckdb"))  # fmt: skip
    assert code == 0
    assert "--map latency_s=latency_ms: read as milliseconds" in err and "divided by 1,000" in err
    # a column in seconds is read as it is
    seconds = calipers.load(path, map=MAP + ",latency_s=wall_s")
    assert set(seconds.column("latency_s").to_pylist()) == {1.5}
