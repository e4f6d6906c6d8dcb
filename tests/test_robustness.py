"""The robustness scheme's arithmetic against kelvin 0.3.0's own functions (calibration, σ_c,
distance), the noise floor end to end, and the intervals over cases."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kelvin import scorer as kelvin_scorer

from calipers.data.decision import distance
from calipers.schemes import get_scheme
from calipers.schemes.robustness.scoring import (
    INVARIANCE_KINDS,
    CaseResult,
    RobustnessResult,
    calibrate,
    case_interval,
)
from calipers.stats.betting import betting_interval
from conftest import MakeSamples
from interval_refs import hall_bounds
from test_check import check, project, report


@pytest.mark.parametrize("inv", [0.0, 0.3, 0.8, 0.95, 1.0])
@pytest.mark.parametrize("sens", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("eta", [None, 0.0, 0.04, 0.2, 0.7, 1.0])
def test_calibration_is_kelvins(inv: float, sens: float, eta: float | None) -> None:
    theirs = kelvin_scorer.calibrate(invariance_raw=inv, sensitivity_raw=sens, eta=eta)
    assert calibrate(inv, sens, eta) == theirs


@pytest.mark.parametrize(
    "replays",
    [["a", "a", "b"], [1, 2, 3, 10], [0.5], ["x", None, "x", True], [1, True, 1.0], []],
)
def test_sigma_c_is_kelvins(replays: list[Any]) -> None:
    case = CaseResult("c", True, None, replays[0] if replays else None, replays=list(replays))
    expected = kelvin_scorer.sigma_c(replays, kelvin_scorer.DefaultScorer())
    assert case.sigma_c == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(
    ("a", "b"),
    [(1, 2), (0, 0), (-3, 3), (0.1, 0.2), (1e300, -1e300), (True, 1), ("x", "X"), (None, None),
     (float("nan"), 1.0), (float("inf"), float("inf")), (5, "5")],
)  # fmt: skip
def test_distance_is_kelvins(a: Any, b: Any) -> None:
    assert distance(a, b) == kelvin_scorer.DefaultScorer().distance(a, b)


def rows(case: str, baseline: Any, variants: dict[str, Any]) -> list[dict[str, Any]]:
    out = [{"run": "r", "task": case, "sample_id": "baseline", "perturbation": "baseline",
            "perturbation_of": case, "decision": baseline}]  # fmt: skip
    for variant, decision in variants.items():
        row = {"run": "r", "task": case, "sample_id": variant, "perturbation_of": case,
               "perturbation": variant.split("-")[0]}  # fmt: skip
        if decision is ...:
            row["error"] = "pipeline exited with code 1"
        else:
            row["decision"] = decision
        out.append(row)
    return out


def test_pooled_scores_and_failures(make_samples: MakeSamples) -> None:
    data = [
        *rows("a", "go", {"reorder-01": "go", "pad_length-01": "stop", "swap-rule-01": "stop",
                          "reorder-02": ...}),
        *rows("b", 10, {"reorder-01": 12, "pad_content-01": 10, "swap-rule-01": 10,
                        "swap-other-01": 30}),
    ]  # fmt: skip
    result = get_scheme("robustness").score(make_samples(data), n_resamples=2000)
    assert isinstance(result, RobustnessResult)
    run = result.runs["r"]
    invariance_d = [0.0, 1.0, 2 / 12, 0.0]
    assert run.invariance == pytest.approx(1 - np.mean(invariance_d))
    assert run.sensitivity == pytest.approx(np.mean([1.0, 0.0, 20 / 30]))
    assert run.kelvin_score == pytest.approx(2 - run.invariance - run.sensitivity)  # type: ignore[operator]
    body = run.to_dict()
    assert body["failed_variants"] == 1 and body["invariance_sample"] == 4
    assert body["sensitivity_by_type"] == {
        "rule": {"mean": 0.5, "sample": 2}, "other": {"mean": pytest.approx(2 / 3), "sample": 1}
    }  # fmt: skip
    # Two cases: below MIN_CASES, so no interval — and the report says why.
    assert run.intervals["invariance"] == (
        "2 case(s) with such variants: an interval needs at least 3"
    )
    assert body["intervals"]["invariance"] == {"refusal": run.intervals["invariance"]}


def test_the_case_interval_is_the_cluster_robust_t_over_cases(make_samples: MakeSamples) -> None:
    decisions = [10, 20, 30, 40, 50, 60]  # a t interval needs 6 units
    data = []
    for i, base in enumerate(decisions):
        data += rows(f"c{i}", base, {"reorder-01": base + i, "pad_length-01": base})
    run = get_scheme("robustness").score(make_samples(data)).runs["r"]  # type: ignore[attr-defined]
    d = np.array([c.distances(("reorder", "pad_length")) for c in run.cases])
    assert d.shape == (6, 2) and np.ptp(d.mean(axis=1)) > 0  # distances: tested above
    interval = run.intervals["invariance"]
    # 6 cases are too few for the t rule: distances are bounded, so the betting interval of the
    # case means, mirrored.
    assert interval is not None and not isinstance(interval, str)
    assert interval.formula == "hedged-capital"
    bet = betting_interval(d.mean(axis=1), bounds=(0.0, 1.0))
    assert (interval.low, interval.high) == pytest.approx((1 - bet.high, 1 - bet.low))
    assert run.invariance == pytest.approx(1 - d.mean())
    # Asked for by name: Hall's skewness-corrected t interval of the case means, mirrored.
    t = case_interval(
        run.cases, INVARIANCE_KINDS, confidence_level=0.95, n_resamples=100, seed=1,
        complement=True, method="t",
    )  # fmt: skip
    assert t is not None and not isinstance(t, str) and t.formula == "hall-t"
    low, high = hall_bounds(d.mean(axis=1))
    assert t.low == pytest.approx(1 - min(1.0, high))
    assert t.high == pytest.approx(1 - max(0.0, low))


def test_a_failed_baseline_scores_nothing_for_its_case(make_samples: MakeSamples) -> None:
    data = rows("a", "go", {"reorder-01": "go"}) + rows("b", "x", {"reorder-01": "y"})
    data[0]["error"], data[0]["decision"] = "timed out", None
    run = get_scheme("robustness").score(make_samples(data)).runs["r"]  # type: ignore[attr-defined]
    assert run.invariance == 0.0 and run.to_dict()["cases"]["baseline_failed"] == [
        {"case": "a", "error": "timed out"}
    ]
    assert "needs at least 3" in str(run.intervals["invariance"])  # one case: no interval


def test_noise_floor_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, extra="noise_floor:\n  enabled: true\n  replications: 4\n")
    monkeypatch.setenv("STAGE_COUNTER", str(tmp_path / "counter"))
    monkeypatch.setenv("STAGE_FLIP_EVERY", "5")
    assert check(root, "--no-cache") == 0
    run = report(root)
    sigmas = []
    for case in run["cases"]["baseline_ok"]:
        floor = report(root, case)["noise_floor"]
        assert floor["replay_count"] == 4
        expected = kelvin_scorer.sigma_c(floor["baseline_replays"], kelvin_scorer.DefaultScorer())
        assert floor["sigma_c"] == pytest.approx(expected)
        sigmas.append(expected)
    assert run["noise_floor_eta"] == pytest.approx(np.mean(sigmas))
    assert run["noise_floor_eta"] > 0  # every fifth call flipped
    expected_cal = kelvin_scorer.calibrate(
        invariance_raw=run["invariance"], sensitivity_raw=run["sensitivity"],
        eta=run["noise_floor_eta"],
    )  # fmt: skip
    got = (run["invariance_calibrated"], run["sensitivity_calibrated"],
           run["kelvin_score_calibrated"])  # fmt: skip
    assert all(
        (g is None and e is None) or math.isclose(g, e)
        for g, e in zip(got, expected_cal, strict=True)
    )
    assert json.loads((root / "kelvin" / "report.json").read_text())["seed"] == 0
