"""Command-line edges: `compare A.jsonl B.jsonl` reads several files together, `export -` writes
to stdout, `--json PATH|-` means the same on every command (`runs` too), every option has help,
and shell completion works as docs/cli.md says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from calipers.cli.main import _register_commands, cli, main

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
LAYERED = EXAMPLES / "layered.jsonl"
CALIPERS = Path(sys.executable).parent / "calipers"
COMPARE = ["--scheme", "layered", "--baseline", "prompt-v1", "--candidate", "prompt-v2", "-q"]


def _split(tmp_path: Path) -> list[Path]:
    """docs/examples/layered.jsonl as one file per run."""
    rows = [json.loads(line) for line in LAYERED.read_text().splitlines()]
    paths = []
    for run in ("prompt-v1", "prompt-v2"):
        path = tmp_path / f"{run}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["run"] == run))
        paths.append(path)
    return paths


def test_compare_reads_several_files_together(tmp_path: Path) -> None:
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main(["compare", str(LAYERED), *COMPARE, "--json", str(one)]) == 0
    assert main(["compare", *map(str, _split(tmp_path)), *COMPARE, "--json", str(two)]) == 0
    a, b = json.loads(one.read_text()), json.loads(two.read_text())
    assert b["source"] == ", ".join(str(p) for p in _split(tmp_path))
    a.pop("source"), b.pop("source")
    assert a == b


def test_files_that_share_sample_keys_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = _split(tmp_path)
    assert main(["compare", str(base), str(base), *COMPARE]) == 1
    err = capsys.readouterr().err
    assert "30 sample keys are in both" in err and "give the runs different names" in err
    assert main(["compare", str(base), str(tmp_path / "missing.jsonl"), *COMPARE]) == 1
    assert "missing.jsonl" in capsys.readouterr().err


def test_export_dash_writes_to_stdout(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(LAYERED), "--db", db, "-q"]) == 0
    capfd.readouterr()
    assert main(["export", "-", "--db", db, "--run", "prompt-v2"]) == 0
    out = capfd.readouterr().out
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 30 and {r["run"] for r in rows} == {"prompt-v2"}
    assert main(["export", "-", "--db", db, "--format", "csv"]) == 0
    lines = capfd.readouterr().out.splitlines()
    assert lines[0].startswith("run,task,sample_id,epoch") and len(lines) == 61
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.duckdb"]  # no file named "-"


def test_runs_json_takes_a_path_or_dash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # wide enough for the path on one line: under pytest-xdist tmp_path is longer (popen-gwN/)
    # and an 80-column console folds it inside the file name
    monkeypatch.setenv("COLUMNS", "200")
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(LAYERED), "--db", db, "-q"]) == 0
    capsys.readouterr()
    assert main(["runs", "--db", db, "--json", "-"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in listed] == ["prompt-v1", "prompt-v2"]
    assert main(["runs", "--db", db, "--json"]) == 0  # bare, as the earlier flag: stdout
    assert json.loads(capsys.readouterr().out) == listed
    assert main(["runs", "--json", "--db", db]) == 0
    assert json.loads(capsys.readouterr().out) == listed
    path = tmp_path / "runs.json"
    assert main(["runs", "--db", db, "--json", str(path)]) == 0
    assert json.loads(path.read_text()) == listed
    assert "runs.json" in capsys.readouterr().out


def _options() -> list[tuple[str, click.Option]]:
    _register_commands()
    found = [("calipers", p) for p in cli.params if isinstance(p, click.Option)]
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None and (command.help or "").strip(), f"{name} has no help"
        found += [(name, p) for p in command.params if isinstance(p, click.Option)]
    return found


def test_every_option_has_help() -> None:
    missing = [f"{cmd} {'/'.join(o.opts)}" for cmd, o in _options() if not (o.help or "").strip()]
    assert not missing, missing


def test_json_means_path_or_dash_everywhere() -> None:
    for cmd, option in _options():
        if "--json" in option.opts:
            assert option.metavar == "PATH|-", cmd


@pytest.mark.skipif(not CALIPERS.exists(), reason="the calipers script is not installed")
def test_shell_completion_as_documented() -> None:
    env = {**os.environ, "_CALIPERS_COMPLETE": "bash_source"}
    script = subprocess.run([CALIPERS], env=env, capture_output=True, text=True, check=True)
    assert "complete -o nosort -F _calipers_completion calipers" in script.stdout
    env = {**os.environ, "_CALIPERS_COMPLETE": "bash_complete",
           "COMP_WORDS": "calipers compare --mark", "COMP_CWORD": "2"}  # fmt: skip
    words = subprocess.run([CALIPERS], env=env, capture_output=True, text=True, check=True)
    assert "plain,--markdown" in words.stdout.splitlines()
    for shell in ("zsh", "fish"):
        env = {**os.environ, "_CALIPERS_COMPLETE": f"{shell}_source"}
        out = subprocess.run([CALIPERS], env=env, capture_output=True, text=True, check=True)
        assert "_calipers_completion" in out.stdout


def test_the_library_opens_several_files_too(tmp_path: Path) -> None:
    import calipers

    with calipers.open(_split(tmp_path)) as samples:
        assert samples.runs() == ["prompt-v1", "prompt-v2"] and samples.count() == 60
    with calipers.open([str(p) for p in _split(tmp_path)], runs="prompt-v2") as samples:
        assert samples.runs() == ["prompt-v2"]


@pytest.mark.parametrize("command", [
    ["compare", "--scheme", "metric", "--metric", "correct", "--control", "a", "--treatment", "b"],
    ["compare", "--scheme", "layered", "--control", "a", "--treatment", "b"],
    ["watch", "--metric", "correct", "--baseline", "a", "--candidate", "b"],
    ["score", "--scheme", "metric", "--metric", "correct"],
])  # fmt: skip
def test_a_row_written_twice_by_other_sql_is_named_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    # an import keeps one row per (run, task, sample_id, epoch); SQL of a user's own may not,
    # and a pairing would then match rows to the wrong ones (an IndexError before)
    import duckdb

    rows = [{"run": run, "task": "t", "sample_id": f"s{i}", "correct": bool((i + k) % 3)}
            for k, run in enumerate(("a", "b")) for i in range(40)]  # fmt: skip
    data = tmp_path / "x.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "s.duckdb"
    assert main(["import", str(data), "--db", str(db), "-q"]) == 0
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO samples SELECT * FROM samples WHERE run = 'b' AND sample_id = 's3'")
    con.close()
    capsys.readouterr()
    assert main([*command, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "run 'b' has more than one row for sample 't/s3', epoch 0" in err
    assert "Traceback" not in err and "hint:" in err
