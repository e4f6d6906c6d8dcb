"""Inputs read strictly (issue 35, items 8, 10, 11, 12): configuration files without coercion or
repeated keys; JSON and JSON Lines without repeated keys, NaN, trailing commas, deep nesting or
integers beyond 64 bits; `calipers run` checked before anything runs; CSV with a byte-order mark,
long cells and bad bytes. Each malformed input is exit 1 naming the file, the line and the field,
with no traceback and nothing written to the store."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from calipers.cli.main import main

KEYS = '"run": "a", "task": "t", "sample_id": "s"'
JUDGMENT = '"judge": "j", "scale_min": 1, "scale_max": 5'


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert code == 1, err
    for word in words:
        assert word in err, (word, err)
    return err


# ------------------------------------------------------------------ item 8: configuration files

SUITES = {
    "tasks twice": ("tasks:\n  - {id: a, input: x}\ntasks:\n  - {id: b, input: y}\n",
                    "line 3: the key 'tasks' appears twice in one mapping (lines 1 and 3)"),
    "a key twice in a task": ("tasks:\n  - id: a\n    input: x\n    input: y\n",
                              "line 4: the key 'input' appears twice"),
    'epochs "2"': ('epochs: "2"\ntasks:\n  - {id: a, input: x}\n',
                   "line 1, field 'epochs': Input should be a valid integer (got '2')"),
    "epochs true": ("epochs: true\ntasks:\n  - {id: a, input: x}\n",
                    "line 1, field 'epochs': Input should be a valid integer (got True)"),
    "epochs 2.0": ("tasks:\n  - {id: a, input: x, epochs: 2.0}\n",
                   "line 2, field 'tasks[0].epochs'"),
    "epochs 0": ("epochs: 0\ntasks:\n  - {id: a, input: x}\n", "field 'epochs'"),
    "weight '2'": ("tasks:\n  - id: a\n    input: x\n    assertions:\n"
                   "      - {type: contains, value: x, weight: '2'}\n",
                   "line 5, field 'tasks[0].assertions[0].weight'"),
    "exit code 999": ("pipeline:\n  transient_exit_codes: [999]\ntasks:\n  - {id: a, input: x}\n",
                      "line 2, field 'pipeline.transient_exit_codes[0]'"),
    "exit code 0": ("pipeline:\n  transient_exit_codes: [0]\ntasks:\n  - {id: a, input: x}\n",
                    "field 'pipeline.transient_exit_codes[0]'"),
    "exit code '75'": ("pipeline:\n  transient_exit_codes: ['75']\ntasks:\n  - {id: a, input: x}\n",
                       "field 'pipeline.transient_exit_codes[0]'"),
    "timeout .nan": ("pipeline:\n  timeout_s: .nan\ntasks:\n  - {id: a, input: x}\n",
                     "line 2, field 'pipeline.timeout_s': Input should be a finite number"),
    "timeout .inf": ("judge:\n  timeout_s: .inf\ntasks:\n  - {id: a, input: x}\n",
                     "field 'judge.timeout_s'"),
    "retries yes": ("judge:\n  retries: yes\ntasks:\n  - {id: a, input: x}\n",
                    "field 'judge.retries'"),
    "id a number": ("tasks:\n  - {id: 7, input: x}\n", "field 'tasks[0].id'"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(SUITES))
def test_suite_yaml_is_read_strictly(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text, words = SUITES[case]
    Path("s.yaml").write_text(text)
    _fails(["run", "s.yaml", "--pipeline", "never-run {input} {output}", "--run", "r"], capsys,
           "s.yaml", words)  # fmt: skip
    assert not Path(".calipers").exists()  # nothing ran, nothing stored


JSON_SUITES = {
    "a key twice (JSON)": ('{"tasks": [{"id": "a", "input": "x", "id": "b"}]}',
                           "field 'tasks[0].id'"),
    "NaN (JSON)": ('{"epochs": NaN, "tasks": []}', "NaN is not JSON"),
    "a trailing comma (JSON)": ('{"tasks": [],}', "trailing comma"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(JSON_SUITES))
def test_a_json_suite_is_strict_json(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text, words = JSON_SUITES[case]
    Path("s.json").write_text(text)
    _fails(["run", "s.json", "--pipeline", "x {input} {output}", "--run", "r"], capsys, words)


def test_cases_file_lines_are_strict_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("s.yaml").write_text("cases_file: c.jsonl\n")
    argv = ["run", "s.yaml", "--pipeline", "x {input} {output}", "--run", "r"]
    deep = '{"id": "a", "input": ' + "[" * 1000 + "]" * 1000 + "}"
    for line, words in (
        (deep, "c.jsonl, line 2, field 'input': nested deeper than 500 levels"),
        ('{"id": "a", "input": "x", "id": "b"}', "line 2, field 'id': the key appears twice"),
        ('{"id": "a", "input": "x", "epochs": "2"}', "line 2, field 'epochs'"),
        ('{"id": "a", "input": "x",}', "line 2, column 26: not JSON: a trailing comma"),
        ('{"id": "a", "input": "x", "epochs": NaN}', "line 2, field 'epochs': NaN is not JSON"),
    ):
        Path("c.jsonl").write_text('{"id": "z", "input": "ok"}\n' + line + "\n")
        _fails(argv, capsys, words)


def test_rubric_objective_and_kelvin_config_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from calipers.errors import InputError
    from calipers.running.kelvin_config import load_kelvin_config
    from calipers.schemes.objective.verdict import load_settings
    from calipers.schemes.rubric.definition import load_rubric

    cases: list[tuple[str, str, object, str]] = [
        ("r.yaml", "weights: {correctness: '0.5'}\n", load_rubric,
         "line 1, field 'weights.correctness': Input should be a valid number"),
        ("r.yaml", "name: a\nname: b\n", load_rubric, "line 2: the key 'name' appears twice"),
        ("r.json", '{"name": "a", "name": "b"}', load_rubric, "field 'name': the key appears"),
        ("o.yaml", "minCompositeGain: '0.1'\n", load_settings,
         "line 1, field 'minCompositeGain': Input should be a valid number"),
        ("o.yaml", "w_obj: 1\nwObj: 2\n", load_settings, "'wObj' and 'w_obj' are the same"),
        ("o.yaml", "objective_drop_is_regression: 1\n", load_settings,
         "field 'objective_drop_is_regression'"),
        ("o.yaml", "w_obj: .nan\n", load_settings, "field 'w_obj'"),
        ("kelvin.yaml", "run: x {input} {output}\nrun: y {input} {output}\n", load_kelvin_config,
         "line 2: the key 'run' appears twice"),
        ("kelvin.yaml", "run: x {input} {output}\ncases: c\ndecision_field: d\n"
         "governing_types: []\nretry_policy:\n  transient_exit_codes: [999]\n",
         load_kelvin_config, "retry_policy.transient_exit_codes"),
    ]  # fmt: skip
    for name, text, load, words in cases:
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(InputError) as raised:
            load(path)  # type: ignore[operator]
        assert str(path) in str(raised.value) and words in str(raised.value), raised.value


# --------------------------------------------------------- item 10: JSON Lines, nested and deep

DEEP = "[" * 100_000 + "1" + "]" * 100_000
SAMPLES = {
    "a judgment key twice": (
        f'{{{KEYS}, "judgments": [{{{JUDGMENT}, "score": 4, "score": 5}}]}}',
        "field 'judgments[0].score': the key appears twice",
    ),
    "a decision key twice": (f'{{{KEYS}, "decision": {{"a": 1, "a": 2}}}}', "'decision.a'"),
    "a key twice deep in a decision": (
        f'{{{KEYS}, "decision": [1, {{"x": {{"y": 1, "y": 2}}}}]}}',
        "field 'decision[1].x.y': the key appears twice",
    ),
    "an assertion value key twice": (
        f'{{{KEYS}, "assertions": [{{"type": "equals", "value": {{"k": 1, "k": 1}}}}]}}',
        "field 'assertions[0].value.k'",
    ),
    "a top-level key twice": (f'{{{KEYS}, "correct": true, "correct": false}}', "'correct'"),
    "NaN in a decision": (
        f'{{{KEYS}, "decision": {{"x": NaN}}}}',
        "field 'decision.x': NaN is not JSON (numbers must be finite)",
    ),
    "Infinity in a tool input": (
        f'{{{KEYS}, "tools": [{{"name": "f", "input": {{"n": -Infinity}}}}]}}',
        "field 'tools[0].input.n': -Infinity is not JSON",
    ),
    "1e400 in a decision": (f'{{{KEYS}, "decision": [1e400]}}', "too large for a 64-bit float"),
    "a trailing comma": (f'{{{KEYS}, "decision": [1, 2,]}}', "trailing comma"),
    "a trailing comma, spaced": (f'{{{KEYS}, "decision": {{"a": 1 , }} }}', "trailing comma"),
    "a trailing comma in an unknown field": (f'{{{KEYS}, "extra": [1,]}}', "trailing comma"),
    "a decision 100,000 deep": (
        f'{{{KEYS}, "decision": {DEEP}}}',
        "field 'decision': nested deeper than 500 levels",
    ),
    "a decision 600 deep": (
        f'{{{KEYS}, "decision": {"[" * 600 + "]" * 600}}}',
        "nested deeper than 500 levels",
    ),
    "tokens_out of 400 digits": (
        f'{{{KEYS}, "tokens_out": {"9" * 400}}}',
        "field 'tokens_out': wrong type (expected an integer, got an integer beyond 64 bits)",
    ),
    "tokens_out 2**63": (f'{{{KEYS}, "tokens_out": {2**63}}}', "integer beyond 64 bits"),
    "cost of 21 digits": (f'{{{KEYS}, "cost_usd": {10**20}}}', "field 'cost_usd'"),
    "a score of 25 digits": (f'{{{KEYS}, "scores": {{"a": {10**24}}}}}', "field 'scores.a'"),
    "a judgment score of 23 digits": (
        f'{{{KEYS}, "judgments": [{{{JUDGMENT}, "score": {10**22}}}]}}',
        "field 'judgments[0].score'",
    ),
    "a decision integer of 30 digits": (
        f'{{{KEYS}, "decision": {{"n": {10**29}}}}}',
        "'decision.n': an integer beyond 64 bits",
    ),
}


@pytest.mark.parametrize("case", sorted(SAMPLES))
@pytest.mark.parametrize("command", ["import", "score"])
def test_json_lines_gaps_are_refused_by_line_and_field(
    case: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, words = SAMPLES[case]
    path = tmp_path / "samples.jsonl"
    path.write_text(f'{{{KEYS.replace(chr(34) + "s" + chr(34), chr(34) + "first" + chr(34))}}}\n'
                    + line + "\n")  # fmt: skip
    db = tmp_path / "s.duckdb"
    argv = (["import", str(path), "--db", str(db)] if command == "import"
            else ["score", str(path), "--scheme", "metric", "--metric", "tokens_in"])  # fmt: skip
    _fails(argv, capsys, "samples.jsonl, line 2", words)
    assert not db.exists()


def test_what_only_looks_lax_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`,]` inside a string, NaN in a field calipers ignores, a 19-digit string, a decision of
    many keys: none is refused."""
    path = tmp_path / "ok.jsonl"
    rows = [
        f'{{{KEYS}, "correct": true, "output": "see [1,2,] and NaN", "epoch": 0}}',
        f'{{{KEYS}, "correct": true, "metadata": {{"x": NaN}}, "epoch": 1}}',
        f'{{{KEYS}, "correct": false, "decision": {{"a": 1, "b": "1234567890123456789012"}}, '
        '"epoch": 2}',
        f'{{{KEYS}, "correct": true, "decision": {"[" * 400 + "]" * 400}, "epoch": 3}}',
    ]
    path.write_text("\n".join(rows) + "\n")
    assert main(["import", str(path), "--db", str(tmp_path / "s.duckdb")]) == 0, capsys.readouterr()


def test_column_map_keeps_a_repeated_key_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--map rewrites each line: a key given twice must not become one key on the way."""
    path = tmp_path / "m.jsonl"
    path.write_text('{"run": "a", "task": "t", "id": "s", "correct": true, "correct": false}\n')
    _fails(["import", str(path), "--map", "sample_id=id", "--db", str(tmp_path / "s.duckdb")],
           capsys, "m.jsonl, line 1", "appears twice")  # fmt: skip


# ------------------------------------------------------------ item 11: run checked before it runs


@pytest.fixture
def marker_pipeline(tmp_path: Path) -> tuple[Path, str, Path]:
    marker = tmp_path / "ran"
    script = tmp_path / "pipe.py"
    script.write_text(
        "import json, pathlib, sys\n"
        f"pathlib.Path({str(marker)!r}).touch()\n"
        "pathlib.Path(sys.argv[2]).write_text(json.dumps({'output': 'hi'}))\n"
    )
    suite = tmp_path / "s.yaml"
    suite.write_text("tasks:\n  - {id: a, input: x, rubric: missing.yaml}\n  - {id: b, input: y}\n")
    return suite, f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}", marker


RUN_CASES = {
    "no placeholders": (["--pipeline", "echo hi"], "neither {input} nor {output} placeholder"),
    "no {output}": (["--pipeline", "cat {input}"], "no {output} placeholder"),
    "placeholders with --stdio": (["--stdio", "--pipeline", "{cmd} {{input}} {{output}}"],
                                  "--stdio runs the command as written"),
    "a judge URL without scheme": (["--judge", "openai:m@notaurl"],
                                   "the endpoint 'notaurl' is not an http(s) URL"),
    "a judge URL without host": (["--judge", "openai:m@http://"], "not an http(s) URL"),
    "a judge URL of another scheme": (["--judge", "openai:m@ftp://h/v1"], "not an http(s) URL"),
    "a judge URL with a bad port": (["--judge", "openai:m@http://h:99999/v1"], "not an http(s)"),
    "a bad --judge-base-url": (["--judge", "openai:m", "--judge-base-url", "localhost:8000"],
                               "--judge-base-url: the endpoint"),
    "--timeout nan": (["--timeout", "nan"], "'nan' is not a finite number"),
    "--timeout inf": (["--timeout", "inf"], "'inf' is not a finite number"),
    "--timeout -1": (["--timeout", "-1"], "--timeout"),
    "--judge-timeout nan": (["--judge", "command:cat", "--judge-timeout", "nan"], "finite"),
    "--max-judge-failures nan": (["--max-judge-failures", "nan"], "finite"),
    "a rubric that is missing": (["--judge", "command:cat"], "rubric file not found"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(RUN_CASES))
def test_run_checks_its_configuration_before_anything_runs(
    case: str, marker_pipeline: tuple[Path, str, Path], tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    suite, command, marker = marker_pipeline
    extra, words = RUN_CASES[case]
    extra = [a.replace("{cmd}", command) for a in extra]
    if "--pipeline" not in extra:
        extra = ["--pipeline", f"{command} {{input}} {{output}}", *extra]
    _fails(["run", str(suite), "--run", "r", "--db", "s.duckdb", *extra], capsys, words)
    assert not marker.exists(), "the pipeline ran"
    assert not Path("s.duckdb").exists(), "something was stored"


def test_a_model_name_with_a_date_after_at_is_a_model(
    marker_pipeline: tuple[Path, str, Path],
) -> None:
    from calipers.grading.judges import judge_from_spec

    judge = judge_from_spec("openai:claude-3-5-sonnet@20240620")
    assert judge.model == "claude-3-5-sonnet@20240620"  # type: ignore[attr-defined]
    judge = judge_from_spec("openai:m@https://example.org/v1")
    assert judge.base_url == "https://example.org/v1"  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------- item 12: CSV


def test_csv_from_excel_with_a_byte_order_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffrun,task,sample_id,correct\r\na,t,s1,true\r\na,t,s2,false\r\n"
                     .encode())  # fmt: skip
    for argv in (["import", str(path), "--db", str(tmp_path / "s.duckdb")],
                 ["score", str(path), "--scheme", "metric", "--metric", "correct"],
                 ["import", str(path), "--map", "sample_id=sample_id", "--db",
                  str(tmp_path / "m.duckdb")]):  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
        assert "missing required column" not in capsys.readouterr().err


def test_csv_cells_of_megabytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.csv"
    big = "x" * (3 << 20)
    path.write_text(f'run,task,sample_id,output,correct\na,t,s1,"{big}",true\na,t,s2,ok,false\n')
    assert main(["import", str(path), "--db", str(tmp_path / "s.duckdb")]) == 0
    capsys.readouterr()
    assert main(["export", "-", "--db", str(tmp_path / "s.duckdb")]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(out[0]["output"]) == 3 << 20
    path.write_text(f'run,task,sample_id,output,correct\na,t,s1,"{big}",maybe\n')
    _fails(["import", str(path), "--db", str(tmp_path / "t.duckdb")], capsys,
           "big.csv, line 2, field 'correct'")  # fmt: skip


def test_csv_bad_bytes_are_reported_at_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = b"run,task,sample_id,output,correct\n"
    cases = {
        "line 2": (head + b"a,t,s1,caf\xe9,true\na,t,s2,ok,false\n", 2, 11, 44),
        "after a quoted line break": (
            head + b'a,t,s1,ok,true\na,t,s2,"two\nlines",true\na,t,s3,caf\xe9,true\n',
            5,
            11,
            83,
        ),
        "the header": (b"run,task,sample_id,outp\xe9t\na,t,s,x\n", 1, 24, 23),
        "far down": (head + b"a,t,s0,ok,true\n" * 5000 + b"a,t,x,\xff,true\n", 5002, 7, None),
    }
    for name, (data, line, column, offset) in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.csv"
        path.write_bytes(data)
        at = f"byte offset {offset}" if offset is not None else "byte offset"
        for argv in (["import", str(path), "--db", str(tmp_path / "s.duckdb")],
                     ["score", str(path), "--scheme", "metric", "--metric", "correct"],
                     ["import", str(path), "--map", "output=output", "--db",
                      str(tmp_path / "s.duckdb")]):  # fmt: skip
            _fails(argv, capsys, f"line {line}: not UTF-8 text", f"at column {column}", at,
                   "Save the file as UTF-8")  # fmt: skip
        assert not (tmp_path / "s.duckdb").exists()
