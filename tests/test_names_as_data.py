"""Run, task and sample names are data on every command: never a file path (`calipers run --run
../../victim` writes nothing outside), never terminal markup or control sequences (a run named
`x[/]` or carrying ANSI escapes and OSC hyperlinks), never matplotlib mathtext
(`cost_$_per_$_token`)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.render.text import escape, visible_controls

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
FIXTURES = Path(__file__).parent / "fixtures"
PY = shlex.quote(sys.executable)
PIPELINE = f"{PY} {shlex.quote(str(FIXTURES / 'pipelines' / 'answer_pipeline.py'))}"

MARKUP = "x[/]"
LINK = "[link=https://evil.example]click[/link]\x1b[31mred\x1b]8;;http://x\x07"
MATH = "cost_$_per_$_token"
BELL = "t[b]\x07\r"


def test_escape_keeps_text_literal_for_rich() -> None:
    from rich.console import Console

    console = Console(record=True, width=200, color_system=None)
    for name in (MARKUP, LINK, MATH, BELL, "[bold]b[/bold]"):
        console.print(escape(name))
    out = console.export_text()
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    assert "x[/]" in out and "[link=https://evil.example]click[/link]\\x1b[31mred" in out
    assert "[bold]b[/bold]" in out and MATH in out
    assert visible_controls("a\tb\nc\x1bd\x9be") == "a\tb\nc\\x1bd\\x9be"


def _renamed(tmp_path: Path, example: str, runs: list[str], tasks: list[str]) -> Path:
    """The docs example with its runs and tasks renamed, in order of appearance."""
    rows = [json.loads(line) for line in (EXAMPLES / example).read_text().splitlines()]
    run_map: dict[str, str] = {}
    task_map: dict[str, str] = {}
    for r in rows:
        run_map.setdefault(r["run"], runs[len(run_map) % len(runs)])
        task_map.setdefault(r["task"], tasks[len(task_map) % len(tasks)])
        r["run"], r["task"] = run_map[r["run"]], task_map[r["task"]]
    path = tmp_path / example
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _clean(capsys: pytest.CaptureFixture[str]) -> str:
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    assert "\x1b" not in text and "\x07" not in text, text[:400]
    return text


def test_hostile_names_through_the_store_and_the_layered_views(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # wide enough for the store's path on one line: under pytest-xdist tmp_path is longer
    # (popen-gwN/) and an 80-column console folds it inside `s[1].duckdb`
    monkeypatch.setenv("COLUMNS", "200")
    data = _renamed(tmp_path, "layered.jsonl", [MARKUP, LINK], [MATH, BELL])
    db = str(tmp_path / "s[1].duckdb")  # a path is data too
    assert main(["import", str(data), "--db", db]) == 0
    assert MARKUP in _clean(capsys)
    assert main(["runs", "--db", db]) == 0
    text = _clean(capsys)
    assert MARKUP in text and "s[1].duckdb" in text
    assert main(["score", "--scheme", "layered", "--db", db, "--tasks"]) == 0
    assert MARKUP in _clean(capsys)
    html = tmp_path / "c.html"
    code = main(["compare", str(data), "--scheme", "layered", "--baseline", MARKUP,
                 "--candidate", LINK, "--gate", "none", "--html", str(html)])  # fmt: skip
    assert code == 0
    text = _clean(capsys)
    assert MARKUP in text and "click[/link]\\x1b[31mred" in text
    assert MATH in html.read_text()  # drawn as itself in the plot, not as mathtext
    assert main(["report", "--db", db, "--html", str(tmp_path / "r.html")]) == 0
    _clean(capsys)


@pytest.mark.parametrize(
    ("example", "args"),
    [
        ("reasonscore.jsonl", ["score", "{data}", "--scheme", "reasonscore", "--tasks"]),
        ("reasonscore.jsonl", ["leaderboard", "{data}"]),
        ("rubric.jsonl", ["score", "{data}", "--scheme", "rubric", "--rubric", "{rubric}"]),
        ("rubric.jsonl", ["rank", "{data}", "--rubric", "{rubric}", "--json", "-"]),
        ("objective.jsonl", ["score", "{data}", "--scheme", "objective"]),
    ],
)
def test_hostile_names_in_every_scheme_view(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    example: str,
    args: list[str],
) -> None:
    # the default store is .calipers/ in the working directory (rubric scoring names it in its
    # note): the test's own, not the checkout's (shared by parallel test workers)
    monkeypatch.chdir(tmp_path)
    data = _renamed(tmp_path, example, [MARKUP, LINK, MATH], [MATH, BELL, MARKUP])
    given = {"data": str(data), "rubric": str(EXAMPLES / "rubric.yaml")}
    argv: list[Any] = [a.format(**given) for a in args]
    if "--json" not in argv:  # rank has no page (yet); its JSON is checked instead
        argv += ["--html", str(tmp_path / "p.html")]
    assert main(argv) == 0
    text = _clean(capsys)
    assert MARKUP in text or json.dumps(MARKUP)[1:-1] in text


@pytest.mark.parametrize("name", ["feature/login-v2", "../../../../escape/victim", MARKUP, LINK])
def test_a_run_name_is_never_a_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    work = tmp_path / "a" / "b" / "c" / "d"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    (work / "suite.yaml").write_text(
        "name: s\ntasks:\n  - id: t1\n    input: hi\n    assertions:\n"
        "      - {type: contains, value: hi}\n"
    )
    before = {p for p in tmp_path.rglob("*")}
    code = main(["run", "suite.yaml", "--pipeline", PIPELINE + " {input} {output}", "--run", name,
                 "--db", "s.duckdb"])  # fmt: skip
    assert code == 0
    _clean(capsys)
    outside = {p for p in tmp_path.rglob("*") if work not in p.parents and p != work} - before
    assert outside == set()  # nothing written beside or above the working directory
    assert main(["runs", "--db", "s.duckdb", "--json"]) == 0
    assert [r["run"] for r in json.loads(capsys.readouterr().out)] == [name]


def test_hostile_task_ids_through_run_score_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ids = [MARKUP, LINK, MATH, BELL, "../../up", "a/b"]
    tasks = "".join(
        f"  - id: {json.dumps(i)}\n    input: q{n}\n    assertions:\n"
        "      - {type: contains, value: q}\n"
        for n, i in enumerate(ids)
    )
    (tmp_path / "suite.yaml").write_text("name: s\ntasks:\n" + tasks)
    argv = ["run", "suite.yaml", "--pipeline", PIPELINE + " {input} {output}", "--db", "s.duckdb"]
    assert main([*argv, "--run", MARKUP]) == 0
    assert main([*argv, "--run", LINK]) == 0
    text = _clean(capsys)
    assert MARKUP in text
    # every job directory stays under .calipers/runs, one per task id and run
    assert {p.name for p in tmp_path.iterdir()} == {"suite.yaml", "s.duckdb", ".calipers"}
    runs = list((tmp_path / ".calipers" / "runs").iterdir())
    assert len(runs) == 2 and all(len(list(r.iterdir())) == len(ids) for r in runs)
    for args in (["score", "--scheme", "layered", "--tasks"],
                 ["compare", "--scheme", "layered", "--baseline", MARKUP, "--candidate", LINK,
                  "--gate", "none"]):  # fmt: skip
        assert main([*args, "--db", "s.duckdb", "--html", str(tmp_path / "p.html")]) == 0, args
        text = _clean(capsys)
        html = (tmp_path / "p.html").read_text()
        assert "<script>alert" not in html and "\x1b" not in html
    assert main(["report", "--db", "s.duckdb", "--html", str(tmp_path / "r.html")]) == 0
    _clean(capsys)


def test_hostile_case_names_through_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    kelvin = FIXTURES / "kelvin" / "cases"
    for name, source in zip(
        ["x[b]", "red\x1b[31m", "cost_$_per_$"], sorted(kelvin.iterdir()), strict=False
    ):
        (cases / f"{name}.md").write_text(source.read_text())
    stage = FIXTURES / "pipelines" / "stage_pipeline.py"
    (tmp_path / "kelvin.yaml").write_text(
        f'run: "{sys.executable} {stage} {{input}} {{output}}"\ncases: cases\n'
        "decision_field: stage_assessment\ngoverning_types: [gate_rule]\nseed: 0\ntimeout_s: 20\n"
    )
    code = main(["check", "--config", str(tmp_path / "kelvin.yaml"), "--db",
                 str(tmp_path / "s.duckdb"), "--html", str(tmp_path / "c.html")])  # fmt: skip
    assert code == 0
    text = _clean(capsys)
    assert "x[b]" in text and "red\\x1b[31m" in text
    html = (tmp_path / "c.html").read_text()
    assert "x[b]" in html and "\x1b" not in html


def test_usage_errors_show_bad_values_inert(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--interval", "x\x1b[31m", "f.jsonl"]) == 1
    assert main(["compare", "--confidence", "\x1b]8;;http://x\x07"]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "x\\x1b[31m" in err
