"""The rank-interval study's ReasonScore leaderboards (`calibration.reasonscore_ranks`): the truth
is what the scheme's score/token converges to, the coverage machinery counts what it should, the
fix (intervals for the limit, not the finite-sample score) is needed and works; and the sections
of docs/calibration.md made from the studies' JSON (`calibration.studies`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calipers.calibration import studies
from calipers.calibration.__main__ import main as calibration_main
from calipers.calibration.rankings import GRID, RankCell, _true_ranks, run_cell, table
from calipers.calibration.reasonscore_ranks import (
    Design,
    leaderboard,
    rank_spans,
    sample_set,
    simulate,
    solved,
)
from calipers.schemes.reasonscore import ReasonScoreResult
from calipers.schemes.reasonscore.ranks import group_ranks
from calipers.schemes.registry import get_scheme

# ----------------------------------------------------------------------------- the truth


def test_the_logistic_normal_integral_against_scipy() -> None:
    from scipy import integrate, stats

    for q, delta in ((2.5, 0.0), (0.8, 1.5), (-1.0, -0.5)):
        reference, _ = integrate.quad(
            lambda z, q=q, d=delta: stats.norm.pdf(z) / (1 + math.exp(-(q - d - z))), -12, 12,
            epsabs=1e-13,
        )  # fmt: skip
        assert solved(q, delta) == pytest.approx(reference, abs=1e-11)


def test_the_truth_is_what_the_schemes_score_per_token_converges_to() -> None:
    """The closed-form limits against the scheme's own score/token on 720,000 questions per run
    (margin ~0.005 on a share, Monte Carlo error ~0.3%): within 2%, where the near-tie gap is
    5%; and the order is the cell's."""
    design = Design(runs=2, tiers=3, tasks=6, samples=20_000, gap=0.05)
    _, truth = leaderboard(design)
    assert truth[1] == pytest.approx(truth[0] * 0.95, rel=1e-9)  # the targets, exactly
    samples = sample_set(simulate(design, np.random.default_rng(11)))
    result = get_scheme("reasonscore").score(samples, seed=1)
    assert isinstance(result, ReasonScoreResult)
    for run, limit in zip(("0", "1"), truth, strict=True):
        assert result.runs[run].score_per_token == pytest.approx(limit, rel=0.02)
    assert any("rank intervals left out" in n for n in result.notes)  # too many samples
    samples.con.close()


def test_leaderboards_have_near_ties_clear_gaps_and_both_kinds_of_pair() -> None:
    runs, truth = leaderboard(Design(runs=8, tiers=3, tasks=4, samples=16, gap=0.05))
    assert list(truth) == sorted(truth, reverse=True)
    for pair in range(4):
        assert truth[2 * pair + 1] / truth[2 * pair] == pytest.approx(0.95)
        if pair:
            assert truth[2 * pair] / truth[2 * pair - 2] == pytest.approx(0.5)
        better, worse = runs[2 * pair], runs[2 * pair + 1]
        # pairs 1 and 3: the better run is the accurate, expensive one; 2 and 4: the cheap one
        assert better.accurate == (pair % 2 == 0) and worse.accurate == (pair % 2 == 1)
        assert (better.quality > worse.quality) == better.accurate
    assert min(r.tokens for r in runs) == pytest.approx(0.5)


def test_simulated_samples_follow_the_design() -> None:
    design = Design(runs=4, tiers=2, tasks=3, samples=10, gap=0.1, fewer=0.5)
    table_ = simulate(design, np.random.default_rng(2))
    runs, _ = leaderboard(design)
    names, sizes = np.unique(table_.column("run").to_numpy(), return_counts=True)
    counts = dict(zip(names.tolist(), sizes.tolist(), strict=True))
    for r in runs:  # the less accurate run of each pair answers half the questions
        assert counts[int(r.name)] == 2 * 3 * 2 * (10 if r.accurate else 5)
    samples = sample_set(table_)
    row = samples.con.execute(
        "SELECT count(DISTINCT tier), count(DISTINCT task), count(DISTINCT point), "
        "min(guess_chance), max(guess_chance), count(*) FILTER (WHERE truncated AND correct) "
        "FROM samples"
    ).fetchone()
    assert row == (2, 3, 2, 0.0, 0.5, 0)  # a truncated answer is never right
    samples.con.close()


# ----------------------------------------------------------------------------- the machinery


def test_a_reasonscore_cell_counts_what_its_intervals_cover() -> None:
    """run_cell's figures against a count made here from the same simulations (same generator
    sequence), the true ranks from the closed-form limits."""
    cell = RankCell("reasonscore", 4, 8, gap=0.05, tiers=2, tasks=2)
    sims, seed, key = 12, 5, 3
    result = run_cell(cell, sims=sims, resamples=1, seed=seed, key=key)
    design = Design(4, 2, 2, 8, 0.05)
    _, limits = leaderboard(design)
    true_rank = {str(r): 1 + sum(v > limits[r] for v in limits) for r in range(4)}
    rng = np.random.default_rng([seed, key])
    hits, joint, width = np.zeros(4), 0, 0.0
    for _ in range(sims):
        spans = rank_spans(design, rng)
        inside = {run: lo <= true_rank[run] <= hi for run, (lo, hi) in spans.items()}
        for run, ok in inside.items():
            hits[int(run)] += ok
        joint += all(inside.values())
        width += np.mean([hi - lo + 1 for lo, hi in spans.values()]) / sims
    marginal = result["marginal"]
    assert marginal["coverage"] == pytest.approx(hits.sum() / (4 * sims))
    assert marginal["worst_run"] == pytest.approx(hits.min() / sims)
    assert marginal["joint"] == pytest.approx(joint / sims)
    assert marginal["width"] == pytest.approx(width)
    assert result["simultaneous"] is None and result["percentile"] is None
    assert result["resamples"] == 1000 and result["estimand"] == "limit"
    assert result["truth"] == pytest.approx(list(limits))
    assert f"| {cell.id} | " in table([result]) and "| – |" in table([result])


def test_the_grid_has_reasonscore_cells_after_the_others() -> None:
    kinds = [c.kind for c in GRID]
    first = kinds.index("reasonscore")
    assert set(kinds[first:]) == {"reasonscore"} and first == 14  # earlier cells keep their keys
    assert {c.runs for c in GRID[first:]} == {4, 8}
    assert any(c.fewer < 1 for c in GRID[first:])


def test_equal_truths_share_their_ranks_despite_rounding() -> None:
    assert _true_ranks([3.0, 2.0, 2.0 + 1e-14, 1.0]) == {
        "0": {1}, "1": {2, 3}, "2": {2, 3}, "3": {4},
    }  # fmt: skip


# ----------------------------------------------------------------------------- the fix


def rows(run: str, n: int, correct: int, tokens: int, tasks: int) -> list[dict[str, Any]]:
    """`n` samples in each of `tasks` tasks of two tiers, `correct` of them right."""
    return [
        {
            "run": run, "task": f"t{t}", "tier": tier, "point": "p",
            "sample_id": f"{tier}/{t}/{i}", "correct": i < correct, "guess_chance": 0.0,
            "tokens_out": tokens,
        }
        for tier in ("easy", "hard")
        for t in range(tasks)
        for i in range(n)
    ]  # fmt: skip


def jsonl(path: Path, samples: list[dict[str, Any]]) -> Path:
    """A JSON Lines file: read by DuckDB, much faster than inserting rows one by one."""
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    return path


def reasonscore(path: Path) -> tuple[ReasonScoreResult, Any]:
    from calipers.api import open as open_samples

    samples = open_samples(path)
    result = get_scheme("reasonscore").score(samples, seed=3)
    assert isinstance(result, ReasonScoreResult)
    return result, samples


def test_intervals_are_for_the_limit_not_the_margins_optimism(tmp_path: Path) -> None:
    """A answers 90% right at 1000 tokens on 200 questions per task; B 60% at 720 on 20. In the
    limit (share/token) A leads, 0.900 to 0.833; with the Wilson margin — 0.04 on A's shares,
    0.20 on B's — B's score/token leads, 1.08 to 0.93. Intervals centred on that score put B
    first for sure (what calipers did before); the limit's intervals cover both true ranks."""
    path = jsonl(tmp_path / "s.jsonl", rows("A", 200, 180, 1000, 6) + rows("B", 20, 12, 720, 6))
    result, samples = reasonscore(path)
    assert result.runs["B"].score_per_token > result.runs["A"].score_per_token  # type: ignore[operator]
    ranks = result.group_ranks[("A", "B")]
    by_run = {r["run"]: r for r in ranks["runs"]}
    assert ranks["estimand"] == "limit"
    assert by_run["A"]["estimate"] == pytest.approx(0.9 * 1000 / 1000)
    assert by_run["B"]["estimate"] == pytest.approx(0.6 * 1000 / 720)
    assert by_run["A"]["rank_low"] == 1 and by_run["B"]["rank_high"] == 2
    score, _ = group_ranks(
        samples, result.groups()[0].runs, z=1.96, floor=0.01, default="default", seed=3,
        estimand="score",
    )  # fmt: skip
    assert score is not None
    wrong = {r["run"]: (r["rank_low"], r["rank_high"]) for r in score["runs"]}
    assert wrong == {"B": (1, 1), "A": (2, 2)}  # both true ranks excluded


def test_a_note_when_the_leaderboard_rank_is_outside_the_interval(tmp_path: Path) -> None:
    """With 24 tasks the limit separates A from B (0.900 against 0.833): B's interval is rank 2
    and A's rank 1, while score/token ranks them the other way round; a note says so."""
    path = jsonl(tmp_path / "s.jsonl", rows("A", 200, 180, 1000, 12) + rows("B", 40, 24, 720, 12))
    result, _ = reasonscore(path)
    ranks = {
        r["run"]: (r["rank_low"], r["rank_high"]) for r in result.group_ranks[("A", "B")]["runs"]
    }
    assert ranks == {"A": (1, 1), "B": (2, 2)}
    assert [r.run for r in result.groups()[0].runs] == ["B", "A"]
    note = next(n for n in result.notes if "outside" in n)
    assert "B (rank 1, interval 2), A (rank 2, interval 1)" in note


# ----------------------------------------------------------------------------- the sections


def ppi_cell(cell_id: str, n: int, coverage: float, not_wider: float) -> dict[str, Any]:
    return {
        "id": f"{cell_id}/n{n}", "cell": {"n": n}, "reps": 400, "coverage": coverage,
        "not_wider": not_wider, "width_ratio": 0.8, "bias": 0.001,
    }  # fmt: skip


def rank_cell(cell_id: str, worst: float) -> dict[str, Any]:
    return {
        "cell": cell_id, "runs": 4, "sims": 100,
        "marginal": {"coverage": 0.97, "worst_run": worst, "joint": 0.9, "width": 2.5},
    }  # fmt: skip


PPI = {
    "seed": 1, "reps": 400, "variant": "calipers", "n_total": 2000, "wall_s": 60.0,
    "cells": [
        ppi_cell("scale/a", 10, 0.85, 1.0),  # below MIN_LABELS: no target, in the summary only
        ppi_cell("scale/a", 30, 0.95, 1.0),
        ppi_cell("scale/b", 30, 0.925, 1.0),  # coverage under 0.93
        ppi_cell("scale/c", 30, 0.95, 0.985),  # wider than the labels alone too often
    ],
}  # fmt: skip
RANKS = {
    "seed": 2, "sims": 100, "resamples": 1000, "estimand": "limit", "wall_s": 120.0,
    "cells": [rank_cell("means K=3", 0.95), rank_cell("reasonscore K=4", 0.92)],
}  # fmt: skip


def write(path: Path, body: Any) -> Path:
    path.write_text(json.dumps(body))
    return path


def test_sections_rows_and_verdicts(tmp_path: Path) -> None:
    ppi = studies.ppi_section(PPI)
    assert "**1 of 3 cells pass.**" in ppi
    assert "| `scale/a` | 30 | 400 | 0.950±0.011 | 1.000 | 0.80 | PASS |" in ppi
    assert "| `scale/b` | 30 | 400 | 0.925±0.013 | 1.000 | 0.80 | **FAIL** |" in ppi
    assert "| `scale/c` | 30 | 400 | 0.950±0.011 | 0.985 | 0.80 | **FAIL** |" in ppi
    assert "| `scale/a` | 10 |" not in ppi and "| 10 | 1 | 85.0 (scale/a) |" in ppi
    ranks = studies.rank_section(RANKS)
    assert "**1 of 2 cells pass.**" in ranks
    assert "| `means K=3` | 4 | 100 | 0.970±0.009 | 0.950±0.022 | 0.900 | 2.50 | PASS |" in ranks
    assert (
        "| `reasonscore K=4` | 4 | 100 | 0.970±0.009 | 0.920±0.027 | 0.900 | 2.50 | **FAIL** |"
        in ranks
    )
    missing = studies.sections(tmp_path / "none.json", tmp_path / "none2.json")
    assert missing.count("Not measured yet") == 2


def test_sections_only_splices_into_an_existing_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "calibration.md"
    page.write_text("# Calibration\n\n## Results\n\n| a table |\n")
    ppi, ranks = write(tmp_path / "p.json", PPI), write(tmp_path / "r.json", RANKS)
    args = [
        "--sections-only",
        "--out",
        str(page),
        "--ppi-json",
        str(ppi),
        "--rank-json",
        str(ranks),
    ]
    assert calibration_main(args) == 0
    first = page.read_text()
    assert first.startswith("# Calibration\n\n## Results\n\n| a table |\n")
    assert "## Judge calibration (PPI++)" in first and "## Rank intervals" in first
    assert calibration_main(args) == 0  # again: replaced, not added twice
    assert page.read_text() == first and first.count(studies.BEGIN) == 1
    write(ranks, {**RANKS, "cells": [rank_cell("means K=3", 0.99)]})
    assert calibration_main(args) == 0
    assert "**1 of 1 cells pass.**" in page.read_text()
    capsys.readouterr()
    ranks.write_text("{not json")
    assert calibration_main(args) == 2
    assert "is not JSON" in capsys.readouterr().err
    assert calibration_main(["--sections-only"]) == 2
    assert "needs --out" in capsys.readouterr().err
