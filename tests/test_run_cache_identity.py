"""The run cache answers only for the run that made an output and the same version of the
pipeline: a file the pipeline reads (not named on the command line) changed, a new run name, a new
declared version or a changed environment variable the suite names each get fresh outputs; a run
re-run or resumed is served its own; another run's outputs are reused only with --reuse-from, and
the summary line and the report say so."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from conftest import validate_schema
from test_judging import run_schema

PY = shlex.quote(sys.executable)
# The application: its script reads a prompt file next to it, which the command line never names.
PIPELINE = """
import json, pathlib, sys
prompt = (pathlib.Path(__file__).parent / "prompts" / "system.txt").read_text().strip()
text = pathlib.Path(sys.argv[1]).read_text()
pathlib.Path(sys.argv[2]).write_text(json.dumps({"output": f"{prompt}: {text}"}))
"""
COMMAND = f"{PY} app/pipeline.py {{input}} {{output}}"
TASKS = 3
EPOCHS = 2


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "app" / "prompts").mkdir(parents=True)
    (tmp_path / "app" / "pipeline.py").write_text(PIPELINE)
    (tmp_path / "app" / "prompts" / "system.txt").write_text("v1")
    _suite(tmp_path)
    return tmp_path


def _suite(root: Path, pipeline: str = "") -> None:
    tasks = "".join(f"  - id: t{i}\n    input: q{i}\n" for i in range(TASKS))
    (root / "suite.yaml").write_text(f"name: s\nepochs: {EPOCHS}\n{pipeline}tasks:\n{tasks}")


def _run(capsys: pytest.CaptureFixture[str], run: str, *args: str) -> dict[str, Any]:
    capsys.readouterr()
    code = main(["run", "suite.yaml", "--pipeline", COMMAND, "--run", run, "--db", "s.duckdb",
                 "--json", "-", *args])  # fmt: skip
    body: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0, body
    validate_schema(body, run_schema())
    return body


def _outputs(run: str) -> set[str]:
    import duckdb

    with duckdb.connect("s.duckdb", read_only=True) as con:
        rows = con.execute("SELECT DISTINCT output FROM samples WHERE run = ?", [run]).fetchall()
    return {r[0] for r in rows}


def counts(body: dict[str, Any]) -> tuple[int, int, int]:
    return body["invocations"], body["cached"], body["reused"]


def test_a_new_run_name_after_a_change_gets_fresh_outputs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = TASKS * EPOCHS
    assert counts(_run(capsys, "main")) == (n, 0, 0)
    assert counts(_run(capsys, "main")) == (0, n, 0)  # a re-run of the same run: its own outputs
    # the application changes in a file its script reads, not named on the command line
    (project / "app" / "prompts" / "system.txt").write_text("v2")
    body = _run(capsys, "candidate-local")
    assert counts(body) == (n, 0, 0)  # not "0 pipeline invocations, 6 from the cache"
    assert _outputs("candidate-local") == {f"v2: q{i}" for i in range(TASKS)}
    assert _outputs("main") == {f"v1: q{i}" for i in range(TASKS)}
    assert body["pipeline"]["files"][-1] == "app/pipeline.py"  # after the interpreter
    assert body["pipeline"]["directories"] == [str((project / "app").resolve())]
    # the same run name after a change: run again too
    (project / "app" / "prompts" / "system.txt").write_text("v3")
    assert counts(_run(capsys, "candidate-local")) == (n, 0, 0)
    assert _outputs("candidate-local") == {f"v3: q{i}" for i in range(TASKS)}


def test_another_runs_outputs_only_with_reuse_from(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = TASKS * EPOCHS
    assert counts(_run(capsys, "main")) == (n, 0, 0)
    # unchanged pipeline, new name: still its own outputs by default
    assert counts(_run(capsys, "renamed")) == (n, 0, 0)
    body = _run(capsys, "copy", "--reuse-from", "main")
    assert counts(body) == (0, n, n) and body["pipeline"]["reuse_from"] == "main"
    assert counts(_run(capsys, "copy")) == (0, n, 0)  # reused outputs are now the run's own
    capsys.readouterr()
    assert main(["run", "suite.yaml", "--pipeline", COMMAND, "--run", "copy2", "--db",
                 "s.duckdb", "--reuse-from", "main"]) == 0  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())
    assert f"0 pipeline invocations, {n} from the cache ({n} of them outputs of run 'main', " \
        "--reuse-from)" in out  # fmt: skip
    # a changed application: the other run's outputs are of another version, not reused
    (project / "app" / "prompts" / "system.txt").write_text("v2")
    body = _run(capsys, "copy3", "--reuse-from", "main")
    assert counts(body) == (n, 0, 0)
    assert any("nothing was reused" in note for note in body["notes"])
    assert main(["run", "suite.yaml", "--pipeline", COMMAND, "--run", "x", "--reuse-from",
                 "x"]) == 1  # fmt: skip


def test_the_declared_version_and_environment_are_part_of_the_key(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    n = TASKS * EPOCHS
    assert counts(_run(capsys, "main")) == (n, 0, 0)
    body = _run(capsys, "main", "--pipeline-version", "2")
    assert counts(body) == (n, 0, 0) and body["pipeline"]["version"] == "2"
    assert counts(_run(capsys, "main", "--pipeline-version", "2")) == (0, n, 0)
    _suite(project, "pipeline:\n  version: 3\n  env: [APP_MODEL]\n")
    monkeypatch.setenv("APP_MODEL", "small")
    body = _run(capsys, "main")
    assert counts(body) == (n, 0, 0)
    assert body["pipeline"]["version"] == "3" and body["pipeline"]["env"] == ["APP_MODEL"]
    assert counts(_run(capsys, "main")) == (0, n, 0)
    monkeypatch.setenv("APP_MODEL", "large")
    assert counts(_run(capsys, "main")) == (n, 0, 0)
    monkeypatch.delenv("APP_MODEL")  # unset is not the same as any value
    assert counts(_run(capsys, "main")) == (n, 0, 0)
    _suite(project, "pipeline:\n  env: ['A=B']\n")
    assert main(["run", "suite.yaml", "--pipeline", COMMAND, "--run", "x"]) == 1
    assert "field 'pipeline.env'" in capsys.readouterr().err
