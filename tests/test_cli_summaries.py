"""`calipers compare --parquet | --summaries | --engine duckdb`: the verdict from summaries on
Parquet files, globs and hive-partitioned datasets, on the store, and on a summary table saved as
CSV, Parquet or JSON Lines — the same numbers every way; bad tables and options refused with what,
where and how to fix it; a decision the summaries cannot make read from the rows instead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from calipers.cli.main import main
from calipers.data.store import Store

DATA = """
SELECT r AS run, 'task-' || (i % 3) AS task, 's' || i AS sample_id, e AS epoch,
       ((hash(i, e, r) % 1000) < (CASE WHEN r = 'A' THEN 600 ELSE 640 END)) AS correct
FROM (SELECT unnest(['A', 'B']) AS r), range(2000) t(i), range(3) u(e)
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("scale")
    con = duckdb.connect()
    hive, flat = root / "hive", root / "flat"
    flat.mkdir()
    con.execute(f"COPY ({DATA}) TO '{hive}' (FORMAT parquet, PARTITION_BY (run))")
    for run in ("A", "B"):
        con.execute(f"COPY (SELECT * FROM ({DATA}) WHERE run = '{run}') TO "
                    f"'{flat / f'part-{run}.parquet'}' (FORMAT parquet)")  # fmt: skip
    store = root / "store.duckdb"
    with Store(store) as st:
        st.con.execute(f"INSERT INTO samples (run, task, sample_id, epoch, correct) {DATA}")
    # bounded scores the t rule refuses at 20 items: `auto` wants the betting interval
    con.execute(
        f"""COPY (SELECT r AS run, 't' AS task, 's' || i AS sample_id, 0 AS epoch,
                  CASE WHEN i % 7 = 0 AND r = 'B' THEN 1.0 ELSE (i % 3) / 10.0 END AS score
                  FROM (SELECT unnest(['A', 'B']) AS r), range(20) t(i))
            TO '{root / "small.parquet"}' (FORMAT parquet)"""
    )
    con.close()
    return {"hive": hive, "flat": flat, "store": store, "small": root / "small.parquet",
            "root": root}  # fmt: skip


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any, str]:
    code = main(args)
    out = capsys.readouterr()
    try:
        report = json.loads(out.out)
    except json.JSONDecodeError:
        report = out.out
    return code, report, out.err


PAIR = ["--baseline", "A", "--candidate", "B", "--metric", "correct", "--json", "-"]


def test_every_way_gives_the_same_verdict(
    data: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, hive, _ = _run(["compare", "--parquet", str(data["hive"]), *PAIR], capsys)
    assert code == 0 and hive["kind"] == "summary-compare" and hive["engine"] == "duckdb"
    _, glob, _ = _run(["compare", "--parquet", f"{data['flat']}/*.parquet", *PAIR], capsys)
    _, store, _ = _run(["compare", "--engine", "duckdb", "--db", str(data["store"]), *PAIR],
                       capsys)  # fmt: skip
    # the table the warehouse would return, saved three ways
    con = duckdb.connect()
    from calipers.data.summaries import parquet_source, summary_query

    query = summary_query(parquet_source(str(data["hive"])), baseline="A", candidate="B",
                          value='"correct"', unit=None)  # fmt: skip
    con.execute(f"CREATE TABLE s AS {query}")
    con.execute(f"COPY s TO '{tmp_path / 's.csv'}' (HEADER)")
    con.execute(f"COPY s TO '{tmp_path / 's.parquet'}' (FORMAT parquet)")
    con.execute(f"COPY s TO '{tmp_path / 's.jsonl'}' (FORMAT json)")
    files = []
    for name in ("s.csv", "s.parquet", "s.jsonl"):
        code, found, _ = _run(["compare", "--summaries", str(tmp_path / name), *PAIR], capsys)
        assert code == 0 and found["engine"] == "file"
        files.append(found)
    for other in (glob, store, *files):
        for key in ("estimate", "low", "high", "control_mean", "treatment_mean", "p_value"):
            assert other["difference"][key] == pytest.approx(hive["difference"][key], rel=1e-12)
        assert other["verdict"] == hive["verdict"]
        assert other["bootstrap"]["low"] == pytest.approx(hive["bootstrap"]["low"], rel=1e-12)
    assert hive["summary"]["items"] == 2000 and hive["summary"]["observations"]["control"] == 6000
    assert [e["k"] for e in hive["pass_at_k"]["control"]["pass@k"]] == [1, 2, 3]


def test_the_terminal_and_the_gate(data: dict[str, Path],
                                   capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    code, out, _ = _run(["compare", "--parquet", str(data["hive"]), "--baseline", "A",
                         "--candidate", "B", "--metric", "correct", "--gate", "ship",
                         "--trivial-diff", "0.5"], capsys)  # fmt: skip
    assert code == 3  # a significant gain below the trivial difference is CAUTIOUS
    assert "from summaries (duckdb" in out and "cluster bootstrap" in out
    assert "gate ship: failed" in out


@pytest.mark.parametrize(
    ("header", "row", "expected"),
    [
        (
            "task,unit,n_a,n_b,sum_a,sum_b,sum_aa,sum_bb,items,count",
            "t,,1,1,0,1,0,1,1,5",
            "lacks the column(s) sum_ab",
        ),
        (
            "task,unit,n_a,n_b,sum_a,sum_b,sum_aa,sum_bb,sum_ab,items,count",
            "t,,1,1,0,x,0,1,0,1,5",
            "line 2, field 'sum_b': not a number",
        ),
        (
            "task,unit,n_a,n_b,sum_a,sum_b,sum_aa,sum_bb,sum_ab,items,count",
            "t,,4,4,2,1,2,1,1,2,5",
            "field 'unit': a row without a unit stands for collapsed items",
        ),
        (
            "task,unit,n_a,n_b,sum_a,sum_b,sum_aa,sum_bb,sum_ab,items,count",
            "t,,1,1,0.5,1,0.1,1,0,1,5",
            "field 'sum_aa': smaller than sum_a²/items",
        ),
        (
            "task,unit,n_a,n_b,sum_a,sum_b,sum_aa,sum_bb,sum_ab,items,count",
            "t,,1,1,1,1,1,1,0,1,2.5",
            "field 'count': not a count",
        ),
    ],
)
def test_a_bad_table_says_what_where_and_how(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str, row: str, expected: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(f"{header}\n{row}\n", encoding="utf-8")
    code, _, err = _run(["compare", "--summaries", str(path)], capsys)
    assert code == 1
    assert expected in err and "hint:" in err and "calipers sql" in err


def test_an_empty_table_is_a_data_problem(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    code, _, err = _run(["compare", "--summaries", str(path)], capsys)
    assert code == 2 and "no row" in err


def test_options_the_summaries_do_not_take(data: dict[str, Path],
                                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    code, _, err = _run(["compare", "--parquet", str(data["hive"]), "--baseline", "A",
                         "--candidate", "B", "--metric", "correct", "--weights", "fact=2"],
                        capsys)  # fmt: skip
    assert code == 1 and "--weights does not apply to a comparison from summaries" in err
    code, _, err = _run(["compare", "--parquet", str(data["hive"]), "--metric", "correct"],
                        capsys)  # fmt: skip
    assert code == 1 and "needs --baseline RUN and --candidate RUN" in err
    code, _, err = _run(["compare", "--parquet", str(data["hive"]), "--baseline", "A",
                         "--candidate", "Z", "--metric", "correct"], capsys)  # fmt: skip
    assert code == 2 and "share no item" in err and "no run 'Z'" in err


def test_what_the_summaries_cannot_decide_is_read_from_the_rows(
    data: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["--baseline", "A", "--candidate", "B", "--metric", "score", "--bounds", "0,1",
            "--json", "-"]  # fmt: skip
    code, report, err = _run(["compare", "--parquet", str(data["small"]), *args], capsys)
    assert code == 0
    assert "betting interval" in err and "reading the rows instead" in err
    assert report["kind"] == "compare"  # the row engine's report
    assert report["pairs"][0]["composite"]["interval"]["method"] == "betting"
    # the store's rows, the same way
    with Store(tmp_path / "small.duckdb") as st:
        st.con.execute(
            "INSERT INTO samples (run, task, sample_id, epoch, scores) SELECT run, task, "
            f"sample_id, epoch, MAP {{'score': score}} FROM read_parquet('{data['small']}')"
        )
    code, stored, err = _run(
        ["compare", "--engine", "duckdb", "--db", str(tmp_path / "small.duckdb"), *args], capsys
    )
    assert code == 0 and "reading the rows instead" in err and stored["kind"] == "compare"
    assert stored["pairs"][0]["composite"]["low"] == report["pairs"][0]["composite"]["low"]
    # a table alone has no rows to fall back on
    con = duckdb.connect()
    from calipers.data.summaries import parquet_source, summary_query

    query = summary_query(parquet_source(str(data["small"])), baseline="A", candidate="B",
                          value='"score"', unit=None)  # fmt: skip
    con.execute(f"COPY ({query}) TO '{tmp_path / 's.parquet'}' (FORMAT parquet)")
    code, _, err = _run(["compare", "--summaries", str(tmp_path / "s.parquet"), *args], capsys)
    assert code == 1 and "betting interval" in err and "hint:" in err


def test_the_report_schema_is_published(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--report", "summary-compare"]) == 0
    assert json.loads(capsys.readouterr().out)["properties"]["kind"]["const"] == "summary-compare"


def test_nan_is_not_a_missing_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nan.parquet"
    con = duckdb.connect()
    con.execute(
        "COPY (SELECT r AS run, 't' AS task, 's' || i AS sample_id, CASE WHEN i = 3 THEN "
        "'NaN'::DOUBLE ELSE (i % 2)::DOUBLE END AS acc FROM (SELECT unnest(['A', 'B']) AS r), "
        f"range(50) t(i)) TO '{path}' (FORMAT parquet)"
    )
    code, _, err = _run(["compare", "--parquet", str(path), "--baseline", "A", "--candidate",
                         "B", "--metric", "acc"], capsys)  # fmt: skip
    assert code == 1 and "NaN or infinite" in err and "NULL" in err
