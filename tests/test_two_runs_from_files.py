"""Two harness runs compared from their files, without an import step: `compare BASE... --vs
CANDIDATE...` names each side (given, the tool's names, the directories, the files, or the
roles), and a harness's output directory is read wherever files are (`import DIR`,
`compare DIR`), its runs named after it when asked (`import --name-by directory`).

The inspect_ai logs are real (tests/fixtures/importers/inspect): graded.eval, graded-self.eval
and small.eval are logs of one model, mockllm/model-a, so inspect gives both sides one run name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import calipers
from calipers.cli.compare_inputs import spread_vs
from calipers.cli.main import main

INSPECT = Path(__file__).parent / "fixtures" / "importers" / "inspect"
LM_EVAL = Path(__file__).parent / "fixtures" / "importers" / "lm_eval"
METRIC = ["--scheme", "metric", "--metric", "match"]


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """logs/v1 and logs/v2: two inspect log directories of one model, as `inspect eval-set`
    leaves them (with its logs.json index, which is not a log)."""
    monkeypatch.chdir(tmp_path)
    for side, names in (("v1", ("graded", "run-a")), ("v2", ("graded-self", "small"))):
        folder = tmp_path / "logs" / side
        folder.mkdir(parents=True)
        for name in names:
            shutil.copy(INSPECT / f"{name}.eval", folder)
        (folder / "logs.json").write_text("{}")
    return tmp_path / "logs"


def _compare(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    capsys.readouterr()
    code = main(["compare", *args, *METRIC, "--json", "-"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.startswith("{") else None, " ".join(err.split())


def _names(report: dict[str, Any]) -> tuple[str, str]:
    pair = report["pairs"][0]
    return pair["control"], pair["treatment"]


def test_vs_takes_the_words_after_it_up_to_the_next_option() -> None:
    assert spread_vs(["a", "b", "--vs", "c", "d", "--scheme", "metric", "e"]) == [
        "a", "b", "--vs", "c", "--vs", "d", "--scheme", "metric", "e",
    ]  # fmt: skip
    assert spread_vs(["a", "--vs=c", "d"]) == ["a", "--vs", "c", "--vs", "d"]
    assert spread_vs(["a", "--", "--vs", "x"]) == ["a", "--", "--vs", "x"]


def test_two_log_directories_of_one_model_in_one_command(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = sorted((logs / "v1").glob("*.eval")), sorted((logs / "v2").glob("*.eval"))
    # without --vs the files are one input, where both sides' samples collide: the hint says --vs
    code, _, err = _compare(capsys, *map(str, v1 + v2), "--baseline", "x")
    assert code == 1 and "sample keys are in both" in err and "--vs" in err
    # the shell's globs on both sides: named after their directories
    code, report, err = _compare(capsys, *map(str, v1), "--vs", *map(str, v2))
    assert code == 0, err
    assert _names(report) == ("v1", "v2")
    assert "named after their directories" in err
    assert report["pairs"][0]["n_pairs"] == 8  # qa's 6 samples and arith's 2, in both
    # the directories themselves, named as given
    code, report, err = _compare(capsys, "logs/v1", "--vs", "logs/v2", "--baseline", "main",
                                 "--candidate", "pr")  # fmt: skip
    assert code == 0 and _names(report) == ("main", "pr") and "named as given" in err
    # one name given: the other side named after its directory
    code, report, _ = _compare(capsys, "logs/v1", "--vs", "logs/v2", "--candidate", "pr")
    assert _names(report) == ("v1", "pr")


def test_what_names_the_sides_when_the_directories_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    # two models: the tool's run names
    code, report, err = _compare(capsys, str(INSPECT / "run-a.eval"), "--vs",
                                 str(INSPECT / "run-b.eval"))  # fmt: skip
    assert _names(report) == ("mockllm/model-a", "mockllm/model-b"), err
    # one model, one directory: the file names
    code, report, err = _compare(capsys, str(INSPECT / "graded.eval"), "--vs",
                                 str(INSPECT / "graded-self.eval"))  # fmt: skip
    assert _names(report) == ("graded", "graded-self") and "after their files" in err
    # nothing tells them apart: their roles
    for side in ("a", "b"):
        (tmp_path / side / "logs").mkdir(parents=True)
        shutil.copy(INSPECT / "graded.eval", tmp_path / side / "logs" / "run.eval")
    code, report, err = _compare(capsys, "a/logs/run.eval", "--vs", "b/logs/run.eval")
    assert _names(report) == ("baseline", "candidate") and "by their roles" in err
    # a side of two runs is refused
    code, _, err = _compare(capsys, str(INSPECT / "run-a.eval"), str(INSPECT / "run-b.eval"),
                            "--vs", str(INSPECT / "graded.eval"))  # fmt: skip
    assert code == 1 and "holds 2 runs" in err and "each side of --vs is one run" in err
    code, _, err = _compare(capsys, "--vs", "a/logs/run.eval")
    assert code == 1 and "--vs compares two sides" in err
    # lm-eval output directories (read as a whole) and the Python API
    samples, sides = calipers.open_sides(LM_EVAL / "run-a", LM_EVAL / "run-c")
    with samples:
        assert (sides.baseline, sides.candidate) == ("dummy-a", "dummy")
        assert samples.runs() == ["dummy", "dummy-a"]


def test_import_and_compare_read_a_log_directory(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/ci.md's steps, with inspect logs: `import DIR --as NAME`
    assert main(["import", "logs/v1", "--as", "main", "--db", "ci.duckdb", "-q"]) == 0
    assert main(["import", "logs/v2", "--as", "candidate", "--db", "ci.duckdb", "-q"]) == 0
    code, report, err = _compare(capsys, "--db", "ci.duckdb", "--baseline", "main",
                                 "--candidate", "candidate")  # fmt: skip
    assert code == 0 and report["pairs"][0]["n_pairs"] == 8, err
    # --name-by directory names each directory's runs after it
    assert main(["import", "logs/v1", "logs/v2", "--name-by", "directory", "--db", "d.duckdb",
                 "-q"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["runs", "--db", "d.duckdb", "--json"]) == 0
    runs = {
        r["run"]: (r["samples"], r["observations"]) for r in json.loads(capsys.readouterr().out)
    }
    assert runs == {"v1": (12, 30), "v2": (8, 16)}  # distinct samples; each epoch's observations
    # `compare DIR` and `calipers.open(DIR)`: the files in it (logs.json left out)
    code, report, err = _compare(capsys, "logs/v1")
    assert code == 0 and "the only run in logs/v1" in err
    with calipers.open("logs/v1") as samples:
        assert samples.count() == 30 and samples.runs() == ["mockllm/model-a"]
    assert main(["import", "logs/v1", "--as", "x", "--name-by", "file"]) == 1
    # a directory with nothing readable is still an error naming it
    (logs / "empty").mkdir()
    assert main(["import", str(logs / "empty"), "--db", "e.duckdb"]) == 1
    assert "is a directory" in capsys.readouterr().err
