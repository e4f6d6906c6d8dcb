"""promptfoo's `-o results.csv`, Phoenix's experiment CSV download and MLflow's
`eval_results_table.json`, each made by the tool itself offline (fixtures and scripts under
tests/fixtures/importers/): the rows calipers imports give the tool's own numbers, and a bad file
is one clear error naming the file, the line (or row) and the field, with no traceback."""

from __future__ import annotations

import csv
import io
import json
import statistics
from pathlib import Path

import pytest

import calipers
from calipers.cli.main import main
from calipers.data.adapters import (
    ADAPTERS,
    adapter_for,
    mlflow_eval,
    phoenix,
    phoenix_csv,
    promptfoo_csv,
)
from calipers.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
PROMPTFOO = FIXTURES / "promptfoo" / "csv"
PHOENIX = FIXTURES / "phoenix"
MLFLOW = FIXTURES / "mlflow"


def _rows(path: Path, read: object) -> list[dict]:
    return list(read(path))  # type: ignore[operator]


def scored(tmp_path: Path, paths: list[Path], metric: str) -> dict[str, float]:
    """calipers' `score --scheme metric` on the import of `paths`: {run: mean}."""
    db, out = str(tmp_path / "s.duckdb"), tmp_path / "score.json"
    assert main(["import", *map(str, paths), "--db", db, "-q"]) == 0
    code = main(["score", "--db", db, "--scheme", "metric", "--metric", metric,
                 "--json", str(out), "-q"])  # fmt: skip
    assert code == 0
    return {run: r["composite"]["mean"] for run, r in json.loads(out.read_text())["runs"].items()}


def _mean(rows: list[dict], metric: str) -> float:
    return statistics.fmean(r["scores"][metric] for r in rows if metric in r.get("scores", {}))


# ------------------------------------------------------------------------------ promptfoo CSV


def test_promptfoo_csv_gives_promptfoos_numbers() -> None:
    summary = json.loads((PROMPTFOO / "summary.json").read_text())
    assert summary["promptfoo"] == "0.123.1"
    rows = _rows(PROMPTFOO / "results.csv", promptfoo_csv.read_rows)
    for prompt in summary["prompts"]:
        run = f"{prompt['provider']} / {prompt['label']}"
        mine = [r for r in rows if r["run"] == run]
        m = prompt["metrics"]
        assert len(mine) == m["testPassCount"] + m["testFailCount"] + m["testErrorCount"]
        assert sum("error" in r for r in mine) == m["testErrorCount"]
        assert sum(r.get("correct") is True for r in mine) == m["testPassCount"]
        assert sum(r.get("correct") is False for r in mine) == m["testFailCount"]
        graded = [r for r in mine if "error" not in r]
        # the CSV's Score is rounded to 2 decimals: within half a cent of promptfoo's own mean
        assert _mean(graded, "score") == pytest.approx(m["score"] / len(graded), abs=0.005)
        for name, total in m["namedScores"].items():  # Named Scores are not rounded
            assert _mean(graded, name) == pytest.approx(total / m["namedScoreWeights"][name]
                                                        * m["namedScoresCount"][name]
                                                        / len(graded))  # fmt: skip


def test_promptfoo_csv_rows_and_what_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = PROMPTFOO / "results.csv"
    assert adapter_for(path, "auto") is promptfoo_csv.read_rows
    rows = _rows(path, promptfoo_csv.read_rows)
    assert {r["task"] for r in rows} == {"promptfoo"} and len({r["sample_id"] for r in rows}) == 6
    errors = [r for r in rows if "error" in r]
    assert errors and all("scores" not in r and "correct" not in r for r in errors)
    assert not any("tokens_in" in r or "cost_usd" in r for r in rows)
    summary = json.loads((PROMPTFOO / "summary.json").read_text())
    means = scored(tmp_path, [path], "brevity")
    assert "rounds scores to 2 decimals" in capsys.readouterr().err  # and where to look instead
    for prompt in summary["prompts"]:
        m = prompt["metrics"]
        expected = m["namedScores"]["brevity"] / m["namedScoreWeights"]["brevity"]
        assert means[f"{prompt['provider']} / {prompt['label']}"] == pytest.approx(expected)


def test_promptfoo_csv_pairs_with_the_json_of_its_tests() -> None:
    # the sample id is the JSON importer's: a hash of the test's description and variables
    from calipers.data.adapters import promptfoo

    json_ids = {
        r["sample_id"] for r in promptfoo.read_rows(FIXTURES / "promptfoo" / "results.json")
    }
    csv_ids = {r["sample_id"] for r in _rows(PROMPTFOO / "results.csv", promptfoo_csv.read_rows)}
    assert csv_ids == json_ids


def test_a_bad_promptfoo_csv_names_the_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (PROMPTFOO / "results.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    rows = list(csv.reader(io.StringIO("".join(lines))))
    rows[3][3] = "MAYBE"  # the first Status of the third test
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    bad = tmp_path / "bad.csv"
    bad.write_text(out.getvalue(), encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.csv, line 4, column Status of '\[echo\] terse'"):
        promptfoo_csv.read_rows(bad)
    assert main(["import", str(bad), "--db", str(tmp_path / "s.duckdb")]) == 1
    err = capsys.readouterr().err
    assert "MAYBE" in err and "Traceback" not in err


# ------------------------------------------------------------------------------- Phoenix CSV


@pytest.mark.parametrize("name", ["lookup", "guess"])
def test_phoenix_csv_gives_phoenixs_numbers_and_the_jsons_rows(name: str) -> None:
    summary = json.loads((PHOENIX / "summary.json").read_text())[f"{name}.csv"]
    path = PHOENIX / f"{name}.csv"
    assert adapter_for(path, "auto") is phoenix_csv.read_rows
    rows = _rows(path, phoenix_csv.read_rows)
    assert len(rows) == summary["runCount"]
    assert sum("error" in r for r in rows) / len(rows) == pytest.approx(summary["errorRate"])
    latency = statistics.fmean(r["latency_s"] * 1000 for r in rows)
    assert latency == pytest.approx(summary["averageRunLatencyMs"])
    for annotation in summary["annotationSummaries"]:
        if annotation["meanScore"] is not None:
            assert _mean(rows, annotation["annotationName"]) == pytest.approx(
                annotation["meanScore"]
            )
    by_key = {(r["sample_id"], r["epoch"]): r for r in phoenix.read_rows(PHOENIX / f"{name}.json")}
    assert {(r["sample_id"], r["epoch"]): r for r in rows} == by_key


def test_phoenix_csv_scores_as_phoenix_shows(tmp_path: Path) -> None:
    summary = json.loads((PHOENIX / "summary.json").read_text())
    means = scored(tmp_path, [PHOENIX / "lookup.csv", PHOENIX / "guess.csv"], "overlap")
    for run, mean in means.items():
        (shown,) = [a for a in summary[f"{run}.csv"]["annotationSummaries"]
                    if a["annotationName"] == "overlap"]  # fmt: skip
        assert mean == pytest.approx(shown["meanScore"])


def test_a_bad_phoenix_csv_is_a_clear_error(tmp_path: Path) -> None:
    text = (PHOENIX / "lookup.csv").read_text(encoding="utf-8")
    head, first, rest = text.split("\n", 2)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join([head, first.replace(",1,", ",one,", 1), rest]), encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.csv, line 2, column repetition_number"):
        phoenix_csv.read_rows(bad)
    again = tmp_path / "again.csv"
    again.write_text("\n".join([head, first, first, ""]), encoding="utf-8")
    with pytest.raises(InputError, match=r"line 3: example .* again \(first at line 2\)"):
        phoenix_csv.read_rows(again)


# ------------------------------------------------------------------------------------ MLflow


@pytest.mark.parametrize("run", ["lookup", "guess"])
def test_mlflow_table_gives_mlflows_means(run: str) -> None:
    summary = json.loads((MLFLOW / "summary.json").read_text())
    assert summary["mlflow"] == "3.17.2"
    path = MLFLOW / f"{run}.eval_results_table.json"
    assert adapter_for(path, "auto") is mlflow_eval.read_rows
    rows = _rows(path, mlflow_eval.read_rows)
    assert [r["sample_id"] for r in rows] == [str(i) for i in range(6)]
    assert {r["run"] for r in rows} == {run} and {r["task"] for r in rows} == {"mlflow"}
    metrics = summary[run]
    for name in ("exact", "overlap"):
        assert _mean(rows, name) == pytest.approx(metrics[f"{name}/mean"])
    if "latency/mean" in metrics:  # MLflow timed this run's rows
        latency = statistics.fmean(r["latency_s"] for r in rows)
        assert latency == pytest.approx(metrics["latency/mean"])
    assert all(r["output"] is not None and r["expected"] for r in rows)
    # exact_match/v1 is aggregate only: not in the table, so not among the scores
    assert all("exact_match" not in r["scores"] for r in rows)


def test_mlflow_table_scores_through_calipers(tmp_path: Path) -> None:
    paths = [MLFLOW / f"{r}.eval_results_table.json" for r in ("lookup", "guess")]
    summary = json.loads((MLFLOW / "summary.json").read_text())
    for metric in ("exact", "overlap"):
        means = scored(tmp_path / metric, paths, metric)
        assert means == pytest.approx({r: summary[r][f"{metric}/mean"] for r in means})


def test_a_bad_mlflow_table_names_the_row(tmp_path: Path) -> None:
    data = json.loads((MLFLOW / "lookup.eval_results_table.json").read_text())
    data["data"][2] = data["data"][2][:-1]
    bad = tmp_path / "eval_results_table.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"row 2: expected a list of 6 values"):
        mlflow_eval.read_rows(bad)
    assert mlflow_eval.run_name(bad) == tmp_path.name


def test_the_new_formats_are_forced_by_name() -> None:
    for name in ("promptfoo-csv", "phoenix-csv", "mlflow", "eee"):
        assert name in ADAPTERS
    assert calipers.load(PHOENIX / "guess.csv", format="phoenix-csv").num_rows == 12
