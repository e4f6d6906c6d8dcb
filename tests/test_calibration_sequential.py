"""The sequential grid (`calipers.calibration.sequential`): the reduced grid meets issue 36's
targets within its Monte Carlo error, the replay it runs is `decide_sequentially` rep by rep, the
same seed gives the same stops, and the completion-order stress case shows why units must be fed
in item order."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calipers.calibration import sequential as grid
from calipers.calibration import sequential_report
from calipers.calibration.__main__ import main
from calipers.verdicts.sequential import PairedUnits, decide_sequentially
from calipers.verdicts.sequential_rules import PROGRESS, VERDICTS


@pytest.fixture(scope="module")
def reduced() -> list[dict[str, object]]:
    return grid.run_grid(grid.reduced_grid(), grid.REDUCED, jobs=1)


def test_the_reduced_grid_meets_the_targets(reduced: list[dict[str, object]]) -> None:
    """Type-I ≤ α in every cell, false non-inferior ≤ α, the hybrid's power within 3 points of
    the fixed test's, the mean stop at twice the MDE ≤ 0.45 N (hybrid) and 0.35 N (sequence) —
    each within 2 Monte Carlo standard errors (400 null and 200 alternative runs a cell)."""
    verdict = sequential_report.assess(reduced, allowance=2.0, noise=2.0)
    assert verdict["checks"] >= 15
    assert verdict["failed"] == [], [c.describe() for c in verdict["failed"]]
    assert verdict["irreproducible"] == []
    # every design of every cell was measured under the null, and the alternatives ran
    for result in reduced:
        designs = result["designs"]
        assert isinstance(designs, dict)
        for got in designs.values():
            assert got["false"]["reps"] == grid.REDUCED.reps_null


def test_the_replay_is_decide_sequentially_rep_by_rep() -> None:
    cell = grid.SeqCell("continuous/check", "continuous", 300)
    draw = grid.simulate(cell, [0.0, 0.4], 15, np.random.default_rng(2))
    for label in ("hybrid", "sequence", "obf"):
        effect = grid.mde(cell, 1)
        plan = grid._plan(cell, label, 1, effect)
        stops, verdicts, _ = grid._replay(plan, draw, 1)
        for row in range(draw.arms[0].shape[0]):
            units = PairedUnits("A", "B", None, draw.arms[0][row], draw.arms[1][row], (0, 1), False)
            made = decide_sequentially(
                [units], design=grid._design(label, cell.n), min_effect=effect
            ).pairs[0]
            assert (made.stopped_at or cell.n) == stops[row]
            assert made.decision.verdict == VERDICTS[int(verdicts[row])]


def test_completion_order_without_the_buffer_makes_false_verdicts() -> None:
    """The same simulated runs fed two ways: in the order their calls finished (a slow, failing
    candidate looks better early) and through the reorder buffer (item order). The first
    declares false PROGRESS several times as often."""
    naive = grid._cell("pass-0.50", 400, stress="naive")
    buffered = grid._cell("pass-0.50", 400, stress="buffer")
    rates = []
    for cell in (naive, buffered):
        draw = grid.simulate(cell, [0.0, 0.0], 600, np.random.default_rng(3))
        plan = grid._plan(cell, "sequence-N", 1, grid.mde(cell, 1))
        _, verdict, _ = grid._replay(plan, draw, 1)
        rates.append(float(np.mean(verdict == PROGRESS)))
        if cell is buffered:  # the buffer looks only when units are released, in item order
            assert draw.looks is not None and draw.looks[:, -1].all()
            assert 0.0 < draw.looks.mean() < 1.0  # released in bursts: fewer looks than units
    assert rates[0] > 0.05 and rates[0] > 3 * rates[1], rates


def test_the_same_seed_gives_the_same_stops() -> None:
    cell = grid._cell("judge", 200, designs=("hybrid",))
    again = []
    for _ in range(2):
        draw = grid.simulate(cell, [0.0, 0.0], 50, grid._phase_rng(grid.REDUCED, cell, "null"))
        stops, verdict, _ = grid._replay(grid._plan(cell, "hybrid", 1, 0.2), draw, 1)
        again.append((stops, verdict))
    assert np.array_equal(again[0][0], again[1][0]) and np.array_equal(again[0][1], again[1][1])


def test_the_command_writes_the_json_and_the_section(tmp_path: Path) -> None:
    page = tmp_path / "calibration.md"
    page.write_text("# Calibration\n\nkept\n", encoding="utf-8")
    out = tmp_path / "seq.json"
    code = main(["--sequential", "--reduced", "--jobs", "1", "--only", "buffer",
                 "--json", str(out), "--out", str(page)])  # fmt: skip
    assert code == 0
    body = json.loads(out.read_text(encoding="utf-8"))
    assert [c["cell"]["id"] for c in body["cells"]] == ["pass-0.50/N400/buffer"]
    assert body["look_cost_ms"]["hybrid"] > 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Calibration\n\nkept\n")
    assert sequential_report.BEGIN in text and "`pass-0.50/N400/buffer`" in text
    # a second run replaces the section rather than adding one
    main(["--sequential", "--reduced", "--jobs", "1", "--only", "buffer",
          "--json", str(out), "--out", str(page)])  # fmt: skip
    assert page.read_text(encoding="utf-8").count(sequential_report.BEGIN) == 1
