"""`calipers demo`: seeded, complete data, imported and ranked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calipers.cli.main import main
from calipers.demo.synthetic import generate_samples


def test_demo_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--dir", str(tmp_path)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the console wraps at 80 columns
    assert "ReasonScore leaderboard" in out and "seed 20261122" in out
    # the layered comparison of two variants ends with its verdict and reason
    assert "Layered comparison" in out and "atlas-small (control)" in out
    assert "CAUTIOUS composite +0.412" in out and "fails the gate on judge" in out
    assert (tmp_path / "demo.duckdb").exists()
    # then the example robustness project, scaffolded and checked with the demo's seed
    assert "Robustness check" in out and "Sensitivity 1.00" in out
    check = json.loads((tmp_path / "check" / "kelvin" / "report.json").read_text())
    assert check["seed"] == 20261122 and check["sensitivity"] == 1.0
    assert f"Invariance {check['invariance']:.2f}" in out
    lines = (tmp_path / "samples.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert len(first["judgments"]) == 2 and len(first["assertions"]) == 2
    assert {a["layer"] for a in first["assertions"]} == {"fact", "behavior"}
    samples = [json.loads(line) for line in lines]
    assert len({s["task"] for s in samples}) == 12 and len({s["tier"] for s in samples}) == 3
    assert {s["epoch"] for s in samples} == {0, 1}
    assert any(s["truncated"] for s in samples) and any(s["guess_chance"] > 0 for s in samples)


def test_demo_data_is_reproducible_from_its_seed() -> None:
    a = [s for _, s in zip(range(300), generate_samples(seed=5), strict=False)]
    b = [s for _, s in zip(range(300), generate_samples(seed=5), strict=False)]
    c = [s for _, s in zip(range(300), generate_samples(seed=6), strict=False)]
    assert a == b and a != c
