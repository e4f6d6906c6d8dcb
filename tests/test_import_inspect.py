"""The inspect_ai importer against what inspect itself wrote: the fixtures are real inspect_ai
0.3.285 and 0.3.205 logs of a mockllm run (tests/fixtures/importers/inspect/make_fixtures.py), and
every aggregate below is checked against the log's own header — the metrics, per-sample epoch
reductions, counts and usage inspect recorded — not against our code."""

from __future__ import annotations

import json
import statistics
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from calipers.cli.main import main
from calipers.data.adapters import inspect_log
from calipers.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "importers" / "inspect"
LOGS = (
    "run-a.eval",
    "run-b.eval",
    "prompt-v2.eval",
    "errors.eval",
    "small.json",
    "small.eval",
    "small-chunked.eval",
    "deflate.eval",
    "slash-ids.eval",
    "slash-ids-chunked.eval",
    "graded.eval",
    "graded-roles.eval",
    "graded-self.eval",
)
# metrics (accuracy or mean) in each log's results.scores, when not the arith task's five
METRICS = {"errors.eval": 1, "slash-ids.eval": 1, "slash-ids-chunked.eval": 1}
METRICS |= {name: 2 for name in ("graded.eval", "graded-roles.eval", "graded-self.eval")}
GOOD_JSONL = Path(__file__).parent / "fixtures" / "good" / "small.jsonl"


def member(path: Path, name: str) -> Any:
    """A JSON entry of a .eval, read independently of the importer: zipfile for deflate; for
    zstd (inspect_ai >= 0.3.206), zipfile's raw bytes of the entry through pyarrow's codec."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
        if info.compress_type != 93 or hasattr(zipfile, "ZIP_ZSTANDARD"):
            return json.loads(archive.read(info))
        raw_info = zipfile.ZipInfo(info.filename)
        raw_info.header_offset, raw_info.compress_size = info.header_offset, info.compress_size
        raw_info.file_size, raw_info.flag_bits = info.compress_size, info.flag_bits
        with archive.open(raw_info) as raw:
            data = pa.decompress(raw.read(), info.file_size, codec="zstd", asbytes=True)
        return json.loads(data)


def header(name: str) -> dict[str, Any]:
    path = FIXTURES / name
    data: dict[str, Any]
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
    else:
        data = member(path, "header.json")
        data["reductions"] = member(path, "reductions.json")
    return data


def rows_of(name: str) -> inspect_log.Rows:
    return inspect_log.read_rows(FIXTURES / name)


def score_key(entry: dict[str, Any]) -> str:
    """The importer's key of a results.scores entry: a dict-valued scorer's keys are entries of
    their own, named by the key, with `scorer` the scorer's name."""
    return (
        entry["name"] if entry["name"] == entry["scorer"] else f"{entry['scorer']}/{entry['name']}"
    )


def per_sample_means(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    """inspect's default epoch reducer: the mean of a sample's scored epochs."""
    values: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if key in row.get("scores", {}):
            values[row["sample_id"]].append(row["scores"][key])
    return {sid: statistics.fmean(v) for sid, v in values.items()}


@pytest.mark.parametrize("name", LOGS)
def test_metrics_equal_the_ones_inspect_recorded(name: str) -> None:
    log, rows = header(name), rows_of(name)
    assert log["eval"]["config"].get("epochs_reducer", ["mean"]) == ["mean"]  # as assumed here
    checked = 0
    for entry in log["results"]["scores"]:
        for metric in ("accuracy", "mean"):
            if metric in entry["metrics"]:
                means = per_sample_means(rows, score_key(entry))
                assert len(means) == entry["scored_samples"]
                expected = entry["metrics"][metric]["value"]
                assert statistics.fmean(means.values()) == pytest.approx(expected, abs=1e-12)
                checked += 1
    assert checked == METRICS.get(name, 5)


@pytest.mark.parametrize("name", LOGS)
def test_each_samples_epoch_mean_equals_inspects_reduction(name: str) -> None:
    log, rows = header(name), rows_of(name)
    for reduction in log["reductions"]:
        assert reduction.get("reducer", "mean") == "mean"
        for sample in reduction["samples"]:
            value = sample["value"]
            items = value.items() if isinstance(value, dict) else [(None, value)]
            for key, expected in items:
                name_ = reduction["scorer"] + (f"/{key}" if key else "")
                got = per_sample_means(rows, name_)[str(sample["sample_id"])]
                assert got == pytest.approx(expected, abs=1e-12), (sample["sample_id"], name_)


@pytest.mark.parametrize("name", LOGS)
def test_counts_ids_epochs_and_keys_match_the_header(name: str) -> None:
    log, rows = header(name), rows_of(name)
    results, epochs = log["results"], log["eval"]["config"]["epochs"]
    assert len(rows) == results["total_samples"]
    assert sum("error" not in row for row in rows) == results["completed_samples"]
    ids = [str(i) for i in log["eval"]["dataset"]["sample_ids"]]
    keys = [(row["sample_id"], row["epoch"]) for row in rows]
    assert sorted(keys) == sorted((sid, e) for sid in ids for e in range(1, epochs + 1))
    assert {row["run"] for row in rows} == {log["eval"]["model"]}
    assert {row["task"] for row in rows} == {log["eval"]["task"]}


@pytest.mark.parametrize("name", LOGS)
def test_tokens_and_cost_sum_to_the_logs_model_usage(name: str) -> None:
    """The eval's model's usage is the sample's own, every other model's its graders'."""
    log, rows = header(name), rows_of(name)
    usage = log["stats"]["model_usage"]
    own = usage[log["eval"]["model"]]
    graders = [u for model, u in usage.items() if model != log["eval"]["model"]]
    for prefix, models in (("", [own]), ("grader_", graders)):
        tokens_in = sum(row.get(f"{prefix}tokens_in", 0) for row in rows)
        assert tokens_in == sum(u["input_tokens"] for u in models)
        tokens_out = sum(row.get(f"{prefix}tokens_out", 0) for row in rows)
        assert tokens_out == sum(u["output_tokens"] for u in models)
        cost = sum(row.get(f"{prefix}cost_usd", 0.0) for row in rows)
        assert cost == pytest.approx(sum(u["total_cost"] for u in models), rel=1e-9)


def test_json_eval_and_chunked_logs_of_one_run_read_the_same() -> None:
    rows = rows_of("small.json")
    assert rows_of("small.eval") == rows
    assert rows_of("small-chunked.eval") == rows  # its long system message is an attachment
    assert len(rows) == 4 and all("latency_s" in row for row in rows)


def test_fields_of_a_sample_as_inspect_logged_it() -> None:
    data = json.loads((FIXTURES / "small.json").read_text(encoding="utf-8"))
    rows = {(r["sample_id"], r["epoch"]): r for r in rows_of("small.json")}
    for sample in data["samples"]:
        row = rows[(str(sample["id"]), sample["epoch"])]
        assert row["output"] == sample["output"]["completion"]
        assert row["latency_s"] == sample["total_time"]
        if isinstance(sample["input"], str):
            assert row["input"] == sample["input"]
        else:
            assert row["input"] == "\n\n".join(m["content"] for m in sample["input"])
        target = sample["target"]
        assert row["expected"] == (target if isinstance(target, str) else "\n".join(target))
        assert row["scores"]["shape/terse"] == float(sample["scores"]["shape"]["value"]["terse"])
        assert "correct" not in row  # four scorers: none of them is "the" outcome


def test_the_two_runs_are_paired_with_different_results() -> None:
    a = {(r["sample_id"], r["epoch"]): r for r in rows_of("run-a.eval")}
    b = {(r["sample_id"], r["epoch"]): r for r in rows_of("run-b.eval")}
    assert set(a) == set(b) and len(a) == 18
    assert {r["run"] for r in a.values()} | {r["run"] for r in b.values()} == {
        "mockllm/model-a",
        "mockllm/model-b",
    }
    differ = [k for k in a if a[k]["scores"]["match"] != b[k]["scores"]["match"]]
    assert 0 < len(differ) < len(a)
    assert any(r["scores"]["graded"] == 0.5 for r in a.values())  # inspect's P


def test_an_errored_sample_has_its_error_and_no_scores() -> None:
    rows = rows_of("errors.eval")
    (failed,) = [row for row in rows if "error" in row]
    assert (failed["sample_id"], failed["epoch"]) == ("3", 2)
    assert "tool backend unavailable for sample 3" in failed["error"]
    for field in ("scores", "output", "correct", "tokens_in", "tokens_out", "cost_usd"):
        assert field not in failed
    # One scorer giving C/I only: correct is its outcome.
    for row in rows:
        if row is not failed:
            assert row["correct"] == (row["scores"]["match"] == 1.0)


def test_detect() -> None:
    for name in LOGS:
        assert inspect_log.detect(FIXTURES / name), name
    for other in (FIXTURES / "make_fixtures.py", FIXTURES, GOOD_JSONL, FIXTURES / "missing.eval"):
        assert not inspect_log.detect(other)


def test_rows_pass_calipers_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = []
    for name in LOGS:
        for row in rows_of(name):
            rows.append({**row, "run": f"{row['run']}@{name}"})  # the logs share model names
    path = tmp_path / "inspect.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["import", str(path), "--db", str(tmp_path / "db.duckdb")]) == 0
    assert "warning" not in capsys.readouterr().err.lower()


def refused(path: Path, *words: str) -> None:
    with pytest.raises(InputError) as err:
        inspect_log.read_rows(path)
    assert str(path) in err.value.message
    for word in words:
        assert word in err.value.message


@pytest.mark.parametrize("name", ["run-a.eval", "deflate.eval"])
def test_a_truncated_eval_is_refused(tmp_path: Path, name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    path = tmp_path / name
    path.write_bytes(data[: len(data) // 2])
    assert inspect_log.detect(path)  # so that auto-detection reports what is wrong with it
    refused(path, "truncated")


@pytest.mark.parametrize("name", ["run-a.eval", "deflate.eval"])
def test_a_damaged_entry_is_refused(tmp_path: Path, name: str) -> None:
    data = bytearray((FIXTURES / name).read_bytes())
    with zipfile.ZipFile(FIXTURES / name) as archive:
        info = archive.getinfo("samples/2_epoch_2.json")
    middle = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    data[middle : middle + 8] = bytes(8)
    path = tmp_path / name
    path.write_bytes(bytes(data))
    refused(path, "samples/2_epoch_2.json")


def test_json_that_is_not_an_inspect_log_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"version": 2, "results": {}}), encoding="utf-8")
    assert not inspect_log.detect(path)
    refused(path, "not an inspect_ai log")
    path.write_text("{not json", encoding="utf-8")
    refused(path, "JSON")
    refused(GOOD_JSONL, "JSON")


def test_a_zip_that_is_not_an_inspect_log_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data.json", "{}")
    assert not inspect_log.detect(path)
    refused(path, "header.json")


def test_a_newer_log_version_is_refused(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "small.json").read_text(encoding="utf-8"))
    data["version"] = 99
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert inspect_log.detect(path)
    refused(path, "version 99", "0.3.285", "1–2")

    eval_path = tmp_path / "newer.eval"
    with zipfile.ZipFile(FIXTURES / "deflate.eval") as src, zipfile.ZipFile(eval_path, "w") as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "header.json":
                body = json.dumps({**json.loads(body), "version": 3}).encode()
            dst.writestr(info.filename, body)
    refused(eval_path, "version 3", "written by inspect_ai 0.3.205")


def test_a_log_without_samples_is_refused(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "small.json").read_text(encoding="utf-8"))
    del data["samples"]
    path = tmp_path / "no-samples.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    refused(path, "no samples")


def test_an_unfinished_eval_yields_the_samples_it_holds(tmp_path: Path) -> None:
    """A crashed or still-running .eval has no header.json yet: _journal/start.json instead."""
    path = tmp_path / "unfinished.eval"
    with zipfile.ZipFile(FIXTURES / "deflate.eval") as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            if info.filename not in ("header.json", "reductions.json", "summaries.json"):
                dst.writestr(info.filename, src.read(info))
    assert inspect_log.detect(path)
    assert inspect_log.read_rows(path) == rows_of("deflate.eval")


def test_scores_inspect_cannot_convert_stay_absent(tmp_path: Path) -> None:
    """value_to_float would make these 0 with a warning (or skip NaN, inspect's unscored)."""
    data = json.loads((FIXTURES / "small.json").read_text(encoding="utf-8"))
    path = tmp_path / "odd.json"

    def read_with(values: list[Any]) -> list[dict[str, Any]]:
        for sample, value in zip(data["samples"], values, strict=True):
            sample["scores"] = {"judge": {"value": value}}
        path.write_text(json.dumps(data), encoding="utf-8")
        rows = {(r["sample_id"], r["epoch"]): r for r in inspect_log.read_rows(path)}
        return [rows[(str(s["id"]), s["epoch"])] for s in data["samples"]]

    for row in read_with(["maybe", [1, 0], float("nan"), "inf"]):
        assert "scores" not in row and "correct" not in row
    rows = read_with(["Yes", " 0.25", True, "N"])
    assert [row["scores"]["judge"] for row in rows] == [1.0, 0.25, 1.0, 0.0]
    assert not any("correct" in row for row in rows)  # not all C/I or booleans
    rows = read_with([False, "C", "I", True])
    assert [row["correct"] for row in rows] == [False, True, False, True]


SLASHED = ("slash-ids.eval", "slash-ids-chunked.eval")


@pytest.mark.parametrize("name", SLASHED)
def test_sample_ids_with_a_slash_are_all_read(name: str) -> None:
    """inspect names a sample's entry samples/{id}_epoch_{n}.json: an id with "/" nests it."""
    log, rows = header(name), rows_of(name)
    with zipfile.ZipFile(FIXTURES / name) as archive:
        nested = [n for n in archive.namelist() if n.startswith("samples/geo/eu/it_epoch_")]
    assert nested  # the layout the importer once skipped
    ids = [str(i) for i in log["eval"]["dataset"]["sample_ids"]]
    assert sum("/" in i for i in ids) == 6
    epochs = log["eval"]["config"]["epochs"]
    assert len(rows) == log["results"]["total_samples"] == len(ids) * epochs == 24
    assert {row["sample_id"] for row in rows} == set(ids)
    assert rows.warnings == []
    assert rows_of("slash-ids-chunked.eval") == rows_of("slash-ids.eval")


def test_importing_a_log_with_slashed_ids_counts_every_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = FIXTURES / "slash-ids.eval"
    assert main(["import", str(path), "--db", str(tmp_path / "db.duckdb")]) == 0
    assert "Imported 24 observations" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["graded.eval", "graded-roles.eval"])
def test_grader_usage_is_kept_apart_per_sample(name: str) -> None:
    """Each row's own usage is its sample's model_usage of the eval's model, its graders' the
    grader's; with model_roles, the grader's is also its role's (role_usage)."""
    log = header(name)
    model = log["eval"]["model"]
    rows = {(r["sample_id"], r["epoch"]): r for r in rows_of(name)}
    assert set(log["stats"]["model_usage"]) == {model, "mockllm/grader"}
    if name == "graded-roles.eval":
        assert log["stats"]["role_usage"] == {
            "grader": log["stats"]["model_usage"]["mockllm/grader"]
        }
    for sample in log["eval"]["dataset"]["sample_ids"]:
        for epoch in (1, 2):
            usage = member(FIXTURES / name, f"samples/{sample}_epoch_{epoch}.json")["model_usage"]
            row = rows[(str(sample), epoch)]
            own, grader = usage[model], usage["mockllm/grader"]
            assert (row["tokens_in"], row["tokens_out"]) == (
                own["input_tokens"],
                own["output_tokens"],
            )
            assert row["cost_usd"] == pytest.approx(own["total_cost"], rel=1e-12)
            got = (row["grader_tokens_in"], row["grader_tokens_out"])
            assert got == (grader["input_tokens"], grader["output_tokens"])
            assert row["grader_cost_usd"] == pytest.approx(grader["total_cost"], rel=1e-12)
            assert row["grader_tokens_in"] > 5 * row["tokens_in"]  # what was added before


def test_a_model_grading_itself_is_warned_about() -> None:
    """No grader bound: model_graded_qa falls back to the model under test, and model_usage has
    its answering and grading under one key; the sample's events tell them apart."""
    log, rows = header("graded-self.eval"), rows_of("graded-self.eval")
    assert list(log["stats"]["model_usage"]) == [log["eval"]["model"]]
    assert not any(key.startswith("grader_") for row in rows for key in row)
    (warning,) = rows.warnings
    assert warning.startswith(f"{FIXTURES / 'graded-self.eval'}: in 12 samples the model under")
    assert "also graded" in warning and "tokens_in/out and cost_usd" in warning


def graded_json(tmp_path: Path, edit: Any) -> inspect_log.Rows:
    """graded.eval as a JSON log, each sample passed through `edit` first."""
    log = member(FIXTURES / "graded.eval", "header.json")
    with zipfile.ZipFile(FIXTURES / "graded.eval") as archive:
        names = [n for n in archive.namelist() if n.startswith("samples/")]
    log["samples"] = [member(FIXTURES / "graded.eval", n) for n in names]
    for sample in log["samples"]:
        edit(log, sample)
    path = tmp_path / "graded.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    return inspect_log.read_rows(path)


def test_another_model_called_by_the_solver_is_warned_about(tmp_path: Path) -> None:
    def grader_called_by_the_solver(log: dict[str, Any], sample: dict[str, Any]) -> None:
        if sample["id"] == 1 and sample["epoch"] == 1:
            calls = [e for e in sample["events"] if e["event"] == "model"]
            (solver,) = [e["span_id"] for e in calls if e["model"] == log["eval"]["model"]]
            for event in calls:
                event["span_id"] = solver

    rows = graded_json(tmp_path, grader_called_by_the_solver)
    (warning,) = rows.warnings
    assert "in 1 sample mockllm/grader (not the eval's model) was called outside the" in warning
    assert graded_json(tmp_path, lambda log, sample: None).warnings == []


def test_usage_without_the_evals_model_stays_absent(tmp_path: Path) -> None:
    def rename(log: dict[str, Any], sample: dict[str, Any]) -> None:
        log["eval"]["model"] = "mockllm/other"

    rows = graded_json(tmp_path, rename)
    assert not any("tokens" in key or "cost" in key for row in rows for key in row)
    (warning,) = rows.warnings
    assert "12 samples have usage only of mockllm/grader, mockllm/model-a" in warning
    assert "mockllm/other" in warning and "left absent" in warning


@pytest.mark.parametrize(
    ("name", "status", "found"), [("incomplete.eval", "started", 12), ("failed.eval", "error", 16)]
)
def test_an_incomplete_log_is_warned_about(name: str, status: str, found: int) -> None:
    """incomplete.eval: the process was killed after 12 of 24 samples (no header.json);
    failed.eval: a sample error stopped the eval (status error)."""
    path = FIXTURES / name
    with zipfile.ZipFile(path) as archive:
        has_header = "header.json" in archive.namelist()
    log = member(path, "header.json" if has_header else "_journal/start.json")
    assert log.get("status", "started") == status
    assert (len(log["eval"]["dataset"]["sample_ids"]), log["eval"]["config"]["epochs"]) == (12, 2)
    rows = inspect_log.read_rows(path)
    assert len(rows) == found
    assert rows.warnings[0] == (
        f"{path}: incomplete log (status {status}): {found} of 24 samples (dataset 12 × 2 "
        "epochs); the scores cover only these"
    )


@pytest.mark.parametrize(
    ("name", "fewer"), [("errors.eval", "1 sample has"), ("failed.eval", "10 samples have")]
)
def test_unequal_scored_epochs_are_warned_about(name: str, fewer: str) -> None:
    """errors.eval: sample 3 errored in epoch 2; failed.eval: 8 samples stopped at epoch 1 and
    2 errored in epoch 2."""
    rows = rows_of(name)
    scored: dict[str, int] = defaultdict(int)
    for row in rows:
        scored[row["sample_id"]] += "scores" in row
    assert sum(n < max(scored.values()) for n in scored.values()) == int(fewer.split()[0])
    assert rows.warnings[-1] == (
        f"{FIXTURES / name}: {fewer} fewer scored epochs than others (an errored or unscored "
        "epoch); each sample still weighs the same in calipers' means — the mean of its scored "
        "epochs — as in inspect's headline, but those samples' means rest on fewer epochs"
    )


@pytest.mark.parametrize("name", [n for n in LOGS if n not in ("errors.eval", "graded-self.eval")])
def test_a_complete_log_has_no_warnings(name: str) -> None:
    rows = rows_of(name)
    assert isinstance(rows, list) and rows.warnings == []


def test_directory_hint(tmp_path: Path) -> None:
    assert (
        inspect_log.directory_hint(FIXTURES)
        == "Pass the inspect_ai logs inside it, e.g. DIR/*.eval."
    )
    (tmp_path / "small.json").write_bytes((FIXTURES / "small.json").read_bytes())
    assert (
        inspect_log.directory_hint(tmp_path)
        == "Pass the inspect_ai logs inside it, e.g. DIR/*.json."
    )
    other = tmp_path / "other"
    other.mkdir()
    assert inspect_log.directory_hint(other) is None
    (other / "small.jsonl").write_bytes(GOOD_JSONL.read_bytes())
    (other / "fake.eval").write_text("not a zip", encoding="utf-8")
    assert inspect_log.directory_hint(other) is None
    assert inspect_log.directory_hint(tmp_path / "missing") is None
