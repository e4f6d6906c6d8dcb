"""The NeMo Evaluator importer against what nemo-evaluator itself wrote: the fixtures are real
`nemo-evaluator run_eval` output of a BYOB benchmark against a canned local endpoint
(tests/fixtures/importers/nemo_evaluator/make_fixtures.sh), and the aggregates below are checked
against nemo-evaluator's own results.yml, not against our code."""

from __future__ import annotations

import json
import math
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest
import yaml

from calipers.cli.main import main
from calipers.data.adapters import adapter_for, nemo_evaluator
from calipers.errors import InputError

IMPORTERS = Path(__file__).parent / "fixtures" / "importers"
FIXTURES = IMPORTERS / "nemo_evaluator"
RUNS = ("run-a", "run-b")
GOOD = Path(__file__).parent / "fixtures" / "good"


def results(run: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((FIXTURES / run / "results.yml").read_text())
    return data


def predictions(run: str) -> Path:
    return FIXTURES / run / "tiny_qa" / nemo_evaluator.PREDICTIONS


@pytest.mark.parametrize("run", RUNS)
def test_means_counts_and_stderrs_equal_results_yml(run: str) -> None:
    rows = nemo_evaluator.read_rows(FIXTURES / run)
    scores = results(run)["results"]["tasks"]["tiny_qa"]["metrics"]["pass@1"]["scores"]
    assert set(scores) == {"correct", "f1"}
    for key, entry in scores.items():
        values = [r["scores"][key] for r in rows if key in r.get("scores", {})]
        stats = entry["stats"]
        assert len(values) == stats["count"]
        # nemo-evaluator rounds to 4 places and uses the population SD (n), over √n.
        assert statistics.fmean(values) == pytest.approx(stats["mean"], abs=5e-5)
        assert statistics.pstdev(values) == pytest.approx(stats["stddev"], abs=5e-5)
        sem = statistics.pstdev(values) / math.sqrt(len(values))
        assert sem == pytest.approx(stats["stderr"], abs=5e-5)
        assert entry["value"] == stats["mean"]


def test_repeats_are_epochs_of_the_same_samples() -> None:
    for run in RUNS:
        rows = nemo_evaluator.read_rows(FIXTURES / run)
        assert results(run)["config"]["params"]["extra"]["n_repeats"] == 2
        assert len(rows) == 12
        assert {(r["sample_id"], r["epoch"]) for r in rows} == {
            (str(i), e) for i in range(6) for e in (0, 1)
        }
    weak = {(r["sample_id"], r["epoch"]): r for r in nemo_evaluator.read_rows(FIXTURES / "run-b")}
    # the canned endpoint answers the planet question right only on every other call
    assert weak[("4", 0)]["correct"] is True and weak[("4", 1)]["correct"] is False


def test_fields_of_a_prediction() -> None:
    lines = [json.loads(x) for x in predictions("run-b").read_text().splitlines()]
    rows = nemo_evaluator.read_rows(predictions("run-b"))
    assert {r["run"] for r in rows} == {"weak-model"} and {r["task"] for r in rows} == {"tiny_qa"}
    for line, row in zip(lines, rows, strict=True):
        assert row["input"] == line["prompt"] and row["expected"] == line["target"]
        if line["status"] == "scored":
            assert row["output"] == line["response"]
            assert row["correct"] is line["scores"]["correct"]
            assert row["scores"] == {"correct": float(line["scores"]["correct"]),
                                     "f1": line["scores"]["f1"]}  # fmt: skip
            assert "error" not in row
        else:  # the endpoint's HTTP 500: skipped, never a zero
            assert line["status"] == "skipped_model_error"
            assert row["error"] == line["error"] and "500" in row["error"]
            assert "scores" not in row and "correct" not in row and "output" not in row
    assert sum("error" in r for r in rows) == 2
    assert all("tokens_in" not in r and "latency_s" not in r for r in rows)


def test_every_entry_point_gives_the_same_rows() -> None:
    both = nemo_evaluator.read_rows(FIXTURES)
    assert both == nemo_evaluator.read_rows(FIXTURES / "run-a") + nemo_evaluator.read_rows(
        FIXTURES / "run-b"
    )
    assert nemo_evaluator.read_rows(FIXTURES / "run-a" / "tiny_qa") == nemo_evaluator.read_rows(
        predictions("run-a")
    )


def test_the_layout_before_0_2_6_and_no_config(tmp_path: Path) -> None:
    """nemo-evaluator 0.2.5 and earlier write the predictions into OUT itself."""
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(FIXTURES / "run-a" / "results.yml", out)
    shutil.copy(predictions("run-a"), out)
    assert nemo_evaluator.read_rows(out) == nemo_evaluator.read_rows(FIXTURES / "run-a")
    (out / "results.yml").unlink()
    rows = nemo_evaluator.read_rows(out / nemo_evaluator.PREDICTIONS)
    assert {r["run"] for r in rows} == {"out"} == {r["task"] for r in rows}


def test_detected_by_content() -> None:
    for path in (
        FIXTURES,
        FIXTURES / "run-a",
        FIXTURES / "run-a" / "tiny_qa",
        predictions("run-b"),
    ):
        assert nemo_evaluator.detect(path), path
        assert adapter_for(path, "auto") is nemo_evaluator.read_rows, path
    assert not nemo_evaluator.detect(FIXTURES / "data.jsonl")  # the benchmark's input
    others = [
        p for p in IMPORTERS.rglob("*") if p.relative_to(IMPORTERS).parts[0] != "nemo_evaluator"
    ]
    for path in [*others, GOOD, *GOOD.iterdir()]:
        assert not nemo_evaluator.detect(path), path


def test_a_truncated_file_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / nemo_evaluator.PREDICTIONS
    lines = predictions("run-a").read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + lines[3][:40], encoding="utf-8")
    with pytest.raises(InputError) as err:
        nemo_evaluator.read_rows(path)
    assert str(path) in err.value.message and "line 4" in err.value.message
    assert err.value.hint and "cut short" in err.value.hint


def test_other_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="line 1: not a NeMo Evaluator BYOB prediction") as err:
        nemo_evaluator.read_rows(GOOD / "small.jsonl")
    assert str(GOOD / "small.jsonl") in err.value.message
    aggregate_only = tmp_path / "out"
    aggregate_only.mkdir()
    shutil.copy(FIXTURES / "run-a" / "results.yml", aggregate_only)
    with pytest.raises(InputError, match=r"results\.yml holds aggregates only"):
        nemo_evaluator.read_rows(aggregate_only)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no NeMo Evaluator"):
        nemo_evaluator.read_rows(empty)


def test_a_repeat_cut_short_is_refused(tmp_path: Path) -> None:
    path = tmp_path / nemo_evaluator.PREDICTIONS
    lines = predictions("run-a").read_text().splitlines(keepends=True)
    path.write_text("".join(lines[1:]), encoding="utf-8")  # repeat 0 lost its first sample
    with pytest.raises(InputError, match=r"line 5: sample_id 5 of repeat 0 is outside"):
        nemo_evaluator.read_rows(path)


def test_a_non_numeric_score_stays_absent(tmp_path: Path) -> None:
    path = tmp_path / nemo_evaluator.PREDICTIONS
    lines = [json.loads(x) for x in predictions("run-a").read_text().splitlines()]
    lines[0]["scores"] = {"correct": "yes", "f1": float("nan"), "label": "A"}
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    first = nemo_evaluator.read_rows(path)[0]
    assert "scores" not in first and "correct" not in first


def test_import_and_compare_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(FIXTURES), "--db", db]) == 0
    assert "warning" not in capsys.readouterr().err.lower()
    out = tmp_path / "score.json"
    code = main(["score", "--db", db, "--scheme", "metric", "--metric", "f1",
                 "--json", str(out), "-q"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    runs = json.loads(out.read_text())["runs"]
    for run, model in (("run-a", "strong-model"), ("run-b", "weak-model")):
        f1 = results(run)["results"]["tasks"]["tiny_qa"]["metrics"]["pass@1"]["scores"]["f1"]
        assert runs[model]["composite"]["mean"] == pytest.approx(f1["value"], abs=5e-5)
