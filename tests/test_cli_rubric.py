"""`calipers score --scheme rubric` and `calipers rank` end to end: reports that validate against
the published schemas, history written to the store only when asked (--record-history), and
clear errors with exit 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from calipers.cli.main import main
from calipers.schemes.rubric.definition import DIMENSIONS
from conftest import validate_schema
from rubric_data import rubric_row


def published(kind: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["schema", "--report", kind]) == 0
    schema: dict[str, Any] = json.loads(capsys.readouterr().out)
    return schema


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


ROWS = [
    rubric_row("alpha", "s1", 9.0, red_flags=["hedges"], bonuses=["cites"]),
    rubric_row("beta", "s1", 9.0),
    rubric_row("alpha", "s2", 6.0),
    rubric_row("beta", "s2", 6.0),
]


def test_score_json_validates_and_holds_the_breakdown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, db, out = write(tmp_path / "e.jsonl", ROWS), tmp_path / "h.duckdb", tmp_path / "r.json"
    code = main(["score", str(data), "--scheme", "rubric", "--db", str(db), "--json", str(out),
                 "--record-history"])  # fmt: skip
    assert code == 0
    report = json.loads(out.read_text())
    validate_schema(report, published("rubric", capsys))
    first = report["evaluations"][0]
    assert (first["run"], first["sample_id"], first["composite"], first["final"]) == (
        "alpha", "s1", 9.0, 8.75,
    )  # fmt: skip
    assert first["deductions"]["items"][0]["id"] == "hedges"
    assert first["bonuses"]["total"] == 0.25
    assert report["parameters"]["history"] == str(db)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM rubric_history").fetchall() == [(4,)]
    con.close()


def test_score_from_the_store_records_history_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, db = write(tmp_path / "e.jsonl", ROWS), tmp_path / "store.duckdb"
    assert main(["import", str(data), "--db", str(db)]) == 0
    capsys.readouterr()
    args = ["score", "--scheme", "rubric", "--db", str(db), "--record-history"]
    assert main([*args, "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["evaluations"]) == 4
    assert main([*args, "-q"]) == 0
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM rubric_history").fetchall() == [(4,)]
    con.close()


def test_no_history_leaves_no_store(tmp_path: Path) -> None:
    data, db = write(tmp_path / "e.jsonl", ROWS), tmp_path / "h.duckdb"
    assert main(["score", str(data), "--scheme", "rubric", "--db", str(db), "--no-history"]) == 0
    assert not db.exists()
    assert main(["score", str(data), "--scheme", "rubric", "--db", str(db)]) == 0  # the default
    assert main(["rank", str(data), "--db", str(db)]) == 0
    assert not db.exists()


def test_scoring_the_store_leaves_it_byte_for_byte_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`score --scheme rubric` and `rank` read the store and write nothing to it (issue 34): its
    bytes and its rows are unchanged; the terminal says, in one line, where the history would be
    recorded and with which flag."""
    monkeypatch.setenv("COLUMNS", "400")  # the store's path on one line
    data, db = write(tmp_path / "e.jsonl", ROWS), tmp_path / "store.duckdb"
    assert main(["import", str(data), "--db", str(db), "-q"]) == 0
    before = db.read_bytes()
    files = sorted(p.name for p in tmp_path.iterdir())
    capsys.readouterr()
    assert main(["score", "--scheme", "rubric", "--db", str(db)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    line = (f"note: history: not recorded (scoring writes nothing); --record-history records "
            f"these evaluations in {db} (table rubric_history)")  # fmt: skip
    assert out.count("history:") == 1 and line in out
    assert main(["rank", "--db", str(db)]) == 0
    assert "--record-history records these evaluations" in " ".join(capsys.readouterr().out.split())
    assert main(["score", "--scheme", "rubric", "--db", str(db), "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["parameters"]["history"] is None and any(
        n.startswith("history: not recorded") for n in report["notes"])  # fmt: skip
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == files  # no WAL, no other file
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM rubric_history").fetchall() == [(0,)]
    con.close()
    # asked, it records, and says so
    assert main(["score", "--scheme", "rubric", "--db", str(db), "--record-history"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"history: 4 new evaluation(s) recorded in {db}" in out
    assert "not recorded" not in out


def test_rank_json_validates_and_names_the_tie_break(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        rubric_row("a", "s", {**dict.fromkeys(DIMENSIONS, 8.0), "safety": 8.01}),
        rubric_row("b", "s", 8.0),
        rubric_row("c", "s", 8.0),
    ]
    data = write(tmp_path / "e.jsonl", rows)
    db = str(tmp_path / "h.duckdb")
    assert main(["rank", str(data), "--db", db, "--json", "-", "--no-history"]) == 0
    report = json.loads(capsys.readouterr().out)
    validate_schema(report, published("rank", capsys))
    entries = report["rankings"][0]["entries"]
    assert [(e["run"], e["position"], e["tie_break"]) for e in entries] == [
        ("a", 1, None),
        ("b", 2, "safety"),
        ("c", 2, None),
    ]
    assert entries[2]["equivalent_to_previous"]
    assert main(["rank", str(data), "--db", db, "--no-history"]) == 0
    assert "safety" in capsys.readouterr().out


def test_weights_that_do_not_sum_to_one_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("weights:\n" + "".join(f"  {d}: 0.1\n" for d in DIMENSIONS))
    data = write(tmp_path / "e.jsonl", ROWS)
    args = ["score", str(data), "--scheme", "rubric", "--rubric", str(rubric), "--no-history"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "rubric.yaml" in err and "sum to 0.7" in err and "Traceback" not in err


def test_missing_dimension_exits_1_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row = rubric_row("a", "s7", 8.0)
    row["judgments"] = row["judgments"][:-1]  # no consistency
    data = write(tmp_path / "e.jsonl", [row])
    assert main(["score", str(data), "--scheme", "rubric", "--no-history"]) == 1
    err = capsys.readouterr().err
    assert "s7" in err and "consistency" in err


def test_rank_rejects_other_schemes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write(tmp_path / "e.jsonl", ROWS)
    assert main(["rank", str(data), "--scheme", "layered", "--no-history"]) == 1
    assert "rank supports --scheme rubric" in capsys.readouterr().err
