"""The lighteval importer against what lighteval itself wrote: the fixtures are real
`lighteval custom … --save-details` output of lighteval 0.13.0
(tests/fixtures/importers/lighteval/make_fixtures.py), and the aggregates below are checked
against lighteval's own results JSON, not against our code."""

from __future__ import annotations

import json
import math
import shutil
import statistics
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calipers.cli.main import main
from calipers.data.adapters import adapter_for, lighteval
from calipers.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "importers" / "lighteval"
MODELS = ("model-a", "model-b")
TASKS = ("tiny_mc|0", "tiny_gen|0")
IMPORTERS = FIXTURES.parent
GOOD = Path(__file__).parent / "fixtures" / "good"


def results_path(model: str) -> Path:
    (path,) = (FIXTURES / model / "results" / model).glob("results_*.json")
    return path


def results(model: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(results_path(model).read_text(encoding="utf-8"))
    return data


def details(model: str, task: str) -> Path:
    (path,) = (FIXTURES / model / "details" / model).glob(f"*/details_{task}_*.parquet")
    return path


def by_task(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    tasks: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        tasks.setdefault(row["task"], []).append(row)
    return tasks


@pytest.mark.parametrize("model", MODELS)
def test_means_and_stderrs_equal_lightevals_results(model: str) -> None:
    got = by_task(lighteval.read_rows(FIXTURES / model))
    aggregates = results(model)["results"]
    assert set(got) == set(TASKS) == set(aggregates) - {"all"}
    for task in TASKS:
        rows = got[task]
        assert len(rows) == 6
        for metric, value in aggregates[task].items():
            if metric.endswith("_stderr"):
                continue
            if metric == "chrf":  # corpus-level: no per-document value to import
                assert all("chrf" not in r["scores"] for r in rows)
                continue
            values = [r["scores"][metric] for r in rows]
            assert statistics.fmean(values) == pytest.approx(value, abs=1e-12), (task, metric)
            # lighteval's stderr of a mean: the sample SD (n − 1) over √n.
            sem = statistics.stdev(values) / math.sqrt(len(values))
            assert sem == pytest.approx(aggregates[task][f"{metric}_stderr"], abs=1e-12)


def test_runs_are_lightevals_model_names_and_documents_pair() -> None:
    rows = {m: lighteval.read_rows(FIXTURES / m) for m in MODELS}
    for model in MODELS:
        assert {r["run"] for r in rows[model]} == {results(model)["config_general"]["model_name"]}
    keys = [{(r["task"], r["sample_id"]) for r in rows[m]} for m in MODELS]
    assert keys[0] == keys[1] == {(t, str(i)) for t in TASKS for i in range(6)}
    a = {(r["task"], r["sample_id"]): r for r in rows["model-a"]}
    b = {(r["task"], r["sample_id"]): r for r in rows["model-b"]}
    assert any(a[k]["correct"] != b[k]["correct"] for k in a)


def test_fields_of_a_document_as_lighteval_logged_it() -> None:
    for task in TASKS:
        records = {
            str(r["doc"]["id"]): r for r in pq.read_table(details("model-a", task)).to_pylist()
        }
        for row in lighteval.read_rows(details("model-a", task)):
            record = records[row["sample_id"]]
            doc = record["doc"]
            assert row["input"] == doc["query"]  # the custom model records no prompt
            assert row["expected"] == doc["choices"][doc["gold_index"]]
            # one score key per file, 0/1: correct follows it
            assert row["correct"] is (next(iter(row["scores"].values())) == 1.0)
            if task == "tiny_gen|0":
                assert row["output"] == record["model_response"]["text"][0]
            else:  # log-likelihoods are no output
                assert "output" not in row
            for field in ("tokens_in", "tokens_out"):  # lighteval recorded no token ids
                assert field not in row


def test_every_entry_point_gives_the_same_rows() -> None:
    whole = lighteval.read_rows(FIXTURES)
    assert len(whole) == 24
    model_a = [r for r in whole if r["run"] == "model-a"]
    assert lighteval.read_rows(FIXTURES / "model-a") == model_a
    assert lighteval.read_rows(results_path("model-a")) == model_a
    assert lighteval.read_rows(FIXTURES / "model-a" / "details") == model_a
    one = [r for r in model_a if r["task"] == "tiny_mc|0"]
    assert lighteval.read_rows(details("model-a", "tiny_mc|0")) == one


def test_rows_pass_calipers_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lighteval.jsonl"
    rows = lighteval.read_rows(FIXTURES)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["import", str(path), "--db", str(tmp_path / "db.duckdb")]) == 0
    assert "warning" not in capsys.readouterr().err.lower()


def other_tools_files() -> list[Path]:
    others = [p for p in IMPORTERS.rglob("*") if FIXTURES not in p.parents and p != FIXTURES]
    return [*others, *GOOD.iterdir(), GOOD]


def test_detected_by_content_and_nothing_else(tmp_path: Path) -> None:
    for path in (
        FIXTURES,
        FIXTURES / "model-b",
        results_path("model-b"),
        details("model-b", "tiny_mc|0"),
    ):
        assert lighteval.detect(path), path
        assert adapter_for(path, "auto") is lighteval.read_rows, path
    for path in other_tools_files():
        assert not lighteval.detect(path), path
    for path in (FIXTURES / "data", FIXTURES / "data" / "test.jsonl", FIXTURES / "nowhere"):
        assert not lighteval.detect(path), path
    own = tmp_path / "samples.parquet"  # calipers' own Parquet sample file
    pq.write_table(pa.table({"run": ["a"], "task": ["t"], "sample_id": ["1"]}), own)
    assert not lighteval.detect(own)


def test_a_truncated_details_file_names_the_file(tmp_path: Path) -> None:
    source = details("model-a", "tiny_gen|0")
    path = tmp_path / source.name
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as err:
        lighteval.read_rows(path)
    assert str(path) in err.value.message and "not a readable Parquet file" in err.value.message
    assert err.value.hint and "cut short" in err.value.hint


def test_another_parquet_and_the_older_layout_are_refused(tmp_path: Path) -> None:
    own = tmp_path / "samples.parquet"
    pq.write_table(pa.table({"run": ["a"], "task": ["t"], "sample_id": ["1"]}), own)
    with pytest.raises(InputError, match="not lighteval details") as err:
        lighteval.read_rows(own)
    assert str(own) in err.value.message
    old = tmp_path / "details_x_2024-01-01T00-00-00.parquet"
    pq.write_table(pa.table({"full_prompt": ["q"], "predictions": ["a"], "metrics": ["{}"]}), old)
    with pytest.raises(InputError, match=r"lighteval 0\.10 and earlier") as err:
        lighteval.read_rows(old)
    assert err.value.hint and "0.11 or later" in err.value.hint


def test_a_results_json_without_details(tmp_path: Path) -> None:
    target = tmp_path / "results" / "model-a"
    target.mkdir(parents=True)
    shutil.copy(results_path("model-a"), target)
    with pytest.raises(InputError, match="no details files of this run") as err:
        lighteval.read_rows(target / results_path("model-a").name)
    assert err.value.hint and "--save-details" in err.value.hint
    lm_eval_results = next(IMPORTERS.glob("lm_eval/run-a/*/results_*.json"))
    with pytest.raises(InputError, match="not a lighteval results JSON"):
        lighteval.read_rows(lm_eval_results)


def test_a_non_numeric_metric_stays_absent(tmp_path: Path) -> None:
    table = pq.read_table(details("model-a", "tiny_mc|0")).to_pylist()
    table[0]["metric"] = {"acc": math.nan}
    table[1]["metric"] = {"acc": None}
    path = tmp_path / details("model-a", "tiny_mc|0").name
    pq.write_table(pa.Table.from_pylist(table), path)
    rows = lighteval.read_rows(path)
    assert "scores" not in rows[0] and "correct" not in rows[0]
    assert "scores" not in rows[1] and rows[2]["scores"] == {"acc": table[2]["metric"]["acc"]}


def test_calipers_import_and_compare_end_to_end(tmp_path: Path, capsys: Any) -> None:
    """The output directory imported by content (no --format) and compared on acc: the paired
    difference is the difference of lighteval's own accuracies."""
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(FIXTURES), "--db", db]) == 0
    assert "Imported 24 observations" in capsys.readouterr().out
    out = tmp_path / "compare.json"
    args = ["compare", "--db", db, "--scheme", "metric", "--metric", "acc"]
    args += ["--control", "model-a", "--treatment", "model-b", "--gate", "none"]
    assert main([*args, "--json", str(out), "-q"]) == 0, capsys.readouterr().err
    (pair,) = json.loads(out.read_text())["pairs"]
    assert pair["n_pairs"] == 6  # tiny_mc's documents; tiny_gen has no acc
    acc = {m: results(m)["results"]["tiny_mc|0"]["acc"] for m in MODELS}
    assert pair["composite"]["estimate"] == pytest.approx(acc["model-b"] - acc["model-a"])
