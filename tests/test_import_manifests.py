"""Manifests and summaries beside results (issue 38): inspect_ai eval-set's logs.json and
eval-set.json (made by inspect_ai 0.3.285: tests/fixtures/importers/inspect/make_reducers.py),
helm-summarize's suite files and a HELM run directory's other files are named, skipped in a
directory with a note and refused alone with what to pass; any other single JSON document is one
error, never an error per line. And the hints for a directory no file of which is read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.adapters import manifests

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
EVAL_SET = FIXTURES / "inspect" / "eval-set"
HELM_SUITE = FIXTURES / "helm" / "benchmark_output" / "runs" / "calipers"
HELM_RUN = HELM_SUITE / "calipers_tiny:model=simple_model1"


def imported(args: list[str], capsys: Any) -> tuple[int, str]:
    code = main(["import", *args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("logs.json", "inspect_ai's eval-set log index (logs.json"),
        ("eval-set.json", "inspect_ai's eval-set manifest (eval-set.json"),
    ],
)
def test_an_inspect_manifest_alone_is_refused_with_what_to_pass(
    tmp_path: Path, capsys: Any, name: str, what: str
) -> None:
    path = EVAL_SET / name
    code, err = imported([str(path), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert code == 1
    assert err.count("error:") == 1 and "line" not in err  # one error, not one per line
    assert f"error: {path}: {what}" in err
    assert "hint: Pass the logs" in err and f"{EVAL_SET}/*.eval" in err
    assert not (tmp_path / "s.duckdb").exists() or "Traceback" not in err


def test_an_eval_set_directory_imports_its_logs_and_skips_its_manifests(
    tmp_path: Path, capsys: Any
) -> None:
    code, err = imported([str(EVAL_SET), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert code == 0, err
    for name in ("logs.json", "eval-set.json"):
        assert f"warning: {EVAL_SET / name}: skipped: inspect_ai's eval-set" in err
    assert main(["runs", "--db", str(tmp_path / "s.duckdb"), "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert sorted(r["run"] for r in runs) == ["mockllm/model-a", "mockllm/model-b"]


@pytest.mark.parametrize(
    "name",
    ["stats.json", "run_spec.json", "scenario_state.json", "instances.json",
     "display_predictions.json"],
)  # fmt: skip
def test_a_helm_run_file_alone_is_refused(tmp_path: Path, capsys: Any, name: str) -> None:
    code, err = imported([str(HELM_RUN / name), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert code == 1 and err.count("error:") == 1
    assert f"{HELM_RUN / name}: a file of a HELM run directory ({name}: " in err
    assert f"hint: Pass the run directory {HELM_RUN}" in err


@pytest.mark.parametrize(
    "name",
    ["groups.json", "summary.json", "run_specs.json", "runs.json", "costs.json", "schema.json",
     "groups_metadata.json", "runs_to_run_suites.json"],
)  # fmt: skip
def test_a_helm_summary_alone_is_refused(tmp_path: Path, capsys: Any, name: str) -> None:
    """helm-summarize's own files (crfm-helm 0.5.16, make_fixtures.sh)."""
    code, err = imported([str(HELM_SUITE / name), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert code == 1 and err.count("error:") == 1, err
    assert f"{HELM_SUITE / name}: helm-summarize's {name} (" in err
    assert f"hint: Pass the suite directory {HELM_SUITE}" in err


def test_a_helm_group_table_alone_is_refused(tmp_path: Path, capsys: Any) -> None:
    """groups/<group>.json: helm-summarize wrote none for this suite (no group in its schema),
    so this one is made here in the shape of groups.json (a list of tables)."""
    suite = tmp_path / "calipers"
    shutil.copytree(HELM_SUITE, suite)
    (suite / "groups").mkdir()
    table = json.loads((suite / "groups.json").read_text(encoding="utf-8"))
    (suite / "groups" / "tiny.json").write_text(json.dumps(table, indent=2), encoding="utf-8")
    code, err = imported([str(suite / "groups" / "tiny.json"), "--db", str(tmp_path / "s.duckdb")],
                         capsys)  # fmt: skip
    assert (
        code == 1
        and f"{suite / 'groups' / 'tiny.json'}: helm-summarize's table of the group tiny" in err
    )
    assert f"hint: Pass the suite directory {suite}" in err


def test_a_helm_suite_with_summaries_imports_its_runs(tmp_path: Path, capsys: Any) -> None:
    code, err = imported([str(HELM_SUITE), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert code == 0, err


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ('{\n  "model": "a",\n  "scores": [1, 2]\n}\n', "an object over 4 lines"),
        ('[\n {"a": 1},\n {"a": 2}\n]\n', "an array of 2 items, over 4 lines"),
        ('[{"a": 1}, {"a": 2}]', "an array of 2 items, over 1 line"),
    ],
)
def test_another_single_json_document_is_one_error(
    tmp_path: Path, capsys: Any, text: str, shape: str
) -> None:
    path = tmp_path / "export.json"
    path.write_text(text, encoding="utf-8")
    code, err = imported([str(path), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert code == 1 and err.count("error:") == 1 and "line 2" not in err
    assert f"error: {path}: one JSON document ({shape}), in no format calipers knows" in err
    assert "hint: calipers reads inspect_ai logs" in err and "--map" in err


def test_json_lines_and_broken_json_lines_are_read_as_before(tmp_path: Path) -> None:
    lines = tmp_path / "samples.json"
    lines.write_text('{"run": "a", "task": "t", "sample_id": "1"}\n{"run": "a"', "utf-8")
    assert manifests.single_document(lines) is None and manifests.identify(lines) is None
    cut = tmp_path / "cut.json"
    cut.write_text('{\n  "a": 1,\n', "utf-8")  # not one JSON value: the reader says where
    assert manifests.single_document(cut) is None


def test_a_directory_of_lighteval_results_hints_the_file_below(tmp_path: Path, capsys: Any) -> None:
    results = FIXTURES / "lighteval" / "model-a" / "results"
    code, err = imported([str(results), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert code == 1 and "DIR/*.jsonl" not in err
    (found,) = (results / "model-a").glob("results_*.json")
    assert (
        f"hint: It holds lighteval output below it, which a directory does not stand for: "
        f"pass {found}, or the directory lighteval wrote (--output-dir OUT" in err
    )


def test_a_deepeval_working_directory_hints_its_results_folder(tmp_path: Path, capsys: Any) -> None:
    work = tmp_path / "deepeval"
    (work / ".deepeval").mkdir(parents=True)
    (work / ".deepeval" / ".latest_test_run.json").write_text("{}", encoding="utf-8")
    code, err = imported([str(work), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert code == 1 and "DIR/*.jsonl" not in err
    assert "hint: deepeval keeps its cache and latest run in .deepeval/" in err
    assert "test_run_<timestamp>.json" in err
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    run = FIXTURES / "deepeval" / "test_run_model-a.json"
    shutil.copyfile(run, hidden / ".temp_test_run_data.json")
    code, err = imported([str(hidden), "--db", str(tmp_path / "s.duckdb")], capsys)
    assert code == 1 and f"pass {hidden / '.temp_test_run_data.json'}" in err
    assert "It holds deepeval output hidden in it" in err
