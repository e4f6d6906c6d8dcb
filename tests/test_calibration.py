"""The calibration harness (src/calipers/calibration, docs/calibration.md): the reduced grid meets
every target, the fast path agrees with the public API, figures reproduce from the seed, and every
truth agrees with a large Monte Carlo or a closed form."""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, special, stats

import calipers
from calipers.calibration import engine, models, robust
from calipers.calibration.__main__ import main
from calipers.calibration.aggregate import Targets, assess_all
from calipers.calibration.grid import REDUCED_SETTINGS, Cell, Settings, full_grid, reduced_grid
from calipers.calibration.runner import CellOutcome, run_cell, run_grid
from calipers.calibration.simulate import experiment


@pytest.mark.slow  # the reduced grid: ~20–90 s on 2 cores
def test_the_reduced_grid_meets_every_target() -> None:
    outcomes = run_grid(reduced_grid(), REDUCED_SETTINGS, jobs=2)
    reports = assess_all(outcomes, Targets(allowance=2.0))
    failed = [r for r in reports if not r.passed]
    lines = [f"{r.id}: " + "; ".join(f.describe() for f in r.failures) for r in failed]
    if failed:
        pytest.fail(
            f"{len(failed)} of {len(reports)} calibration cells miss a target (seed "
            f"{REDUCED_SETTINGS.seed}, {REDUCED_SETTINGS.reps_null} reps):\n" + "\n".join(lines),
            pytrace=False,
        )


def test_the_grids_cover_the_design() -> None:
    cells = full_grid()
    ids = [c.id for c in cells]
    # 117 + 8 unequal-epoch cells + 4 repeats cells + 7 margin cells + 9 planner cells
    assert len(ids) == len(set(ids)) == 145
    assert {c.interval for c in cells} == {"auto", "percentile", "bca"}  # the overrides too
    assert {c.id for c in reduced_grid()} <= set(ids)
    assert all(c.n % 5 == 0 for c in cells if c.grouped)  # whole groups of 5


def _direct(
    model: str,
    *,
    n: int,
    epochs: int,
    shift: float,
    failure: float,
    seed: int,
    dropped: float = 0.0,
) -> tuple[engine.Outcome, list[dict[str, object]]]:
    rng = np.random.default_rng(seed)
    sim = experiment(
        models.model(model),
        n=n,
        epochs=epochs,
        grouped=False,
        shifts={"A": 0.0, "B": shift},
        failure={"B": failure},
        rng=rng,
        dropped=dropped,
    )
    outcome = engine.compare(
        sim.staged(),
        treatments=["B"],
        grouped=False,
        confidence_level=0.95,
        n_resamples=1000,
        seed=seed,
    )
    return outcome, sim.records()


@pytest.mark.parametrize(
    ("model", "options", "n", "epochs", "shift", "failure", "dropped"),
    [
        ("layered-judgefail", {}, 30, 2, 0.4, 0.3, 0.0),
        ("binary-p0.70", {"metric": "correct"}, 40, 1, 0.6, 0.0, 0.0),
        ("continuous", {"metric": "value"}, 25, 3, 0.3, 0.0, 0.0),
        ("continuous", {"metric": "value"}, 25, 3, 0.3, 0.0, 0.3),
        ("layered", {}, 30, 3, 0.4, 0.0, 0.3),
    ],
)
def test_the_fast_path_gives_what_the_public_api_gives(
    model: str,
    options: dict[str, str],
    n: int,
    epochs: int,
    shift: float,
    failure: float,
    dropped: float,
) -> None:
    direct, records = _direct(
        model, n=n, epochs=epochs, shift=shift, failure=failure, seed=7, dropped=dropped
    )
    scheme = "layered" if model.startswith("layered") else "metric"
    result = calipers.compare(
        records, scheme, baseline="A", candidates=["B"], seed=7, n_resamples=1000, **options
    )
    pair = result.pairs[0].comparison  # type: ignore[attr-defined]
    assert result.verdict_text == direct.verdict
    assert pair.composite.estimate == pytest.approx(direct.pairs[0].composite.estimate, abs=1e-12)
    assert pair.composite.low == pytest.approx(direct.pairs[0].composite.low, abs=1e-9)
    assert pair.composite.high == pytest.approx(direct.pairs[0].composite.high, abs=1e-9)
    if failure:
        failed = [r for r in records if r["run"] == "B" and r["judgments"][0]["score"] is None]
        assert len(failed) == round(failure * n * epochs)
    if dropped:  # unequal epochs, and fewer on the weaker items
        assert 0.5 * n * epochs < len([r for r in records if r["run"] == "A"]) < n * epochs


def test_dropped_epochs_fall_on_the_weaker_items() -> None:
    from calipers.calibration.simulate import kept_epochs

    rng = np.random.default_rng(3)
    z = rng.standard_normal((1, 20_000))
    keep = kept_epochs(rng, z, 3, 0.3).reshape(-1, 3)
    assert keep[:, 0].all()
    assert keep[:, 1:].mean() == pytest.approx(0.7, abs=0.01)  # 30% of later epochs lost
    assert keep[z[0] >= 0, 1:].all() and keep[z[0] < 0, 1:].mean() == pytest.approx(0.4, abs=0.02)


def _figures(outcome: CellOutcome) -> dict[str, object]:
    body = outcome.to_dict()
    body.pop("wall_s")
    return body


def test_the_same_seed_gives_the_same_figures_whatever_the_scheduling() -> None:
    settings = Settings(seed=11, reps_null=40, reps_alt=20, n_resamples=500)
    cells = [Cell("binary-p0.70", 50), Cell("layered-gate", 10, 3), Cell("robustness", 3)]
    first = [_figures(run_cell(c, settings)) for c in cells]
    again = [_figures(o) for o in run_grid(cells, settings, jobs=2)]
    assert first == again
    assert first[0]["phases"]["mde"]["reps"] == 20  # type: ignore[index]
    other = _figures(run_cell(cells[0], Settings(seed=12, reps_null=40, reps_alt=20)))
    assert other["phases"] != first[0]["phases"]


def test_the_command_writes_the_page_and_the_json(tmp_path: Path) -> None:
    out, doc = tmp_path / "calibration.md", tmp_path / "calibration.json"
    code = main(
        ["--reduced", "--jobs", "1", "--only", "cases6", "--reps-null", "30", "--out", str(out),
         "--json", str(doc)]
    )  # fmt: skip
    assert code == 0
    body = json.loads(doc.read_text())
    assert body["settings"]["seed"] == REDUCED_SETTINGS.seed and len(body["cells"]) == 1
    cell = body["cells"][0]
    assert cell["cell"]["id"] == "robustness/cases6" and cell["status"] in ("PASS", "FAIL")
    assert "coverage null: invariance" in cell["figures"]
    assert "`robustness/cases6`" in out.read_text()


# --- truths ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["binary-p0.70", "binary-p0.02", "binary-p0.98", "judge", "continuous", "rare", "layered",
     "layered-gate"],
)  # fmt: skip
@pytest.mark.parametrize("shift", [0.0, 0.4])
def test_each_truth_agrees_with_a_million_items(name: str, shift: float) -> None:
    model = models.model(name)
    rng = np.random.default_rng(zlib.crc32(f"{name}/{shift}".encode()))
    sim = experiment(
        model, n=1_000_000, epochs=1, grouped=False, shifts={"A": shift}, failure={}, rng=rng
    )
    composite = sim.staged().composite("A")
    se = float(np.std(composite)) / 1000.0
    assert abs(float(composite.mean()) - model.arm_truth(shift)) < 5 * se + 1e-9


def test_grouping_keeps_the_truth() -> None:
    model = models.model("continuous")
    rng = np.random.default_rng(3)
    sim = experiment(
        model, n=1_000_000, epochs=1, grouped=True, shifts={"A": 0.0}, failure={}, rng=rng
    )
    # groups of 5 with correlation ≤ 0.3: the standard error grows by at most √(1 + 4·0.3)
    values = sim.staged().composite("A")
    se = float(np.std(values)) / 1000.0 * math.sqrt(2.2)
    assert abs(float(values.mean()) - model.arm_truth(0.0)) < 5 * se


def test_judge_failure_truth_is_like_with_like() -> None:
    model = models.model("layered-judgefail")
    assert model.diff_truth(0.0, 0.3) == 0.0
    rng = np.random.default_rng(5)
    sim = experiment(
        model, n=300_000, epochs=1, grouped=False, shifts={"A": 0.0, "B": 0.5},
        failure={"B": 0.3}, rng=rng,
    )  # fmt: skip
    staged = sim.staged()
    a, b = sim.arms["A"].values, sim.arms["B"].values
    failed = ~np.isfinite(b["judge"])
    assert failed.mean() == pytest.approx(0.3)
    # the same layers on both sides: two layers where the treatment's judges failed, else three
    both = {k: np.where(failed, np.nan, v) if k == "judge" else v for k, v in a.items()}
    like = staged.combine(b) - staged.combine(both)
    assert like.mean() == pytest.approx(model.diff_truth(0.5, 0.3), abs=5 * like.std() / 550)
    assert staged.composite("B").mean() == pytest.approx(model.arm_truth(0.5, 0.3), abs=0.01)


def test_truths_against_closed_forms() -> None:
    # judge: the score only depends on q + e ~ N(3.6 + 0.8·s, √(0.8² + 0.5²))
    judge = models.model("judge")
    for shift in (0.0, 0.7):
        x = stats.norm(3.6 + 0.8 * shift, math.sqrt(0.89))
        cdf = [0.0, *(x.cdf(k + 0.5) for k in range(1, 5)), 1.0]
        expected = sum(k * (cdf[k] - cdf[k - 1]) for k in range(1, 6))
        assert judge.arm_truth(shift) == pytest.approx(expected, abs=1e-10)
    # binary: E[expit(logit p + Z)] by adaptive quadrature
    for p in (0.7, 0.02, 0.98):
        binary = models.model(f"binary-p{p:.2f}")
        value, _ = integrate.quad(
            lambda z, p=p: special.expit(special.logit(p) + z) * stats.norm.pdf(z), -12, 12
        )
        assert binary.arm_truth(0.0) == pytest.approx(value, abs=1e-10)
    # continuous without noise in the tails would be the Beta mean 2/7; the clipping adds a little
    assert models.model("continuous").arm_truth(0.0) == pytest.approx(2 / 7, abs=0.01)
    # the gate variant's behavior layer sits at the gate; rare goes 0.95 → 0.97 at +0.02
    layered = models.model("layered-gate")
    assert isinstance(layered, models.Layered)
    assert layered.layer_means(0.0)[1] == pytest.approx(3.5, abs=1e-9)
    rare = models.model("rare")
    assert rare.arm_truth(0.0) == pytest.approx(0.95, abs=1e-9)
    shift = models.shift_for(rare, 0.02)
    assert shift is not None and rare.arm_truth(shift) == pytest.approx(0.97, abs=1e-9)
    down = models.shift_for(rare, -0.5)
    assert down is not None and rare.diff_truth(down) == pytest.approx(-0.5, abs=1e-9)
    assert models.shift_for(rare, 0.2) is None  # no system is 0.2 better than 0.95


def test_robustness_truth_is_the_population_mean() -> None:
    rng = np.random.default_rng(9)
    cases = robust.simulate_cases(rng, 30_000)
    inv = [d for c in cases for d in c.distances(("reorder", "pad_length", "pad_content"))]
    swaps = [d for c in cases for d in c.distances(("swap",))]
    assert 1.0 - np.mean(inv) == pytest.approx(robust.TRUTH["invariance"], abs=0.006)
    assert np.mean(swaps) == pytest.approx(robust.TRUTH["sensitivity"], abs=0.006)
