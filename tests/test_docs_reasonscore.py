"""docs/reasonscore.md shows exactly what the code computes for its worked example."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from calipers.cli.main import main
from conftest import validate_schema

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "reasonscore.md"
EXAMPLE = ROOT / "docs" / "examples" / "reasonscore_example.py"


def load_example():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("reasonscore_example", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_doc_tables_are_what_the_code_prints() -> None:
    text = DOC.read_text()
    block = text.split("<!-- example:begin -->\n", 1)[1].split("<!-- example:end -->", 1)[0]
    assert block == load_example().render()


def test_example_data_is_what_the_spec_says(tmp_path: Path) -> None:
    example = load_example()
    shipped = [json.loads(line) for line in example.DATA.read_text().splitlines()]
    assert shipped == example.samples()
    shipped = [json.loads(line) for line in example.GROUPS_DATA.read_text().splitlines()]
    assert shipped == example.samples(example.GROUPS)


def test_doc_grouped_leaderboard_is_what_the_code_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = DOC.read_text()
    block = text.split("<!-- groups:begin -->\n```text\n", 1)[1].split("```\n<!-- groups:end", 1)[0]
    example = load_example()
    assert block == example.groups()
    # the CLI prints the same tables, and its JSON has the groups the doc describes
    assert main(["leaderboard", str(example.GROUPS_DATA), "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(g["ranking"], g["ranked"]) for g in report["groups"]] == [
        (["small", "large"], True),
        (["fast"], False),
        (["fixture"], False),
    ]


def test_cli_json_report_has_the_documented_fields(capsys: pytest.CaptureFixture[str]) -> None:
    data = ROOT / "docs" / "examples" / "reasonscore.jsonl"
    assert main(["score", str(data), "--scheme", "reasonscore", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["schema_version"] == "1" and report["parameters"] == {
        "z": 1.96,
        "seed": 20240917,
    }  # seed: the rank intervals
    assert [g["ranking"] for g in report["groups"]] == [["beta", "alpha"]]
    assert report["tier_order"] == ["easy", "hard"] and report["tier_order_rule"] == "vocabulary"
    run = report["runs"]["alpha"]
    assert set(run) >= {"tiers", "score_per_token", "avg_score", "avg_tokens"}
    tier = run["tiers"]["hard"]
    assert set(tier) == {"score", "avg_tokens", "tasks"}
    task = tier["tasks"]["dates"]
    assert set(task) >= {
        "score",
        "center",
        "margin",
        "truncated_ratio",
        "adjusted_successes",
        "adjusted_trials",
        "points",
    }
    assert set(task["points"][0]) >= {
        "adjusted_successes",
        "adjusted_trials",
        "center",
        "margin",
        "truncated_ratio",
        "score",
    }
    assert 0.01 <= task["score"] <= 1
    assert run["score_per_token"] == pytest.approx(
        (run["tiers"]["easy"]["score"] + tier["score"])
        / 2
        / ((run["tiers"]["easy"]["avg_tokens"] + tier["avg_tokens"]) / 2)
    )


def test_leaderboard_and_file_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = ROOT / "docs" / "examples" / "reasonscore.jsonl"
    out = tmp_path / "report.json"
    assert main(["leaderboard", str(data), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.index("beta") < printed.index("alpha")
    assert json.loads(out.read_text())["groups"][0]["ranking"] == ["beta", "alpha"]
    assert main(["leaderboard", str(data), "--scheme", "rubric"]) == 1


def test_reports_validate_against_the_published_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    assert main(["schema", "--report", "reasonscore"]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    data = ROOT / "docs" / "examples" / "reasonscore.jsonl"
    assert main(["score", str(data), "--scheme", "reasonscore", "--json", "-"]) == 0
    validate_schema(json.loads(capsys.readouterr().out), schema)
    # a report with undefined scores (certain guesses) still validates: nulls, not zeros
    certain = tmp_path / "certain.jsonl"
    certain.write_text(
        "".join(
            json.dumps(
                {
                    "run": "m",
                    "task": "coin",
                    "sample_id": str(i),
                    "correct": i % 2 == 0,
                    "guess_chance": 1.0,
                    "tokens_out": 5,
                }
            )
            + "\n"
            for i in range(6)
        )
    )
    assert main(["score", str(certain), "--scheme", "reasonscore", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    validate_schema(report, schema)
    assert report["runs"]["m"]["score_per_token"] is None
    assert main(["schema", "--report", "nope"]) == 1


def test_doc_cost_example_is_what_the_code_prints() -> None:
    """docs/reasonscore.md, the cost beside the leaderboard: exactly what the code prints."""
    import doc_examples

    assert doc_examples.example_block("reasonscore", "cost") == load_example().cost()
