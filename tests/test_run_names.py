"""`--run` picks runs and `--as` names them, on every command and in the Python API: `--run` is
repeatable and never renames (a FILE with runs a and b is not merged into one), an unknown run is
an error naming the runs there, and `--as` names the run of what is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import calipers
from calipers.cli.main import main
from calipers.errors import InputError

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
LAYERED = EXAMPLES / "layered.jsonl"  # runs prompt-v1, prompt-v2
REASON = EXAMPLES / "reasonscore.jsonl"  # runs alpha, beta


def _runs(db: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, int]:
    capsys.readouterr()
    assert main(["runs", "--db", str(db), "--json"]) == 0
    return {r["run"]: r["samples"] for r in json.loads(capsys.readouterr().out)}


def test_import_picks_with_run_and_names_with_as(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "s.duckdb"
    assert main(["import", str(LAYERED), "--run", "prompt-v2", "--db", str(db)]) == 0
    only = _runs(db, capsys)
    assert list(only) == ["prompt-v2"]
    assert main(["import", str(REASON), "--run", "alpha", "--run", "beta", "--db", str(db)]) == 0
    assert set(_runs(db, capsys)) == {"prompt-v2", "alpha", "beta"}
    # --as names the run of everything read; --run then picks among the new names
    assert main(["import", str(LAYERED), "--run", "prompt-v1", "--db", str(db)]) == 0
    n_v1 = _runs(db, capsys)["prompt-v1"]
    one = tmp_path / "one.jsonl"
    one.write_text(
        "".join(line + "\n" for line in LAYERED.read_text().splitlines() if "prompt-v1" in line)
    )
    assert main(["import", str(one), "--as", "renamed", "--db", str(db)]) == 0
    assert _runs(db, capsys)["renamed"] == n_v1
    # an unknown run is an error naming the runs there, and nothing is written
    before = _runs(db, capsys)
    assert main(["import", str(LAYERED), "--run", "prompt-v9", "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "--run prompt-v9: no such run" in err and "prompt-v1, prompt-v2" in err
    assert _runs(db, capsys) == before


def test_score_and_leaderboard_pick_runs_of_a_file_and_of_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["leaderboard", str(REASON), "--run", "beta", "--json", "-"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert list(board["runs"]) == ["beta"]
    assert main(["score", str(REASON), "--scheme", "reasonscore", "--run", "alpha",
                 "--run", "beta", "--json", "-"]) == 0  # fmt: skip
    assert set(json.loads(capsys.readouterr().out)["runs"]) == {"alpha", "beta"}
    # --as on a FILE with two runs merges them on purpose (and only then)
    code = main(["score", str(REASON), "--scheme", "reasonscore", "--as", "x", "--json", "-"])
    assert code == 1  # the two runs share sample keys: duplicates, refused
    assert "duplicate sample key" in capsys.readouterr().err
    db = tmp_path / "s.duckdb"
    assert main(["import", str(REASON), "--db", str(db), "-q"]) == 0
    assert main(["score", "--scheme", "reasonscore", "--db", str(db), "--run", "alpha",
                 "--json", "-"]) == 0  # fmt: skip
    assert list(json.loads(capsys.readouterr().out)["runs"]) == ["alpha"]
    assert main(["score", "--scheme", "reasonscore", "--db", str(db), "--run", "nope"]) == 1
    assert "Runs there: alpha, beta" in capsys.readouterr().err
    assert main(["score", "--scheme", "reasonscore", "--db", str(db), "--as", "x"]) == 1
    assert "--as names the run of a FILE" in capsys.readouterr().err


def test_report_and_compare_name_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.duckdb"
    assert main(["import", str(LAYERED), str(REASON), "--db", str(db), "-q"]) == 0
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--run", "alpha", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in report["runs"]] == ["alpha"]
    assert main(["report", "--db", str(db), "--run", "zeta", "--json", "-"]) == 1
    assert "no such run" in capsys.readouterr().err
    code = main(["compare", "--scheme", "layered", "--db", str(db), "--baseline", "prompt-v1",
                 "--candidate", "prompt-v3", "--gate", "none"])  # fmt: skip
    assert code != 0 and "prompt-v3" in capsys.readouterr().err


def test_the_python_api_splits_the_same_way(tmp_path: Path) -> None:
    table = calipers.load(REASON, runs="beta")
    assert set(table.column("run").to_pylist()) == {"beta"}
    both = calipers.load(REASON, runs=["alpha", "beta"])
    assert set(both.column("run").to_pylist()) == {"alpha", "beta"}
    with pytest.raises(InputError, match="no such run"):
        calipers.load(REASON, runs="gamma")
    one = tmp_path / "one.jsonl"
    one.write_text(REASON.read_text().splitlines()[0] + "\n")
    assert calipers.load(one, rename="mine").column("run").to_pylist() == ["mine"]
    with calipers.open(REASON, runs=["alpha"]) as samples:
        assert samples.runs() == ["alpha"]
    import pandas as pd

    frame = pd.read_json(LAYERED, lines=True)
    assert calipers.load(frame, runs="prompt-v1").num_rows == (frame["run"] == "prompt-v1").sum()
