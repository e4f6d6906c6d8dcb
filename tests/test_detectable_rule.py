"""The MDE's check that `auto` gives every resample the t interval (`every_resample_t`) is the
per-resample rule it replaced, `bool(np.all(t_rule_rows(values[draw])))`, on every input: the
bound that settles most resamples of a large sample without gathering them (`_rule_proven`) never
says a resample passes that the rule fails, and the MDE is the same number (or None) either way."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest

import calipers.stats.detectable as detectable
from calipers.stats.detectable import (
    _proof_need,
    _rule_proven,
    every_resample_t,
    simulated_detectable,
    t_rule_rows,
)


def _per_resample(values: npt.NDArray[np.float64], *, resamples: int, rng: int) -> bool:
    """The check as it was: every resample gathered, rounded and partitioned."""
    draw = np.random.default_rng(rng).integers(0, values.size, size=(resamples, values.size))
    return bool(np.all(t_rule_rows(values[draw])))


def _samples(rng: np.random.Generator) -> Iterator[tuple[str, npt.NDArray[np.float64]]]:
    for g in (2, 24, 29, 30, 31, 45, 100, 1000, 3000):
        yield f"normal {g}", rng.normal(size=g)
        yield f"lognormal {g}", rng.lognormal(0, 1.5, size=g)
        yield f"few informative {g}", np.where(rng.random(g) < 15 / g, rng.normal(size=g), 0.0)
        yield f"rare ones {g}", np.where(rng.random(g) < 0.05, 1.0, 0.0)
        yield f"likert {g}", rng.integers(-4, 5, size=g) / 4.0
        yield f"constant {g}", np.full(g, 0.3)
        yield f"within rounding {g}", 1.0 + rng.normal(size=g) * 1e-13
        yield f"one outlier {g}", np.r_[np.zeros(g - 1), 1.0]
        yield f"skewed mixture {g}", np.where(rng.random(g) < 0.02, 4.0, rng.normal(size=g) / 10)
        yield f"nan {g}", np.r_[rng.normal(size=g - 1), np.nan]


def test_the_check_is_the_per_resample_rule() -> None:
    rng = np.random.default_rng(5)
    seen = {"true": 0, "false": 0, "proven": 0, "mixed": 0}
    for name, values in _samples(rng):
        for resamples in (0, 1, 40):
            seed = int(rng.integers(1 << 30))
            g = values.size
            with np.errstate(all="ignore"):
                expected = _per_resample(values, resamples=resamples, rng=seed)
                assert every_resample_t(values, resamples=resamples, rng=seed) == expected, name
                proof = _proof_need(values)
                if proof is None or resamples == 0:
                    continue
                draw = np.random.default_rng(seed).integers(0, g, (resamples, g))
                proven = _rule_proven(values, draw, *proof, np.empty(draw.shape))
                rule = t_rule_rows(values[draw])
            assert not np.any(proven & ~rule), name  # a proof is never wrong
            seen["true" if expected else "false"] += 1
            seen["proven"] += int(proven.all())
            seen["mixed"] += int(proven.any() and not proven.all())
    # the cases reach every branch: all settled by the bound, some, the rule failing
    assert min(seen.values()) > 0, seen


def test_the_bound_settles_a_large_sample_without_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    # 20,000 units of 1–5 scores' differences: every resample is shown by its sums alone
    values = np.random.default_rng(3).integers(-4, 5, 20_000) / 4.0

    def refused(rows: npt.NDArray[np.float64], informative: object = None) -> None:
        raise AssertionError("the rule was asked")

    monkeypatch.setattr(detectable, "t_rule_rows", refused)
    assert every_resample_t(values, resamples=50, rng=1)


def test_rows_drawn_a_block_at_a_time_are_the_rows_of_one_draw() -> None:
    # `every_resample_t` draws the resamples in blocks from one generator; `simulated_detectable`
    # draws them at once: numpy's bounded integers keep no state between calls but the bit
    # generator's, so the two are the same rows
    for g in (7, 1001, 500_000):
        whole = np.random.default_rng(9).integers(0, g, size=(5, g))
        generator = np.random.default_rng(9)
        blocks = [generator.integers(0, g, size=(k, g)) for k in (1, 3, 1)]
        assert np.array_equal(whole, np.vstack(blocks))


def test_a_subset_of_rows_gets_the_rule_it_gets_among_all_rows() -> None:
    # the rule judges the unsettled rows apart from the others: row by row, as in one array
    rng = np.random.default_rng(2)
    for g in (30, 45, 300):  # near the rule's edge: some rows hold, some do not
        rows = rng.lognormal(0, 0.8, (60, g)) if g == 300 else rng.beta(5, 2, (60, g))
        whole = t_rule_rows(rows)
        pick = rng.random(60) < 0.5
        assert np.array_equal(t_rule_rows(rows[pick]), whole[pick])
        assert 0 < whole.sum() < 60


@pytest.mark.parametrize("kind", ["skewed", "bimodal", "likert", "sparse"])
def test_the_mde_is_the_same_as_with_the_per_resample_rule(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the MDE itself (a number where some resample bets, None where every one gets the t
    # interval) with the check as it is and as it was
    rng = np.random.default_rng({"skewed": 1, "bimodal": 2, "likert": 3, "sparse": 4}[kind])
    for n in (30, 45, 400):
        if kind == "skewed":
            m = rng.beta(5, 2, n)
        elif kind == "bimodal":
            m = np.clip((rng.uniform(size=n) - 0.4) / 0.1, 0, 1)
        elif kind == "likert":
            m = rng.integers(1, 6, n) / 5.0
        else:
            m = np.where(rng.random(n) < 0.1, rng.uniform(size=n), 0.5)
        c = np.clip(m + rng.normal(0, 0.05, n), 0, 1)
        t = np.clip(m + rng.normal(0.02, 0.05, n), 0, 1)
        now = simulated_detectable(t - c, control=c, scale=(0.0, 1.0), resamples=60)
        with monkeypatch.context() as patched:
            patched.setattr(detectable, "every_resample_t", _per_resample)
            before = simulated_detectable(t - c, control=c, scale=(0.0, 1.0), resamples=60)
        assert now == before, (kind, n)
