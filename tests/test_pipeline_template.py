"""One template engine for pipeline commands (issue 35, item 2): `calipers run --pipeline` and
`run:` in kelvin.yaml for `calipers check` fill `{input}` and `{output}`, take `{{`/`}}` as a
literal brace, and refuse any other brace before anything runs — exit 1, what and where (column,
caret) and how to fix it, the same words from both commands, never a traceback."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import duckdb
import pytest

from calipers.cli.main import main
from calipers.running.template import TemplateError, fill_command, parse_command

FIXTURES = Path(__file__).parent / "fixtures"
PY = shlex.quote(sys.executable)
ANSWER = f"{PY} {shlex.quote(str(FIXTURES / 'pipelines' / 'answer_pipeline.py'))}"
PROBLEM = "has the unknown placeholder `{print}` at column 6"
SUITE = """name: s
tasks:
  - id: refund
    input: "Can I get a refund after 20 days?"
    assertions:
      - {type: contains, value: "30 days"}
"""


def test_the_engine_fills_placeholders_and_literal_braces() -> None:
    template = parse_command("awk '{{print $1}}' {input} > {output}")
    assert template.fill(input="'/a b'", output="/o") == "awk '{print $1}' '/a b' > /o"
    assert fill_command("cat {input} {{}}", input="x") == "cat x {}"
    # the same as str.format, kelvin's engine, on every template both accept
    for text in ("{input}{output}", "a{{b}}c {input} d }}{{ {output}", "{{input}} {input}{output}"):
        assert parse_command(text).fill(input="I", output="O") == text.format(input="I", output="O")


@pytest.mark.parametrize(
    ("text", "problem", "column"),
    [
        ("awk '{print}' {input} > {output}", "unknown placeholder `{print}`", 6),
        ("cat {input} > {output}}", "a lone `}`", 23),
        ("cat {input {output}", "a `{` that is never closed", 5),
        ("x {} {input} {output}", "an empty `{}`", 3),
        ("cat {Input} {output}", "unknown placeholder `{Input}`", 5),
    ],
)
def test_a_stray_brace_is_refused_with_its_column_and_a_caret(
    text: str, problem: str, column: int
) -> None:
    with pytest.raises(TemplateError) as caught:
        parse_command(text, where="--pipeline")
    error = caught.value
    assert error.exit_code == 1
    assert problem in error.message and f"at column {column} " in error.message
    shown, caret = error.message.splitlines()[1:3]
    assert shown.strip() == text and caret.index("^") == shown.index(text) + column - 1
    assert error.hint is not None and "{{" in error.hint and "}}" in error.hint


def test_a_missing_or_escaped_placeholder_is_refused() -> None:
    with pytest.raises(TemplateError, match=r"has no \{output\} placeholder"):
        parse_command("cat {input}")
    with pytest.raises(TemplateError, match=r"escaped as \{\{input\}\}"):
        parse_command("cat {{input}} > {output}")
    assert parse_command("cat", required=()).fill() == "cat"


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return path


def test_run_refuses_a_literal_brace_before_running_anything(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit's command: a KeyError traceback; now exit 1 with the flag, the column and the
    `{{ }}` hint, and nothing run or stored."""
    marker = suite.parent / "ran"
    pipeline = (
        f"awk '{{print}}' {{input}} > /dev/null; touch {marker}; {ANSWER} {{input}} {{output}}"
    )
    code = main(["run", str(suite), "--pipeline", pipeline, "--run", "v", "--db", "s.duckdb"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"--pipeline {PROBLEM}" in err
    assert "{{print}}" in err and "Traceback" not in err
    assert not marker.exists() and not Path("s.duckdb").exists()


def test_run_fills_an_escaped_brace(suite: Path) -> None:
    pipeline = f"awk '{{{{print}}}}' {{input}} > /dev/null && {ANSWER} {{input}} {{output}}"
    code = main(["run", str(suite), "--pipeline", pipeline, "--run", "v", "--db", "s.duckdb", "-q"])
    assert code == 0
    con = duckdb.connect("s.duckdb", read_only=True)
    try:
        (output, error) = con.execute("SELECT output, error FROM samples").fetchone() or (None, 0)
    finally:
        con.close()
    assert error is None and "30 days" in output


def test_run_with_stdio_runs_the_command_as_written(suite: Path) -> None:
    """With --stdio the command is no template: its braces reach the shell as typed."""
    pipeline = f"echo x | awk '{{print}}' > /dev/null; {ANSWER} -"
    code = main(["run", str(suite), "--pipeline", pipeline, "--stdio", "--run", "v", "--db",
                 "s.duckdb", "-q"])  # fmt: skip
    assert code == 0


def test_check_refuses_the_same_template_in_the_same_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    assert main(["init", str(project), "-q"]) == 0
    config = project / "kelvin.yaml"
    text = config.read_text()
    run_line = next(line for line in text.splitlines() if line.startswith("run:"))
    line_number = text.splitlines().index(run_line) + 1
    config.write_text(text.replace(run_line, "run: \"awk '{print}' {input} > {output}\""))
    capsys.readouterr()
    code = main(["check", "--config", str(config), "--no-store"])
    err = capsys.readouterr().err
    assert code == 1
    assert f"{config}, line {line_number}: field 'run' {PROBLEM}" in err
    assert "{{print}}" in err and "Traceback" not in err
    assert not (project / "kelvin").exists()  # nothing ran
