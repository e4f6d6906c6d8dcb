"""Against kelvin itself: its published experiment imported and scored, and kelvin 0.3.0 (a
test-only dependency) run on the same project as `calipers check`, giving the same inputs and the
same numbers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from calipers.cli.main import main
from test_check import CASES, EXPERIMENT, check, project, report

KELVIN = Path(sys.executable).parent / "kelvin"


def test_reference_experiment_reproduces_the_published_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "store.duckdb")
    assert main(["import", "--format", "kelvin", str(EXPERIMENT), "--db", db]) == 0
    capsys.readouterr()
    assert main(["score", "--scheme", "robustness", "--db", db, "--json", "-"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"]["pillar2_decomposition_demo"]
    assert round(run["invariance"], 3) == 0.852 and run["invariance_sample"] == 54
    assert round(run["sensitivity"], 3) == 0.667 and run["sensitivity_sample"] == 6
    assert round(run["kelvin_score"], 3) == 0.481
    published = json.loads((EXPERIMENT / "report.json").read_text())
    for key in ("invariance", "sensitivity", "kelvin_score", "sensitivity_condition",
                "sensitivity_condition_sample", "content_effect"):  # fmt: skip
        assert run[key] == published[key]
    assert run["sensitivity_by_type"] == published["sensitivity_by_type"]
    low, high = run["intervals"]["invariance"]["low"], run["intervals"]["invariance"]["high"]
    assert low < run["invariance"] < high


def test_import_of_a_directory_that_is_not_kelvins_is_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "report.json").write_text('{"schema_version": 7, "cases": {}, "kelvin_score": 1}')
    assert main(["import", "--format", "kelvin", str(tmp_path), "--db",
                 str(tmp_path / "s.duckdb")]) == 1  # fmt: skip
    assert "schema_version 7 is not supported" in capsys.readouterr().err
    assert main(["import", "--format", "kelvin", str(tmp_path / "nowhere"), "--db",
                 str(tmp_path / "s.duckdb")]) == 1  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, pytest.param(3, marks=pytest.mark.extended)])  # another seed
def test_kelvin_and_calipers_agree_on_inputs_and_numbers(tmp_path: Path, seed: int) -> None:
    root = project(tmp_path, extra="counterfactual_swap:\n  enabled: true\n")
    config = root / "kelvin.yaml"
    config.write_text(config.read_text().replace("seed: 0", f"seed: {seed}"))
    theirs = tmp_path / "kelvin-run"
    shutil.copytree(root, theirs)
    done = subprocess.run([str(KELVIN), "check"], cwd=theirs, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert check(root) == 0
    ours, kelvins = report(root), json.loads((theirs / "kelvin" / "report.json").read_text())
    for key in ("invariance", "invariance_sample", "sensitivity", "sensitivity_sample",
                "kelvin_score", "sensitivity_by_type", "caps", "warnings",
                "sensitivity_condition", "sensitivity_condition_sample"):  # fmt: skip
        assert ours[key] == kelvins[key], key
    inputs = 0
    for case in sorted(p.stem for p in CASES.glob("*.md")):
        for mine in sorted((root / "kelvin" / case).rglob("input.md")):
            relative = mine.relative_to(root / "kelvin")
            assert mine.read_bytes() == (theirs / "kelvin" / relative).read_bytes(), relative
            inputs += 1
    assert inputs > 60
