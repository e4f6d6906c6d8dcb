"""Options are checked when they are read, before any work (issue 35's audit of every command's
options, benchmarks/audit_commands.py): a path that can name nothing, a report path that is a
directory, two descriptions of one design, a negative seed, a misspelt suite key — each an exit 1
naming the option, with no store made and no pipeline called."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calipers.cli.main import main

SUITE = "tasks:\n  - id: t\n    input: hi\n"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.jsonl").write_text(
        json.dumps({"run": "a", "task": "t", "sample_id": "s", "correct": True}) + "\n"
    )
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "log").mkdir()
    return tmp_path


def _pipeline(work: Path) -> str:
    """A pipeline that records each call, so a test can see that none was made."""
    return f"echo called >> {work / 'log' / 'calls'}; cp {{input}} {{output}}"


@pytest.mark.parametrize(
    "args",
    [
        ["import", "a.jsonl", "--db", "a.jsonl/store.duckdb"],  # under a file
        ["import", "a.jsonl", "--db", ""],  # empty: an unset variable
        ["runs", "--db", ""],
        ["demo", "--dir", "a.jsonl/demo"],
        ["check", "--out", "a.jsonl/out"],
        ["compare", "a.jsonl", "--html", "a.jsonl/x.html"],
        ["score", "a.jsonl", "--scheme", "metric", "--metric", "correct", "--json", ""],
        ["score", "a.jsonl", "--scheme", "metric", "--metric", "correct", "--json", "log"],
    ],
)
def test_a_path_that_can_name_nothing_is_refused_naming_the_option(
    work: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(p.name for p in work.iterdir())
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "Invalid value for '--" in err and "Traceback" not in err
    assert sorted(p.name for p in work.iterdir()) == before  # nothing made


@pytest.mark.parametrize("flag", ["--json", "--html"])
@pytest.mark.parametrize("value", ["", "log", "a.jsonl/r"])
def test_run_checks_its_report_paths_before_the_first_pipeline_call(
    work: Path, flag: str, value: str
) -> None:
    """A bad report path was found after every task had run and been stored."""
    args = ["run", "suite.yaml", "--run", "r", "--pipeline", _pipeline(work), "--db", "s.duckdb"]
    assert main([*args, flag, value]) == 1
    assert not (work / "log" / "calls").exists()
    assert not (work / "s.duckdb").exists()


def test_the_same_run_with_a_good_report_path_calls_the_pipeline(work: Path) -> None:
    args = ["run", "suite.yaml", "--run", "r", "--pipeline", _pipeline(work), "--db", "s.duckdb"]
    assert main([*args, "--json", "new/dir/r.json", "-q"]) in (0, 2)  # cp's output is not JSON
    assert (work / "log" / "calls").read_text() == "called\n"


def test_plan_refuses_two_descriptions_of_one_design(capsys: pytest.CaptureFixture[str]) -> None:
    """`--sd` was ignored silently beside `--pass-rate` (the plan was the pass rate's)."""
    assert main(["plan", "--pass-rate", "0.7", "--sd", "2", "--effect", "0.05"]) == 1
    assert "give one kind" in capsys.readouterr().err
    assert main(["plan", "--sd", "-1", "--effect", "0.05"]) == 1


def test_demo_refuses_a_negative_seed(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It was numpy's ValueError traceback."""
    assert main(["demo", "--seed", "-1", "--dir", "d"]) == 1
    assert "Traceback" not in capsys.readouterr().err
    assert not (work / "d").exists()


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        (SUITE.replace("    input: hi", "    cases: [hi]"), "a task takes `id`, `input`"),
        (SUITE + "pipeline:\n  timout_s: 3\n", "`pipeline:` takes `timeout_s`"),
        (SUITE + "epoch: 2\n", "a suite takes `name`, `epochs`"),
    ],
)
def test_a_misspelt_suite_key_is_named_with_the_keys_that_fit_there(
    work: Path, text: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hint was "write each value as its type", which fits a wrong type, not a wrong key."""
    (work / "suite.yaml").write_text(text)
    args = ["run", "suite.yaml", "--run", "r", "--pipeline", _pipeline(work), "--db", "s.duckdb"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "is not a field here" in err and hint in err
    assert not (work / "log" / "calls").exists()
