"""`calipers run`: suites through a pipeline (files and stdio), telemetry, assertions, judges
(a command judge and an OpenAI-compatible server on 127.0.0.1), epochs, the cache, failures, the
store, and clear errors for bad suites."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from calipers.cli.main import main
from judge_server import judge_server

FIXTURES = Path(__file__).parent / "fixtures"
PY = shlex.quote(sys.executable)
PIPELINE = f"{PY} {shlex.quote(str(FIXTURES / 'pipelines' / 'answer_pipeline.py'))}"
JUDGE = f"command:{PY} {shlex.quote(str(FIXTURES / 'judges' / 'length_judge.py'))}"

SUITE = """name: support
epochs: 2
tasks:
  - id: refund
    input: "Can I get a refund after 20 days?"
    expected: "Yes, within 30 days."
    assertions:
      - {type: contains, value: "30 days"}
      - {type: max_length, value: 80}
  - id: capital/fr
    input_file: inputs/capital.txt
    assertions:
      - {type: contains, value: "Paris"}
      - {type: tools_called, value: ["kb_search"]}
"""


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "capital.txt").write_text("What is the capital of France?")
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return path


def samples(db: Path, run: str) -> list[dict[str, Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute("SELECT * FROM samples WHERE run = ? ORDER BY task, epoch", [run])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()


def run(suite: Path, *args: str, pipeline: str = PIPELINE + " {input} {output}") -> int:
    return main(["run", str(suite), "--pipeline", pipeline, "--db", "s.duckdb", "-q", *args])


def test_run_records_outputs_telemetry_assertions_and_judgments(
    suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = suite.parent / "calls.log"
    monkeypatch.setenv("ANSWER_LOG", str(log))
    assert run(suite, "--run", "v1", "--judge", JUDGE) == 0
    rows = samples(Path("s.duckdb"), "v1")
    assert [(r["task"], r["epoch"]) for r in rows] == [
        ("capital/fr", 0), ("capital/fr", 1), ("refund", 0), ("refund", 1)
    ]  # fmt: skip
    refund = rows[2]
    assert refund["output"] == "Refunds are accepted within 30 days of purchase."
    assert refund["tokens_in"] == 8 and refund["tool_calls"] == 1 and refund["steps"] == 2
    assert refund["cost_usd"] == pytest.approx(1e-5 * (8 + 8))
    assert [a["passed"] for a in refund["assertions"]] == [True, True]
    assert rows[0]["tools"][0]["name"] == "kb_search"
    judgment = refund["judgments"][0]
    assert judgment["score"] == 5 and judgment["scale_max"] == 5 and judgment["error"] is None
    assert len(judgment["prompt_hash"]) == 64
    assert len(log.read_text().splitlines()) == 4  # 2 tasks × 2 epochs: each epoch invoked
    assert run(suite, "--run", "v1") == 0  # warm: everything from the cache
    assert len(log.read_text().splitlines()) == 4
    assert (Path(".calipers") / "runs" / "v1" / "refund" / "1" / "output.json").exists()


def test_stdio_mode_and_a_layered_comparison(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(suite, "--run", "v1", "--judge", JUDGE) == 0
    monkeypatch.setenv("ANSWER_STYLE", "verbose")
    assert run(suite, "--run", "v2", "--judge", JUDGE, "--stdio",
               pipeline=PIPELINE + " - -") == 0  # fmt: skip
    capsys.readouterr()
    code = main(["compare", "--scheme", "layered", "--control", "v1", "--treatment", "v2",
                 "--db", "s.duckdb", "--json", "-"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    # Longer answers fail max_length and lower the judge — but on 2 samples (2 tasks × 2 epochs)
    # no verdict is possible: the exact sign test over 2 units cannot go below p = 0.5.
    assert code == 0 and report["verdict"] == "UNDERPOWERED"
    assert report["pairs"][0]["composite"]["estimate"] < 0 and report["pairs"][0]["n_pairs"] == 2


def test_failures_are_samples_with_their_error(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.write_text(SUITE + '  - id: broken\n    input: "CRASH now"\n'
                     '    assertions: [{type: contains, value: "x"}]\n'
                     '  - id: odd\n    input: "BADTELEMETRY please"\n')  # fmt: skip
    assert main(["run", str(suite), "--pipeline", PIPELINE + " {input} {output}", "--run", "v1",
                 "--db", "s.duckdb", "--judge", JUDGE]) == 0  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())
    assert "2 failed" in out and "telemetry 'tokens_in' = 'many' has the wrong type" in out
    rows = {(r["task"], r["epoch"]): r for r in samples(Path("s.duckdb"), "v1")}
    broken = rows[("broken", 0)]
    assert "exited with code 2" in broken["error"] and broken["output"] is None
    assert "stderr: boom: the model server refused the request" in broken["error"]
    assert broken["assertions"][0]["passed"] is False and broken["judgments"] is None
    assert rows[("odd", 0)]["tokens_in"] is None and rows[("odd", 0)]["tokens_out"] == 4


def test_every_invocation_failing_is_exit_2(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = f"{PY} -c 'import sys; sys.exit(1)' {{input}} {{output}}"
    assert run(suite, "--run", "v1", pipeline=failing) == 2
    assert "every invocation failed" in capsys.readouterr().err


def test_openai_judge_over_http_and_no_key_is_kept(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-test-never-stored-0123456789"
    monkeypatch.setenv("JUDGE_KEY", secret)
    with judge_server() as server:
        server.script = lambda body: ("answer", json.dumps({"score": 0.75, "rationale": "ok"}))
        assert run(suite, "--run", "v1", "--judge", "openai:judge-model", "--judge-base-url",
                   server.url, "--judge-key-env", "JUDGE_KEY", "--judge-kind", "objective",
                   "--judge-repeat", "2") == 0  # fmt: skip
        assert len(server.requests) == 4 * 2
    rows = samples(Path("s.duckdb"), "v1")
    scores = [(j["judge"], j["score"], j["repeat"]) for j in rows[0]["judgments"]]
    assert scores == [("openai:judge-model", 0.75, 0), ("openai:judge-model", 0.75, 1)]
    stored = Path("s.duckdb").read_bytes()
    assert secret.encode() not in stored
    printed = capsys.readouterr()
    assert secret not in printed.out + printed.err
    for path in Path(".calipers").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tasks:\n  - id: a\n", "give exactly one of `input` and `input_file`"),
        ("tasks:\n  - id: a\n    input: x\n    assertions: [{type: smells_right}]\n",
         "unknown assertion type 'smells_right'"),
        ("tasks:\n  - {id: a, input: x}\n  - {id: a, input: y}\n", "appears twice"),
        ("tasks:\n  - {id: a, input_file: nowhere.txt}\n", "cannot read"),
        ("tasks: [\n", "not valid YAML"),
        ("epochs: 0\ntasks:\n  - {id: a, input: x}\n", "epochs"),
        ("tasks:\n  - {id: a, input: x, colour: red}\n", "colour"),
        ("tasks:\n  - id: a\n    input: x\n    assertions: [{type: contains, value: 16}]\n",
         "assertion 'contains' needs as value a string, got int 16"),
        ("tasks:\n  - id: a\n    input: x\n    assertions: [{type: max_length, value: ten}]\n",
         "assertion 'max_length' needs as value"),
    ],
)  # fmt: skip
def test_bad_suites_are_exit_1_naming_the_field(
    suite: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    suite.write_text(text)
    assert run(suite, "--run", "v1") == 1
    err = " ".join(capsys.readouterr().err.split())
    assert message in err and "suite.yaml" in err and "Traceback" not in err
    assert not Path("s.duckdb").exists()


def test_tasks_from_a_jsonl_cases_file(suite: Path) -> None:
    (suite.parent / "more.jsonl").write_text(
        json.dumps({"id": "extra", "input": "capital of France?",
                    "assertions": [{"type": "contains", "value": "Paris"}]}) + "\n"
    )  # fmt: skip
    suite.write_text(SUITE.replace("epochs: 2\n", "epochs: 1\ncases_file: more.jsonl\n"))
    assert run(suite, "--run", "v1", "--epochs", "3") == 0
    rows = samples(Path("s.duckdb"), "v1")
    assert len(rows) == 3 * 3 and {r["task"] for r in rows} == {"refund", "capital/fr", "extra"}


def test_missing_telemetry_fails_its_assertion_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pipe.py").write_text(
        "import json, sys\n"
        "q = open(sys.argv[1]).read()\n"
        "out = {'output': 'ok'} if 'bare' in q else {'output': 'ok', 'steps': 'three'}\n"
        "json.dump(out, open(sys.argv[2], 'w'))\n"
    )
    (tmp_path / "suite.yaml").write_text(
        "name: s\ntasks:\n"
        "  - id: bare\n    input: bare\n    assertions: [{type: turns_max, value: 5}]\n"
        "  - id: typo\n    input: typo\n    assertions: [{type: turns_max, value: 5}]\n"
    )
    pipeline = f"{PY} pipe.py {{input}} {{output}}"
    assert (
        main(["run", "suite.yaml", "--pipeline", pipeline, "--run", "r", "--db", "s.duckdb"]) == 0
    )
    rows = {r["task"]: r for r in samples(Path("s.duckdb"), "r")}
    for task in ("bare", "typo"):  # missing, and mistyped (dropped with a note): both recorded
        (check,) = rows[task]["assertions"]
        assert check["passed"] is False
        assert check["detail"] == "no steps recorded: the pipeline did not report it"
    assert "telemetry 'steps' = 'three' has the wrong type" in capsys.readouterr().out


def test_a_rerun_with_fewer_epochs_replaces_the_runs_tasks(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(suite, "--run", "v1", "--epochs", "3") == 0
    assert len(samples(Path("s.duckdb"), "v1")) == 2 * 3
    assert run(suite, "--run", "v2") == 0  # another run is untouched
    capsys.readouterr()
    assert main(["run", str(suite), "--pipeline", PIPELINE + " {input} {output}", "--run", "v1",
                 "--epochs", "1", "--db", "s.duckdb", "--json", "r.json"]) == 0  # fmt: skip
    rows = samples(Path("s.duckdb"), "v1")
    assert sorted((r["task"], r["epoch"]) for r in rows) == [("capital/fr", 0), ("refund", 0)]
    body = json.loads(Path("r.json").read_text())
    assert (body["stored"], body["replaced"]) == (2, 6)
    assert "replacing 6 earlier sample(s)" in " ".join(capsys.readouterr().out.split())
    assert len(samples(Path("s.duckdb"), "v2")) == 2 * 2
