"""`calipers run --stop`: a run that stops once its comparison with a stored baseline is decided —
early, reproducibly, storing what it ran, with the decision a replay of the finished run in the
same seeded order gives, whatever order its calls finish in (slow failures included)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

import calipers
from calipers.cli.main import main

pytestmark = pytest.mark.xdist_group("run-stop")  # pipelines as processes: one worker

N_TASKS = 120
# The pipeline: a shell script (no Python start-up per call). It answers "yes" when the input's
# checksum mod 100 is below the version's rate; with a delay ($4), a wrong answer comes back late;
# $5 slows every call (so that a run that stops has calls left to cancel).
PIPELINE = """\
h=$(cksum < "$2" | cut -d' ' -f1)
if [ $((h % 100)) -lt "$1" ]; then a=yes; else a=no; fi
if [ "$a" = no ] && [ "$4" != 0 ]; then sleep "$4"; fi
if [ "${5:-0}" != 0 ]; then sleep "$5"; fi
printf '{"output": "%s", "cost_usd": 0.01, "tokens_in": 100, "tokens_out": 20}' "$a" > "$3"
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stop")
    check = [{"type": "contains", "value": "yes"}]
    tasks = [{"id": f"q{i:03d}", "input": f"question number {i}", "expected": "yes",
              "assertions": check} for i in range(N_TASKS)]  # fmt: skip
    (root / "suite.yaml").write_text(yaml.safe_dump({"name": "stop", "tasks": tasks}))
    (root / "pipe.sh").write_text(PIPELINE)
    db = root / "store.duckdb"
    assert main(_run(root, "v1", 35, 0)) == 0
    assert db.exists()
    return root


def _run(
    root: Path, name: str, rate: int, delay: float, *extra: str, every: float = 0
) -> list[str]:
    return ["run", str(root / "suite.yaml"), "--run", name, "--db", str(root / "store.duckdb"),
            "--pipeline", f"sh {root / 'pipe.sh'} {rate} {{input}} {{output}} {delay} {every}",
            "-q", "--no-cache", "-j", "6", *extra]  # fmt: skip


def _stop(root: Path, name: str, seed: int) -> dict[str, Any]:
    out = root / f"{name}-{seed}.json"
    assert main([*_run(root, name, 85, 0, "--stop", "hybrid", "--baseline", "v1",
                       "--seed", str(seed), "--json", str(out), every=0.1)]) == 0  # fmt: skip
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def test_a_run_stops_early_and_the_same_seed_gives_the_same_stop(project: Path) -> None:
    first, again = _stop(project, "v2", 5), _stop(project, "v2-again", 5)
    stop = first["stop"]
    assert stop["verdict"] == "PROGRESS" and stop["decided"]
    assert stop["tasks_planned"] == N_TASKS
    assert stop["pairs"][0]["stopped_at"] == stop["tasks_counted"] < N_TASKS / 2
    assert stop["tasks_not_needed"] == N_TASKS - stop["tasks_counted"]
    assert stop["saved"]["cost_usd"] == pytest.approx(0.01 * stop["tasks_not_needed"])
    # the same order, the same stop (the runs' names apart)
    assert json.dumps(again["stop"]["pairs"]).replace("v2-again", "v2") == json.dumps(stop["pairs"])
    # what ran is stored (at least every task counted; never the tasks not started)
    con = duckdb.connect(str(project / "store.duckdb"), read_only=True)
    stored = con.execute("SELECT count(*) FROM samples WHERE run = 'v2-again'").fetchone()
    con.close()
    assert stored is not None and stop["tasks_counted"] <= stored[0] == again["samples"] < N_TASKS
    assert any("invocation(s) not run" in n for n in again["notes"])


def test_the_stop_is_the_replay_of_the_finished_run_whatever_order_calls_finish_in(
    project: Path,
) -> None:
    """Stress: wrong answers come back 0.3 s late, so in completion order the candidate's
    successes arrive first. Counted in the seeded order through the reorder buffer, the stop is
    the one `watch` finds replaying the whole candidate run in that order."""
    out = project / "slow.json"
    assert main([*_run(project, "v2-slow", 70, 0.3, "--stop", "hybrid", "--baseline", "v1",
                       "--seed", "9", "--json", str(out))]) == 0  # fmt: skip
    stop = json.loads(out.read_text())["stop"]
    assert main(_run(project, "v2-full", 70, 0)) == 0  # the same system, every task
    replay = calipers.watch(
        calipers.open(db=project / "store.duckdb"), "layered", baseline="v1",
        candidates=["v2-full"], design="hybrid", n_planned=N_TASKS, order="random", seed=9,
        errors="worst",
    ).to_dict()["pairs"][0]  # fmt: skip
    assert stop["pairs"][0]["stopped_at"] == replay["stopped_at"] is not None
    assert stop["pairs"][0]["decision"]["verdict"] == replay["decision"]["verdict"]
    assert stop["pairs"][0]["interval_at_stop"] == pytest.approx(
        replay["interval_at_stop"], abs=0.008
    )


def test_stop_options_are_checked_before_anything_runs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_run(project, "v3", 85, 0, "--stop", "hybrid")) == 1
    assert "--baseline RUN" in capsys.readouterr().err
    assert main(_run(project, "v3", 85, 0, "--stop", "hybrid", "--baseline", "nope")) == 1
    assert "no run 'nope'" in capsys.readouterr().err
    assert main(_run(project, "v3", 85, 0, "--stop", "zigzag", "--baseline", "v1")) == 1
    assert "zigzag" in capsys.readouterr().err
    assert main(_run(project, "v3", 85, 0, "--stop", "hybrid", "--baseline", "v1",
                     "--metric", "nosuch")) == 1  # fmt: skip
    err = capsys.readouterr().err  # said of the user's baseline, not of calipers' private copy
    assert "no sample in run 'v1' has the metric 'nosuch'" in err and "stop.duckdb" not in err
    assert main(_run(project, "v3", 85, 0, "--baseline", "v1")) == 1  # without --stop
    assert "--stop" in capsys.readouterr().err
    con = duckdb.connect(str(project / "store.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM samples WHERE run = 'v3'").fetchone() == (0,)
    con.close()
