"""Saturation checkpoints computed by hand, and Hotelling's T² against statsmodels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ttest_1samp
from statsmodels.stats.multivariate import test_mvmean as hotelling_reference

from calipers.errors import InputError
from calipers.stats.multivariate import hotelling_t2
from calipers.stats.saturation import confidence_for, saturation


def test_widths_are_the_interval_widths_of_cumulative_per_sample_means() -> None:
    rng = np.random.default_rng(1)
    n, epochs = 30, 5
    values = rng.normal(3, 1, (n, epochs))
    codes = np.repeat(np.arange(n), epochs)
    ep = np.tile(np.arange(epochs), n)
    result = saturation(values.ravel(), codes, ep, z=1.96)
    for e in range(epochs):
        means = values[:, : e + 1].mean(axis=1)
        assert result.widths[e] == pytest.approx(2 * 1.96 * means.std(ddof=1) / np.sqrt(n))
    expected = [(a - b) / a for a, b in zip(result.widths, result.widths[1:], strict=False)]
    assert result.shrinks == pytest.approx(expected)
    assert result.saturated == all(s <= 0.05 for s in expected[-3:])
    assert result.confidence == "medium"


def test_saturation_needs_four_checkpoints_and_flags_a_still_shrinking_width() -> None:
    codes = np.repeat(np.arange(60), 3)
    short = saturation(np.ones(180), codes, np.tile(np.arange(3), 60))
    assert short.saturated is None and "needs at least 4" in short.notes[0]
    # per-sample noise that averages out: the width keeps shrinking by more than 5 %
    rng = np.random.default_rng(2)
    n, epochs = 60, 6
    values = rng.integers(0, 2, (n, epochs)).astype(float) * 4 + 1
    res = saturation(values.ravel(), np.repeat(np.arange(n), epochs), np.tile(np.arange(epochs), n))
    assert res.saturated is False and res.confidence == "high"


@pytest.mark.parametrize(
    ("n", "level"), [(19, "low"), (20, "medium"), (49, "medium"), (50, "high")]
)
def test_confidence_bands(n: int, level: str) -> None:
    assert confidence_for(n) == level


def test_hotelling_matches_statsmodels() -> None:
    rng = np.random.default_rng(3)
    d = rng.normal([0.2, -0.1, 0.0], 1.0, (40, 3))
    ours = hotelling_t2(d)
    ref = hotelling_reference(d, np.zeros(3))
    assert ours.f == pytest.approx(ref.statistic) and ours.p_value == pytest.approx(ref.pvalue)
    assert (ours.df1, ours.df2, ours.n) == (3, 37, 40)
    assert ours.t2 == pytest.approx(ours.f * 3 * 39 / 37)


def test_hotelling_with_a_constant_dimension_uses_the_rank() -> None:
    rng = np.random.default_rng(4)
    d = np.column_stack([rng.normal(0.3, 1, 30), np.zeros(30)])
    ours = hotelling_t2(d)
    ref = ttest_1samp(d[:, 0], 0.0)  # one dimension left: T² is the squared t statistic
    assert ours.df1 == 1 and ours.t2 == pytest.approx(ref.statistic**2)
    assert ours.p_value == pytest.approx(ref.pvalue)
    with pytest.raises(InputError, match="more observations than dimensions"):
        hotelling_t2(np.zeros((5, 2)))
