"""`calipers score` (layered, metric) ranks its runs with rank intervals and tie groups: the same
figures `calipers.stats.rankings` gives on the per-sample means of the samples every run has."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from calipers.cli.main import cli
from calipers.stats.rankings import mean_rank_intervals


def test_score_ranks_runs_with_intervals_and_tie_groups(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    item = rng.normal(0.5, 0.15, 60)
    rows = []
    for run, lift in (("a", 0.0), ("b", 0.01), ("c", 0.2)):
        for i in range(60 if run != "c" else 58):  # c lacks two samples: ranked on the shared 58
            for epoch in range(2):
                value = float(np.clip(item[i] + lift + rng.normal(0, 0.05), 0, 1))
                rows.append({"run": run, "task": "t", "sample_id": f"s{i:02d}", "epoch": epoch,
                             "scores": {"q": value}})  # fmt: skip
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["score", str(path), "--scheme", "metric", "--metric", "q", "--seed", "5",
              "--json", "-"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    ranking = json.loads(result.stdout)["ranking"]
    frame = pd.DataFrame([{**r, "q": r["scores"]["q"]} for r in rows])
    wide = frame.groupby(["sample_id", "run"]).q.mean().unstack().dropna()
    expected, seed = mean_rank_intervals(
        {run: wide[run].to_numpy() for run in ("a", "b", "c")}, n_resamples=1000, rng=5
    )
    assert ranking["n_samples"] == 58 and ranking["seed"] == seed == 5
    assert ranking["runs"] == [r.to_dict() for r in expected.runs]
    assert ranking["runs"][0]["run"] == "c" and ranking["runs"][0]["rank_high"] == 1
    assert sorted(ranking["groups"][1]) == ["a", "b"]  # 0.01 apart: not ordered by 58 samples
    text = CliRunner().invoke(cli, ["score", str(path), "--scheme", "metric", "--metric", "q"])
    assert "tied (not ordered by the data): " in text.output
