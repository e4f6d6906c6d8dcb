"""A robustness band is judged on the signal's interval, not its point: 0.89 [0.37, 1.00] from
three cases is "undetermined", never "good", and the closing sentence does not call it healthy."""

from __future__ import annotations

import dataclasses

import pytest

from calipers.schemes.robustness.html import robustness_section
from calipers.schemes.robustness.terminal import band
from calipers.stats.interval_parts import Interval
from test_output_wording import printed, uniform_run


def _interval(estimate: float, low: float, high: float) -> Interval:
    return Interval(estimate, low, high, "t", "t", 0.95, 0.1, 2.0, 3, 3, 3.0)


def test_band_on_the_interval() -> None:
    assert band(0.89, "invariance") == "mostly — good"  # the point alone
    wide = {"low": 0.37, "high": 1.0}
    assert band(0.89, "invariance", wide) == (
        "undetermined — the interval spans drifting (concerning) to rock-steady (good)"
    )
    assert band(0.9, "sensitivity", {"low": 0.8, "high": 1.0}) == (
        "reactive to sharply reactive — good"
    )
    assert band(0.95, "invariance", {"low": 0.91, "high": 0.99}) == "rock-steady — good"
    assert band(0.6, "sensitivity", {"low": 0.52, "high": 0.68}) == "partial — watch"
    assert band(0.89, "invariance", "too few cases") == "mostly — good"  # a refusal: the point


def test_a_wide_interval_is_not_called_healthy() -> None:
    result = uniform_run(1, 9, cases=3)  # invariance 0.90, sensitivity 0.90: both good points
    wide = dataclasses.replace(
        result,
        intervals={
            "invariance": _interval(0.9, 0.37, 1.0),
            "sensitivity": _interval(0.9, 0.8, 1.0),
        },
    )
    text = printed(wide)
    assert "healthy" not in text
    assert "undetermined — the interval spans drifting (concerning) to rock-steady (good)" in text
    assert "invariance is undetermined" in text and "[0.37, 1.00]" in text
    narrow = dataclasses.replace(
        result,
        intervals={
            "invariance": _interval(0.9, 0.92, 0.97),
            "sensitivity": _interval(0.9, 0.91, 1),
        },
    )
    assert "Both signals look healthy" in printed(narrow)


@pytest.mark.parametrize(("low", "expected"), [(0.37, "undetermined"), (0.91, "rock-steady")])
def test_the_page_bands_follow_the_interval(low: float, expected: str) -> None:
    report = {"runs": {"r": {"invariance": 0.95, "sensitivity": None,
                             "intervals": {"invariance": {"low": low, "high": 1.0}}}}}  # fmt: skip
    assert robustness_section(report)["bands"]["r"]["invariance"].startswith(expected)
