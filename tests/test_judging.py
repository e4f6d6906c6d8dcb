"""Judging many samples: ensembles and repeats (mean and SD checked against numpy on the stored
judgments), judge calls side by side within `calipers run`, failures kept as missing, command
judge retries, judge names, and `calipers grade --judge` re-judging what the store holds."""

from __future__ import annotations

import itertools
import json
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from calipers.cli.main import main
from calipers.grading.judges import CommandJudge, OpenAIJudge, judges_from_specs
from conftest import validate_schema
from judge_server import judge_server
from test_run_suite import JUDGE, PIPELINE, samples

PY = shlex.quote(sys.executable)

SUITE = """name: judged
tasks:
""" + "".join(
    f'  - id: t{i}\n    input: "question number {i}"\n    expected: "answer {i}"\n'
    for i in range(8)
)


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_KEY", "sk-test-abcdef0123456789")
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return path


def run_schema() -> dict[str, Any]:
    from importlib import resources

    text = resources.files("calipers.render.schemas").joinpath("run.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def run(suite: Path, *args: str) -> int:
    return main(["run", str(suite), "--pipeline", PIPELINE + " {input} {output}",
                 "--db", "s.duckdb", "-q", *args])  # fmt: skip


def openai_judge(url: str, name: str = "") -> list[str]:
    if name:  # an ensemble: each judge at its own endpoint
        return ["--judge", f"{name}=openai:judge-model@{url}", "--judge-key-env", "JUDGE_KEY"]
    return [
        "--judge",
        "openai:judge-model",
        "--judge-base-url",
        url,
        "--judge-key-env",
        "JUDGE_KEY",
    ]


def question(body: dict[str, Any]) -> int:
    content = body["messages"][0]["content"]
    return int(content.split("question number ")[1].split()[0].strip('"'))


def test_repeats_and_an_ensemble_report_mean_sd_and_agreement(suite: Path) -> None:
    counter = itertools.count()
    lock = threading.Lock()

    def script(body: dict[str, Any]) -> tuple[str, str]:
        with lock:  # scores vary between calls so that the repeats have a spread
            n = next(counter)
        return ("answer", json.dumps({"score": 1 + (question(body) + n) % 5}))

    with judge_server() as a, judge_server() as b:
        a.script = script
        b.script = lambda body: ("answer", json.dumps({"score": 1 + question(body) % 5}))
        code = run(suite, "--run", "v1", "--judge-repeat", "3", "--json", "report.json",
                   *openai_judge(a.url, "noisy"), *openai_judge(b.url, "steady"))  # fmt: skip
        assert code == 0
        assert len(a.requests) == len(b.requests) == 8 * 3
    report = json.loads(Path("report.json").read_text())
    validate_schema(report, run_schema())
    rows = samples(Path("s.duckdb"), "v1")
    by_judge = {s["judge"]: s for s in report["judging"]["judges"]}
    for name in ("noisy", "steady"):
        per_sample = [
            [j["score"] for j in sorted(r["judgments"], key=lambda j: j["repeat"])
             if j["judge"] == name]
            for r in rows
        ]  # fmt: skip
        assert all(len(s) == 3 for s in per_sample)
        assert by_judge[name]["mean"] == pytest.approx(np.mean([np.mean(s) for s in per_sample]))
        assert by_judge[name]["repeat_sd"] == pytest.approx(
            np.mean([np.std(s, ddof=1) for s in per_sample])
        )
        assert by_judge[name]["calls"] == 24 and by_judge[name]["failed"] == 0
    assert by_judge["steady"]["repeat_sd"] == 0.0 and by_judge["noisy"]["repeat_sd"] > 0
    (pair,) = report["judging"]["agreement"]
    means = {
        name: [np.mean([j["score"] for j in r["judgments"] if j["judge"] == name]) for r in rows]
        for name in ("noisy", "steady")
    }
    assert pair["samples"] == 8
    assert pair["pearson"] == pytest.approx(stats.pearsonr(means["noisy"], means["steady"])[0])
    # its interval: Fisher's z over the 8 samples, never narrower than the textbook one (scipy's)
    textbook = stats.pearsonr(means["noisy"], means["steady"]).confidence_interval()
    assert pair["method"] == "fisher-z-robust" and pair["refusal"] is None
    assert pair["low"] <= textbook.low <= pair["pearson"] <= textbook.high <= pair["high"]
    assert len(report["judging"]["prompt_hashes"]) == 1
    assert report["seed"] == 0 and report["executor"] == "local"


def test_judge_calls_run_side_by_side_within_a_run(suite: Path) -> None:
    with judge_server() as server:
        server.script = lambda body: (time.sleep(0.3), ("answer", '{"score": 3}'))[1]
        started = time.perf_counter()
        assert run(suite, "--run", "v1", "-j", "4", *openai_judge(server.url)) == 0
        elapsed = time.perf_counter() - started
    assert len(server.requests) == 8
    assert 2 <= server.max_in_flight <= 4  # bounded by -j, and more than one at a time
    assert elapsed < 8 * 0.3  # serial calls alone would take 2.4 s
    assert all(r["judgments"][0]["score"] == 3.0 for r in samples(Path("s.duckdb"), "v1"))


def test_a_judge_failing_after_its_retries_is_missing_never_zero(suite: Path) -> None:
    with judge_server() as server:
        server.script = lambda body: ("status", 500)
        # every call failed: exit 2, loudly (issue 20) — and the samples are stored anyway
        assert run(suite, "--run", "v1", "--json", "report.json", *openai_judge(server.url)) == 2
    for row in samples(Path("s.duckdb"), "v1"):
        (judgment,) = row["judgments"]
        assert judgment["score"] is None and "HTTP 500" in judgment["error"]
    report = json.loads(Path("report.json").read_text())
    validate_schema(report, run_schema())
    (summary,) = report["judging"]["judges"]
    assert summary["failed"] == summary["calls"] == 8 and summary["mean"] is None
    # Failures are not cached: the next run asks again, and gets answers.
    with judge_server() as server:
        assert run(suite, "--run", "v1", *openai_judge(server.url)) == 0
        assert len(server.requests) == 8
    assert all(r["judgments"][0]["score"] == 4.0 for r in samples(Path("s.duckdb"), "v1"))


def test_grade_judge_rejudges_the_store_with_the_recorded_input(suite: Path) -> None:
    assert run(suite, "--run", "v1", "--judge", JUDGE) == 0
    assert run(suite, "--run", "v2") == 0
    with judge_server() as server:
        code = main(["grade", "--db", "s.duckdb", "-q", "--run", "v1", "--judge-repeat", "2",
                     *openai_judge(server.url)])  # fmt: skip
        assert code == 0
        prompts = [r["body"]["messages"][0]["content"] for r in server.requests]
    assert len(prompts) == 8 * 2
    assert any("question number 3" in p and "answer 3" in p for p in prompts)
    v1 = samples(Path("s.duckdb"), "v1")
    for row in v1:  # the command judge's judgment stays, the new judge's two are added
        assert sorted(j["judge"] for j in row["judgments"]) == [
            f"command:{Path(sys.executable).name} length_judge.py",
            "openai:judge-model",
            "openai:judge-model",
        ]
    assert all(not r["judgments"] for r in samples(Path("s.duckdb"), "v2"))
    # Judging again replaces that judge's judgments instead of piling them up.
    with judge_server() as server:
        server.script = lambda body: ("answer", '{"score": 2}')
        assert main(["grade", "--db", "s.duckdb", "-q", "--run", "v1",
                     *openai_judge(server.url)]) == 0  # fmt: skip
    for row in samples(Path("s.duckdb"), "v1"):
        scores = [j["score"] for j in row["judgments"] if j["judge"] == "openai:judge-model"]
        assert scores == [2.0]


def test_grade_judge_errors(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grade", "--db", "none.duckdb", "--judge", JUDGE]) == 2
    assert "no store at none.duckdb" in capsys.readouterr().err
    Path("x.jsonl").write_text("{}\n")
    assert main(["grade", "x.jsonl", "--judge", JUDGE]) == 1
    assert "Import the file first" in capsys.readouterr().err
    assert main(["grade", "--judge", "gpt-4o"]) == 1
    assert "expected openai:MODEL or command:PROGRAM" in capsys.readouterr().err


def test_command_judge_retries_a_failing_call(tmp_path: Path) -> None:
    script = tmp_path / "flaky.py"
    script.write_text(
        "import pathlib, sys\n"
        f"marker = pathlib.Path({str(tmp_path / 'calls')!r})\n"
        "n = int(marker.read_text()) if marker.exists() else 0\n"
        "marker.write_text(str(n + 1))\n"
        "sys.stdin.read()\n"
        "if n < 2:\n    sys.exit('rate limited')\n"
        "print('{\"score\": 4}')\n"
    )
    judge = CommandJudge("flaky", f"{PY} {script}", retry_delay_s=0.0)
    assert json.loads(judge.complete("prompt"))["score"] == 4
    assert (tmp_path / "calls").read_text() == "3"
    (tmp_path / "calls").unlink()
    stingy = CommandJudge("flaky", f"{PY} {script}", retry_delay_s=0.0, max_retries=1)
    with pytest.raises(Exception, match="rate limited"):
        stingy.complete("prompt")


def test_judge_names_are_unique_within_an_ensemble() -> None:
    names = [j.name for j in judges_from_specs([
        "command:python judge.py", "command:python -S judge.py", "command:python judge.py",
        "strict=command:claude -p --output-format json", "openai:gpt-4o-mini",
        "command:claude -p", "local=openai:qwen@2.5@http://127.0.0.1:8000/v1",
    ])]  # fmt: skip
    assert names == ["command:python judge.py", "command:python", "command:python judge.py#2",
                     "strict", "openai:gpt-4o-mini", "command:claude", "local"]  # fmt: skip
    (local,) = judges_from_specs(["openai:qwen@2.5@http://127.0.0.1:8000/v1"])
    assert isinstance(local, OpenAIJudge)
    assert (local.model, local.base_url) == ("qwen@2.5", "http://127.0.0.1:8000/v1")
