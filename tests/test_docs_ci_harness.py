"""docs/ci.md's "A harness's result files", run as written with bash for every harness its table
names: two output directories of one harness (main's, downloaded into baseline/, and the pull
request's, results/) compared in one command with --vs, and imported then compared in a store.
Both give the same verdict and exit code, and the step summary is written.

The directories are made from the real tools' files in tests/fixtures/importers/:

- inspect_ai: baseline/ holds graded.eval and run-a.eval, results/ graded-self.eval and
  small.eval — four logs of one model (mockllm/model-a), so both sides have the same run name;
- lm-evaluation-harness: the output directories run-a (dummy-a) and run-b (dummy-b);
- promptfoo: results-repeat.json (provider lookup, 6 tests × 2 repeats), and the same file with
  every result of the even-numbered tests failed (success false, score 0): a lower score.
"""

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

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "ci.md"
FIXTURES = Path(__file__).parent / "fixtures" / "importers"
BIN = Path(sys.executable).parent


def section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## A harness's result files")
    return text[start : text.index("\n## ", start + 1)]


def commands() -> tuple[str, str]:
    """The one-command comparison (--vs) and the import-then-compare sequence, as written."""
    blocks = re.findall(r"```\n(.*?)```", section(), re.S)
    vs = next(b for b in blocks if "--vs" in b)
    store = next(b for b in blocks if "calipers import" in b)
    return vs, store


def metrics() -> dict[str, str]:
    """harness → the metric its row of the table names."""
    rows = re.findall(r"^\| ([^|]+?) \| [^|]+ \| `([^`]+)`", section(), re.M)
    return {harness: metric for harness, metric in rows if harness != "harness"}


def _promptfoo_worse(source: Path, target: Path) -> None:
    data = json.loads(source.read_text())
    for result in data["results"]["results"]:
        if result["testIdx"] % 2 == 0:
            result["success"], result["score"] = False, 0
            if result.get("gradingResult"):
                result["gradingResult"].update({"pass": False, "score": 0})
    target.write_text(json.dumps(data))


def _directories(harness: str, root: Path) -> None:
    base, results = root / "baseline", root / "results"
    if harness == "inspect_ai":
        for side, logs in ((base, ("graded", "run-a")), (results, ("graded-self", "small"))):
            side.mkdir()
            for log in logs:
                shutil.copy(FIXTURES / "inspect" / f"{log}.eval", side)
    elif harness == "lm-evaluation-harness":
        shutil.copytree(FIXTURES / "lm_eval" / "run-a", base)
        shutil.copytree(FIXTURES / "lm_eval" / "run-b", results)
    else:
        assert harness == "promptfoo", harness
        base.mkdir()
        results.mkdir()
        shutil.copy(FIXTURES / "promptfoo" / "results-repeat.json", base / "results.json")
        _promptfoo_worse(FIXTURES / "promptfoo" / "results-repeat.json", results / "results.json")


def _bash(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **env}
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=full, capture_output=True, text=True
    )


def test_the_table_names_every_harness_the_section_speaks_of() -> None:
    assert metrics() == {
        "inspect_ai": "match", "lm-evaluation-harness": "acc", "promptfoo": "score",
    }  # fmt: skip
    vs, store = commands()
    assert "--metric acc" in vs and "--metric acc" in store
    assert "calipers import baseline/ --as main" in store


@pytest.mark.slow  # six commands per harness, as processes
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(
    "harness",
    ["inspect_ai", *(pytest.param(h, marks=pytest.mark.extended)
                     for h in ("lm-evaluation-harness", "promptfoo"))],
)  # fmt: skip
def test_each_harness_compares_as_documented(tmp_path: Path, harness: str) -> None:
    metric = metrics()[harness]
    _directories(harness, tmp_path)
    outcome: dict[str, Any] = {}
    for route, script in zip(("vs", "store"), commands(), strict=True):
        summary = tmp_path / f"summary-{route}.md"
        written = script.replace("--metric acc", f"--metric {metric}").replace(
            '--markdown "$GITHUB_STEP_SUMMARY"',
            f'--markdown "$GITHUB_STEP_SUMMARY" --json {route}.json',
        )
        done = _bash(written, tmp_path, GITHUB_STEP_SUMMARY=str(summary))
        assert done.returncode in (0, 3), (route, done.stderr)
        report = json.loads((tmp_path / f"{route}.json").read_text())
        pair = report["pairs"][0]
        assert (pair["control"], pair["treatment"]) == ("main", "candidate"), pair
        assert summary.read_text().startswith("### calipers compare · metric: **")
        means = {run: v["composite"]["mean"] for run, v in report["variants"].items()}
        outcome[route] = (done.returncode, report["verdict"], pair["n_pairs"], means)
    assert outcome["vs"] == outcome["store"]
    assert outcome["vs"][2] > 0
    if harness == "promptfoo":  # every other test failed in results/
        means = outcome["vs"][3]
        assert means["candidate"] < means["main"], means
