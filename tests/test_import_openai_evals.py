"""The OpenAI evals importer against what `oaieval` itself wrote: the fixtures are real record logs
of evals 3.0.1.post1 (tests/fixtures/importers/openai_evals/make_fixtures.sh), and the checks
compare with the final report oaieval wrote into the same log (accuracy, f1_score, usage_*)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.adapters import adapter_for, openai_evals
from calipers.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "importers" / "openai_evals"
# the model-graded log (grader usage apart) is tested in test_import_grader_usage.py
LOGS = sorted(p for p in FIXTURES.glob("*.jsonl") if "+" not in p.name)
IMPORTERS = FIXTURES.parent
GOOD = Path(__file__).parent / "fixtures" / "good"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def final_report(path: Path) -> dict[str, Any]:
    (report,) = [x["final_report"] for x in lines(path) if "final_report" in x]
    return dict(report)


def test_the_fixtures() -> None:
    assert [p.name for p in LOGS] == [
        "dummy_tiny-match.jsonl",
        "lookup-a_tiny-fuzzy.jsonl",
        "lookup-a_tiny-match.jsonl",
        "lookup-b_tiny-fuzzy.jsonl",
        "lookup-b_tiny-match.jsonl",
    ]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_means_and_token_totals_equal_oaievals_final_report(path: Path) -> None:
    rows = openai_evals.read_rows(path)
    report = final_report(path)
    assert len(rows) == 6 and {r["epoch"] for r in rows} == {0}
    # evals' accuracy: correct match events over all match events.
    accuracy = statistics.fmean(r["correct"] for r in rows)
    assert accuracy == pytest.approx(report["accuracy"], abs=1e-12)
    if "f1_score" in report:  # FuzzyMatch: the means of its metrics events
        for key in ("accuracy", "f1_score"):
            mean = statistics.fmean(r["scores"][key] for r in rows)
            assert mean == pytest.approx(report[key], abs=1e-12), key
    else:
        assert all("scores" not in r for r in rows)
    if "usage_prompt_tokens" in report:
        assert sum(r["tokens_in"] for r in rows) == report["usage_prompt_tokens"]
        assert sum(r["tokens_out"] for r in rows) == report["usage_completion_tokens"]
    else:  # the dummy completion fn records no sampling: no output, no tokens (not 0)
        assert path.name.startswith("dummy")
        for field in ("tokens_in", "tokens_out", "output", "input"):
            assert all(field not in r for r in rows), field


def test_runs_tasks_and_pairing() -> None:
    by_file = {p.stem: openai_evals.read_rows(p) for p in LOGS}
    for stem, rows in by_file.items():
        fn, eval_name = stem.split("_", 1)
        spec = lines(FIXTURES / f"{stem}.jsonl")[0]["spec"]
        assert {r["run"] for r in rows} == {fn} == set(spec["completion_fns"])
        assert {r["task"] for r in rows} == {spec["eval_name"]} == {f"{eval_name}.dev.v0"}
    ids = {r["sample_id"] for r in by_file["lookup-a_tiny-match"]}
    assert ids == {f"tiny-match.dev.{i}" for i in range(6)}
    assert ids == {r["sample_id"] for r in by_file["lookup-b_tiny-match"]}
    a = {r["sample_id"]: r for r in by_file["lookup-a_tiny-match"]}
    b = {r["sample_id"]: r for r in by_file["lookup-b_tiny-match"]}
    assert any(a[i]["correct"] != b[i]["correct"] for i in ids)


def test_fields_of_a_sample_as_oaieval_logged_them() -> None:
    path = FIXTURES / "lookup-a_tiny-match.jsonl"
    rows = {r["sample_id"]: r for r in openai_evals.read_rows(path)}
    events = [x for x in lines(path) if "type" in x]
    for event in events:
        row = rows[event["sample_id"]]
        if event["type"] == "sampling":
            assert row["output"] == event["data"]["sampled"][0]
            assert json.loads(row["input"]) == event["data"]["prompt"]
            assert row["tokens_in"] == event["data"]["usage"]["prompt_tokens"]
        elif event["type"] == "match":
            assert row["correct"] is event["data"]["correct"]
            expected = event["data"]["expected"]
            assert row["expected"] == (
                expected if isinstance(expected, str) else "\n".join(expected)
            )
    assert rows["tiny-match.dev.2"]["expected"] == "blue\nBlue"  # two references


def test_rows_pass_calipers_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for p in LOGS for r in openai_evals.read_rows(p)]
    path = tmp_path / "oaieval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["import", str(path), "--db", str(tmp_path / "db.duckdb")]) == 0
    assert "warning" not in capsys.readouterr().err.lower()


def other_tools_files() -> list[Path]:
    others = [p for p in IMPORTERS.rglob("*") if FIXTURES not in p.parents and p != FIXTURES]
    return [*others, *GOOD.iterdir(), GOOD]


def test_detected_by_content_and_nothing_else() -> None:
    for path in LOGS:
        assert openai_evals.detect(path)
        assert adapter_for(path, "auto") is openai_evals.read_rows
    for path in other_tools_files():
        assert not openai_evals.detect(path), path
    # the eval's own input data and registry are not its output
    for path in (FIXTURES / "registry" / "data" / "tiny" / "samples.jsonl", FIXTURES):
        assert not openai_evals.detect(path), path


def write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_truncated_log_names_the_file_and_line(tmp_path: Path) -> None:
    text = (FIXTURES / "lookup-a_tiny-fuzzy.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(text[:4]) + "\n" + text[4][: len(text[4]) // 2], encoding="utf-8")
    with pytest.raises(InputError) as err:
        openai_evals.read_rows(path)
    assert str(path) in err.value.message and "line 5: not JSON" in err.value.message
    assert err.value.hint and "cut short" in err.value.hint


def test_another_jsonl_format_is_refused(tmp_path: Path) -> None:
    good = GOOD / "small.jsonl"
    with pytest.raises(InputError, match="line 1: not an oaieval record log") as err:
        openai_evals.read_rows(good)
    assert str(good) in err.value.message
    records = lines(FIXTURES / "dummy_tiny-match.jsonl")
    records[3] = {"sample_id": "x", "kind": "match"}
    with pytest.raises(InputError, match="line 4: not an oaieval event"):
        openai_evals.read_rows(write(tmp_path, records))
    with pytest.raises(InputError, match="holds no match, metrics or error events"):
        openai_evals.read_rows(write(tmp_path, records[:2]))
    with pytest.raises(InputError, match="is a directory"):
        openai_evals.read_rows(FIXTURES)


def test_repeated_events_are_epochs_and_errors_are_kept(tmp_path: Path) -> None:
    records = lines(FIXTURES / "lookup-b_tiny-fuzzy.jsonl")
    events = [r for r in records if "type" in r]
    again = [dict(e, event_id=e["event_id"] + 100) for e in events]
    again[0]["data"] = dict(again[0]["data"], sampled=["other"])
    error = {**events[0], "type": "error", "data": {"type": "Timeout", "message": "no answer"}}
    rows = openai_evals.read_rows(write(tmp_path, [*records, *again, error]))
    assert len(rows) == 12 and {r["epoch"] for r in rows} == {0, 1}
    first = [r for r in rows if r["sample_id"] == events[0]["sample_id"]]
    assert [r["output"] for r in first] == [events[0]["data"]["sampled"][0], "other"]
    assert first[1]["error"] == "Timeout: no answer" and "error" not in first[0]


def test_a_non_finite_metric_stays_absent(tmp_path: Path) -> None:
    records = lines(FIXTURES / "lookup-a_tiny-fuzzy.jsonl")
    metrics = [r for r in records if r.get("type") == "metrics"]
    metrics[0]["data"]["f1_score"] = math.nan
    metrics[1]["data"]["f1_score"] = "n/a"
    rows = {r["sample_id"]: r for r in openai_evals.read_rows(write(tmp_path, records))}
    for event in metrics[:2]:
        assert set(rows[event["sample_id"]]["scores"]) == {"accuracy"}


def test_calipers_import_and_compare_end_to_end(tmp_path: Path, capsys: Any) -> None:
    """Imported by content (no --format) and compared on `correct`: the paired difference is the
    difference of oaieval's own accuracies."""
    db = str(tmp_path / "s.duckdb")
    a, b = FIXTURES / "lookup-a_tiny-match.jsonl", FIXTURES / "lookup-b_tiny-match.jsonl"
    assert main(["import", str(a), str(b), "--db", db]) == 0
    out = tmp_path / "compare.json"
    args = ["compare", "--db", db, "--scheme", "metric", "--metric", "correct"]
    args += ["--control", "lookup-a", "--treatment", "lookup-b", "--gate", "none"]
    assert main([*args, "--json", str(out), "-q"]) == 0, capsys.readouterr().err
    (pair,) = json.loads(out.read_text())["pairs"]
    assert pair["n_pairs"] == 6
    expected = final_report(b)["accuracy"] - final_report(a)["accuracy"]
    assert pair["composite"]["estimate"] == pytest.approx(expected)
