"""Missing outcomes cannot decide a verdict (calipers.verdicts.missing_bounds): the worst/best-case
bounds against a hand computation, the rule on missingness that tracks an arm's own bad draws,
outcomes missing at random that change nothing, system errors told from grader failures, and the
bounds in every output."""

from __future__ import annotations

import dataclasses
import io
import json
from importlib import resources
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from scipy import stats

import calipers
from calipers.render import json_report
from calipers.render.markdown import compare_markdown
from calipers.schemes import get_scheme
from calipers.verdicts.compare import CompareResult, compare_staged
from calipers.verdicts.gates import Thresholds, Verdict, decide
from calipers.verdicts.missing_bounds import rank_test
from calipers.verdicts.persample import RunArrays, StagedScores, dense_sorted
from conftest import MakeSamples, validate_schema
from layered_data import row

UNIT = (0.0, 1.0)


def staged(values: dict[str, np.ndarray], bounds: tuple[float, float] | None) -> StagedScores:
    """One value per sample (NaN: missing), as the metric scheme stages it."""
    n = next(iter(values.values())).size
    sid = np.arange(n, dtype=np.int64)
    zeros = np.zeros(n, np.int64)
    runs = {
        run: RunArrays(run, sid, zeros, dense_sorted(sid), zeros, ["t"], {"value": v}, {}, None)
        for run, v in values.items()
    }

    def value(d: Any) -> Any:
        return d["value"]

    return StagedScores(
        runs=runs, tasks=["t"], components=("value",), combine=value, raw_combine=value,
        gated=False, bounds=bounds,
    )  # fmt: skip


def compare(
    values: dict[str, np.ndarray], bounds: tuple[float, float] | None = UNIT, **options: Any
) -> CompareResult:
    return compare_staged(
        staged(values, bounds), scheme="metric", origin="test", control="c", treatments=["t"],
        scheme_options=None, threshold=None, confidence_level=0.95, n_resamples=2000, seed=0,
        cluster="sample_id", **options,
    )  # fmt: skip


def without_bounds(result: CompareResult) -> Verdict:
    """The verdict of the same comparison by the rule before the bounds (complete cases only)."""
    pair = result.pairs[0]
    p = result.parameters
    limits = Thresholds(
        min_effect=p["min_effect"], trivial_diff=p["trivial_diff"], threshold=None,
        span=p["scale_span"], use_cv=False,
    )  # fmt: skip
    old = dataclasses.replace(pair.comparison, missing_bounds=None)
    c, t = result.variants["c"], result.variants["t"]
    return decide(old, c, t, gated=False, limits=limits).verdict


def test_bounds_against_a_hand_computation() -> None:
    """Ten samples; treatment lacks samples 0 and 1, control lacks sample 9. Worst case: the
    treatment's two at 0, control's one at 1; best case the reverse — each a paired t interval of
    the filled differences (clustered by sample with one epoch: the t interval of the values)."""
    c = np.array([0.6, 0.7, 0.5, 0.4, 0.8, 0.6, 0.5, 0.7, 0.6, np.nan])
    t = np.array([np.nan, np.nan, 0.6, 0.5, 0.8, 0.7, 0.4, 0.9, 0.6, 0.3])
    result = compare({"c": c, "t": t}, interval="t")
    b = result.pairs[0].comparison.missing_bounds
    assert b is not None
    worst = np.r_[0 - 0.6, 0 - 0.7, (t - c)[2:9], 0.3 - 1.0]
    best = np.r_[1 - 0.6, 1 - 0.7, (t - c)[2:9], 0.3 - 0.0]

    def t_interval(d: np.ndarray) -> tuple[float, float, float]:
        half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
        return d.mean(), d.mean() - half, d.mean() + half

    w_est, w_low, _ = t_interval(worst)
    b_est, _, b_high = t_interval(best)
    assert b.worst is not None and b.best is not None
    assert b.worst.estimate == pytest.approx(w_est, abs=1e-12)
    assert b.best.estimate == pytest.approx(b_est, abs=1e-12)
    assert b.low == pytest.approx(w_low, abs=1e-10)
    assert b.high == pytest.approx(b_high, abs=1e-10)
    assert (b.n_units, b.n_complete) == (10, 7)
    assert (b.treatment.units, b.control.units) == (2, 1)
    # the complete cases' difference lies inside the bounds
    composite = result.pairs[0].comparison.composite
    assert b.low < composite.estimate < b.high  # type: ignore[operator]


def test_unbounded_scale_gives_infinite_bounds() -> None:
    rng = np.random.default_rng(3)
    c = rng.normal(10, 2, 60)
    t = c + rng.normal(0, 1, 60)
    t[:5] = np.nan
    b = compare({"c": c, "t": t}, bounds=None).pairs[0].comparison.missing_bounds
    assert b is not None and b.worst is None and b.best is None
    assert b.low == -np.inf and b.high == np.inf
    assert "no declared bounds" in b.describe()
    body = b.to_dict()
    assert body["unbounded"] is True and body["low"] is None and body["high"] is None


def bad_draws(rng: np.random.Generator, n: int, lost: str) -> dict[str, np.ndarray]:
    """Identical systems; `lost` loses its value with probability 0.25 when its draw is below its
    item's mean (its own bad draws: errors, timeouts, judge failures), 0.02 otherwise."""
    mu = rng.beta(2, 2, n)
    values = {r: np.clip(mu + 0.15 * rng.standard_normal(n), 0, 1) for r in "ct"}
    x = values[lost]
    gone = rng.random(n) < np.where(x < mu, 0.25, 0.02)
    values[lost] = np.where(gone, np.nan, x)
    return values


def test_missing_on_the_controls_bad_draws_is_not_a_regress() -> None:
    """The control loses its worst draws: over complete cases it looks better than it is, and the
    rule before the bounds called the identical treatment a REGRESS (15.6% of such runs at
    n = 200). The bounds show the missing outcomes could decide it: CAUTIOUS, with the reason."""
    seeds = [
        s
        for s in range(60)
        if without_bounds(compare(bad_draws(np.random.default_rng(s), 200, "c"))) is Verdict.REGRESS
    ]
    assert seeds, "no simulated run fell into the old false REGRESS"
    for s in seeds[:3]:
        result = compare(bad_draws(np.random.default_rng(s), 200, "c"))
        assert result.verdict is Verdict.CAUTIOUS, result.reason
        assert "missing outcomes could decide it" in result.reason
        assert "missing control outcomes at worst/best the difference is in [" in result.reason
        b = result.pairs[0].comparison.missing_bounds
        assert b is not None and b.triggered and b.low is not None and b.low < 0 < b.high  # type: ignore[operator]


def test_missing_on_the_treatments_bad_draws_is_not_a_progress() -> None:
    for s in range(3):
        result = compare(bad_draws(np.random.default_rng(100 + s), 200, "t"))
        assert result.verdict not in (Verdict.PROGRESS, Verdict.REGRESS), result.reason


def test_losing_the_hard_items_is_caught_by_the_rank_test() -> None:
    """The treatment is worse on hard items and better on easy ones (truth −0.025) and loses half
    its hard items; the control loses a quarter of its samples at random, so presence does not
    differ. Over complete cases the treatment looks better (the rule before the bounds said
    PROGRESS in 27% of such runs); the control's values on the samples the treatment lacks are
    low — the rank test — and the bounds overturn it."""

    def flip(rng: np.random.Generator, n: int = 200) -> dict[str, np.ndarray]:
        mu = rng.beta(2, 2, n)
        hard = mu < np.median(mu)
        c = np.clip(mu + 0.15 * rng.standard_normal(n), 0, 1)
        t = np.clip(mu + np.where(hard, -0.2, 0.15) + 0.15 * rng.standard_normal(n), 0, 1)
        t[hard & (rng.random(n) < 0.5)] = np.nan
        c[rng.random(n) < 0.25] = np.nan
        return {"c": c, "t": t}

    found = 0
    for s in range(40):
        result = compare(flip(np.random.default_rng(s)))
        if without_bounds(result) is not Verdict.PROGRESS:
            continue
        found += 1
        b = result.pairs[0].comparison.missing_bounds
        assert b is not None and b.treatment.outcome_p is not None
        assert b.treatment.outcome_p <= 0.05 and b.triggered
        assert result.verdict is Verdict.CAUTIOUS and "rank test" in result.reason
    assert found


def test_a_few_outcomes_missing_at_random_leave_a_clear_gain_alone() -> None:
    """2% missing completely at random in both arms, a real +0.1 on pass/fail at n = 500: when
    the missingness neither differs nor tracks the outcome the verdict is today's."""
    same = 0
    for s in range(10):
        rng = np.random.default_rng(1000 + s)
        p = rng.uniform(0, 0.9, 500)
        c = (rng.random(500) < p).astype(float)
        t = (rng.random(500) < p + 0.1).astype(float)
        c[rng.random(500) < 0.02] = np.nan
        t[rng.random(500) < 0.02] = np.nan
        result = compare({"c": c, "t": t})
        b = result.pairs[0].comparison.missing_bounds
        assert b is not None and b.missing > 0
        if not b.triggered or b.holds_progress(result.parameters["trivial_diff"]):
            assert result.verdict is without_bounds(result)
            same += 1
        if b.triggered and result.verdict is Verdict.PROGRESS:
            assert "holds across the missing outcomes" in result.reason
    assert same >= 8


def test_nothing_missing_changes_nothing() -> None:
    rng = np.random.default_rng(5)
    c = rng.random(80)
    result = compare({"c": c, "t": np.clip(c + 0.1, 0, 1)})
    b = result.pairs[0].comparison.missing_bounds
    assert b is not None and b.missing == 0 and not b.triggered and b.low is None
    assert result.verdict is without_bounds(result)


def test_rank_test_matches_scipy() -> None:
    rng = np.random.default_rng(9)
    for x, y in [
        (rng.random(7), rng.random(40)),
        (rng.integers(0, 2, 12).astype(float), rng.integers(0, 2, 90).astype(float)),
        (np.round(rng.random(20) * 4) + 1, np.round(rng.random(30) * 4) + 1),
    ]:
        expected = stats.mannwhitneyu(x, y, method="asymptotic", use_continuity=True).pvalue
        assert rank_test(x, y) == pytest.approx(expected, rel=1e-9)
    assert rank_test(np.ones(3), np.ones(5)) == 1.0
    assert rank_test(np.zeros(0), np.ones(5)) is None


def _errors_rows() -> list[dict[str, Any]]:
    """40 samples with `correct`: treatment errors on 6 (no score), its grader gives nothing on
    3 more (no error); control's grader misses 1."""
    rows = []
    for i in range(40):
        sid = f"s{i:02d}"
        rows.append({"run": "c", "task": "t", "sample_id": sid,
                     "correct": None if i == 39 else i % 3 != 0})  # fmt: skip
        t: dict[str, Any] = {"run": "t", "task": "t", "sample_id": sid, "correct": i % 2 == 0}
        if i < 6:
            t.update(correct=None, error="timeout")
        elif i < 9:
            t["correct"] = None
        rows.append(t)
    return rows


def test_system_errors_and_grader_failures_are_counted_apart(make_samples: MakeSamples) -> None:
    result = calipers.compare(
        make_samples(_errors_rows()), "metric", baseline="c", candidates=["t"], metric="correct",
        n_resamples=500,
    )  # fmt: skip
    b = result.pairs[0].comparison.missing_bounds
    assert b is not None and b.scale == UNIT
    assert (b.treatment.units, b.treatment.system_errors, b.treatment.grader_failures) == (9, 6, 3)
    assert (b.control.units, b.control.system_errors, b.control.grader_failures) == (1, 0, 1)
    assert b.treatment.scored_worst == 0 and result.parameters["errors"] == "missing"
    report = result.to_dict()
    validate_schema(json.loads(json_report.dumps(report)), _schema())
    pair = report["pairs"][0]["missing_bounds"]
    assert pair["treatment"]["system_errors"] == 6 and pair["control"]["grader_failures"] == 1


def test_errors_worst_scores_a_system_error_at_the_low_bound(make_samples: MakeSamples) -> None:
    samples = make_samples(_errors_rows())
    result = calipers.compare(
        samples, "metric", baseline="c", candidates=["t"], metric="correct", errors="worst",
        n_resamples=500,
    )  # fmt: skip
    b = result.pairs[0].comparison.missing_bounds
    assert b is not None and result.parameters["errors"] == "worst"
    # the 6 errored samples are scored 0; the 3 ungraded ones are still missing
    assert b.treatment.scored_worst == 6
    assert (b.treatment.units, b.treatment.system_errors, b.treatment.grader_failures) == (3, 0, 3)
    missing = calipers.compare(
        samples, "metric", baseline="c", candidates=["t"], metric="correct", n_resamples=500
    )
    assert result.variants["t"].n_observations == missing.variants["t"].n_observations
    assert result.variants["t"].missing == missing.variants["t"].missing - 6
    validate_schema(json.loads(json_report.dumps(result.to_dict())), _schema())


def test_judge_failures_are_grader_failures_of_the_layer(make_samples: MakeSamples) -> None:
    """Layered: the judge failing on a sample without an error is a grader failure of the judge
    layer (the composite falls back to the layers both runs have); a sample whose pipeline
    errored and has nothing to score is a system error."""
    rows = []
    for i in range(30):
        rows.append(row("c", i, fact=(4, 5), judge=4.0))
        if i < 4:  # the judge failed (score null, its error set) on a sample that ran fine
            failed = [{"judge": "j1", "score": None, "error": "judge timed out"}]
            rows.append(row("t", i, fact=(4, 5), judgments=failed))
        elif i < 6:  # the pipeline failed: nothing to grade
            rows.append(row("t", i, error="pipeline crashed"))
        else:
            rows.append(row("t", i, fact=(4, 5), judge=4.0))
    result = calipers.compare(
        make_samples(rows), "layered", baseline="c", candidates=["t"], n_resamples=500
    )
    b = result.pairs[0].comparison.missing_bounds
    assert b is not None and b.scale == (1.0, 5.0)
    assert b.treatment.judge_failures == 4
    assert (b.treatment.units, b.treatment.system_errors, b.treatment.grader_failures) == (2, 2, 0)
    assert b.control.judge_failures == 0


def test_the_bounds_show_in_every_output(make_samples: MakeSamples) -> None:
    result = calipers.compare(
        make_samples(_errors_rows()), "metric", baseline="c", candidates=["t"], metric="correct",
        n_resamples=500,
    )  # fmt: skip
    report = json.loads(json_report.dumps(result.to_dict()))
    scheme = get_scheme("metric")
    markdown = compare_markdown(report)
    assert "Missing outcomes for t: treatment lacks 9 sample(s)" in markdown
    assert "6 system errors, 3 grader failures" in markdown
    page = scheme.compare_page(report)
    assert "missing outcomes</td>" in page and "treatment lacks 9 sample(s)" in page
    out = io.StringIO()
    scheme.compare_terminal(result, Console(file=out, width=1000, color_system=None))
    assert "missing outcomes, t: treatment lacks 9 sample(s)" in out.getvalue()
    assert "at worst/best the difference is in [" in out.getvalue()


def test_no_line_when_nothing_is_missing(make_samples: MakeSamples) -> None:
    rows = [{"run": r, "task": "t", "sample_id": f"s{i}", "correct": (i + (r == "t")) % 2 == 0}
            for i in range(30) for r in ("c", "t")]  # fmt: skip
    result = calipers.compare(
        make_samples(rows), "metric", baseline="c", candidates=["t"], metric="correct",
        n_resamples=500,
    )  # fmt: skip
    report = json.loads(json_report.dumps(result.to_dict()))
    assert "Missing outcomes" not in compare_markdown(report)
    assert "missing outcomes</td>" not in get_scheme("metric").compare_page(report)
    out = io.StringIO()
    get_scheme("metric").compare_terminal(result, Console(file=out, width=1000, color_system=None))
    assert "missing outcomes" not in out.getvalue()


def _schema() -> Any:
    text = resources.files("calipers.render.schemas").joinpath("compare.schema.json")
    return json.loads(text.read_text(encoding="utf-8"))
