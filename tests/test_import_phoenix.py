"""The Arize Phoenix importer against what Phoenix itself wrote: the fixtures are real experiment
downloads (GET /v1/experiments/{id}/json) from a local Phoenix server, and summary.json holds the
numbers Phoenix's UI shows for each experiment (tests/fixtures/importers/phoenix/
make_fixtures.py); the imported rows are checked against those, not against our code."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.adapters import adapter_for, phoenix
from calipers.errors import InputError

IMPORTERS = Path(__file__).parent / "fixtures" / "importers"
FIXTURES = IMPORTERS / "phoenix"
FILES = ("lookup.json", "guess.json")
GOOD = Path(__file__).parent / "fixtures" / "good"


def summary(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "summary.json").read_text())[name]
    return data


@pytest.mark.parametrize("name", FILES)
def test_rows_equal_phoenixs_experiment_summary(name: str) -> None:
    rows = phoenix.read_rows(FIXTURES / name)
    shown = summary(name)
    assert len(rows) == shown["runCount"] == 12
    assert {r["epoch"] for r in rows} == set(range(1, shown["repetitions"] + 1))
    assert sum("error" in r for r in rows) / len(rows) == pytest.approx(shown["errorRate"])
    latency = statistics.fmean(r["latency_s"] * 1000 for r in rows)
    assert latency == pytest.approx(shown["averageRunLatencyMs"])
    for annotation in shown["annotationSummaries"]:
        values = [r["scores"][annotation["annotationName"]] for r in rows
                  if annotation["annotationName"] in r.get("scores", {})]  # fmt: skip
        if annotation["meanScore"] is None:  # a label-only evaluator: no scores, not zeros
            assert values == []
        else:
            # Phoenix counts every annotation (failed evaluators too) but averages the scores.
            assert statistics.fmean(values) == pytest.approx(annotation["meanScore"])
        assert annotation["count"] == len(rows)


def test_the_two_experiments_pair_by_example() -> None:
    lookup = {(r["sample_id"], r["epoch"]) for r in phoenix.read_rows(FIXTURES / "lookup.json")}
    guess = {(r["sample_id"], r["epoch"]) for r in phoenix.read_rows(FIXTURES / "guess.json")}
    assert lookup == guess and len(lookup) == 12


def test_fields_of_a_run() -> None:
    raw = json.loads((FIXTURES / "guess.json").read_text())
    rows = phoenix.read_rows(FIXTURES / "guess.json")
    for record, row in zip(raw, rows, strict=True):
        assert row["run"] == "guess" and row["task"] == "phoenix"
        assert row["sample_id"] == record["example_id"]
        assert json.loads(row["input"]) == record["input"]
        assert json.loads(row["expected"]) == record["reference_output"]
        assert row["latency_s"] == record["latency_ms"] / 1000
        assert "tokens_in" not in row and "correct" not in row  # no counts; two scored evaluators
        if record["error"]:  # the task raised: no output, its evaluators failed, no scores
            assert row["error"] == record["error"] and "output" not in row
            assert "scores" not in row
        else:
            assert row["output"] == record["output"] and "error" not in row
            assert set(row["scores"]) == {"exact", "overlap"}


def test_a_failed_evaluator_leaves_its_score_absent() -> None:
    raw = json.loads((FIXTURES / "lookup.json").read_text())
    rows = phoenix.read_rows(FIXTURES / "lookup.json")
    failed = [
        (record, row)
        for record, row in zip(raw, rows, strict=True)
        if any(a["error"] for a in record["annotations"])
    ]
    assert failed  # `polite` raised on the abstentions
    for _record, row in failed:
        assert "error" not in row and set(row["scores"]) == {"exact", "overlap"}


def test_correct_for_a_single_binary_evaluator(tmp_path: Path) -> None:
    raw = json.loads((FIXTURES / "lookup.json").read_text())
    for record in raw:
        record["annotations"] = [a for a in record["annotations"] if a["name"] == "exact"]
    path = tmp_path / "exact-only.json"
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    rows = phoenix.read_rows(path)
    assert all(r["correct"] == (r["scores"]["exact"] == 1.0) for r in rows)
    assert {r["run"] for r in rows} == {"exact-only"}


def test_detected_by_content() -> None:
    for name in FILES:
        assert phoenix.detect(FIXTURES / name)
        assert adapter_for(FIXTURES / name, "auto") is phoenix.read_rows
    assert not phoenix.detect(FIXTURES / "summary.json")
    others = [p for p in IMPORTERS.rglob("*") if p.relative_to(IMPORTERS).parts[0] != "phoenix"]
    for path in [*others, GOOD, *GOOD.iterdir()]:
        assert not phoenix.detect(path), path


def test_a_truncated_download_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "lookup.json"
    text = (FIXTURES / "lookup.json").read_text()
    path.write_text(text[: len(text) // 3], encoding="utf-8")
    assert phoenix.detect(path)
    with pytest.raises(InputError) as err:
        phoenix.read_rows(path)
    assert str(path) in err.value.message and "not JSON (line" in err.value.message
    assert err.value.hint and "cut short" in err.value.hint


def test_wrong_types_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"example_id": "a"}', encoding="utf-8")
    with pytest.raises(InputError, match="not a JSON array") as err:
        phoenix.read_rows(path)
    assert str(path) in err.value.message
    path.write_text('[{"example_id": "a", "repetition_number": 1}]', encoding="utf-8")
    with pytest.raises(InputError, match="item 0 is not a Phoenix experiment run"):
        phoenix.read_rows(path)
    with pytest.raises(InputError, match="is a directory"):
        phoenix.read_rows(FIXTURES)
    twice = json.loads((FIXTURES / "lookup.json").read_text())
    path.write_text(json.dumps(twice + twice[:1]), encoding="utf-8")
    with pytest.raises(InputError, match=r"item 12: example .* repetition 1 again"):
        phoenix.read_rows(path)


def test_import_and_score_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.duckdb")
    paths = [str(FIXTURES / name) for name in FILES]
    assert main(["import", *paths, "--db", db]) == 0
    assert "warning" not in capsys.readouterr().err.lower()
    out = tmp_path / "score.json"
    code = main(["score", "--db", db, "--scheme", "metric", "--metric", "exact",
                 "--json", str(out), "-q"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    runs = json.loads(out.read_text())["runs"]
    for name in FILES:
        (exact,) = [
            a for a in summary(name)["annotationSummaries"] if a["annotationName"] == "exact"
        ]
        assert runs[name.removesuffix(".json")]["composite"]["mean"] == pytest.approx(
            exact["meanScore"]
        )
