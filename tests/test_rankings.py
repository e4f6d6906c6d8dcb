"""Rank intervals and tie groups from bootstrap distributions (any leaderboard), and their
coverage on simulated leaderboards with a known order (a reduced run of
`python -m calipers.calibration.rankings`; the full figures are in docs/rankings.md)."""

from __future__ import annotations

import numpy as np
import pytest

from calipers.calibration.rankings import GRID, RankCell, run_cell, table
from calipers.errors import InputError
from calipers.stats.rankings import (
    _groups,
    mean_rank_intervals,
    paired_mean_draws,
    rank_intervals,
)


def draws(centres: dict[str, float], sd: float = 0.1, n: int = 4000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {name: rng.normal(c, sd, n) for name, c in centres.items()}


def test_separated_runs_get_single_ranks_and_groups_of_one() -> None:
    centres = {"x": 3.0, "y": 2.0, "z": 1.0}
    for method in ("marginal", "simultaneous", "percentile"):
        result = rank_intervals(centres, draws(centres), method=method)  # type: ignore[arg-type]
        assert [(r.run, r.rank, r.low, r.high, r.group) for r in result.runs] == [
            ("x", 1, 1, 1, 1), ("y", 2, 2, 2, 2), ("z", 3, 3, 3, 3),
        ]  # fmt: skip
        assert result.groups == (("x",), ("y",), ("z",))


def test_equal_runs_share_every_rank_and_one_group() -> None:
    centres = {"a": 1.0, "b": 1.0, "c": 1.0, "far": -5.0}
    for method in ("marginal", "simultaneous", "percentile"):
        result = rank_intervals(centres, draws(centres), method=method)  # type: ignore[arg-type]
        spans = {r.run: (r.low, r.high) for r in result.runs}
        assert spans == {"a": (1, 3), "b": (1, 3), "c": (1, 3), "far": (4, 4)}
        assert result.groups == (("a", "b", "c"), ("far",))
        assert [r.rank for r in result.runs] == [1, 1, 1, 4]  # equal estimates share a rank


def test_runs_tied_in_every_resample_span_their_ranks() -> None:
    """Discrete scores: two runs equal in every resample; percentile intervals count a tie as
    both ranks, never the better one only."""
    same = np.repeat([0.5, 0.6], 50)
    result = rank_intervals({"p": 0.55, "q": 0.55}, {"p": same, "q": same}, method="percentile")
    assert [(r.low, r.high) for r in result.runs] == [(1, 2), (1, 2)]


def test_lower_is_better_and_the_simultaneous_intervals_are_wider() -> None:
    rng = np.random.default_rng(4)
    centres = {f"r{i}": float(v) for i, v in enumerate(rng.normal(0, 0.15, 8))}
    sample = draws(centres)
    marginal = rank_intervals(centres, sample)
    joint = rank_intervals(centres, sample, method="simultaneous")
    for m, j in zip(marginal.runs, joint.runs, strict=True):
        assert m.run == j.run and j.low <= m.low <= m.rank <= m.high <= j.high
    reversed_ = rank_intervals(centres, sample, higher_is_better=False).by_run()
    for r in marginal.runs:  # distinct estimates: rank k of 8 becomes 9 − k
        assert reversed_[r.run].rank == 9 - r.rank
        assert (reversed_[r.run].low, reversed_[r.run].high) == (9 - r.high, 9 - r.low)
    assert marginal.to_dict()["runs"][0]["rank_low"] == marginal.runs[0].low


def test_tie_groups_are_chains_of_overlapping_intervals() -> None:
    # [1,2] [1,3] [3,4] [4,4] [5,5]: the first four overlap through a chain
    low, high = [1, 1, 3, 4, 5], [2, 3, 4, 4, 5]
    assert _groups(low, high, [0, 1, 2, 3, 4]) == [[0, 1, 2, 3], [4]]
    assert _groups([1, 2, 3], [1, 2, 3], [0, 1, 2]) == [[0], [1], [2]]


def test_mean_rank_intervals_pair_the_items_and_record_the_seed() -> None:
    rng = np.random.default_rng(8)
    item = rng.normal(0, 1, 200)  # a shared item effect: pairing removes it
    values = {"base": item, "better": item + 0.05 + rng.normal(0, 0.05, 200)}
    result, seed = mean_rank_intervals(values, rng=12)
    again, _ = mean_rank_intervals(values, rng=12)
    assert seed == 12 and result == again
    assert [(r.run, r.low, r.high) for r in result.runs] == [("better", 1, 1), ("base", 2, 2)]
    estimates, distributions, _ = paired_mean_draws(values, n_resamples=50, rng=1)
    assert estimates["base"] == pytest.approx(float(item.mean()))
    assert distributions["base"].shape == (50,)
    with pytest.raises(InputError, match="same items"):
        mean_rank_intervals({"a": [1.0, 2.0], "b": [1.0]})
    with pytest.raises(InputError, match="at least 2 runs"):
        rank_intervals({"a": 1.0}, {"a": [1.0]})


def test_coverage_on_nearly_equal_runs() -> None:
    """Ten nearly equal runs (the hard case): the marginal intervals cover every run's true rank
    ≥ 93%, where the percentile ones do not for the extreme runs (docs/rankings.md)."""
    cell = RankCell("means", 10, 50, gap=0.05)
    assert cell in GRID
    result = run_cell(cell, sims=120, resamples=300, seed=1, key=0)
    assert result["marginal"]["worst_run"] >= 0.93
    assert result["simultaneous"]["joint"] >= 0.93
    assert result["percentile"]["worst_run"] < result["marginal"]["worst_run"]
    assert cell.id in table([result])
    bt = run_cell(RankCell("bt", 4, 30, spread=0.5, ties=0.3), sims=40, resamples=200, seed=1,
                  key=1)  # fmt: skip
    assert bt["marginal"]["coverage"] >= 0.93
