"""The terminal view of every command: readable at 80 columns (no line wider), no colour under
NO_COLOR even on a terminal that forces colour, and nothing on stdout under --quiet."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.cells import cell_len

from calipers.cli.main import main
from calipers.demo.synthetic import DEMO_MODELS, generate_samples, write_jsonl

pytestmark = pytest.mark.slow  # every command once per mode: ~20 s

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
# SGR parameters that set a colour: 30–37, 38;…, 40–47, 48;…, 90–97, 100–107
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-8]|4[0-8]|9[0-7]|10[0-7])[;m]")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def commands(tmp: Path) -> list[tuple[list[str], bool]]:
    """(arguments, whether --quiet applies): every command, on data that exercises its views."""
    data, db, rubric_db = tmp / "samples.jsonl", str(tmp / "s.duckdb"), str(tmp / "r.duckdb")
    if not data.exists():
        write_jsonl(data, generate_samples(models=DEMO_MODELS[:3], samples_per_point=2, epochs=1))
    layered, objective = str(EXAMPLES / "layered.jsonl"), str(EXAMPLES / "objective.jsonl")
    rubric = str(EXAMPLES / "rubric.jsonl")
    listed = [
        (["import", str(data), "--db", db], True),
        (["runs", "--db", db], False),  # a listing: its output is the result
        (["schemes"], False),
        (["score", "--scheme", "reasonscore", "--tasks", "--db", db], True),
        (["leaderboard", "--db", db], True),
        (["score", layered, "--scheme", "layered"], True),
        (["compare", layered, "--scheme", "layered", "--control", "prompt-v1",
          "--treatment", "prompt-v2", "--gate", "none"], True),
        (["compare", objective, "--scheme", "objective", "--baseline", "prompt-v1",
          "--candidate", "prompt-v3", "--gate", "none"], True),
        (["score", rubric, "--scheme", "rubric", "--db", rubric_db], True),
        (["rank", rubric, "--db", rubric_db], True),
        (["report", "--db", db, "--html", str(tmp / "store.html")], True),
        (["export", str(tmp / "out.parquet"), "--db", db], True),
        (["init", str(tmp / "project")], True),
        (["check", "--config", str(tmp / "project" / "kelvin.yaml"), "--no-store"], True),
    ]  # fmt: skip
    return listed


def run_all(
    tmp: Path, capsys: pytest.CaptureFixture[str], extra: Callable[[bool], list[str]]
) -> dict[str, str]:
    out = {}
    for args, quiet_applies in commands(tmp):
        code = main(args + extra(quiet_applies))
        captured = capsys.readouterr()
        assert code in (0, 3), (args, captured.err)
        out[" ".join(args[:3])] = captured.out
    return out


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A colour terminal 80 columns wide."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.mark.extended  # every command again: make test-all
def test_every_command_fits_80_columns(
    terminal: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = run_all(tmp_path, capsys, lambda _: [])
    assert len(outputs) == len(commands(tmp_path))
    for command, text in outputs.items():
        assert text.strip(), f"{command}: printed nothing"
        wide = [line for line in ANSI.sub("", text).splitlines() if cell_len(line) > 80]
        assert not wide, f"{command}: {len(wide)} line(s) over 80 columns, e.g. {wide[0]!r}"
    # the forced terminal does colour, so the NO_COLOR test below can fail
    assert any(COLOUR.search(text) for text in outputs.values())


def test_no_color_removes_every_colour(
    terminal: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    for command, text in run_all(tmp_path, capsys, lambda _: []).items():
        assert not COLOUR.search(text), f"{command}: colour under NO_COLOR"


def test_quiet_prints_nothing_on_stdout(
    terminal: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = run_all(tmp_path, capsys, lambda applies: ["--quiet"] if applies else [])
    for (args, applies), text in zip(commands(tmp_path), outputs.values(), strict=True):
        if applies:
            assert text == "", f"{' '.join(args[:3])}: printed {text[:200]!r} under --quiet"
