"""`--calibrate-judges` (layered): each run's judge layer and each paired difference corrected by
the human-labelled samples, by PPI++ — the same figures `calipers.stats.ppi` gives on the judge
layer and the labels, computed here from the file itself."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from calipers.cli.main import cli
from calipers.stats.ppi import ppi_mean, ppi_paired_difference


def lenient_judge_runs(tmp_path: Path) -> tuple[Path, dict[str, dict[str, np.ndarray]]]:
    """Two runs of 200 samples: a judge one point too lenient (clipped to 1–5), human labels on
    60 of them (the same samples in both runs), one judge failure in run b."""
    rng = np.random.default_rng(2)
    quality = rng.normal(3.0, 0.7, 200)
    labelled = set(rng.choice(200, 60, replace=False).tolist())
    rows, arrays = [], {}
    for run, lift in (("a", 0.0), ("b", 0.3)):
        human_true = np.clip(quality + lift, 1, 5)
        judge = np.clip(np.round(human_true + 1.0 + rng.normal(0, 0.5, 200)), 1, 5)
        human = np.clip(np.round(human_true + rng.normal(0, 0.3, 200)), 1, 5)
        judge_seen = judge.copy()
        for i in range(200):
            row = {"run": run, "task": "t", "sample_id": f"s{i:03d}",
                   "assertions": [{"type": "contains", "name": "f", "passed": True}]}  # fmt: skip
            failed = run == "b" and i == 7
            row["judgments"] = [
                {"judge": "j", "score": None, "error": "timed out"}
                if failed
                else {"judge": "j", "score": float(judge[i])}
            ]
            if failed:
                judge_seen[i] = np.nan
            if i in labelled:
                row["human"] = [{"score": float(human[i])}]
            rows.append(row)
        h = np.full(200, np.nan)
        h[sorted(labelled)] = human[sorted(labelled)]
        arrays[run] = {"judge": judge_seen, "human": h}
    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, arrays


def test_score_and_compare_calibrate_the_judge_layer(tmp_path: Path) -> None:
    path, arrays = lenient_judge_runs(tmp_path)
    result = CliRunner().invoke(
        cli, ["score", str(path), "--scheme", "layered", "--calibrate-judges", "--json", "-"]
    )
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)["judge_calibration"]
    for run in ("a", "b"):
        keep = np.isfinite(arrays[run]["judge"])
        expected = ppi_mean(arrays[run]["judge"][keep], arrays[run]["human"][keep])
        assert got[run]["estimate"] == pytest.approx(expected.estimate, abs=1e-9)
        assert got[run]["low"] == pytest.approx(expected.low, abs=1e-9)
        assert got[run]["judge_mean"] > got[run]["estimate"] + 0.5  # the judge's leniency, removed
        assert got[run]["n_labelled"] == expected.n_labelled
    assert got["b"]["judge_failed"] == 1
    compared = CliRunner().invoke(
        cli,
        ["compare", str(path), "--scheme", "layered", "--baseline", "a", "--candidate", "b",
         "--calibrate-judges", "--json", "-"],
    )  # fmt: skip
    (pair,) = json.loads(compared.stdout)["pairs"]
    both = np.isfinite(arrays["a"]["judge"]) & np.isfinite(arrays["b"]["judge"])
    expected = ppi_paired_difference(
        arrays["a"]["judge"][both], arrays["b"]["judge"][both],
        arrays["a"]["human"][both], arrays["b"]["human"][both],
    )  # fmt: skip
    assert pair["judge_calibration"]["estimate"] == pytest.approx(expected.estimate, abs=1e-9)
    assert pair["judge_calibration"]["high"] == pytest.approx(expected.high, abs=1e-9)


def test_too_few_labels_are_refused_with_the_reason(tmp_path: Path) -> None:
    rows = [{"run": "a", "task": "t", "sample_id": f"s{i}", "judgments": [{"judge": "j",
             "score": 3.0 + (i % 3)}], **({"human": [{"score": 4.0}]} if i < 5 else {})}
            for i in range(40)]  # fmt: skip
    path = tmp_path / "few.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["score", str(path), "--scheme", "layered", "--calibrate-judges", "--json", "-"]
    )
    assert result.exit_code == 0, result.output
    refusal = json.loads(result.stdout)["judge_calibration"]["a"]["refusal"]
    assert "30" in refusal and "5" in refusal
