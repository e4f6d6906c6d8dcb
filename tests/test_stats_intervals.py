"""Wilson intervals against statsmodels; means, power and Holm against closed forms and scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import gmean, norm
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from calipers.errors import InputError
from calipers.stats import (
    bonferroni_alpha,
    geometric_mean,
    holm,
    minimum_detectable_effect,
    required_sample_size,
    wilson_interval,
    z_from_confidence,
)


@pytest.mark.parametrize("n", [1, 2, 5, 13, 100, 1000])
@pytest.mark.parametrize("frac", [0.0, 0.1, 0.5, 0.77, 1.0])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(n: int, frac: float, level: float) -> None:
    s = round(frac * n)
    low, high = proportion_confint(s, n, alpha=1 - level, method="wilson")
    center, margin = wilson_interval(s, n, z=z_from_confidence(level))
    assert center == pytest.approx((low + high) / 2, abs=1e-12)
    assert margin == pytest.approx((high - low) / 2, abs=1e-12)


def test_wilson_arrays_broadcast_and_match_scalars() -> None:
    s = np.array([0.0, 3.5, 10.0, 7.25])
    n = np.array([10.0, 10.0, 10.0, 9.5])
    center, margin = wilson_interval(s, n)
    assert isinstance(center, np.ndarray) and center.shape == (4,)
    for i in range(4):
        c, m = wilson_interval(float(s[i]), float(n[i]))
        assert center[i] == pytest.approx(c) and margin[i] == pytest.approx(m)


def test_wilson_edge_cases_documented() -> None:
    assert all(math.isnan(v) for v in wilson_interval(3, 0))
    assert all(math.isnan(v) for v in wilson_interval(0, -2.5))
    assert wilson_interval(-4.0, 10) == wilson_interval(0.0, 10)  # clipped up to 0
    assert wilson_interval(12.0, 10) == wilson_interval(10.0, 10)  # clipped down to trials
    c, m = wilson_interval(10, 10)
    assert c + m == pytest.approx(1.0)  # a perfect record reaches exactly 1
    with pytest.raises(InputError):
        wilson_interval(1, 2, z=0.0)


@given(st.floats(-5, 60, allow_nan=False), st.floats(0.5, 50, allow_nan=False))
def test_wilson_bounds_within_unit_interval(s: float, n: float) -> None:
    c, m = wilson_interval(s, n)
    assert -1e-12 <= c - m <= c <= c + m <= 1 + 1e-12


@given(st.lists(st.floats(1e-6, 1e6, allow_nan=False), min_size=1, max_size=30))
def test_geometric_mean_vs_scipy_and_am_gm(values: list[float]) -> None:
    g = geometric_mean(values)
    assert g == pytest.approx(float(gmean(values)), rel=1e-9)
    assert g <= float(np.mean(values)) * (1 + 1e-12)


def test_geometric_mean_refuses_zero_and_negative() -> None:
    for bad in ([1.0, 0.0], [2.0, -1.0], [], [1.0, float("nan")]):
        with pytest.raises(InputError):
            geometric_mean(bad)


def test_power_closed_forms() -> None:
    z = norm.ppf(0.975) + norm.ppf(0.8)
    assert minimum_detectable_effect(0.5, 100) == pytest.approx(z * 0.5 / 10)
    assert minimum_detectable_effect(1.2, 30, alpha=0.01, power=0.9) == pytest.approx(
        (norm.ppf(0.995) + norm.ppf(0.9)) * 1.2 / math.sqrt(30)
    )
    n = required_sample_size(0.1, 0.5)
    assert n == math.ceil((z * 0.5 / 0.1) ** 2)
    assert minimum_detectable_effect(0.5, n) <= 0.1 < minimum_detectable_effect(0.5, n - 1)
    with pytest.raises(InputError):
        required_sample_size(0.0, 1.0)


def test_holm_and_bonferroni_vs_statsmodels() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.2, 0.001])
    expected = multipletests(p, method="holm")[1]
    np.testing.assert_allclose(holm(p), expected)
    assert bonferroni_alpha(0.05, 4) == 0.0125
