"""Agreement statistics against independent packages: krippendorff, pingouin, sklearn, scipy."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import cohen_kappa_score

from calipers.errors import InputError
from calipers.stats import icc_2_1, krippendorff_alpha, pearson, quadratic_weighted_kappa


@pytest.fixture
def ratings() -> np.ndarray:
    rng = np.random.default_rng(7)
    truth = rng.integers(1, 6, size=40).astype(float)
    raters = np.stack([np.clip(truth + rng.integers(-1, 2, size=40), 1, 5) for _ in range(3)])
    raters[0, 3] = np.nan
    raters[2, 10] = np.nan
    raters[1, 10] = np.nan  # unit 10 has one rating: not pairable
    return raters


@pytest.mark.parametrize("level", ["interval", "nominal"])
def test_krippendorff_matches_package(ratings: np.ndarray, level: str) -> None:
    expected = krippendorff.alpha(reliability_data=ratings, level_of_measurement=level)
    assert krippendorff_alpha(ratings, level=level) == pytest.approx(expected, abs=1e-10)


def test_icc_2_1_matches_pingouin(ratings: np.ndarray) -> None:
    units = ratings.T[np.all(np.isfinite(ratings.T), axis=1)]
    long = pd.DataFrame(
        [(u, r, units[u, r]) for u in range(units.shape[0]) for r in range(units.shape[1])],
        columns=["unit", "rater", "score"],
    )
    table = pingouin.intraclass_corr(long, targets="unit", raters="rater", ratings="score")
    # pingouin ≥ 0.7 names Shrout & Fleiss ICC(2,1) "ICC(A,1)"; older versions call it "ICC2"
    types = table.set_index("Type")["ICC"]
    expected = float(types.get("ICC(A,1)", types.get("ICC2")))
    assert icc_2_1(ratings.T) == pytest.approx(expected, abs=1e-10)


def test_qwk_matches_sklearn(ratings: np.ndarray) -> None:
    a, b = ratings[0], ratings[1]
    keep = np.isfinite(a) & np.isfinite(b)
    expected = cohen_kappa_score(
        a[keep].astype(int), b[keep].astype(int), weights="quadratic", labels=[1, 2, 3, 4, 5]
    )
    got = quadratic_weighted_kappa(a[keep], b[keep], min_rating=1, max_rating=5)
    assert got == pytest.approx(expected, abs=1e-12)


def test_pearson_matches_scipy_and_constant_is_nan(ratings: np.ndarray) -> None:
    a, b = ratings[0], ratings[1]
    keep = np.isfinite(a) & np.isfinite(b)
    assert pearson(a[keep], b[keep]) == pytest.approx(pearsonr(a[keep], b[keep])[0])
    assert np.isnan(pearson([3, 3, 3], [1, 2, 3]))
    with pytest.raises(InputError):
        pearson([1, 2], [1, 2, 3])
