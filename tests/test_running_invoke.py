"""The pipeline runner against a real subprocess: kelvin's failure modes, retries with backoff,
timeouts that kill the process group, the cache (kelvin's key) and resuming a killed run."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from calipers.running.executor import Job, NoBar, progress_bar, run_jobs
from calipers.running.invoke import Pipeline, RetryPolicy, invoke, write_unless_same

SCRIPT = Path(__file__).parent / "fixtures" / "pipelines" / "echo_pipeline.py"
COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPT))} {{input}} {{output}}"
STDIO = f"{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPT))} -"


def decision(parsed: dict[str, Any]) -> Any:
    if "decision" not in parsed:
        raise KeyError(f"decision field 'decision' missing; keys: {sorted(parsed)}")
    return parsed["decision"]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PIPELINE_LOG", str(log))
    monkeypatch.setenv("PIPELINE_MODE", "ok")
    return log


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def run(tmp_path: Path, text: str, pipeline: Pipeline, **kw: Any):  # type: ignore[no-untyped-def]
    folder = tmp_path / "job"
    folder.mkdir(exist_ok=True)
    (folder / "input.md").write_text(text)
    return invoke(pipeline, folder / "input.md", folder / "output.json", extract=decision, **kw)


def test_files_mode_reads_the_output_and_its_decision(tmp_path: Path, env: Path) -> None:
    result = run(tmp_path, "approve\nbody", Pipeline(COMMAND))
    assert result.ok and result.decision_value == "approve" and result.attempts == 1
    assert result.parsed_output == {"decision": "approve", "length": 12}


def test_stdio_mode(tmp_path: Path, env: Path) -> None:
    result = run(tmp_path, "reject\n", Pipeline(STDIO, mode="stdio"))
    assert result.ok and result.decision_value == "reject"
    assert json.loads(result.output_path.read_text())["length"] == 7


def test_input_text_is_never_executed_and_odd_paths_are_quoted(tmp_path: Path, env: Path) -> None:
    marker = tmp_path / "pwned"
    text = f"$(touch {marker}) `touch {marker}`; touch {marker} ' \" \\"
    folder = tmp_path / "dir with 'quotes' and $HOME"
    folder.mkdir()
    (folder / "input.md").write_text(text)
    result = invoke(
        Pipeline(COMMAND), folder / "input.md", folder / "output.json", extract=decision
    )
    assert result.ok and result.decision_value == text
    assert not marker.exists()


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("fail", "exited with code 3"),
        ("no-output", "did not write the output file"),
        ("not-json", "not valid JSON"),
        ("list", "a list, not an object"),
    ],
)
def test_failures_are_results_not_exceptions(
    tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch, mode: str, error: str
) -> None:
    monkeypatch.setenv("PIPELINE_MODE", mode)
    result = run(tmp_path, "x", Pipeline(COMMAND))
    assert not result.ok and error in (result.error or "") and result.attempts == 1


def test_missing_decision_field(tmp_path: Path, env: Path) -> None:
    def other(parsed: dict[str, Any]) -> Any:
        raise KeyError("decision field 'verdict' missing")

    folder = tmp_path / "j"
    folder.mkdir()
    (folder / "input.md").write_text("x")
    result = invoke(Pipeline(COMMAND), folder / "input.md", folder / "output.json", extract=other)
    assert not result.ok and result.error == "decision field 'verdict' missing"
    assert result.parsed_output == {"decision": "x", "length": 1}


def test_transient_exit_codes_are_retried_with_backoff_and_jitter(
    tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_MODE", "flaky:3")  # exit 75 twice, then succeed
    waits: list[float] = []
    policy = RetryPolicy(transient_exit_codes=frozenset({75}))
    result = run(tmp_path, "x", Pipeline(COMMAND, retry=policy), rng=random.Random(7),
                 sleep=waits.append)  # fmt: skip
    assert result.ok and result.attempts == 3
    jitter = random.Random(7)
    assert waits == [1.0 + jitter.random() * 0.3, 2.0 + jitter.random() * 0.3]
    assert [c["code"] for c in calls(env)] == [75, 75, 0]


def test_permanent_failures_and_exhausted_attempts_stop(
    tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_MODE", "flaky:9")
    policy = RetryPolicy(transient_exit_codes=frozenset({75}), max_attempts=3)
    result = run(tmp_path, "x", Pipeline(COMMAND, retry=policy), sleep=lambda s: None)
    assert not result.ok and result.attempts == 3 and result.exit_code == 75
    monkeypatch.setenv("PIPELINE_MODE", "fail")  # exit 3 is not transient
    result = run(tmp_path, "y", Pipeline(COMMAND, retry=policy), sleep=lambda s: None)
    assert result.attempts == 1


def test_timeout_kills_the_process_group_and_can_be_retried(
    tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    child = tmp_path / "child.pid"
    monkeypatch.setenv("PIPELINE_MODE", "hang")
    monkeypatch.setenv("PIPELINE_CHILD", str(child))
    policy = RetryPolicy(retry_on_timeout=True, max_attempts=2)
    pipeline = Pipeline(COMMAND, timeout_s=1.0, retry=policy)
    result = run(tmp_path, "x", pipeline, sleep=lambda s: None)
    assert (
        not result.ok and result.exit_code is None and "timed out after 1s" in (result.error or "")
    )
    assert result.attempts == 2
    pid = int(child.read_text())
    time.sleep(0.2)
    assert not alive(pid)  # the grandchild went down with the group


def alive(pid: int) -> bool:
    """Running, not gone or a zombie (in a container, PID 1 may not reap orphans)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_cache_uses_kelvins_key_and_skips_the_pipeline(tmp_path: Path, env: Path) -> None:
    cache = tmp_path / "cache"
    pipeline = Pipeline(COMMAND, decision_field="decision", cache_dir=cache)
    first = run(tmp_path, "approve", pipeline)
    second = run(tmp_path, "approve", pipeline)
    assert first.ok and not first.cached and second.cached and second.attempts == 0
    assert second.decision_value == "approve" and len(calls(env)) == 1
    key = hashlib.sha256(f"{COMMAND}\x00approve\x00decision".encode()).hexdigest()
    entry = json.loads((cache / f"{key}.json").read_text())
    assert entry["schema_version"] == 1 and entry["result"]["decision_value"] == "approve"
    (cache / f"{key}.json").write_text("{truncated")  # a corrupt entry is a miss
    assert not run(tmp_path, "approve", pipeline).cached and len(calls(env)) == 2


def test_a_cache_hit_leaves_an_output_file_of_the_same_json_in_place(
    tmp_path: Path, env: Path
) -> None:
    pipeline = Pipeline(COMMAND, decision_field="decision", cache_dir=tmp_path / "cache")
    first = run(tmp_path, "approve", pipeline)
    output = tmp_path / "job" / "output.json"
    written = output.read_bytes()  # the pipeline's own layout
    before = output.stat()
    assert run(tmp_path, "approve", pipeline).cached
    after = output.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert output.read_bytes() == written
    output.write_text('{"decision": "edited by hand"}')  # a different document is replaced
    hit = run(tmp_path, "approve", pipeline)
    assert hit.cached and hit.decision_value == "approve"
    assert json.loads(output.read_text()) == first.parsed_output


@pytest.mark.parametrize(
    ("existing", "text", "same_json", "kept"),
    [
        (None, "new", False, False),
        ("same\n", "same\n", False, True),
        ("abc", "ab", False, False),
        ("ab", "abc", False, False),
        ("a\r\nb", "a\nb", False, False),
        (b"\xff\xfe", "text", False, False),
        ('{"a":1,"b":[2]}', json.dumps({"a": 1, "b": [2]}, indent=2), True, True),
        ('{"a":1,"b":[2]}', json.dumps({"a": 1, "b": [2]}, indent=2), False, False),
        ('{"a": 1.0}', json.dumps({"a": 1}, indent=2), True, False),  # 1.0 is not 1
        ('{"b": 2, "a": 1}', json.dumps({"a": 1, "b": 2}, indent=2), True, False),  # key order
        ('{"a": 1', json.dumps({"a": 1}, indent=2), True, False),
        ("[" * 4000, json.dumps({"a": 1}, indent=2), True, False),  # too deep to parse
        ("[" * 100_000, json.dumps({"a": 1}, indent=2), True, False),  # too long to be it
    ],
)  # fmt: skip
def test_write_unless_same_leaves_the_file_only_when_it_holds_the_text(
    tmp_path: Path, existing: str | bytes | None, text: str, same_json: bool, kept: bool
) -> None:
    path = tmp_path / "sub" / "file.json"
    if existing is not None:
        path.parent.mkdir()
        path.write_bytes(existing if isinstance(existing, bytes) else existing.encode())
        before = path.stat()
    write_unless_same(path, text, same_json=same_json)
    if kept:
        assert existing is not None and path.read_bytes() == before_bytes(existing)
        assert (path.stat().st_ino, path.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    else:
        assert path.read_bytes() == text.encode()


def before_bytes(existing: str | bytes) -> bytes:
    return existing if isinstance(existing, bytes) else existing.encode()


def test_progress_bar_is_rich_only_when_shown() -> None:
    assert isinstance(progress_bar(False), NoBar)
    with progress_bar(False) as bar:  # the calls a rich bar takes
        task = bar.add_task("x", total=3)
        bar.update(task, total=4)
        bar.advance(task)
    shown = progress_bar(True)
    assert not isinstance(shown, NoBar)
    with shown as bar:
        task = bar.add_task("x", total=1)
        bar.advance(task)


@pytest.mark.parametrize("progress", [False, True])
def test_jobs_give_the_same_results_with_or_without_a_bar(
    tmp_path: Path, env: Path, progress: bool
) -> None:
    jobs = [Job(f"case{i}", f"text {i}", tmp_path / f"j{i}") for i in range(3)]
    results = run_jobs(Pipeline(COMMAND), jobs, extract=decision, workers=2, progress=progress)
    assert [r.decision_value for r in results] == [f"text {i}" for i in range(3)]


def test_importing_the_runners_leaves_the_bar_and_the_scoring_stack_unloaded() -> None:
    # rich.progress only for a bar that is shown; the scheme layer (pydantic), numpy and
    # scipy.special only when a check scores, so the first pipeline call does not wait for them
    heavy = ("rich.progress", "calipers.schemes", "pydantic", "numpy", "scipy.special")
    probe = (
        "import sys, calipers.running.check, calipers.running.executor; "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_failures_are_not_cached(
    tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_MODE", "fail")
    cache = tmp_path / "cache"
    run(tmp_path, "x", Pipeline(COMMAND, cache_dir=cache))
    assert not cache.exists() or not list(cache.iterdir())


def test_jobs_run_concurrently_but_within_the_bound(
    tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_MODE", "slow")
    jobs = [Job(f"case{i}", f"text {i}", tmp_path / f"j{i}") for i in range(8)]
    results = run_jobs(Pipeline(COMMAND), jobs, extract=decision, workers=3, progress=False)
    assert [r.decision_value for r in results] == [f"text {i}" for i in range(8)]
    spans = [(c["start"], c["end"]) for c in calls(env)]
    overlap = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert 2 <= overlap <= 3


def test_a_killed_run_resumes_without_repeating_finished_invocations(
    tmp_path: Path, env: Path
) -> None:
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from pathlib import Path
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            from test_running_invoke import COMMAND, decision
            from calipers.running.executor import Job, run_jobs
            from calipers.running.invoke import Pipeline
            root = Path({str(tmp_path)!r})
            jobs = [Job(f"c{{i}}", f"text {{i}}", root / f"j{{i}}") for i in range(12)]
            run_jobs(Pipeline(COMMAND, cache_dir=root / "cache"), jobs, extract=decision,
                     workers=1, progress=False)
            """
        )
    )
    environment = {**os.environ, "PIPELINE_MODE": "slow"}
    proc = subprocess.Popen([sys.executable, str(script)], env=environment, start_new_session=True)
    deadline = time.time() + 30
    while len(calls(env)) < 4 and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    started = {c["text"] for c in calls(env)}
    cached = {p.stem for p in (tmp_path / "cache").glob("*.json")}
    done = {t for t in started if Pipeline(COMMAND).cache_key(t) in cached}
    assert 3 <= len(done) < 12
    subprocess.run([sys.executable, str(script)], env=environment, check=True)
    texts = [c["text"] for c in calls(env)]
    assert sorted(set(texts)) == sorted(f"text {i}" for i in range(12))
    assert all(texts.count(t) == 1 for t in done)  # none of the finished ones ran again
    assert len(texts) <= 13  # at most the one in flight when it was killed ran twice
