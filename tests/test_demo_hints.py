"""`calipers demo` explains itself, and the commands it ends with reproduce its numbers.

The demo is run as `make demo` runs it (the venv's `calipers` script, in a fresh directory); each
command it prints is then run exactly as printed, and every line of the demo's output that holds a
number, in the part that command reproduces, must come out again. None may change a file the
demo wrote (its pages, the data behind them, its store)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent  # the venv's scripts, as `make demo` and the README use them

pytestmark = [pytest.mark.slow, pytest.mark.extended]  # the whole demo, again: make test-all


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CALIPERS_DB", "NO_COLOR")}
    env |= {"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "COLUMNS": "200"}
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def section(out: str, start: str, end: str) -> list[str]:
    """The lines of the demo's output from the one starting with `start` to the next starting
    with `end`, without those two: the part of the output one hint reproduces."""
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    last = next(i for i, line in enumerate(lines) if i > first and line.startswith(end))
    return lines[first + 1 : last]


def numbered(lines: list[str]) -> list[str]:
    return [line.rstrip() for line in lines if re.search(r"\d", line)]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    cwd = tmp_path_factory.mktemp("demo")
    done = shell("calipers demo", cwd)
    assert done.returncode == 0, done.stderr
    return cwd, done.stdout


def test_the_objective_gate_shows_its_cost_figures_and_why_it_differs(
    demo: tuple[Path, str],
) -> None:
    _, out = demo
    gate = "\n".join(section(out, "Objective gate", "HTML reports"))
    # the cost per sample of each run, the ratio, the rule and the adjustment it gave
    assert "cost per sample (12 tasks):  assistant-v1 → assistant-v2" in gate
    assert re.search(r"cost_usd +\$0\.0002 → \$0\.0007  \(×3\.50\)", gate)
    assert "cost adj = 0.1 × clamp(1 − mean ratio, −1, 1), per task" in gate
    assert "→ -0.100 on every task (clamped)" in gate
    # and why the layered verdict (quality only) and the objective one (with cost) disagree,
    # with the numbers of both results
    why = " ".join(gate[gate.index("Why they differ") :].split())
    assert "layered: PROGRESS on quality alone (composite +2.194 [+0.053, +3.418]" in why
    assert "objective: REGRESSED because assistant-v2 costs 3.50× as much a sample" in why
    assert "($0.0007 against $0.0002, +250%), a cost adjustment of -0.100 on every task" in why
    assert "on helmet, pass, price and unlock, where assistant-v1 already scored 1.000" in why
    assert "4 hard regressions" in why and "net gain (+5.400)" in why


def test_its_hints_reproduce_its_numbers_and_leave_its_pages_alone(
    demo: tuple[Path, str],
) -> None:
    cwd, out = demo
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "The same numbers again" in line)
    hints = [line.strip() for line in lines[start + 1 :] if line.startswith("  calipers ")]
    assert len(hints) == 5
    # what each hint reproduces: its part of the demo's output
    parts = [
        section(out, "Imported", "Layered comparison: atlas-small"),
        section(out, "Layered comparison: atlas-small", "Robustness check"),
        section(out, "Robustness check", "Suite run"),
        section(out, "Layered comparison: assistant-v1", "Objective gate"),
        section(out, "Objective gate", "cost per sample"),
    ]
    assert "--seed 20240917" in hints[1] and "--seed 20261122" in hints[2]
    demo_dir = cwd / ".calipers" / "demo"
    before = digests(demo_dir)
    assert {"compare.html", "check.html", "report.html", "demo.duckdb"} <= before.keys()
    for hint, part in zip(hints, parts, strict=True):
        done = shell(hint, cwd)
        # the objective hint keeps the demo's --gate ship, which refuses this promotion
        assert done.returncode == (3 if "--scheme objective" in hint else 0), (hint, done.stderr)
        expected = numbered(part)
        assert expected, hint
        got = [line.rstrip() for line in done.stdout.splitlines()]
        missing = [line for line in expected if line not in got]
        assert not missing, (hint, missing)
    after = digests(demo_dir)
    changed = [f for f, h in before.items() if after.get(f) != h]
    assert not changed
    assert all(f.startswith("check-rerun/") for f in after.keys() - before.keys())


def test_run_again_it_replaces_its_runs_in_the_default_store_and_keeps_the_others(
    demo: tuple[Path, str],
) -> None:
    cwd, _ = demo
    store = cwd / ".calipers" / "calipers.duckdb"  # where the other commands look by default
    mine = cwd / "mine.jsonl"
    mine.write_text('{"run": "mine", "task": "t", "sample_id": "s1", "correct": true}\n')
    assert shell(f"calipers import {mine} -q", cwd).returncode == 0
    before = runs(store)
    assert shell("calipers demo -q", cwd).returncode == 0
    after = runs(store)
    assert after == before and after["atlas-small"] == 12_288 // 4 and after["mine"] == 1
    assert after["assistant-v1"] == after["assistant-v2"] == 12


def runs(store: Path) -> dict[str, int]:
    import duckdb

    con = duckdb.connect(str(store), read_only=True)
    try:
        rows = con.execute("SELECT run, count(*) FROM samples GROUP BY run").fetchall()
    finally:
        con.close()
    return {str(run): int(n) for run, n in rows}


def test_the_explanation_reads_its_figures_from_the_results_either_way(
    demo: tuple[Path, str],
) -> None:
    # The same change the other way round: v1 is cheaper but worse, and both verdicts agree.
    from calipers import api
    from calipers.demo.explain import agree, cost_summary, why_they_differ
    from calipers.schemes.objective.verdict import ObjectiveComparison
    from calipers.verdicts.compare import CompareResult

    cwd, _ = demo
    with api.open(db=cwd / ".calipers" / "demo" / "demo.duckdb") as samples:
        layered = api.compare(
            samples, "layered", baseline="assistant-v2", candidates=["assistant-v1"]
        )
        objective = api.compare(
            samples, "objective", baseline="assistant-v2", candidates=["assistant-v1"]
        )
    assert isinstance(layered, CompareResult) and isinstance(objective, ObjectiveComparison)
    summary = cost_summary(objective)
    usd = next(f for f in summary.figures if f.metric == "cost_usd")
    assert (usd.baseline, usd.candidate) == pytest.approx((0.0007, 0.0002))
    assert all(a > 0 for a in summary.adjustments)  # cheaper: a bonus, not a charge
    assert agree(layered, objective)
    why = why_they_differ(layered, objective)
    assert "layered: REGRESS on quality alone (composite -2.194" in why
    assert "assistant-v1 costs 0.29× as much a sample ($0.0002 against $0.0007, -71%)" in why
    assert "regressions the cost does not explain (composite_drop, objective_drop)" in why
