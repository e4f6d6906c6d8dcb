"""Scheme options on the command line and in the library: an option the chosen scheme does not
take is refused (exit 1) on every command that takes scheme options, naming its flag and the
scheme, before anything is written; in the library it is an InputError naming the parameter. An
option the scheme does take reaches it unchanged and gives the library's numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import calipers
from calipers.cli.main import main
from calipers.errors import InputError
from calipers.render.json_report import dumps

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
REASONSCORE = EXAMPLES / "reasonscore.jsonl"
LAYERED = EXAMPLES / "layered.jsonl"
OBJECTIVE = EXAMPLES / "objective.jsonl"
RUBRIC = EXAMPLES / "rubric.jsonl"
PAIRS = {
    LAYERED: ["--baseline", "prompt-v1", "--candidate", "prompt-v2"],
    OBJECTIVE: ["--baseline", "prompt-v1", "--candidate", "prompt-v2"],
    REASONSCORE: ["--baseline", "alpha", "--candidate", "beta"],
}


def run_cli(tmp_path: Path, argv: list[str]) -> int:
    """`calipers ARGV` with the store, the JSON report and the page all under tmp_path."""
    outputs = ["--json", str(tmp_path / "out.json"), "--html", str(tmp_path / "out.html")]
    return main([*argv, *outputs, "--db", str(tmp_path / "store.duckdb")])


REFUSED_BY_SCORE = [
    (REASONSCORE, "reasonscore", ["--confidence", "0.5"], ["--confidence"]),
    (REASONSCORE, "reasonscore", ["--interval", "t"], ["--interval"]),
    (REASONSCORE, "reasonscore", ["--n-resamples", "500"], ["--n-resamples"]),
    (LAYERED, "layered", ["--z", "2"], ["--z"]),
    (REASONSCORE, "metric", ["--metric", "correct", "--weights", "fact=2"], ["--weights"]),
    (OBJECTIVE, "objective", ["--threshold", "4"], ["--threshold"]),
    (OBJECTIVE, "objective", ["--confidence", "0.9"], ["--confidence"]),
    (LAYERED, "robustness", ["--rubric", "x.yaml"], ["--rubric"]),
    (LAYERED, "layered", ["--no-history"], ["--no-history"]),
    (RUBRIC, "rubric", ["--z", "2"], ["--z"]),
]


@pytest.mark.parametrize(
    ("data", "scheme", "given", "flags"),
    REFUSED_BY_SCORE,
    ids=[f"{s}{''.join(g[:1])}" for _, s, g, _ in REFUSED_BY_SCORE],
)
def test_score_refuses_an_option_the_scheme_does_not_take(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    data: Path,
    scheme: str,
    given: list[str],
    flags: list[str],
) -> None:
    given = [str(tmp_path / a) if a == "x.yaml" else a for a in given]  # a file that is not there
    assert run_cli(tmp_path, ["score", str(data), "--scheme", scheme, *given]) == 1
    out, err = capsys.readouterr()
    message = err.splitlines()[0]
    assert message.startswith("error: ") and f"'{scheme}'" in message
    for flag in flags:
        assert flag in message
    assert "`" not in message  # the flag, not the library's parameter name
    assert out == ""
    assert list(tmp_path.iterdir()) == []  # no report, no page, no store


REFUSED_BY_COMPARE = [
    (LAYERED, "metric", ["--metric", "m", "--weights", "fact=2", "--standardize"],
     ["--weights", "--standardize"]),
    (LAYERED, "metric", ["--threshold", "3"], ["--threshold"]),
    (LAYERED, "layered", ["--w-obj", "0.5"], ["--w-obj"]),
    (LAYERED, "layered", ["--min-composite-gain", "0.02"], ["--min-composite-gain"]),
    (LAYERED, "layered", ["--config", "objective.yaml"], ["--config"]),
    (OBJECTIVE, "objective", ["--weights", "fact=1"], ["--weights"]),
    (OBJECTIVE, "objective", ["--trivial-diff", "0.2"], ["--trivial-diff"]),
    (OBJECTIVE, "objective", ["--metric", "acc"], ["--metric"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "scheme", "given", "flags"),
    REFUSED_BY_COMPARE,
    ids=[f"{s}{''.join(g[:1])}" for _, s, g, _ in REFUSED_BY_COMPARE],
)
def test_compare_refuses_an_option_the_scheme_does_not_take(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    data: Path,
    scheme: str,
    given: list[str],
    flags: list[str],
) -> None:
    argv = ["compare", str(data), "--scheme", scheme, *PAIRS[data], *given]
    assert run_cli(tmp_path, argv) == 1
    out, err = capsys.readouterr()
    message = err.splitlines()[0]
    assert message.startswith("error: ") and f"'{scheme}'" in message
    assert "comparison option" in message
    for flag in flags:
        assert flag in message
    assert "`" not in message
    assert out == ""
    assert list(tmp_path.iterdir()) == []


def test_compare_refuses_a_scheme_that_does_not_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", str(REASONSCORE), "--scheme", "reasonscore", *PAIRS[REASONSCORE]]
    assert run_cli(tmp_path, argv) == 1
    err = capsys.readouterr().err
    assert "the scheme 'reasonscore' does not compare runs" in err
    assert list(tmp_path.iterdir()) == []


def test_compare_refuses_options_of_a_scheme_that_does_not_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compare", str(REASONSCORE), "--scheme", "reasonscore", *PAIRS[REASONSCORE]]
    argv += ["--z", "2"]
    assert run_cli(tmp_path, argv) == 1  # compare has no --z at all: a usage error
    assert list(tmp_path.iterdir()) == []


def test_leaderboard_refuses_a_scheme_that_does_not_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(tmp_path, ["leaderboard", str(LAYERED), "--scheme", "robustness"]) == 1
    err = capsys.readouterr().err
    assert "the scheme 'robustness' does not rank runs" in err and "reasonscore" in err
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- the library


def test_library_score_refuses_an_option_naming_the_parameter() -> None:
    with calipers.open(REASONSCORE) as samples, pytest.raises(InputError) as info:
        calipers.score(samples, "reasonscore", confidence_level=0.5)
    error = info.value
    assert "`confidence_level`" in error.message and "'reasonscore'" in error.message
    assert error.parameters == ["confidence_level"]
    assert "`z`" in (error.hint or "")  # what it does take


def test_library_compare_refuses_an_option_naming_the_parameter() -> None:
    with calipers.open(LAYERED) as samples, pytest.raises(InputError) as info:
        calipers.compare(
            samples, "metric", baseline="prompt-v1", candidates=["prompt-v2"], weights="fact=2"
        )
    error = info.value
    assert "`weights`" in error.message and "'metric'" in error.message
    assert error.parameters == ["weights"]


def test_library_refuses_several_options_at_once() -> None:
    with calipers.open(LAYERED) as samples, pytest.raises(InputError) as info:
        refused = {"weights": "fact=2", "standardize": True}
        calipers.compare(
            samples, "metric", baseline="prompt-v1", candidates=["prompt-v2"], metric="m", **refused
        )
    assert info.value.parameters == ["standardize", "weights"]


def test_library_refuses_a_bad_value_naming_the_parameter() -> None:
    with calipers.open(LAYERED) as samples, pytest.raises(InputError) as info:
        calipers.score(samples, "layered", confidence_level=1.5)
    assert info.value.parameters == ["confidence_level"]
    assert "`confidence_level`" in info.value.message and "'layered'" in info.value.message


# ----------------------------------------------------------------------------- options that apply


def cli_report(tmp_path: Path, argv: list[str]) -> dict[str, Any]:
    out = tmp_path / "report.json"
    assert main([*argv, "--json", str(out), "--db", str(tmp_path / "store.duckdb"), "-q"]) == 0
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


def library_report(result: Any) -> dict[str, Any]:
    """The library result as the CLI writes it (same cleaning, same JSON round trip)."""
    report: dict[str, Any] = json.loads(dumps(result.to_dict()))
    return report


def test_z_reaches_reasonscore(tmp_path: Path) -> None:
    argv = ["score", str(REASONSCORE), "--scheme", "reasonscore", "--z", "1.0"]
    report = cli_report(tmp_path, argv)
    assert report["parameters"]["z"] == 1.0
    with calipers.open(REASONSCORE) as samples:
        assert report == library_report(calipers.score(samples, "reasonscore", z=1.0))
        default = library_report(calipers.score(samples, "reasonscore"))
    assert default["parameters"]["z"] != 1.0 and default["runs"] != report["runs"]


def test_confidence_reaches_layered(tmp_path: Path) -> None:
    argv = ["score", str(LAYERED), "--scheme", "layered", "--confidence", "0.9"]
    report = cli_report(tmp_path, argv)
    assert report["parameters"]["confidence_level"] == 0.9
    with calipers.open(LAYERED) as samples:
        expected = library_report(calipers.score(samples, "layered", confidence_level=0.9))
    assert report == expected


def test_trivial_diff_reaches_the_layered_comparison(tmp_path: Path) -> None:
    argv = ["compare", str(LAYERED), "--scheme", "layered", *PAIRS[LAYERED]]
    report = cli_report(tmp_path, [*argv, "--trivial-diff", "0.2", "--gate", "none"])
    assert report["parameters"]["trivial_diff"] == 0.2
    assert report["parameters"]["confidence_level"] == 0.95  # not given: the scheme's default
