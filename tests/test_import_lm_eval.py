"""The lm-evaluation-harness importer against what lm-eval itself wrote: the fixtures are real
`lm_eval --model dummy --log_samples` output (tests/fixtures/importers/lm_eval/make_fixtures.sh),
and every aggregate below is checked against lm-eval's own results JSON, not against our code."""

from __future__ import annotations

import json
import math
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.adapters import lm_eval
from calipers.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "importers" / "lm_eval"
RUNS = ("run-a", "run-b", "run-c")
GOOD_JSONL = Path(__file__).parent / "fixtures" / "good" / "small.jsonl"


def model_dir(run: str) -> Path:
    (directory,) = [p for p in (FIXTURES / run).iterdir() if p.is_dir()]
    return directory


def results_json(run: str) -> dict[str, Any]:
    (path,) = model_dir(run).glob("results_*.json")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def samples_file(run: str, task: str) -> Path:
    (path,) = model_dir(run).glob(f"samples_{task}_2*.jsonl")
    return path


def by_task(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    tasks: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        tasks.setdefault(row["task"], []).append(row)
    return tasks


def aggregates(task_results: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """lm-eval's `metric,filter` → (mean, stderr), under the key the importer uses."""
    out = {}
    for key, value in task_results.items():
        if "," not in key or "_stderr," in key:
            continue
        metric, filter_name = key.split(",", 1)
        stderr = task_results[f"{metric}_stderr,{filter_name}"]
        out[metric if filter_name == "none" else key] = (value, stderr)
    return out


@pytest.mark.parametrize("run", RUNS)
def test_means_and_stderrs_equal_lm_evals_results(run: str) -> None:
    results = results_json(run)
    tasks = by_task(lm_eval.read_rows(FIXTURES / run))
    assert set(tasks) == set(results["results"])
    for task, task_results in results["results"].items():
        rows = tasks[task]
        assert len(rows) == results["n-samples"][task]["effective"] == 8
        expected = aggregates(task_results)
        assert expected, task
        assert {k for row in rows for k in row["scores"]} == set(expected)
        for key, (mean, stderr) in expected.items():
            values = [row["scores"][key] for row in rows]
            assert statistics.fmean(values) == pytest.approx(mean, abs=1e-12), (task, key)
            # lm-eval's stderr of a mean: the sample SD (n − 1) over √n.
            sem = statistics.stdev(values) / math.sqrt(len(values))
            assert sem == pytest.approx(stderr, abs=1e-12), (task, key)


def test_run_names_come_from_the_results_json() -> None:
    for run in ("run-a", "run-b"):
        results = results_json(run)
        names = {row["run"] for row in lm_eval.read_rows(FIXTURES / run)}
        assert names == {results["model_name"]} == {results["config"]["model_args"]["pretrained"]}
    # No model_args: lm-eval's model_name is a random id (also the directory); the model type is
    # the name.
    results = results_json("run-c")
    assert results["config"]["model_args"] in ({}, "", None)
    assert model_dir("run-c").name == results["model_name"]
    names = {row["run"] for row in lm_eval.read_rows(FIXTURES / "run-c")}
    assert names == {results["config"]["model"]} == {"dummy"}


def test_the_two_seeds_give_paired_documents_with_different_results() -> None:
    a = {(r["task"], r["sample_id"]): r for r in lm_eval.read_rows(FIXTURES / "run-a")}
    b = {(r["task"], r["sample_id"]): r for r in lm_eval.read_rows(FIXTURES / "run-b")}
    assert set(a) == set(b) and len(a) == 16
    assert any(a[k]["scores"] != b[k]["scores"] for k in a if k[0] == "tiny_mc")


def test_fields_of_a_document_as_lm_eval_logged_it() -> None:
    rows = by_task(lm_eval.read_rows(FIXTURES / "run-a"))
    for task in ("tiny_mc", "tiny_gen"):
        lines = [json.loads(x) for x in samples_file("run-a", task).read_text().splitlines()]
        first = {str(x["doc_id"]): x for x in reversed(lines)}
        for row in rows[task]:
            line = first[row["sample_id"]]
            assert row["input"] == line["arguments"]["gen_args_0"]["arg_0"]
            assert row["expected"] == line["target"]
            assert row["epoch"] == 0 and "correct" not in row  # several score keys
    # multiple_choice: the target is the gold index; log-likelihoods are no output.
    with samples_file("run-a", "tiny_mc").open(encoding="utf-8") as f:
        gold = json.loads(f.readline())["doc"]["label"]
    assert rows["tiny_mc"][0]["expected"] == str(gold)
    assert all("output" not in r for r in rows["tiny_mc"])
    # generate_until: DummyLM always answers "lol"; the filters only change the scores.
    assert {r["output"] for r in rows["tiny_gen"]} == {"lol"}


def test_correct_only_for_a_single_binary_metric() -> None:
    rows = by_task(lm_eval.read_rows(FIXTURES / "run-c"))
    plain = rows["tiny_gen_plain"]
    assert all(set(r["scores"]) == {"exact_match"} for r in plain)
    assert all(r["correct"] == (r["scores"]["exact_match"] == 1.0) for r in plain)
    assert any(r["correct"] for r in plain) and not all(r["correct"] for r in plain)
    assert all("correct" not in r for r in rows["tiny_mc"])


def test_every_entry_point_gives_the_same_rows() -> None:
    whole = lm_eval.read_rows(FIXTURES / "run-a")
    directory = model_dir("run-a")
    assert lm_eval.read_rows(directory) == whole
    (results,) = directory.glob("results_*.json")
    assert lm_eval.read_rows(results) == whole
    one = [r for r in whole if r["task"] == "tiny_mc"]
    assert lm_eval.read_rows(samples_file("run-a", "tiny_mc")) == one


def test_detect() -> None:
    directory = model_dir("run-b")
    for path in (FIXTURES / "run-b", directory, *directory.iterdir()):
        assert lm_eval.detect(path), path
    for path in (GOOD_JSONL, GOOD_JSONL.parent, FIXTURES / "tasks", FIXTURES / "nowhere"):
        assert not lm_eval.detect(path), path
    assert not lm_eval.detect(FIXTURES / "tasks" / "tiny_mc.jsonl")  # lm-eval's input, not output


def test_without_a_results_json_the_run_is_the_model_directory(tmp_path: Path) -> None:
    target = tmp_path / "my-model"
    target.mkdir()
    shutil.copy(samples_file("run-a", "tiny_gen"), target)
    rows = lm_eval.read_rows(target)
    assert {r["run"] for r in rows} == {"my-model"} and len(rows) == 8


def test_rows_pass_calipers_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for run in RUNS for r in lm_eval.read_rows(FIXTURES / run)]
    path = tmp_path / "lm_eval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["import", str(path), "--db", str(tmp_path / "db.duckdb")]) == 0
    assert "warning" not in capsys.readouterr().err.lower()


def copy_of(tmp_path: Path, run: str, task: str) -> Path:
    target = tmp_path / samples_file(run, task).name
    shutil.copy(samples_file(run, task), target)
    return target


def test_a_truncated_samples_file_names_the_file_and_line(tmp_path: Path) -> None:
    path = copy_of(tmp_path, "run-a", "tiny_mc")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2], encoding="utf-8")
    with pytest.raises(InputError) as err:
        lm_eval.read_rows(path)
    assert str(path) in err.value.message and "line 3" in err.value.message
    assert err.value.hint and "cut short" in err.value.hint


def test_another_jsonl_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        lm_eval.read_rows(GOOD_JSONL)
    assert str(GOOD_JSONL) in err.value.message and "line 1" in err.value.message
    assert "doc_id" in err.value.message
    path = tmp_path / "samples_x_2024-01-01T00-00-00.jsonl"
    path.write_text('{"doc_id": 0, "x": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match="not an lm-eval sample"):
        lm_eval.read_rows(path)


def test_lines_before_lm_eval_0_4_7_are_refused(tmp_path: Path) -> None:
    path = copy_of(tmp_path, "run-a", "tiny_gen")
    old = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        del record["filter"], record["metrics"]
        old.append(json.dumps(record) + "\n")
    path.write_text("".join(old), encoding="utf-8")
    with pytest.raises(InputError, match=r"line 1: .*before 0\.4\.7"):
        lm_eval.read_rows(path)


def test_a_document_logged_twice_for_one_filter_is_refused(tmp_path: Path) -> None:
    path = copy_of(tmp_path, "run-a", "tiny_mc")
    text = path.read_text(encoding="utf-8")
    path.write_text(text + text.splitlines(keepends=True)[0], encoding="utf-8")  # lm-eval appends
    again = r"line 9: doc_id 0 with filter 'none' again \(first at line 1\)"
    with pytest.raises(InputError, match=again):
        lm_eval.read_rows(path)


def test_a_results_json_without_samples_and_a_renamed_samples_file(tmp_path: Path) -> None:
    (results,) = model_dir("run-a").glob("results_*.json")
    shutil.copy(results, tmp_path / results.name)
    with pytest.raises(InputError, match="no samples files") as err:
        lm_eval.read_rows(tmp_path / results.name)
    assert err.value.hint and "--log_samples" in err.value.hint
    renamed = tmp_path / "mc.jsonl"
    shutil.copy(samples_file("run-a", "tiny_mc"), renamed)
    with pytest.raises(InputError, match="cannot tell the task"):
        lm_eval.read_rows(renamed)


def test_a_metric_lm_eval_could_not_compute_stays_absent(tmp_path: Path) -> None:
    path = copy_of(tmp_path, "run-c", "tiny_gen_plain")
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    lines[0]["exact_match"] = float("nan")  # lm-eval writes NaN as a bare NaN token
    lines[1]["exact_match"] = ["lol", "LOL"]  # a corpus-level metric's (pred, ref) pair
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    rows = {r["sample_id"]: r for r in lm_eval.read_rows(path)}
    assert "scores" not in rows["0"] and "correct" not in rows["0"]
    assert "scores" not in rows["1"] and "correct" not in rows["1"]
    assert rows["2"]["scores"] == {"exact_match": lines[2]["exact_match"]}


# run-d: two `lm_eval` runs (seeds 4 and 5) written into one --output_path, so one model
# directory holds results_<date>.json and samples_<task>_<date>.jsonl of two dates.
TWO_RUNS = FIXTURES / "run-d"


def test_two_runs_in_one_directory_are_refused_with_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = model_dir("run-d")
    results = sorted(directory.glob("results_*.json"))
    dates = [p.name.removeprefix("results_").removesuffix(".json") for p in results]
    assert len(dates) == 2
    for path in (TWO_RUNS, directory):
        with pytest.raises(InputError) as err:
            lm_eval.read_rows(path)
        assert err.value.message == (
            f"{directory}: two runs in one directory ({dates[0]}, {dates[1]}): pass one results "
            "file (results_<date>.json), or import each with --as NAME"
        )
        hint = err.value.hint or ""
        assert f"calipers import {results[0]} --as NAME" in hint and results[1].name in hint
        assert "--output_path" in hint
    # Through the command line: that one error, not a duplicate key per document of a temp file.
    assert main(["import", str(TWO_RUNS), "--db", str(tmp_path / "db.duckdb")]) == 1
    err_text = capsys.readouterr().err
    assert "two runs in one directory" in err_text and "duplicate sample key" not in err_text
    assert "calipers-adapter-" not in err_text and "problems" not in err_text


def test_each_results_file_of_the_two_runs_imports_that_run() -> None:
    for path in sorted(model_dir("run-d").glob("results_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        tasks = by_task(lm_eval.read_rows(path))
        assert set(tasks) == set(data["results"]) == {"tiny_mc", "tiny_gen_plain"}
        for task, task_results in data["results"].items():
            rows = tasks[task]
            assert len(rows) == data["n-samples"][task]["effective"] == 8
            assert {r["run"] for r in rows} == {data["model_name"]} == {"dummy-d"}
            for key, (mean, _) in aggregates(task_results).items():
                values = [row["scores"][key] for row in rows]
                assert statistics.fmean(values) == pytest.approx(mean, abs=1e-12), (path, key)
