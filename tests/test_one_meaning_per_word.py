"""One meaning per word (issue 34): a **sample** is one item (a task's sample id), an
**observation** is a sample in one epoch (a row), everywhere — `runs`, the store report, a
comparison's per-task numbers, in the terminal, JSON, Markdown and HTML; and **tokens** is spelled
out where it is output tokens only (the ReasonScore leaderboard) or input and output (the objective
scheme's cost). Counted on real inspect_ai logs with epochs, the counts held against a direct
count of the logs' own sample entries."""

from __future__ import annotations

import html
import json
import re
import shutil
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main

INSPECT = Path(__file__).parent / "fixtures" / "importers" / "inspect"
EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
SIDES = {"v1": ("graded", "run-a"), "v2": ("graded-self", "prompt-v2")}


def direct_counts(names: tuple[str, ...]) -> tuple[dict[str, set[str]], int]:
    """Per task its sample ids, and the number of (sample, epoch) entries, from the zips."""
    from test_import_inspect import member

    ids: dict[str, set[str]] = defaultdict(set)
    entries = 0
    for name in names:
        path = INSPECT / f"{name}.eval"
        task = member(path, "header.json")["eval"]["task"]
        with zipfile.ZipFile(path) as archive:
            found = [n for n in archive.namelist() if re.fullmatch(r"samples/[^/]+\.json", n)]
        for entry in found:
            ids[task].add(str(member(path, entry)["id"]))
        entries += len(found)
    return ids, entries


@pytest.fixture
def logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    for side, names in SIDES.items():
        (tmp_path / "logs" / side).mkdir(parents=True)
        for name in names:
            shutil.copy(INSPECT / f"{name}.eval", tmp_path / "logs" / side)
    return tmp_path / "logs"


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_samples_and_observations_in_runs_and_the_store_report(
    logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "logs/v1", "logs/v2", "--name-by", "directory", "--db", "s.duckdb"]) == 0
    expected = {}
    for side, names in SIDES.items():
        ids, entries = direct_counts(names)
        expected[side] = (sum(len(v) for v in ids.values()), entries)
    assert expected == {"v1": (12, 30), "v2": (12, 30)}  # 6 + 6 samples; 6×2 + 6×3 entries
    assert f"Imported {30 + 30} observations" in _flat(capsys.readouterr().out)

    assert main(["runs", "--db", "s.duckdb", "--json", "-"]) == 0
    listed = {r["run"]: (r["samples"], r["observations"]) for r in json.loads(
        capsys.readouterr().out)}  # fmt: skip
    assert listed == expected
    assert main(["runs", "--db", "s.duckdb"]) == 0
    table = capsys.readouterr().out
    assert re.search(r"samples\s*┃.*\n.*┃\s*\(observations\)\s*┃", table)
    for side, (samples, observations) in expected.items():
        assert re.search(rf"│{side}\s*│\s*{samples} \({observations}\)\s*│", table), table

    assert main(["report", "--db", "s.duckdb", "--json", "r.json", "--html", "r.html"]) == 0
    report = json.loads(Path("r.json").read_text())
    assert {r["run"]: (r["samples"], r["observations"]) for r in report["runs"]} == expected
    page = html.unescape(Path("r.html").read_text())
    assert "<th>samples</th><th>observations</th>" in page
    for side, (samples, observations) in expected.items():
        assert f"<td>{side}</td><td>{samples}</td><td>{observations}</td>" in page


def test_a_comparisons_per_task_counts_are_samples(
    logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids, _ = direct_counts(SIDES["v1"])
    other, _ = direct_counts(SIDES["v2"])
    paired = {task: len(ids[task] & other[task]) for task in ids}
    assert paired == {"arith": 6, "qa": 6}
    epochs = {"arith": 3, "qa": 2}  # run-a and prompt-v2: 3 epochs; the graded logs: 2
    out = {k: tmp_path / f"c.{k}" for k in ("json", "md", "html")}
    assert main(["compare", "logs/v1", "--vs", "logs/v2", "--scheme", "metric", "--metric",
                 "match", "--gate", "none", "--json", str(out["json"]), "--markdown",
                 str(out["md"]), "--html", str(out["html"])]) == 0  # fmt: skip
    terminal = capsys.readouterr().out
    tasks = json.loads(out["json"].read_text())["pairs"][0]["tasks"]
    for task, t in tasks.items():
        assert (t["n_samples"], t["n"]) == (paired[task], paired[task] * epochs[task])
    # the terminal's and the Markdown's per-task column is the samples, and says so
    assert re.search(r"p adj\s*┃\s*samples┃", terminal)
    for task in tasks:
        assert re.search(rf"│{task}\s*│.*│\s*{paired[task]}│", terminal), terminal
    markdown = out["md"].read_text()
    assert "| task | match difference | 95% interval | p adjusted (Holm) | samples |" in markdown
    for task in tasks:
        assert re.search(rf"^\| {task} \|.*\| {paired[task]} \|$", markdown, re.M)
    # the page shows both, each under its own name
    page = out["html"].read_text()
    assert "<th>samples</th><th>observations</th></tr>" in page
    for task, t in tasks.items():
        assert f"<td>{paired[task]}</td><td>{t['n']}</td></tr>" in page
    assert "paired units (sample_id)" in page and "unpaired observations" in page


def test_tokens_say_which(capsys: pytest.CaptureFixture[str]) -> None:
    """ReasonScore's tokens are output tokens; the objective's cost counts input and output."""
    assert main(["leaderboard", str(EXAMPLES / "reasonscore_groups.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "output tokens" in out and not re.search(r"┃ tokens ┃", out)
    from calipers import api
    from calipers.demo.explain import cost_lines

    text = (EXAMPLES / "objective.jsonl").read_text()
    rows: list[dict[str, Any]] = [json.loads(line) for line in text.splitlines()]
    for row in rows:  # tokens in and out on every sample
        row["tokens_in"], row["tokens_out"] = 100, 20 if row["run"] == "prompt-v1" else 40
    with api.open(rows) as samples:
        result = api.compare(samples, "objective", baseline="prompt-v1", candidates=["prompt-v3"])
    lines = cost_lines(result)  # type: ignore[arg-type]
    tokens = [line for line in lines if "tokens" in line]
    (line,) = tokens
    assert "tokens (in + out)" in line and "120 → 140" in line  # 100 in + 20 or 40 out
