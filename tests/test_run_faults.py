"""`calipers run` and `grade` under the faults users hit: transient pipeline exits retried (from
the command line or the suite), limits set in the suite, outputs with mistyped telemetry never
cached, a changed pipeline program never served the old outputs, judge calls counted as cached,
called and failed, `--no-cache` on both commands, and a failed first import that leaves no store.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main

PY = shlex.quote(sys.executable)
JUDGE = Path(__file__).parent / "fixtures" / "judges" / "length_judge.py"


def _suite(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: s\n" + extra + "tasks:\n  - id: t1\n    input: hi\n    assertions:\n"
        "      - {type: cost_max, value: 1}\n  - id: t2\n    input: there\n"
    )
    return path


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    capsys.readouterr()
    code = main(["run", str(tmp_path / "suite.yaml"), "--run", "r", "--db",
                 str(tmp_path / "s.duckdb"), "--json", "-", *args])  # fmt: skip
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith("{") else out


FLAKY = """
import json, pathlib, sys
counter = pathlib.Path(sys.argv[3]) / (pathlib.Path(sys.argv[1]).read_text() + ".tries")
tries = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(tries))
if tries < 3:
    sys.exit(75)  # EX_TEMPFAIL: try again
pathlib.Path(sys.argv[2]).write_text(json.dumps({"output": "ok", "cost_usd": 0.001}))
"""


@pytest.mark.parametrize("where", ["option", "suite"])
def test_transient_exit_codes_are_retried(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flaky.py").write_text(FLAKY)
    pipeline = f"{PY} flaky.py {{input}} {{output}} {shlex.quote(str(tmp_path))}"
    monkeypatch.setattr("calipers.running.invoke.RetryPolicy.delay_before", lambda *a: 0.0)
    if where == "suite":
        _suite(tmp_path, "pipeline:\n  transient_exit_codes: [75]\n  attempts: 3\n")
        code, body = _run(tmp_path, capsys, "--pipeline", pipeline)
    else:
        _suite(tmp_path)
        code, body = _run(tmp_path, capsys, "--pipeline", pipeline, "--retry-exit-code", "75")
    assert code == 0, body
    assert body["failed"] == 0 and body["pipeline"]["transient_exit_codes"] == [75]
    assert body["pipeline"]["attempts"] == 3
    assert (tmp_path / "hi.tries").read_text() == "3"
    # without the code declared, exit 75 is a failure, recorded and not retried
    (tmp_path / "hi.tries").unlink()
    (tmp_path / "there.tries").unlink()
    _suite(tmp_path)
    code, body = _run(tmp_path, capsys, "--pipeline", pipeline, "--no-cache")
    assert code == 2 and (tmp_path / "hi.tries").read_text() == "1"


def test_suite_sets_timeouts_and_the_option_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "slow.py").write_text("import time, sys; time.sleep(5)\n")
    _suite(tmp_path, "pipeline:\n  timeout_s: 0.3\njudge:\n  timeout_s: 7\n  retries: 0\n")
    code, body = _run(tmp_path, capsys, "--pipeline", f"{PY} slow.py {{input}} {{output}}")
    assert code == 2 and body["pipeline"]["timeout_s"] == 0.3
    code, body = _run(
        tmp_path, capsys, "--pipeline", f"{PY} slow.py {{input}} {{output}}", "--timeout", "0.2"
    )
    assert body["pipeline"]["timeout_s"] == 0.2
    _suite(tmp_path, "pipeline:\n  timeout: 3\n")  # a misspelt setting is an error
    assert main(["run", "suite.yaml", "--run", "r", "--pipeline", "true"]) == 1
    assert "field 'pipeline.timeout'" in capsys.readouterr().err


TELEMETRY = """
import json, pathlib, sys
tokens = pathlib.Path(sys.argv[3]).read_text()
pathlib.Path(sys.argv[2]).write_text(json.dumps({"output": "ok", "cost_usd": json.loads(tokens)}))
"""


def test_mistyped_telemetry_is_not_cached_and_a_fixed_pipeline_is_run_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _suite(tmp_path)
    (tmp_path / "pipe.py").write_text(TELEMETRY)
    tokens = tmp_path / "tokens.json"
    tokens.write_text('"0.5"')  # a string where a number belongs
    pipeline = f"{PY} pipe.py {{input}} {{output}} tokens.json"
    code, body = _run(tmp_path, capsys, "--pipeline", pipeline)
    assert code == 0 and body["assertions"] == {"total": 1, "passed": 0}
    code, body = _run(tmp_path, capsys, "--pipeline", pipeline)
    assert body["cached"] == 0 and body["invocations"] == 2  # never served from the cache
    tokens.write_text("0.5")
    code, body = _run(tmp_path, capsys, "--pipeline", pipeline)
    assert body["assertions"] == {"total": 1, "passed": 1}
    code, body = _run(tmp_path, capsys, "--pipeline", pipeline)
    assert body["cached"] == 2  # well-typed outputs are cached
    # the program changed (same command line): a new pipeline, not a cache hit
    (tmp_path / "pipe.py").write_text(TELEMETRY + "\n# v2\n")
    code, body = _run(tmp_path, capsys, "--pipeline", pipeline)
    assert body["cached"] == 0 and body["invocations"] == 2


def _judges(body: dict[str, Any]) -> list[tuple[int, int, int]]:
    return [(j["cached"], j["called"], j["failed"]) for j in body["judging"]["judges"]]


def test_judge_calls_are_counted_and_no_cache_asks_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _suite(tmp_path)
    (tmp_path / "p.py").write_text(
        "import json, sys; open(sys.argv[2], 'w').write(json.dumps({'output': 'short'}))\n"
    )
    args = ["--pipeline", f"{PY} p.py {{input}} {{output}}",
            "--judge", f"command:{PY} {shlex.quote(str(JUDGE))}",
            "--judge-repeat", "2"]  # fmt: skip
    assert _judges(_run(tmp_path, capsys, *args)[1]) == [(0, 4, 0)]
    assert _judges(_run(tmp_path, capsys, *args)[1]) == [(4, 0, 0)]
    assert _judges(_run(tmp_path, capsys, *args, "--no-cache")[1]) == [(0, 4, 0)]
    # grade: the same counts in its table; --refresh asks again
    db = str(tmp_path / "s.duckdb")
    judge = f"command:{PY} {shlex.quote(str(JUDGE))}"
    capsys.readouterr()
    assert main(["grade", "--judge", judge, "--judge-repeat", "2", "--db", db]) == 0
    table = capsys.readouterr().out
    assert "cached" in table and "called" in table
    row = next(line for line in table.splitlines() if line.startswith("command:"))
    assert row.split()[3:6] == ["4", "0", "0/4"]
    assert main(["grade", "--judge", judge, "--judge-repeat", "2", "--db", db, "--refresh"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.startswith("command:"))  # fmt: skip
    assert row.split()[3:6] == ["0", "4", "0/4"]
    assert main(["grade", "--no-cache", "--db", db]) == 1  # without --judge: a clear error


def test_a_failed_first_import_leaves_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "new.duckdb"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"run": "a", "task": "t", "sample_id": "1", "tokens_in": -1}\n')
    assert main(["import", str(bad), "--db", str(db)]) == 1
    assert main(["import", str(tmp_path / "missing.jsonl"), "--db", str(db)]) == 1
    assert list(tmp_path.iterdir()) == [bad]
    # an existing store that a failed import leaves alone stays, as it was
    good = tmp_path / "good.jsonl"
    good.write_text('{"run": "a", "task": "t", "sample_id": "1"}\n')
    assert main(["import", str(good), "--db", str(db)]) == 0
    assert main(["import", str(bad), "--db", str(db)]) == 1
    assert db.exists()
    assert "bad.jsonl" in capsys.readouterr().err


def test_run_and_plan_write_an_html_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--html` wherever there is a report: the run report and the plan, as inert pages (the
    run name is data: `<b>` stays text)."""
    monkeypatch.chdir(tmp_path)
    _suite(tmp_path)
    (tmp_path / "ok.py").write_text(
        "import json, sys\nopen(sys.argv[2], 'w').write(json.dumps({'output': 'ok'}))\n"
    )
    page = tmp_path / "run.html"
    pipeline = f"{PY} ok.py {{input}} {{output}}"
    code = main(["run", "suite.yaml", "--pipeline", pipeline, "--run", "<b>r</b>", "--db",
                 str(tmp_path / "s.duckdb"), "--html", str(page), "-q"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    text = page.read_text()
    assert "&lt;b&gt;r&lt;/b&gt;" in text and "<b>r</b>" not in text
    assert "<table" in text
    plan = tmp_path / "plan.html"
    assert main(["plan", "--sd", "1", "--effect", "0.2", "--html", str(plan), "-q"]) == 0
    assert "calipers plan" in plan.read_text()
