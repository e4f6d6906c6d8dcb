"""`calipers check`'s cache and store (issue 34): the cache keys each pipeline output on the same
identity as `calipers run` (the run, the command, every file under the pipeline script's
directory, --pipeline-version, the --pipeline-env values), so a changed file the pipeline reads
gives fresh outputs; and the check's run goes into the store, said in its last line, unless
--no-store."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from calipers.cli.main import main
from calipers.running import check as running_check
from calipers.running import run_suite

SCAFFOLD_CASES = Path(__file__).parents[1] / "src" / "calipers" / "running" / "scaffold" / "cases"

# The application: its decision is whatever app/stage.txt says (a file the pipeline reads, never
# named on the command line), and the value of STAGE_SUFFIX when set.
PIPELINE = """\
import json, os, pathlib, sys
stage = (pathlib.Path(__file__).parent / "stage.txt").read_text().strip()
stage += os.environ.get("STAGE_SUFFIX", "")
text = open(sys.argv[1], encoding="utf-8").read()
with open(sys.argv[2], "w", encoding="utf-8") as fh:
    json.dump({"stage": stage, "chars_read": len(text)}, fh)
"""


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(SCAFFOLD_CASES, root / "cases")
    (root / "app").mkdir()
    (root / "app" / "pipeline.py").write_text(PIPELINE)
    (root / "app" / "stage.txt").write_text("seed\n")
    (root / "kelvin.yaml").write_text(
        f'run: "{sys.executable} app/pipeline.py {{input}} {{output}}"\n'
        "cases: cases\ndecision_field: stage\ngoverning_types: [gate_rule]\nseed: 0\n"
        "timeout_s: 30\n"
    )
    return root


def check(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, Any], str]:
    """Run the check (from another directory than the config's); its report's `calipers` block
    and its terminal output."""
    capsys.readouterr()
    code = main(["check", "--config", str(root / "kelvin.yaml"), "--db",
                 str(root / "store.duckdb"), *args])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads((root / "kelvin" / "report.json").read_text())
    return report["calipers"], " ".join(out.split())


def decisions(root: Path, run: str) -> set[str]:
    con = duckdb.connect(str(root / "store.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT DISTINCT decision FROM samples WHERE run = ?", [run]).fetchall()
    finally:
        con.close()
    return {json.loads(r[0]) if r[0].startswith('"') else r[0] for r in rows}


def test_check_uses_the_run_caches_identity() -> None:
    # one mechanism: check salts its cache with the function `calipers run` uses
    assert running_check.identify is run_suite.identify


def distinct_inputs(root: Path) -> int:
    """How many different inputs the check gave the pipeline (two variants may be the same text:
    the second is then served by the cache the first filled, within one check)."""
    return len({p.read_text() for p in (root / "kelvin").rglob("input.md")})


def test_a_changed_file_the_pipeline_reads_gives_fresh_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path)
    monkeypatch.chdir(tmp_path)  # app/pipeline.py is found from the config's directory
    monkeypatch.delenv("STAGE_SUFFIX", raising=False)
    first, _ = check(root, capsys, "-q")
    total, distinct = first["invocations"] + first["cached"], distinct_inputs(root)
    assert total == 33  # 3 cases: 3 baselines and 30 variants

    def fresh(block: dict[str, Any]) -> bool:
        """Every input invoked anew: nothing came from an earlier check's entries."""
        return block["invocations"] >= distinct and block["invocations"] + block["cached"] == total

    assert fresh(first)
    assert check(root, capsys, "-q")[0] == {"invocations": 0, "cached": total, "run": "check"}
    assert decisions(root, "check") == {"seed"}

    # the application changed: a file next to the script, not on the command line
    (root / "app" / "stage.txt").write_text("growth\n")
    assert fresh(check(root, capsys, "-q")[0])
    assert decisions(root, "check") == {"growth"}  # the new version's outputs, not the old
    assert check(root, capsys, "-q")[0]["cached"] == total  # and those are cached in turn

    # another run never gets this run's outputs; a new declared version, nor a new env value
    assert fresh(check(root, capsys, "-q", "--run", "other")[0])
    assert fresh(check(root, capsys, "-q", "--pipeline-version", "2")[0])
    assert check(root, capsys, "-q", "--pipeline-version", "2")[0]["cached"] == total
    monkeypatch.setenv("STAGE_SUFFIX", "-b")
    named = ["-q", "--pipeline-env", "STAGE_SUFFIX"]
    assert fresh(check(root, capsys, *named)[0])
    assert decisions(root, "check") == {"growth-b"}
    assert check(root, capsys, *named)[0]["cached"] == total
    monkeypatch.setenv("STAGE_SUFFIX", "-c")
    assert fresh(check(root, capsys, *named)[0])
    assert decisions(root, "check") == {"growth-c"}


def test_the_check_says_where_its_run_is_stored_and_no_store_leaves_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # the store's path on one line
    root = project(tmp_path)
    db = root / "store.duckdb"
    _, out = check(root, capsys, "--no-store")
    assert "not stored (--no-store)" in out and not db.exists()
    _, out = check(root, capsys, "--run", "nightly")
    assert f"33 samples stored in {db} as run 'nightly' (--no-store skips this)" in out
    assert decisions(root, "nightly") == {"seed"}
    before = db.read_bytes()
    check(root, capsys, "--no-store", "--run", "again")
    assert db.read_bytes() == before
