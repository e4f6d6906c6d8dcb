"""The deepeval importer against what deepeval itself wrote: the fixtures are real test runs saved
by `evaluate(..., display_config=DisplayConfig(results_folder=...))` with deepeval 4.3.1
(tests/fixtures/importers/deepeval/make_fixtures.py), and the checks compare with deepeval's own
per-run aggregates in the same file (metricsScores, testPassed/testFailed), not with our code."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.adapters import adapter_for, deepeval
from calipers.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "importers" / "deepeval"
RUNS = {"model-a": "model-a", "model-b": "model-b", "ident": "nightly"}
IMPORTERS = FIXTURES.parent
GOOD = Path(__file__).parent / "fixtures" / "good"


def path_of(name: str) -> Path:
    return FIXTURES / f"test_run_{name}.json"


def raw(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path_of(name).read_text(encoding="utf-8"))
    return data


def assertions_named(rows: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    return [a for r in rows for a in r.get("assertions", []) if a["name"] == metric]


@pytest.mark.parametrize("name", list(RUNS))
def test_metric_scores_and_counts_equal_deepevals_metrics_scores(name: str) -> None:
    rows = deepeval.read_rows(path_of(name))
    data = raw(name)
    assert len(rows) == len(data["testCases"]) == 6
    for entry in data["metricsScores"]:
        metric = entry["metric"]
        # deepeval's scores list: one per test case whose metric did not error, in case order.
        assert [r["scores"][metric] for r in rows if metric in r.get("scores", {})] == entry[
            "scores"
        ]
        outcomes = assertions_named(rows, metric)
        errored = [a for a in outcomes if a["detail"].startswith("not evaluated: ")]
        assert len(errored) == entry["errors"], metric
        assert sum(a["passed"] for a in outcomes) == entry["passes"], metric
        assert sum(not a["passed"] for a in outcomes) - len(errored) == entry["fails"], metric


@pytest.mark.parametrize("name", list(RUNS))
def test_outcomes_against_deepevals_pass_and_fail_counts(name: str) -> None:
    rows = deepeval.read_rows(path_of(name))
    data = raw(name)
    assert sum(r.get("correct") is True for r in rows) == data["testPassed"]
    # Declared difference: deepeval counts a test case whose metric errored as failed; calipers
    # records the error and no outcome.
    failed = sum(r.get("correct") is False for r in rows) + sum("error" in r for r in rows)
    assert failed == data["testFailed"]
    assert all(("error" in r) != ("correct" in r) for r in rows)


def test_errored_metrics_are_an_error_without_a_score() -> None:
    (row,) = [r for r in deepeval.read_rows(path_of("model-a")) if r["sample_id"] == "q5"]
    case = raw("model-a")["testCases"][5]
    assert case["success"] is False and row["output"] == ""
    assert row["scores"] == {"token_overlap": 0.0}  # the metrics that errored have no score
    assert "Exact Match: MissingTestCaseParamsError" in row["error"]
    assert "strict_length: ValueError: empty answer" in row["error"]
    assert "correct" not in row


def test_the_apps_tokens_cost_and_latency_not_deepevals_evaluation_cost() -> None:
    rows = deepeval.read_rows(path_of("model-b"))
    cases = raw("model-b")["testCases"]
    assert sum(r["tokens_in"] for r in rows) == sum(c["inputTokenCount"] for c in cases)
    assert sum(r["tokens_out"] for r in rows) == sum(c["outputTokenCount"] for c in cases)
    assert sum(r["cost_usd"] for r in rows) == pytest.approx(sum(c["tokenCost"] for c in cases))
    assert [r["latency_s"] for r in rows] == [c["completionTime"] for c in cases]
    # model-a's app reported nothing: absent, not 0 (evaluationCost is the metrics' cost).
    for row in deepeval.read_rows(path_of("model-a")):
        for field in ("tokens_in", "tokens_out", "cost_usd", "latency_s"):
            assert field not in row, field


def test_runs_tasks_and_pairing() -> None:
    for name, run in RUNS.items():
        rows = deepeval.read_rows(path_of(name))
        assert {r["run"] for r in rows} == {run} and {r["task"] for r in rows} == {"deepeval"}
        assert [r["sample_id"] for r in rows] == [f"q{i}" for i in range(6)]
        assert {r["epoch"] for r in rows} == {0}
        cases = raw(name)["testCases"]
        assert [r["input"] for r in rows] == [c["input"] for c in cases]
        assert [r["expected"] for r in rows] == [c["expectedOutput"] for c in cases]
        assert [r["output"] for r in rows] == [c["actualOutput"] for c in cases]


def test_rows_pass_calipers_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for name in RUNS for r in deepeval.read_rows(path_of(name))]
    path = tmp_path / "deepeval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["import", str(path), "--db", str(tmp_path / "db.duckdb")]) == 0
    assert "warning" not in capsys.readouterr().err.lower()


def other_tools_files() -> list[Path]:
    others = [p for p in IMPORTERS.rglob("*") if FIXTURES not in p.parents and p != FIXTURES]
    return [*others, *GOOD.iterdir(), GOOD]


def test_detected_by_content_and_nothing_else() -> None:
    for name in RUNS:
        assert deepeval.detect(path_of(name))
        assert adapter_for(path_of(name), "auto") is deepeval.read_rows
    for path in other_tools_files():
        assert not deepeval.detect(path), path
    assert not deepeval.detect(FIXTURES) and not deepeval.detect(FIXTURES / "make_fixtures.py")


def test_the_name_without_extension_older_deepevals_wrote(tmp_path: Path) -> None:
    # deepeval 4.3.1's local_store.py: the DEEPEVAL_RESULTS_FOLDER file "forgot" its .json before.
    path = tmp_path / "test_run_20260101_120000"
    path.write_bytes(path_of("model-b").read_bytes())
    assert adapter_for(path, "auto") is deepeval.read_rows
    assert deepeval.read_rows(path) == deepeval.read_rows(path_of("model-b"))
    other = tmp_path / "results"
    other.write_bytes(path_of("model-b").read_bytes())
    assert not deepeval.detect(other)


def copy_with(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "test_run_x.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_truncated_file_names_the_file_line_and_column(tmp_path: Path) -> None:
    text = path_of("model-a").read_text(encoding="utf-8")
    path = copy_with(tmp_path, text[: len(text) // 2])
    assert deepeval.detect(path)  # still recognised: the error says what is wrong with it
    with pytest.raises(InputError) as err:
        deepeval.read_rows(path)
    assert str(path) in err.value.message and "not JSON (line 1, column" in err.value.message
    assert err.value.hint and "cut short" in err.value.hint


def test_other_json_is_refused(tmp_path: Path) -> None:
    for text in ("[]", '{"testCases": 3}', json.dumps({"results": {"version": 3}})):
        path = copy_with(tmp_path, text)
        with pytest.raises(InputError, match="not a deepeval test run") as err:
            deepeval.read_rows(path)
        assert str(path) in err.value.message
    with pytest.raises(InputError, match="is a directory"):
        deepeval.read_rows(FIXTURES)
    with pytest.raises(InputError, match="holds no test cases"):
        deepeval.read_rows(copy_with(tmp_path, '{"testCases": []}'))


def test_test_cases_with_the_same_name_are_refused(tmp_path: Path) -> None:
    data = raw("model-a")
    data["testCases"][3]["name"] = "q1"
    with pytest.raises(InputError, match=r"testCases\[3\]: test case name 'q1' again") as err:
        deepeval.read_rows(copy_with(tmp_path, json.dumps(data)))
    assert err.value.hint and "name=" in err.value.hint


def test_a_missing_or_non_finite_value_stays_absent(tmp_path: Path) -> None:
    data = raw("model-b")
    case = data["testCases"][0]
    case["metricsData"][1]["score"] = math.nan  # Python's json writes NaN
    case["metricsData"][2]["score"] = "high"
    case["inputTokenCount"] = -1
    del case["tokenCost"]
    row = deepeval.read_rows(copy_with(tmp_path, json.dumps(data)))[0]
    assert row["scores"] == {"Exact Match": 1.0}
    assert "tokens_in" not in row and "cost_usd" not in row and row["tokens_out"] == 2


def test_calipers_import_and_score_end_to_end(tmp_path: Path, capsys: Any) -> None:
    """Imported by content (no --format), scored with the metric scheme: each run's mean is the
    mean of deepeval's own metricsScores list for that metric."""
    db = str(tmp_path / "s.duckdb")
    files = [str(path_of("model-a")), str(path_of("model-b"))]
    assert main(["import", *files, "--db", db]) == 0
    assert "Imported 12 observations" in capsys.readouterr().out
    out = tmp_path / "score.json"
    args = ["score", "--db", db, "--scheme", "metric", "--metric", "token_overlap"]
    assert main([*args, "--json", str(out), "-q"]) == 0
    scored = json.loads(out.read_text())["runs"]
    for name in ("model-a", "model-b"):
        (entry,) = [m for m in raw(name)["metricsScores"] if m["metric"] == "token_overlap"]
        assert scored[name]["composite"]["mean"] == pytest.approx(statistics.fmean(entry["scores"]))
        assert scored[name]["composite"]["n"] == len(entry["scores"])


def test_a_metric_without_a_verdict_decides_nothing(tmp_path: Path) -> None:
    data = raw("model-b")
    for metric in data["testCases"][1]["metricsData"]:
        metric.pop("success")  # no threshold: deepeval writes no success (exclude_none)
    row = deepeval.read_rows(copy_with(tmp_path, json.dumps(data)))[1]
    assert set(row["scores"]) == {"Exact Match", "token_overlap", "strict_length"}
    assert "assertions" not in row and "correct" not in row and "error" not in row
