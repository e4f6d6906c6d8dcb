"""`calipers grade` on a file and on the store: specs evaluated, results recorded, atomic writes,
and the layered scheme reading the graded results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.store import Store

SPECS = [
    {"type": "contains", "value": "Paris", "weight": 2},
    {"type": "json_valid"},
    {"type": "max_length", "value": 20},
    {"type": "tools_called", "value": ["search"]},
    {"type": "cost_max", "value": 0.01},
]


def records() -> list[dict[str, Any]]:
    return [
        {
            "run": "r",
            "task": "geo",
            "sample_id": "s1",
            "output": "Paris is the capital",
            "cost_usd": 0.002,
            "tools": [{"name": "search", "input": {"q": "capital"}, "output": "Paris"}],
            "assertions": SPECS,
        },
        {
            "run": "r",
            "task": "geo",
            "sample_id": "s2",
            "output": '{"city": "Lyon"}',
            "cost_usd": 0.05,
            "assertions": SPECS,
        },
    ]


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def passed(rows: list[dict[str, Any]]) -> list[list[bool]]:
    return [[a["passed"] for a in r["assertions"]] for r in rows]


EXPECTED = [[True, False, True, True, True], [False, True, True, False, False]]


def test_grade_a_file_then_score_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path / "in.jsonl", records())
    out = tmp_path / "graded.jsonl"
    assert main(["grade", str(src), "-o", str(out)]) == 0
    assert "Graded 10 assertion(s) on 2 sample(s): 6 passed" in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert passed(rows) == EXPECTED
    assert rows[1]["assertions"][0]["detail"]
    assert main(["score", str(src), "--scheme", "layered"]) == 1  # specs: grade first
    assert "calipers grade" in capsys.readouterr().err
    report = tmp_path / "r.json"
    assert main(["score", str(out), "--scheme", "layered", "--json", str(report)]) == 0
    run = json.loads(report.read_text())["runs"]["r"]
    # s1: fact 2 of 3 weight → 1 + 4·2/3; behavior 3/3 → 5; s2: fact 1/3, behavior 1/3
    fact = ((1 + 4 * 2 / 3) + (1 + 4 * 1 / 3)) / 2
    assert run["components"]["fact"]["mean"] == pytest.approx(fact)
    assert run["components"]["behavior"]["mean"] == pytest.approx((5 + (1 + 4 / 3)) / 2)


def test_grade_the_store_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.duckdb"
    assert main(["import", str(write(tmp_path / "in.jsonl", records())), "--db", str(db)]) == 0
    assert main(["grade", "--db", str(db)]) == 0
    with Store(db, read_only=True) as store:
        rows = store.con.execute(
            "SELECT list_transform(assertions, lambda a: a.passed) FROM samples ORDER BY sample_id"
        ).fetchall()
    assert [r[0] for r in rows] == EXPECTED
    capsys.readouterr()
    assert main(["grade", "--db", str(db)]) == 0  # nothing left to grade
    assert "Graded 0 assertion(s)" in capsys.readouterr().out


def test_a_bad_spec_leaves_nothing_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = records()
    rows[1]["assertions"] = [{"type": "regex", "value": "(unclosed"}]
    src = write(tmp_path / "in.jsonl", rows)
    out = tmp_path / "graded.jsonl"
    assert main(["grade", str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "line 2" in err and "assertions[0]" in err and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == [src]
    db = tmp_path / "s.duckdb"
    assert main(["import", str(src), "--db", str(db)]) == 0
    assert main(["grade", "--db", str(db)]) == 1
    with Store(db, read_only=True) as store:
        left = store.con.execute(
            "SELECT count(*) FROM samples WHERE list_bool_or("
            "list_transform(assertions, lambda a: a.passed IS NOT NULL))"
        ).fetchall()
    assert left == [(0,)]  # the store is unchanged: no sample half-graded


def test_grade_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write(tmp_path / "in.jsonl", records())
    assert main(["grade", str(src)]) == 1
    assert "needs -o OUT" in capsys.readouterr().err
    assert main(["grade", str(src), "-o", str(src)]) == 1
