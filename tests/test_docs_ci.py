"""docs/ci.md's workflow, run as written: its YAML parses, and its `run:` steps, executed with
bash on the bundled support-assistant suite, evaluate main, then a pull request that improves the
assistant (exit 0, PROGRESS in the step summary) and one that makes it worse (exit 3, REGRESS)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "ci.md"
ASSISTANT = ROOT / "src" / "calipers" / "demo" / "assistant"
BIN = Path(sys.executable).parent

PIPELINE = '''"""The application under evaluation (here: the demo assistant in one version)."""
import runpy
import sys
from pathlib import Path

sys.argv = [sys.argv[0], "--version", "{version}", *sys.argv[1:]]
runpy.run_path(str(Path(__file__).with_name("assistant.py")), run_name="__main__")
'''


def workflow() -> dict[str, Any]:
    block = re.search(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block, "docs/ci.md has no workflow"
    parsed: dict[str, Any] = yaml.safe_load(block.group(1))
    return parsed


def step(name: str) -> dict[str, Any]:
    steps = workflow()["jobs"]["evaluate"]["steps"]
    found: dict[str, Any] = next(s for s in steps if s.get("name") == name)
    return found


def test_the_workflow_gates_on_the_compare_step() -> None:
    flow = workflow()
    assert flow["permissions"] == {"contents": "read", "actions": "read"}
    compare = step("Compare with main (the gate)")["run"]
    assert '--markdown "$GITHUB_STEP_SUMMARY"' in compare and "--gate no-regress" in compare
    assert "calipers @ git+" in flow["env"]["CALIPERS"]
    assert step("Download them")["with"]["path"] == "baseline"


def _project(directory: Path, version: str) -> Path:
    (directory / "evals").mkdir(parents=True)
    (directory / "app").mkdir()
    shutil.copy(ASSISTANT / "suite.yaml", directory / "evals" / "suite.yaml")
    shutil.copy(ASSISTANT / "judge.py", directory / "evals" / "judge.py")
    shutil.copy(ASSISTANT / "assistant.py", directory / "app" / "assistant.py")
    (directory / "app" / "pipeline.py").write_text(PIPELINE.format(version=version))
    return directory


def _bash(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """A step's `run:` as the runner runs it: bash -e, with calipers and python on the PATH."""
    full = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **env}
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=full, capture_output=True, text=True
    )


def _renamed(source: Path, target: Path, names: dict[str, str]) -> None:
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    for r in rows:
        r["run"] = names[r["run"]]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.slow  # two suite runs and three comparisons, as commands
@pytest.mark.extended
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_workflow_steps_run_as_written(tmp_path: Path) -> None:
    evaluate = step("Run the evaluation")["run"]
    compare = step("Compare with main (the gate)")["run"]
    results = {}
    for branch, version, run in (("main", "v1", "main"), ("pr", "v2", "candidate")):
        project = _project(tmp_path / branch, version)
        done = _bash(evaluate, project, RUN=run)
        assert done.returncode == 0, done.stderr
        assert done.stdout == ""  # -q
        results[branch] = project / "results.jsonl"
    pr = tmp_path / "pr"
    # the artifact of main, downloaded into baseline/
    (pr / "baseline").mkdir()
    shutil.copy(results["main"], pr / "baseline" / "results.jsonl")
    summary = tmp_path / "step_summary.md"
    done = _bash(compare, pr, GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 0, done.stderr
    text = summary.read_text()
    assert text.startswith("### calipers compare · layered: **PROGRESS**\n")
    assert "✅ Passes the gate no-regress." in text
    assert json.loads((pr / "compare.json").read_text())["verdict"] == "PROGRESS"
    # a pull request that makes the assistant worse: v2 on main, v1 proposed
    worse = tmp_path / "worse"
    _renamed(results["pr"], worse / "baseline" / "results.jsonl", {"candidate": "main"})
    _renamed(results["main"], worse / "results.jsonl", {"main": "candidate"})
    done = _bash(compare, worse, GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 3, done.stderr
    assert "the verdict is REGRESS (gate no-regress)" in done.stderr
    text = summary.read_text()
    assert text.startswith("### calipers compare · layered: **REGRESS**\n")
    assert "❌ Fails the gate no-regress (exit 3)" in text
    # outside Actions the variable is unset: an error, not a summary silently dropped
    done = _bash(compare, worse, GITHUB_STEP_SUMMARY="")
    assert done.returncode == 1 and "GITHUB_STEP_SUMMARY" in done.stderr


def test_the_summary_shown_is_the_example_file() -> None:
    shown = re.search(r"```markdown\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert shown, "docs/ci.md shows no summary"
    example = ROOT / "docs" / "examples" / "compare-layered.md"
    assert shown.group(1) == example.read_text(encoding="utf-8"), (
        "docs/ci.md's summary differs from docs/examples/compare-layered.md"
    )
