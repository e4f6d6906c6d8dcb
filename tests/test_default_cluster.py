"""Data that names clusters is clustered by them by default (issue 33): `cluster="auto"` clusters
by `group` when every sample of the runs names one, by sample_id otherwise (with a note when only
some do), and every report says which unit it used and why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers
from calipers.cli.main import main
from calipers.render.markdown import compare_markdown, score_markdown
from calipers.verdicts.persample import resolve_cluster
from conftest import sample_set


def grouped_rows(n_groups: int, per_group: int, seed: int) -> list[dict[str, Any]]:
    """Passages of `per_group` items: the treatment's gain differs by passage (a shared effect)."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(n_groups):
        shared, gain = rng.normal(0, 0.6), rng.normal(0.1, 0.5)
        for k in range(per_group):
            q = 3.5 + shared + rng.normal(0, 0.4)
            for run in ("c", "t"):
                value = q + (gain if run == "t" else 0.0) + rng.normal(0, 0.3)
                rows.append({"run": run, "task": "qa", "sample_id": f"g{g}-{k}",
                             "group": f"passage-{g}",
                             "scores": {"rating": float(value)}})  # fmt: skip
    return rows


def compare(rows: list[dict[str, Any]], **options: Any) -> Any:
    samples = sample_set(rows)
    return calipers.compare(
        samples, "metric", baseline="c", candidates=["t"], metric="rating", interval="t", **options
    )


def width(result: Any) -> float:
    d = result.pairs[0].comparison.composite
    return float(d.high - d.low)


def test_data_with_groups_is_clustered_by_group_by_default() -> None:
    rows = grouped_rows(14, 8, 3)
    auto, by_group = compare(rows), compare(rows, cluster="group")
    by_sample = compare(rows, cluster="sample_id")
    assert auto.parameters["cluster"] == "group"
    assert auto.parameters["cluster_reason"] == "the samples name 14 groups"
    a, g = auto.pairs[0].comparison.composite, by_group.pairs[0].comparison.composite
    assert (a.low, a.high, a.estimate) == (g.low, g.high, g.estimate)
    assert auto.pairs[0].comparison.n_pairs == 14
    # the passages share the gain: the interval that ignores them is far too narrow
    assert width(auto) > 1.5 * width(by_sample)
    assert by_sample.parameters["cluster"] == "sample_id"
    assert "too narrow if groups share an effect" in by_sample.parameters["cluster_reason"]
    # the run summaries of a score report are clustered the same way
    scored = calipers.score(sample_set(rows), "metric", metric="rating", interval="t")
    assert scored.parameters["cluster"] == "group"
    assert scored.parameters["cluster_reason"] == "the samples name 14 groups"
    assert "clustered by group (the samples name 14 groups)" in score_markdown(scored.to_dict())
    assert "paired by group (the samples name 14 groups)" in compare_markdown(auto.to_dict())


def test_without_groups_auto_is_by_sample() -> None:
    rows = grouped_rows(6, 5, 1)
    for r in rows:
        del r["group"]
    result = compare(rows)
    assert result.parameters["cluster"] == "sample_id"
    assert result.parameters["cluster_reason"] == "no sample names a group"
    assert result.pairs[0].comparison.n_pairs == 30


def test_groups_on_some_samples_only_cluster_by_sample_with_a_note() -> None:
    rows = grouped_rows(10, 4, 2)
    for r in rows:
        if r["sample_id"].startswith("g0-"):
            del r["group"]
    result = compare(rows)
    assert result.parameters["cluster"] == "sample_id"
    assert result.parameters["cluster_reason"] == "only 36 of 40 samples name a group"
    assert any("only 36 of 40 samples name a group" in n and "too narrow" in n
               for n in result.notes)  # fmt: skip


def test_few_groups_are_used_with_a_note_and_one_group_is_not_a_cluster() -> None:
    few = compare(grouped_rows(4, 10, 5))
    assert few.parameters["cluster"] == "group"
    assert any("only 4 groups" in n and "--cluster sample_id" in n for n in few.notes)
    one = grouped_rows(1, 30, 6)
    assert compare(one).parameters["cluster"] == "sample_id"


def test_resolve_cluster_refuses_an_unknown_unit() -> None:
    with pytest.raises(calipers.InputError, match="`cluster`: Input should be 'auto'"):
        compare(grouped_rows(3, 3, 0), cluster="passage")
    with pytest.raises(calipers.InputError, match="unknown `cluster`"):
        resolve_cluster([], "passage")


def _cli(path: Path, *extra: str) -> list[str]:
    return ["compare", str(path), "--scheme", "metric", "--metric", "rating", "--interval", "t",
            "--baseline", "c", "--candidate", "t", "--gate", "none", *extra]  # fmt: skip


def test_cli_clusters_by_group_and_cluster_sample_id_opts_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "grouped.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in grouped_rows(14, 8, 3)))
    assert main(_cli(path)) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "paired units by group (the samples name 14 groups)" in out
    assert main(_cli(path, "--cluster", "sample_id")) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "paired units by sample_id (--cluster sample_id: items of a group treated as "
        "independent; intervals are too narrow if groups share an effect)" in out
    )
    assert main(_cli(path, "--cluster", "sample_id", "--json", "-", "-q")) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["parameters"]["cluster"] == "sample_id"
    assert report["pairs"][0]["cluster"] == "sample_id" and report["pairs"][0]["n_pairs"] == 112
    assert main(_cli(path, "--json", "-", "-q")) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["pairs"][0]["cluster"] == "group" and report["pairs"][0]["n_pairs"] == 14
    html = tmp_path / "compare.html"
    assert main(_cli(path, "--html", str(html), "-q")) == 0
    assert "independent unit group (the samples name 14 groups)" in html.read_text()
    score = ["score", str(path), "--scheme", "metric", "--metric", "rating", "--interval", "t"]
    assert main(score) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "intervals clustered by group (the samples name 14 groups)" in out


def test_plan_from_grouped_data_plans_groups_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "grouped.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in grouped_rows(14, 8, 3)))
    args = ["plan", str(path), "--metric", "rating", "--baseline", "c", "--candidate", "t",
            "--effect", "0.5"]  # fmt: skip
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "units by group (the samples name 14 groups)" in out and "in 14 groups" not in out
    assert main([*args, "--cluster", "sample_id", "--json", "-", "-q"]) == 0
    design = json.loads(capsys.readouterr().out)["design"]
    assert design["cluster"] == "sample_id" and design["cluster_size"] == 1
    assert design["cluster_reason"].startswith("--cluster sample_id: items of a group")
    assert main([*args, "--json", "-", "-q"]) == 0
    design = json.loads(capsys.readouterr().out)["design"]
    assert design["cluster"] == "group" and design["cluster_size"] == 8
