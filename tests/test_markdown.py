"""`--markdown PATH|-` on compare, check and score: the summary says what the JSON report says
(verdict, interval, margin decision, tasks that moved, seed, samples), names are inert Markdown
(checked by rendering it), stdout holds nothing else with `-`, files are replaced atomically, and
docs/examples/*.md are what the code makes today.

Regenerate the examples with `.venv/bin/python tests/test_markdown.py`."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from calipers.cli.main import main
from calipers.render.markdown import MAX_MOVED, compare_markdown, escape, score_markdown
from calipers.schemes.robustness.terminal import band

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "docs" / "examples"
FIXTURES = Path(__file__).parent / "fixtures"
LAYERED = EXAMPLES / "layered.jsonl"
LAYERED_ARGS = ["--scheme", "layered", "--baseline", "prompt-v1", "--candidate", "prompt-v2"]
# docs/examples/NAME.md ← the command that makes it (in a fresh directory for the check)
EXAMPLE_COMMANDS = {
    "compare-layered": ["compare", str(LAYERED), *LAYERED_ARGS],
    "compare-margin": ["compare", str(LAYERED), *LAYERED_ARGS, "--margin", "5%",
                       "--gate", "non-inferior"],
    # one invocation at a time: how many come from the cache is then fixed
    "check-robustness": ["check", "--no-store", "-j", "1"],
}  # fmt: skip

HOSTILE = [
    "x|y",
    "<script>alert(1)</script>",
    "[link](http://e.example)",
    "![img](http://e.example/i.png)",
    "a\nb",
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;http://e.example\x07click\x1b]8;;\x07",
    "- item",
    "+ item",
    "1. item",
    "# heading",
    "**bold** _em_ ~~del~~ `code`",
    "a\\|b",
    "@octocat and @org/team",
    "#12 GH-34",
    ":smile:",
    "www.evil.example and https://evil.example and me@evil.example",
    "$x^2$",
    "&lt;b&gt; &amp;",
    "<!-- comment -->",
    "\u202eevil\u202c",
    "   indented",
    "---",
    "> quote",
]


def _md() -> MarkdownIt:
    """GFM as far as markdown-it goes: CommonMark with tables and strikethrough."""
    return MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _visible(html: str) -> str:
    """The text a reader sees in rendered HTML (tags dropped, entities decoded)."""
    import html as htmllib

    return htmllib.unescape(re.sub(r"<[^>]+>", "", html)).strip()


def _expected(name: str) -> str:
    """What escape() promises to show: no ANSI or controls, line breaks as ↵, trimmed."""
    shown = re.sub(r"\x1b\[[0-9;]*m|\x1b\]8;;[^\x07]*\x07", "", name)
    return shown.replace("\n", "↵").replace("\u202e", "").replace("\u202c", "").strip()


@pytest.mark.parametrize("name", HOSTILE)
def test_escape_makes_a_name_inert(name: str) -> None:
    escaped = escape(name)
    assert "\n" not in escaped and "\x1b" not in escaped and "\x07" not in escaped
    # GFM autolinks need an unescaped ':' after a scheme, 'www.' or an unescaped '@'
    assert not re.search(r"(?<!\\)[:@]", escaped) and "www." not in escaped.lower()
    assert not re.search(r"@(?!\u2060)[A-Za-z0-9]", escaped)  # no GitHub @mention
    assert not re.search(r"#(?!\u2060)\d|GH-\d", escaped)  # no issue reference
    for html in (
        _md().render(f"run {escaped} here"),
        _md().render(f"{escaped}\n"),
        _md().render(f"- {escaped}\n"),
        _md().render(f"| a | b |\n|---|---|\n| {escaped} | 1 |\n"),
    ):
        tags = set(re.findall(r"<(/?[a-z0-9]+)", html))
        assert tags <= {"p", "/p", "ul", "/ul", "li", "/li", "table", "/table", "thead",
                        "/thead", "tbody", "/tbody", "tr", "/tr", "th", "/th", "td",
                        "/td"}, (name, html)  # fmt: skip
        assert _expected(name) in _visible(html).replace("\u2060", ""), (name, html)
    table = _md().render(f"| a | b |\n|---|---|\n| {escaped} | 1 |\n")
    assert table.count("<td>") == 2  # the name stays in its cell


def _layered(tmp_path: Path, *extra: str, code: int = 0) -> tuple[str, dict[str, Any]]:
    md, js = tmp_path / "summary.md", tmp_path / "report.json"
    args = ["compare", str(LAYERED), *LAYERED_ARGS, "-q", "--json", str(js), "--markdown", str(md)]
    assert main([*args, *extra]) == code
    return md.read_text(encoding="utf-8"), json.loads(js.read_text())


def test_layered_compare_says_what_the_json_says(tmp_path: Path) -> None:
    text, report = _layered(tmp_path)
    pair = report["pairs"][0]
    c = pair["composite"]
    assert text.startswith(f"### calipers compare · layered: **{report['verdict']}**\n")
    assert report["verdict"] == "PROGRESS" and "✅ Passes the gate no-regress." in text
    row = (
        f"| prompt-v2 | **PROGRESS** | {c['estimate']:+.3f} | "
        f"\\[{c['low']:+.3f}, {c['high']:+.3f}\\] | {pair['n_pairs']} |"
    )
    assert row in text.splitlines()
    assert "Against the control prompt-v1:" in text
    method = c["interval"]["formula"]
    level = f"{report['parameters']['confidence_level']:.0%}"
    assert (
        f"Interval {method} at {level} · paired by sample\\_id (no sample names a group) · seed "
        f"{report['seed']}." in text
    )
    assert "Scale: the layered scheme\\: every layer lies on 1–5." in text
    assert "Samples: prompt-v1 (control) 30 samples · prompt-v2 30 samples." in text
    moved = [name for name, t in pair["tasks"].items() if t["moved"]]
    assert f"**Tasks that moved** for prompt-v2: {len(moved)} of 2 (Holm, α 0.05)" in text
    for name in moved:
        t = pair["tasks"][name]
        assert f"- ▲ {name} {t['diff']:+.3f} \\[{t['low']:+.3f}, {t['high']:+.3f}\\]" in text
    # link-free, and no HTML but the <details> block that folds the flips away
    assert not re.search(
        r"https?:|www\.|!\[|\]\(|<[a-z]", re.sub(r"</?(details|summary)>", "", text)
    )
    # the file is what the library renders from the JSON report
    assert text == compare_markdown(report, gate="no-regress")


def test_margin_decision_and_failing_gate(tmp_path: Path) -> None:
    text, report = _layered(tmp_path, "--margin", "5%", "--gate", "non-inferior")
    m = report["pairs"][0]["margin"]
    assert m["decision"] == "superior" and m["given"] == "5%"
    assert (
        "| treatment | verdict | composite difference | 95% interval | paired | margin 5% |" in text
    )
    assert "| 30 | superior |" in text
    assert (
        f"Margin 5% ({m['margin']:.3f} on the composite's scale): prompt-v2 is **superior** — "
        in text
    )
    assert "✅ Passes the gate non-inferior." in text
    # the other way round: REGRESS, exit 3, and the summary says why
    swapped = ["--baseline", "prompt-v2", "--candidate", "prompt-v1"]
    md, js = tmp_path / "fail.md", tmp_path / "fail.json"
    # t by name: the per-task tests (15 pairs each) are too small for `auto` to trust t
    args = ["compare", str(LAYERED), "--scheme", "layered", *swapped, "--margin", "0.1", "-q",
            "--interval", "t"]  # fmt: skip
    assert main([*args, "--markdown", str(md), "--json", str(js)]) == 3
    text, report = md.read_text(), json.loads(js.read_text())
    assert report["verdict"] == "REGRESS"
    assert (
        "❌ Fails the gate no-regress (exit 3): the verdict is REGRESS (gate no-regress)." in text
    )
    assert "| margin 0\\.1 |" in text and "| inferior |" in text and "- ▼ qa " in text


def test_stdout_holds_only_the_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js = tmp_path / "r.json"
    assert main(["compare", str(LAYERED), *LAYERED_ARGS, "--markdown", "-", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert out == compare_markdown(json.loads(js.read_text()), gate="no-regress")
    assert main(["compare", str(LAYERED), *LAYERED_ARGS, "--markdown", "-", "--json", "-"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "only one report can go to stdout" in captured.err


def test_the_file_is_replaced_atomically(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = tmp_path / "out" / "summary.md"
    md.parent.mkdir()
    md.write_text("stale\n" * 1000)
    assert main(["compare", str(LAYERED), *LAYERED_ARGS, "-q", "--markdown", str(md)]) == 0
    assert md.read_text().startswith("### calipers compare") and "stale" not in md.read_text()
    assert [p.name for p in md.parent.iterdir()] == ["summary.md"]  # no temp file left
    assert main(["compare", str(LAYERED), *LAYERED_ARGS, "--markdown", str(tmp_path)]) == 1
    assert "is a directory" in capsys.readouterr().err


def test_hostile_names_through_compare(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in LAYERED.read_text().splitlines()]
    runs = {"prompt-v1": "x|y <script>alert(1)</script>", "prompt-v2": "[l](http://e.example) @me"}
    tasks = {"qa": "a\nb **bold** `t`", "summarize": "\x1b[31mred\x1b[0m | - #12"}
    for r in rows:
        r["run"], r["task"] = runs[r["run"]], tasks[r["task"]]
    data = tmp_path / "hostile.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    md = tmp_path / "h.md"
    args = ["compare", str(data), "--scheme", "layered", "--baseline", runs["prompt-v1"],
            "--candidate", runs["prompt-v2"], "-q", "--markdown", str(md),
            "--interval", "t"]  # fmt: skip  # t: so that a task moves and its name is shown
    assert main(args) == 0
    html = _md().render(md.read_text())
    assert not re.search(r"<(a|img|script|code|em|del|h[12])\b", html)
    # the verdict twice, "Tasks that moved" and "Flips", and the inserted words of the flips'
    # word diffs (this data has no outputs, so none): none from names
    assert re.findall(r"<strong>(.*?)</strong>", html) == [
        "PROGRESS",
        "PROGRESS",
        "Tasks that moved",
        "Flips",
    ]
    visible = _visible(html).replace("\u2060", "")
    for name in [*runs.values(), *tasks.values()]:
        assert _expected(name) in visible
    rows_html = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    assert all(r.count("<td>") + r.count("<th>") == 5 for r in rows_html)
    # every task's row: the names in their own cells
    tasks_rows = [r for r in rows_html if "<td>" in r and r.count("<td>") == 5]
    assert len(tasks_rows) == 3  # the pair's row and one per task


def _check_project(directory: Path) -> Path:
    """The project `calipers init` scaffolds: three cases and a deterministic pipeline."""
    assert main(["init", str(directory), "-q"]) == 0
    return directory


def test_check_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_check_project(tmp_path / "project"))
    assert main(["check", "--no-store", "--markdown", "-", "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    inv, sens, k = report["invariance"], report["sensitivity"], report["kelvin_score"]
    assert out.startswith(f"### calipers check: invariance {inv:.2f} · sensitivity {sens:.2f} · "
                          f"K {k:.2f}\n")  # fmt: skip
    i = report["intervals"]["invariance"]
    row = (
        f"| invariance | {inv:.2f} | \\[{i['low']:.2f}, {i['high']:.2f}\\] ({i['formula']}) | "
        f"{report['invariance_sample']} | {band(inv, 'invariance', i)} |"
    )
    assert row in out.splitlines()
    assert f"Seed {report['seed']} · 3 cases · 30 scored perturbations, 0 failed" in out
    assert "**Cases that moved**" in out
    assert "┏" not in out and "reports in" not in out  # nothing of the terminal view


def test_check_with_hostile_case_names(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    names = ["x|y", "<b>bold", "[l](e) *"]
    for name, source in zip(names, sorted((FIXTURES / "kelvin" / "cases").iterdir()), strict=False):
        (cases / f"{name}.md").write_text(source.read_text())
    stage = FIXTURES / "pipelines" / "stage_pipeline.py"
    (tmp_path / "kelvin.yaml").write_text(
        f'run: "{sys.executable} {stage} {{input}} {{output}}"\ncases: cases\n'
        "decision_field: stage_assessment\ngoverning_types: [gate_rule]\nseed: 0\ntimeout_s: 20\n"
    )
    md = tmp_path / "c.md"
    args = ["check", "--config", str(tmp_path / "kelvin.yaml"), "--no-store", "-q"]
    assert main([*args, "--markdown", str(md)]) == 0
    text = md.read_text()
    html = _md().render(text)
    assert not re.search(r"<(a|b|img|em)\b", html)
    listed = [n for n in names if f"- {escape(n)}: invariance" in text]
    assert listed and all(n in _visible(html) for n in listed)


@pytest.mark.parametrize(
    ("example", "args", "head"),
    [
        ("layered.jsonl", ["--scheme", "layered"], "| prompt-v1 | 4.222 |"),
        ("objective.jsonl", ["--scheme", "objective"], "| prompt-v1 | 0.768 | 3 | 6 |"),
        ("rubric.jsonl", ["--scheme", "rubric", "--rubric", str(EXAMPLES / "rubric.yaml"),
                          "--no-history"], "| agent-a | 8.65 |"),
        ("reasonscore.jsonl", ["--scheme", "reasonscore"], "| beta | "),
    ],
)  # fmt: skip
def test_score_summary_for_every_scheme(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], example: str, args: list[str], head: str
) -> None:
    assert main(["score", str(EXAMPLES / example), *args, "--markdown", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"### calipers score · {args[1]}\n") and head in out


def test_objective_compare_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compare", str(EXAMPLES / "objective.jsonl"), "--scheme", "objective",
            "--baseline", "prompt-v1", "--candidate", "prompt-v2", "--gate", "ship"]  # fmt: skip
    assert main([*args, "--markdown", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### calipers compare · objective: **IMPROVED** · promote\n")
    assert "✅ Passes the gate ship." in out and "Net gain +0.2492 (threshold ±0.01)" in out
    assert "- ▲ fix-login-bug +0.144 (0.825 → 0.969; cost adjustment +0.029)" in out
    assert "add-pagination" not in out  # +0.010 is within ±0.01: not moved


def test_tasks_that_moved_are_capped() -> None:
    tasks = {
        f"task{i:02d}": {"diff": -0.1 - i / 100, "low": -0.2, "high": -0.05, "p_adjusted": i / 100,
                         "moved": "down"}
        for i in range(MAX_MOVED + 5)
    }  # fmt: skip
    tasks["steady"] = {"diff": 0.0, "low": -0.1, "high": 0.1, "p_adjusted": 1.0, "moved": None}
    report = {
        "kind": "compare", "scheme": "metric", "verdict": "REGRESS", "reason": "r",
        "control": "a", "seed": 1, "n_resamples": 10, "parameters": {"metric": "acc",
        "confidence_level": 0.9}, "variants": {}, "notes": [],
        "pairs": [{"treatment": "b", "verdict": "REGRESS", "n_pairs": 3, "task_adjust": "bh",
                   "alpha": 0.1, "tasks": tasks,
                   "composite": {"estimate": -0.1, "low": -0.2, "high": -0.05}}],
    }  # fmt: skip
    text = compare_markdown(report)
    listed = [line for line in text.splitlines() if line.startswith("- ▼ task")]
    assert len(listed) == MAX_MOVED and listed[0].startswith("- ▼ task00 -0.100")
    assert "- and 5 more" in text and "- ▲ steady" not in text and "- ▼ steady" not in text
    # every task's numbers, folded away beyond TASKS_OPEN tasks; the one that did not move too
    assert "| steady | +0.000 | \\[-0.100, +0.100\\] | 1 | — |" in text
    assert "<summary>Every task (16)</summary>" in text
    assert f"**Tasks that moved** for b: {MAX_MOVED + 5} of {MAX_MOVED + 6}" in text
    assert "| acc difference | 90% interval |" in text


def test_score_of_a_plugin_scheme_names_its_runs() -> None:
    text = score_markdown({"scheme": "mine", "runs": {"x|y": {}}, "notes": ["n*"]})
    assert "Runs: x\\|y." in text and "> note: n\\*" in text


def write_examples(directory: Path, work: Path) -> dict[str, str]:
    """Make every docs example into `directory`: the compares from the docs data, the check in
    a freshly scaffolded project under `work`."""
    import os

    project = _check_project(work / "project")
    made = {}
    for name, command in EXAMPLE_COMMANDS.items():
        target = directory / f"{name}.md"
        here = Path.cwd()
        os.chdir(project if command[0] == "check" else here)
        try:
            assert main([*command, "-q", "--markdown", str(target)]) == 0
        finally:
            os.chdir(here)
        made[name] = target.read_text(encoding="utf-8")
    return made


def test_docs_examples_are_current(tmp_path: Path) -> None:
    made = write_examples(tmp_path / "out", tmp_path)
    for name, text in made.items():
        committed = EXAMPLES / f"{name}.md"
        assert committed.read_text(encoding="utf-8") == text, (
            f"docs/examples/{name}.md is out of date: .venv/bin/python tests/test_markdown.py"
        )


if __name__ == "__main__":  # regenerate docs/examples/*.md
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name in write_examples(Path(tmp) / "out", Path(tmp)):
            shutil.copy(Path(tmp) / "out" / f"{name}.md", EXAMPLES / f"{name}.md")
            print(f"wrote docs/examples/{name}.md")
