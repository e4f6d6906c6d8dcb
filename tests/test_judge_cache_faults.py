"""The judge cache under faults and changes: each readable reply is cached the moment it arrives
(a run killed while judging repeats only the calls in flight), every draw of a pipeline (epoch)
has its own key, and a changed judge program is a new judge, not a cache hit."""

from __future__ import annotations

import json
import shlex
import sys
import threading
import time
from pathlib import Path

import pytest

from calipers.grading.judge_cache import JudgeCache
from calipers.grading.judges import CommandJudge, OpenAIJudge, PromptTemplate
from calipers.running.executor import ThreadBackend
from calipers.running.judging import JudgeOptions, JudgeRequest, judge_requests
from judge_server import judge_server


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", "sk-test-0123456789abcdef")


def _requests(n: int, draws: bool = True) -> list[JudgeRequest]:
    template = PromptTemplate.load("overall")
    prompt = template.render(task="Add 2 and 2.", output="4", expected="4")  # identical outputs
    return [
        JudgeRequest(template, prompt, f"run\x00t\x00s\x00{e}" if draws else "") for e in range(n)
    ]


def test_replies_are_cached_as_they_arrive(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with judge_server() as server:
        server.actions = [("answer", json.dumps({"score": 4}))] * 3 + [("hang", 4.0)]
        judge = OpenAIJudge("j", "m", base_url=server.url, api_key_env="JUDGE_KEY",
                            max_retries=0, timeout_s=10.0)  # fmt: skip
        options = JudgeOptions(judges=[judge], cache_dir=cache)
        backend = ThreadBackend(4)
        done = threading.Event()
        worker = threading.Thread(
            target=lambda: (
                judge_requests(_requests(4), options, backend, progress=False),
                done.set(),
            ),
            daemon=True,
        )
        worker.start()
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and len(JudgeCache(cache).keys()) < 3:
            time.sleep(0.05)
        # three replies are on disk while the fourth call still hangs: a kill now loses only it
        assert len(JudgeCache(cache).keys()) == 3 and not done.is_set()
        worker.join(timeout=20)
        backend.close()
    assert len(JudgeCache(cache).keys()) == 4


def test_each_epoch_is_its_own_draw(tmp_path: Path) -> None:
    with judge_server() as server:
        scores = iter([1, 2, 3, 4, 5, 1])
        server.script = lambda body: ("answer", json.dumps({"score": next(scores)}))
        judge = OpenAIJudge("j", "m", base_url=server.url, api_key_env="JUDGE_KEY")
        options = JudgeOptions(judges=[judge], cache_dir=tmp_path / "cache")
        backend = ThreadBackend(1)
        first = judge_requests(_requests(3), options, backend, progress=False)
        again = judge_requests(_requests(3), options, backend, progress=False)
        backend.close()
        assert len(server.requests) == 3  # the re-run is served from the cache
    # identical outputs in three epochs: three independent draws, each kept as it was
    assert [r[0]["score"] for r in first] == [1.0, 2.0, 3.0]
    assert [r[0]["score"] for r in again] == [1.0, 2.0, 3.0]


def test_a_changed_judge_program_is_not_a_cache_hit(tmp_path: Path) -> None:
    script = tmp_path / "judge.py"
    script.write_text("print('{\"score\": 2}')\n")
    judge = CommandJudge("cmd", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    options = JudgeOptions(judges=[judge], cache_dir=tmp_path / "cache")
    backend = ThreadBackend(1)
    before = judge_requests(_requests(1), options, backend, progress=False)
    script.write_text("print('{\"score\": 5}')\n")  # the judge program changed, same command
    after = judge_requests(_requests(1), options, backend, progress=False)
    backend.close()
    assert (before[0][0]["score"], after[0][0]["score"]) == (2.0, 5.0)


def test_judge_failures_are_loud_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from calipers.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.yaml").write_text(
        "name: s\ntasks:\n  - id: t1\n    input: hi\n  - id: t2\n    input: there\n"
    )
    script = Path(__file__).parent / "fixtures" / "pipelines" / "answer_pipeline.py"
    pipeline = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {{input}} {{output}}"
    with judge_server() as server:
        server.script = lambda body: ("status", 401)  # a wrong key: every call fails
        code = main(["run", "suite.yaml", "--pipeline", pipeline, "--run", "r",
                     "--db", "s.duckdb", "--judge", "openai:m", "--judge-base-url", server.url,
                     "--judge-key-env", "JUDGE_KEY"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 2
    assert "openai:m: 2 of 2 calls failed" in out.out and "HTTP 401" in out.out
    assert "judge openai:m: 2 of 2 calls failed (all); first error: HTTP 401" in out.err
    assert main(["runs", "--db", "s.duckdb", "--json"]) == 0  # the samples are stored anyway
    assert json.loads(capsys.readouterr().out)[0]["samples"] == 2
    with judge_server() as server:  # half fail: passes by default, fails over a 25% limit
        answers = iter([("status", 401), ("answer", json.dumps({"score": 4}))] * 4)  # 401: no retry
        server.script = lambda body: next(answers)
        args = ["grade", "--db", "s.duckdb", "--judge", "openai:m", "--judge-base-url",
                server.url, "--judge-key-env", "JUDGE_KEY", "-q"]  # fmt: skip
        assert main([*args, "--max-judge-failures", "0.25"]) == 2
    assert "more than 25%" in capsys.readouterr().err


def test_judge_timeout_and_retries_are_settable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from calipers.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.yaml").write_text("name: s\ntasks:\n  - id: t1\n    input: hi\n")
    script = Path(__file__).parent / "fixtures" / "pipelines" / "answer_pipeline.py"
    pipeline = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {{input}} {{output}}"
    with judge_server() as server:
        server.script = lambda body: ("hang", 3.0)  # a hung endpoint
        start = time.monotonic()
        code = main(["run", "suite.yaml", "--pipeline", pipeline, "--run", "r", "--db", "s.duckdb",
                     "--judge", "openai:m", "--judge-base-url", server.url, "--judge-key-env",
                     "JUDGE_KEY", "--judge-timeout", "0.3", "--judge-retries", "0"])  # fmt: skip
        took = time.monotonic() - start
        assert len(server.requests) == 1  # no retry
    assert code == 2 and took < 2.5  # not 60 s × 4 attempts
    assert "timed out after 0.3s" in capsys.readouterr().out
