"""`--executor ray` on a local Ray instance: `calipers run` and `calipers check` give what the
local thread pool gives, with the files and caches on the driver, judge calls (through the real
`openai` client) as Ray tasks, no API key kept, and a clear error when Ray is missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from calipers.cli.main import main
from conftest import validate_schema
from judge_server import judge_server
from test_judging import run_schema
from test_run_suite import JUDGE, PIPELINE, SUITE, samples

pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # each test starts (and stops) a local Ray instance: ~4 s

KEY = "sk-test-ray-0123456789abcdef"
COMPARED = ("task", "epoch", "output", "error", "tokens_in", "tool_calls", "assertions")


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_KEY", KEY)
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "capital.txt").write_text("What is the capital of France?")
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return path


def run(suite: Path, *args: str) -> int:
    return main(["run", str(suite), "--pipeline", PIPELINE + " {input} {output}",
                 "--db", "s.duckdb", "-q", *args])  # fmt: skip


@pytest.mark.extended  # Ray in make test: tests/test_ray_data.py (Ray Data runs the pipeline)
def test_run_on_ray_matches_the_thread_pool_and_keeps_files_on_the_driver(suite: Path) -> None:
    assert run(suite, "--run", "local", "--no-cache", "--judge", JUDGE) == 0
    with judge_server() as server:
        judges = ["--judge", JUDGE, "--judge", f"http=openai:m@{server.url}",
                  "--judge-key-env", "JUDGE_KEY"]  # fmt: skip
        assert run(suite, "--run", "ray", "--executor", "ray", "-j", "2", "--json", "r.json",
                   *judges) == 0  # fmt: skip
        assert len(server.requests) == 4  # 2 tasks × 2 epochs, each judged once over HTTP
        report = json.loads(Path("r.json").read_text())
        validate_schema(report, run_schema())
        assert report["executor"] == "ray" and report["invocations"] == 4
        # Warm: every invocation and every judge call answered by the driver's caches.
        assert run(suite, "--run", "ray", "--executor", "ray", "--json", "r2.json",
                   *judges) == 0  # fmt: skip
        assert len(server.requests) == 4
    warm = json.loads(Path("r2.json").read_text())
    assert (warm["invocations"], warm["cached"]) == (0, 4)
    local, ray = samples(Path("s.duckdb"), "local"), samples(Path("s.duckdb"), "ray")
    assert [{k: r[k] for k in COMPARED} for r in local] == [
        {k: r[k] for k in COMPARED} for r in ray
    ]
    for lo, ra in zip(local, ray, strict=True):
        command = [j for j in ra["judgments"] if j["judge"] == lo["judgments"][0]["judge"]]
        assert [j["score"] for j in command] == [j["score"] for j in lo["judgments"]]
        assert [j["score"] for j in ra["judgments"] if j["judge"] == "http"] == [4.0]
    job = Path(".calipers/runs/ray/refund/1")
    assert (job / "input.md").read_text() == "Can I get a refund after 20 days?"
    assert json.loads((job / "output.json").read_text())["output"]
    kept = Path("s.duckdb").read_bytes() + Path("r.json").read_bytes()
    kept += b"".join(p.read_bytes() for p in Path(".calipers").rglob("*") if p.is_file())
    assert KEY.encode() not in kept


@pytest.mark.extended  # a second Ray instance: make test-all
def test_check_on_ray_gives_the_local_numbers(tmp_path: Path) -> None:
    project = tmp_path / "project"
    assert main(["init", str(project)]) == 0
    config = str(project / "kelvin.yaml")
    common = ["check", "--config", config, "--no-store", "-q", "--no-cache"]
    assert main([*common, "--json", str(tmp_path / "local.json")]) == 0
    assert main([*common, "--executor", "ray", "--json", str(tmp_path / "ray.json")]) == 0
    local, ray = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("local", "ray"))
    for key in ("invariance", "sensitivity", "kelvin_score", "invariance_sample",
                "sensitivity_sample", "sensitivity_by_type"):  # fmt: skip
        assert local[key] == ray[key], key
    assert local["calipers"]["invocations"] == ray["calipers"]["invocations"] > 0


def test_without_ray_installed_the_error_says_how_to_get_it(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    assert run(suite, "--run", "v1", "--executor", "ray") == 1
    err = capsys.readouterr().err
    assert "pip install ray" in err and "'/path/to/calipers[ray]'" in err and "Traceback" not in err
