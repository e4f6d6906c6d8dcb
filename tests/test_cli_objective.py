"""`calipers compare --scheme objective` and `calipers score --scheme objective` end to end: the
gates' exit codes, the JSON report against its published schema, thresholds from a config file and
from options, and clear errors with exit 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from conftest import validate_schema
from test_objective import judged_runs, row

EXAMPLE = Path(__file__).parent.parent / "docs" / "examples" / "objective.jsonl"


def published(kind: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["schema", "--report", kind]) == 0
    schema: dict[str, Any] = json.loads(capsys.readouterr().out)
    return schema


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run_compare(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["compare", *args, "--scheme", "objective", "--json", "-"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


def test_json_report_validates_and_carries_the_seed_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, report = run_compare(
        [str(EXAMPLE), "--baseline", "prompt-v1", "--candidate", "prompt-v2", "--seed", "9"],
        capsys,
    )
    assert code == 0
    validate_schema(report, published("objective-compare", capsys))
    assert report["verdict"] == "improved" and report["promote"] is True
    assert report["net_gain"] == pytest.approx(sum(t["delta"] for t in report["tasks"]))
    assert set(report["tasks"][0]) >= {
        "task", "baseline", "candidate", "delta", "objective_before", "objective_after",
        "cost_adjustment",
    }  # fmt: skip
    assert report["net_gain_interval"]["seed"] == 9
    assert report["parameters"]["min_composite_gain"] == 0.01


def test_gates_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    neutral = write(tmp_path / "neutral.jsonl", judged_runs([0.5], [0.5]))
    regressed = write(tmp_path / "regressed.jsonl", judged_runs([0.9], [0.5]))
    improved = write(tmp_path / "improved.jsonl", judged_runs([0.5], [0.9]))
    pair = ["--baseline", "base", "--candidate", "cand"]
    assert run_compare([str(neutral), *pair], capsys)[0] == 0  # no-regress is the default
    assert run_compare([str(neutral), *pair, "--gate", "ship"], capsys)[0] == 3
    assert run_compare([str(regressed), *pair], capsys)[0] == 3
    assert run_compare([str(regressed), *pair, "--gate", "none"], capsys)[0] == 0
    assert run_compare([str(improved), *pair, "--gate", "ship"], capsys)[0] == 0


def test_control_and_treatment_are_the_same_as_baseline_and_candidate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write(tmp_path / "d.jsonl", judged_runs([0.5, 0.6], [0.7, 0.6]))
    _, named = run_compare([str(data), "--baseline", "base", "--candidate", "cand"], capsys)
    _, aliased = run_compare([str(data), "--control", "base", "--treatment", "cand"], capsys)
    assert named == aliased and named["verdict"] == "improved"


def test_config_file_then_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write(tmp_path / "d.jsonl", judged_runs([0.5], [0.6]))  # net gain 0.04
    config = tmp_path / "thresholds.yaml"
    config.write_text("minCompositeGain: 0.05\nregression_composite_drop: 0.1\n")
    args = [str(data), "--baseline", "base", "--candidate", "cand", "--config", str(config)]
    _, report = run_compare(args, capsys)
    assert report["verdict"] == "neutral"
    assert report["parameters"]["min_composite_gain"] == 0.05
    assert report["parameters"]["regression_composite_drop"] == 0.1
    _, report = run_compare([*args, "--min-composite-gain", "0.02"], capsys)
    assert report["verdict"] == "improved"
    json_config = tmp_path / "t.json"
    json_config.write_text(json.dumps({"w_obj": 1, "w_judge": 0}))
    _, report = run_compare([str(data), "--baseline", "base", "--candidate", "cand",
                             "--config", str(json_config)], capsys)  # fmt: skip
    assert report["net_gain"] == 0.0 and report["verdict"] == "neutral"  # the judge weighs 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("min_gain: 0.02\n", "min_gain"),
        ("min_composite_gain: -1\n", "greater than or equal to 0"),
        ("w_obj: 0\n", "w_obj"),
        ("[1, 2]\n", "expected a mapping"),
        ("a: [\n", "not valid YAML"),
    ],
)
def test_bad_config_is_exit_1_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    data = write(tmp_path / "d.jsonl", judged_runs([0.5], [0.6]))
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    capsys.readouterr()
    code = main(["compare", str(data), "--scheme", "objective", "--baseline", "base",
                 "--candidate", "cand", "--config", str(config)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert message in err and "bad.yaml" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--candidate", "cand"], "--baseline"),
        (["--baseline", "base"], "one candidate"),
        (["--baseline", "base", "--candidate", "cand", "--candidate", "base"], "one candidate"),
        (["--baseline", "base", "--candidate", "other"], "'other' is not in"),
    ],
)
def test_bad_runs_are_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    data = write(tmp_path / "d.jsonl", judged_runs([0.5], [0.6]))
    capsys.readouterr()
    assert main(["compare", str(data), "--scheme", "objective", *args]) == 1
    assert message in capsys.readouterr().err


def test_terminal_output_names_the_verdict_and_regressions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [row("base", "t0", passed=2, checks=2), row("cand", "t0", passed=1, checks=2)]
    data = write(tmp_path / "d.jsonl", rows)
    capsys.readouterr()
    code = main(["compare", str(data), "--scheme", "objective", "--baseline", "base",
                 "--candidate", "cand"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 3
    assert "REGRESSED" in out and "do not promote" in out and "objective_drop" in out


def test_score_objective_with_a_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code = main(["score", str(EXAMPLE), "--scheme", "objective", "--baseline", "prompt-v1",
                 "--json", "-"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    validate_schema(report, published("objective", capsys))
    v2 = {t["task"]: t for t in report["runs"]["prompt-v2"]["tasks"]}
    assert v2["fix-login-bug"]["cost_adjustment"] == pytest.approx(0.1 * (1 - (0.75 + 4 / 6) / 2))
    assert all(t["cost_adjustment"] == 0 for t in report["runs"]["prompt-v1"]["tasks"])
    capsys.readouterr()
    assert main(["score", str(EXAMPLE), "--scheme", "objective"]) == 0
    assert "cost adjustments are 0" in capsys.readouterr().out
