"""The bootstrap against scipy.stats.bootstrap, against a plain cluster-resampling loop, and the
counting algorithm against the index algorithm."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from calipers.errors import InputError
from calipers.stats import DEFAULT_SEED, mean_bootstrap, paired_bootstrap


def binary_pairs(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.random(n) < 0.6).astype(float), (rng.random(n) < 0.68).astype(float)


def mc_tolerance(result_se: float, n_resamples: int) -> float:
    # SE of a bootstrap quantile ≈ sqrt(q(1−q)/B)/φ(z_q)·se; 5 of those for two independent runs.
    q = 0.025
    return 5 * np.sqrt(q * (1 - q) / n_resamples) / stats.norm.pdf(stats.norm.ppf(q)) * result_se


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("kind", ["binary", "likert", "continuous"])
def test_paired_matches_scipy(method: str, kind: str) -> None:
    rng = np.random.default_rng(3)
    n = 300
    if kind == "binary":
        c, t = binary_pairs(n)
    elif kind == "likert":
        c = rng.integers(1, 6, n).astype(float)
        t = np.clip(c + rng.integers(-1, 3, n), 1, 5).astype(float)
    else:
        c = rng.normal(0, 1, n)
        t = c + rng.normal(0.2, 1, n)
    ours = paired_bootstrap(c, t, method=method, rng=11)  # type: ignore[arg-type]
    ref = stats.bootstrap(
        (c, t),
        lambda a, b, axis: np.mean(b - a, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=10_000,
        method="percentile" if method == "percentile" else "BCa",
        random_state=np.random.default_rng(12),
    )
    tol = mc_tolerance(ours.standard_error, 10_000)
    assert ours.estimate == pytest.approx(np.mean(t - c))
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=tol)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=tol)
    assert ours.standard_error == pytest.approx(ref.standard_error, rel=0.05)
    expected_algorithm = "index" if kind == "continuous" else "counting"
    assert ours.algorithm == expected_algorithm


@pytest.mark.parametrize("clustered", [False, True])
def test_counting_and_index_give_the_same_distribution(clustered: bool) -> None:
    rng = np.random.default_rng(5)
    n = 400
    c = rng.integers(1, 6, n).astype(float)
    t = np.clip(c + rng.integers(-2, 3, n), 1, 5).astype(float)
    clusters = np.repeat(np.arange(n // 2), 2) if clustered else None
    kw = {"clusters": clusters, "n_resamples": 40_000}
    counting = paired_bootstrap(c, t, algorithm="counting", rng=1, **kw)  # type: ignore[arg-type]
    index = paired_bootstrap(c, t, algorithm="index", rng=2, **kw)  # type: ignore[arg-type]
    assert counting.algorithm == "counting" and index.algorithm == "index"
    ks = stats.ks_2samp(counting.distribution, index.distribution)
    assert ks.pvalue > 0.001
    se = index.standard_error
    assert counting.distribution.mean() == pytest.approx(index.distribution.mean(), abs=0.03 * se)
    assert counting.standard_error == pytest.approx(se, rel=0.03)
    # The same comparison is sensitive: a counting draw shifted by a tenth of an SE is caught.
    shifted = stats.ks_2samp(counting.distribution + 0.1 * se, index.distribution)
    assert shifted.pvalue < 1e-6


def naive_cluster_bootstrap(x: np.ndarray, labels: np.ndarray, b: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ids = np.unique(labels)
    groups = [x[labels == i] for i in ids]
    out = np.empty(b)
    for r in range(b):
        pick = rng.integers(0, len(groups), len(groups))
        drawn = np.concatenate([groups[i] for i in pick])
        out[r] = drawn.mean()
    return out


def test_cluster_bootstrap_matches_a_plain_loop() -> None:
    rng = np.random.default_rng(9)
    n_clusters = 60
    sizes = rng.integers(1, 4, n_clusters)  # unequal epochs per sample
    labels = np.repeat(np.arange(n_clusters), sizes)
    effect = np.repeat(rng.normal(0, 1, n_clusters), sizes)  # correlated within a cluster
    x = effect + rng.normal(0, 0.3, labels.size)
    ours = mean_bootstrap(x, clusters=labels, n_resamples=20_000, rng=4)
    ref = naive_cluster_bootstrap(x, labels, 20_000, seed=8)
    assert ours.n_units == n_clusters and ours.n_observations == labels.size
    assert ours.standard_error == pytest.approx(ref.std(ddof=1), rel=0.04)
    assert stats.ks_2samp(ours.distribution, ref).pvalue > 0.001
    # ignoring the clusters would understate the uncertainty here
    assert mean_bootstrap(x, rng=4).standard_error < 0.8 * ours.standard_error


def test_seed_recorded_and_reproduces() -> None:
    c, t = binary_pairs(200)
    default = paired_bootstrap(c, t)
    assert default.seed == DEFAULT_SEED
    assert np.array_equal(default.distribution, paired_bootstrap(c, t).distribution)
    from_gen = paired_bootstrap(c, t, rng=np.random.default_rng(99))
    again = paired_bootstrap(c, t, rng=from_gen.seed)
    assert np.array_equal(from_gen.distribution, again.distribution)
    assert set(default.to_dict()) >= {"estimate", "low", "high", "seed", "n_resamples"}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 5), min_size=5, max_size=60),
    st.lists(st.integers(1, 5), min_size=5, max_size=60),
    st.integers(0, 2**32),
    st.sampled_from(["percentile", "bca"]),
)
def test_properties(a: list[int], b: list[int], seed: int, method: str) -> None:
    n = min(len(a), len(b))
    c, t = np.array(a[:n], float), np.array(b[:n], float)
    res = paired_bootstrap(c, t, n_resamples=500, rng=seed, method=method)  # type: ignore[arg-type]
    assert res.low <= res.estimate <= res.high
    swapped = paired_bootstrap(t, c, n_resamples=500, rng=seed, method=method)  # type: ignore[arg-type]
    assert swapped.estimate == pytest.approx(-res.estimate)
    if method == "percentile":  # BCa's bias correction is not symmetric in the resample draws
        assert swapped.low == pytest.approx(-res.high)
        assert swapped.high == pytest.approx(-res.low)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"control": [1.0, np.nan, 2.0], "treatment": [1.0, 2.0, 3.0]}, "finite"),
        ({"control": [1.0, 2.0], "treatment": [1.0, 2.0, 3.0]}, "length"),
        ({"control": [1.0], "treatment": [2.0]}, "at least 2"),
        ({"control": [1.0, 2.0], "treatment": [1.0, 2.0], "confidence_level": 1.5}, "confidence"),
        ({"control": [1.0, 2.0], "treatment": [1.0, 2.0], "n_resamples": 0}, "n_resamples"),
        ({"control": [1.0, 2.0], "treatment": [1.0, 2.0], "method": "bc"}, "method"),
        ({"control": [1.0, 2.0], "treatment": [1.0, 2.0], "clusters": [1, 1]}, "2 clusters"),
    ],
)
def test_bad_input(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        paired_bootstrap(**kwargs)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["binary", pytest.param("likert", marks=pytest.mark.extended)])
def test_coverage_is_nominal(kind: str) -> None:
    """Nominal 95% percentile intervals cover the true mean difference in 94–96% of trials."""
    trials, n = 3000, 400
    rng = np.random.default_rng(2026 if kind == "binary" else 2027)
    if kind == "binary":
        values, p_c, p_t = np.array([0.0, 1.0]), np.array([0.4, 0.6]), np.array([0.3, 0.7])
    else:
        values = np.arange(1.0, 6.0)
        p_c = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
        p_t = np.array([0.05, 0.15, 0.3, 0.3, 0.2])
    truth = values @ p_t - values @ p_c
    covered = 0
    for i in range(trials):
        c = rng.choice(values, size=n, p=p_c)
        t = rng.choice(values, size=n, p=p_t)
        res = paired_bootstrap(c, t, n_resamples=2000, rng=i)
        covered += res.low <= truth <= res.high
    rate = covered / trials
    assert 0.94 <= rate <= 0.96, rate


def test_sums_equal_but_for_rounding_are_one_category() -> None:
    from calipers.stats.bootstrap import _distinct

    sums = np.array([0.1 + 0.2, 0.3, 0.5, 0.7, 0.3])  # 0.1 + 0.2 is 0.30000000000000004
    values, sizes, mult = _distinct(sums, np.ones(5))
    assert values.tolist() == [0.1 + 0.2, 0.5, 0.7]  # first occurrence, its exact sum
    assert mult.tolist() == [3.0, 1.0, 1.0]
    assert sizes.tolist() == [1.0, 1.0, 1.0]
    # Real differences at the scale of the data stay apart.
    values, _, mult = _distinct(np.array([1.0, 1.0 + 1e-6, 1.0]), np.ones(3))
    assert values.tolist() == [1.0, 1.0 + 1e-6] and mult.tolist() == [2.0, 1.0]


def test_dense_codes_renumber_in_label_order() -> None:
    from calipers.stats.bootstrap import dense_codes

    assert dense_codes(np.array([7, 3, 3, 9, 7])).tolist() == [1, 0, 0, 2, 1]
    assert dense_codes(np.array([2, 0, 1])).tolist() == [2, 0, 1]
    assert dense_codes(np.array(["b", "a", "b"])).tolist() == [1, 0, 1]
    assert dense_codes(np.array([10**12, 5])).tolist() == [1, 0]  # sparse: sorted instead
