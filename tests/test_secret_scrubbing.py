"""One secret scrubber (issue 35, item 3): a key in the environment that a command judge, an
HTTP body or a pipeline prints reaches none of the store's rows, the judge cache, an export, a
JSON report, stdout or the terminal's error line."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from calipers.redact import MASK, is_secret_name, register_key_env, scrub, scrub_json, secrets
from judge_server import judge_server

KEY = "sk-live-Zq81xQ7mNw3pL0aV"  # the audit's OPENAI_API_KEY
TOKEN = "ghp_token_5e4d3c2b1a"  # another variable whose name says token
CALIPERS = [sys.executable, "-m", "calipers"]
PY = shlex.quote(sys.executable)


@pytest.mark.parametrize(
    "name",
    ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "APIKEY", "HF_TOKEN", "GITHUB_TOKEN",
     "AWS_SECRET_ACCESS_KEY", "MY_SECRET", "CLIENTSECRET", "PGPASSWORD", "DB_PASSWORD",
     "SMTP_PASSWD", "AWS_SESSION_TOKEN"],
)  # fmt: skip
def test_names_that_hold_secrets(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["PWD", "OLDPWD", "PATH", "HOME", "SSH_AUTH_SOCK", "TOKENIZERS_PARALLELISM", "KEYRING"]
)
def test_names_that_do_not(name: str) -> None:
    assert not is_secret_name(name)


def test_scrub_masks_long_values_of_secret_names_and_configured_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("calipers.redact._explicit", set())
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("SHORT_TOKEN", "abc123")  # under 8 characters: not masked
    monkeypatch.setenv("BUILD_DIR", "/tmp/some/long/path")  # not a secret's name
    monkeypatch.setenv("LLM_CREDS_VAR", "custom-key-42")
    text = f"auth failed for {KEY}; short abc123; dir /tmp/some/long/path; custom-key-42"
    assert (
        scrub(text)
        == f"auth failed for {MASK}; short abc123; dir /tmp/some/long/path; custom-key-42"
    )
    register_key_env("LLM_CREDS_VAR")  # `--judge-key-env LLM_CREDS_VAR`: whatever its name
    assert "custom-key-42" not in scrub(text)
    assert scrub("x", extra=["x"]) == "x"  # a one-letter "key" masks nothing
    monkeypatch.setenv("A_TOKEN", KEY + "-suffix")  # a secret containing another: masked whole
    assert secrets()[0] == KEY + "-suffix" and scrub(f"[{KEY}-suffix]") == f"[{MASK}]"
    assert scrub_json({"out": [f"k={KEY}", 3], KEY: None}) == {"out": [f"k={MASK}", 3], MASK: None}


def _samples(path: Path) -> Path:
    rows = [
        {"run": "m", "task": "t", "sample_id": f"s{i}", "input": "q", "output": "an answer",
         "assertions": [{"type": "contains", "value": "answer", "passed": True}]}
        for i in range(2)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _calipers(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CALIPERS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _everything_kept(cwd: Path) -> str:
    """Every file under the directory (store, judge cache, exports, reports, run directories),
    as text, plus every value in the store's tables."""
    parts = []
    for path in sorted(cwd.rglob("*")):
        if path.is_file() and path.suffix != ".duckdb" and ".wal" not in path.name:
            parts.append(path.read_bytes().decode("utf-8", errors="replace"))
    con = duckdb.connect(str(cwd / "s.duckdb"), read_only=True)
    try:
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            parts.append(
                json.dumps(con.execute(f'SELECT * FROM "{table}"').fetchall(), default=str)
            )
    finally:
        con.close()
    return "\n".join(parts)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": KEY, "CI_DEPLOY_TOKEN": TOKEN, "NO_COLOR": "1"}


def test_a_command_judge_that_prints_the_key_leaks_it_nowhere(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """The audit's judge (the key on stderr, exit 3), and one that puts both secrets in a reply
    that is cached; then export, the JSON of `runs` and the terminal of every command."""
    data = _samples(tmp_path / "samples.jsonl")
    outputs = [_calipers(tmp_path, env, "import", str(data), "--db", "s.duckdb")]
    failing = "command:sh -c 'echo auth failed for $OPENAI_API_KEY >&2; exit 3'"
    outputs.append(_calipers(tmp_path, env, "grade", "--db", "s.duckdb", "--judge", failing,
                             "--judge-retries", "0"))  # fmt: skip
    assert outputs[-1].returncode == 2  # every call failed
    assert f"auth failed for {MASK}" in outputs[-1].stderr + outputs[-1].stdout
    reply = (
        'command:sh -c \'cat > /dev/null; printf "{\\"score\\": 4, \\"rationale\\": '
        '\\"key $OPENAI_API_KEY and $CI_DEPLOY_TOKEN\\"}"\''
    )
    outputs.append(_calipers(tmp_path, env, "grade", "--db", "s.duckdb", "--judge", reply))
    assert outputs[-1].returncode == 0, outputs[-1].stderr
    outputs.append(_calipers(tmp_path, env, "export", "--db", "s.duckdb", "out.jsonl"))
    outputs.append(_calipers(tmp_path, env, "export", "--db", "s.duckdb", "-"))
    outputs.append(_calipers(tmp_path, env, "score", "--scheme", "layered", "--db", "s.duckdb",
                             "--json", "r.json", "--html", "r.html"))  # fmt: skip
    assert all(o.returncode in (0, 2) for o in outputs), [o.stderr for o in outputs]
    kept = _everything_kept(tmp_path)
    assert list((tmp_path / ".calipers" / "judge-cache").rglob("*"))  # the reply was cached
    assert f"key {MASK} and {MASK}" in kept  # the rationale, in the store, cache and export
    terminal = "".join(o.stdout + o.stderr for o in outputs)
    for secret in (KEY, TOKEN):
        assert secret not in kept and secret not in terminal


def test_a_pipeline_that_prints_the_key_leaks_it_nowhere(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Pipeline stderr (a failing task), output (a passing one) and the output file a failing
    call wrote before it exited (text, and bytes that are not UTF-8) with the key: masked in the
    samples, the run's JSON report and directory, the pipeline cache and the terminal."""
    script = tmp_path / "pipe.py"
    script.write_text(
        "import json, os, sys\n"
        "text = open(sys.argv[1]).read()\n"
        "key = os.environ['OPENAI_API_KEY']\n"
        "if 'fail' in text:\n"
        "    open(sys.argv[2], 'wb').write(b'half written \\xff ' + key.encode())\n"
        "    print('Traceback: bad key ' + key, file=sys.stderr); sys.exit(1)\n"
        "if 'half' in text:\n"
        "    open(sys.argv[2], 'w').write('partial ' + key); sys.exit(4)\n"
        "out = {'output': 'answer with ' + key, 'tools': [{'name': key}]}\n"
        "json.dump(out, open(sys.argv[2], 'w'))\n"
    )
    (tmp_path / "suite.yaml").write_text(
        "name: s\ntasks:\n  - id: ok\n    input: fine\n  - id: bad\n    input: fail\n"
        "  - id: half\n    input: half\n"
    )
    pipeline = f"{PY} {shlex.quote(str(script))} {{input}} {{output}}"
    run = _calipers(tmp_path, env, "run", "suite.yaml", "--pipeline", pipeline, "--run", "v",
                    "--db", "s.duckdb", "--json", "run.json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    kept = _everything_kept(tmp_path)
    assert f"bad key {MASK}" in kept and f"answer with {MASK}" in kept
    assert f"partial {MASK}" in kept and f"half written \ufffd {MASK}" in kept
    assert KEY not in kept and KEY not in run.stdout + run.stderr


def test_an_http_body_that_echoes_the_key_is_masked_on_the_terminal_and_in_the_store(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """An OpenAI-compatible endpoint whose error body repeats the Authorization header, with the
    key in a variable whose name does not look like one (`--judge-key-env`)."""
    data = _samples(tmp_path / "samples.jsonl")
    env = {**env, "LLM_CREDS": KEY}
    del env["OPENAI_API_KEY"]
    assert _calipers(tmp_path, env, "import", str(data), "--db", "s.duckdb").returncode == 0
    with judge_server() as server:
        server.script = lambda body: ("echo-auth", 401)
        graded = _calipers(tmp_path, env, "grade", "--db", "s.duckdb", "--judge",
                           f"openai:m@{server.url}", "--judge-key-env", "LLM_CREDS",
                           "--judge-retries", "0")  # fmt: skip
    assert graded.returncode == 2
    assert MASK in graded.stdout + graded.stderr
    assert KEY not in graded.stdout + graded.stderr and KEY not in _everything_kept(tmp_path)


def test_the_error_boundary_masks_a_key_in_any_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The last line of defence: whatever message an error carries, the terminal shows it
    scrubbed (here a file name that holds the key)."""
    from calipers.cli.main import main

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert main(["score", str(tmp_path / f"{KEY}.jsonl"), "--scheme", "layered"]) == 1
    err = capsys.readouterr().err
    assert KEY not in err and MASK in err
