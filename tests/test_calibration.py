"""The calibration harness (src/calipers/calibration, docs/calibration.md): the reduced grid meets
every target, the fast path agrees with the public API, figures reproduce from the seed, and every
truth agrees with a large Monte Carlo or a closed form."""

from __future__ import annotations

import inspect
import json
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import integrate, special, stats

import calipers
from calipers.calibration import engine, models, robust, runner, schemes
from calipers.calibration.__main__ import main
from calipers.calibration.aggregate import Targets, assess_all
from calipers.calibration.grid import (
    REDUCED_FAMILY_IDS,
    REDUCED_SETTINGS,
    SCHEME_MODELS,
    Cell,
    Settings,
    core_grid,
    family_grid,
    full_grid,
    is_family,
    reduced_grid,
)
from calipers.calibration.runner import CellOutcome, declared_bounds, run_cell, run_grid
from calipers.calibration.simulate import experiment


def _meets_every_target(cells: list[Cell]) -> None:
    outcomes = run_grid(cells, REDUCED_SETTINGS, jobs=2)
    reports = assess_all(outcomes, Targets(allowance=2.0))
    failed = [r for r in reports if not r.passed]
    lines = [f"{r.id}: " + "; ".join(f.describe() for f in r.failures) for r in failed]
    if failed:
        pytest.fail(
            f"{len(failed)} of {len(reports)} calibration cells miss a target (seed "
            f"{REDUCED_SETTINGS.seed}, {REDUCED_SETTINGS.reps_null} reps):\n" + "\n".join(lines),
            pytrace=False,
        )


@pytest.mark.slow  # the reduced grid's core cells: ~20–90 s on 2 cores
def test_the_reduced_grid_meets_every_target() -> None:
    _meets_every_target([c for c in reduced_grid() if not is_family(c)])


@pytest.mark.slow  # ~2–4 min on 2 cores (the MDE simulates `auto` in every phase)
@pytest.mark.extended  # more of what make test's reduced grid covers: make test-all
def test_the_reduced_families_meet_every_target() -> None:
    _meets_every_target([c for c in reduced_grid() if is_family(c)])


def test_the_grids_cover_the_design() -> None:
    cells = full_grid()
    ids = [c.id for c in cells]
    # core: 117 + 8 unequal-epoch cells + 4 repeats cells + 7 margin cells + 9 planner cells;
    # families: 8 skewed + 4 bimodal + 6 heavy-tailed + 8 missing-outcome + 6 named-group + 8
    # rubric/objective + 2 concentrated-planner cells
    assert len(ids) == len(set(ids)) == 145 + 42
    assert [c.id for c in core_grid()] + [c.id for c in family_grid()] == ids
    assert {c.interval for c in cells} == {"auto", "percentile", "bca"}  # the overrides too
    assert {c.id for c in reduced_grid()} <= set(ids)
    assert all(c.n % 5 == 0 for c in cells if c.grouped)  # whole groups of 5
    assert all(c.n % c.groups == 0 for c in cells if c.named_groups)
    families = {c.id: c for c in family_grid()}
    assert all(is_family(c) for c in families.values())
    assert not any(is_family(c) for c in core_grid())
    # each family, at the sizes asked for
    assert {c.n for c in families.values() if c.model.startswith("skewed-")} == {15, 30, 60, 200}
    assert {c.model for c in families.values() if c.model.startswith("skewed-")} == {
        "skewed-s0.05", "skewed-s0.15"
    }  # fmt: skip
    assert {c.n for c in families.values() if c.model == "bimodal"} == {8, 12, 25, 60}
    assert {(c.model, c.n) for c in families.values() if c.model.startswith("heavy")} == {
        (m, n) for m in ("heavy", "heavy-capped") for n in (10, 30, 100)
    }  # fmt: skip
    assert {(c.model, c.n, c.mnar) for c in families.values() if c.mnar} == {
        (m, n, arm) for m in ("binary-p0.70", "continuous") for n in (50, 200) for arm in "TC"
    }  # fmt: skip
    assert {c.groups for c in families.values() if c.named_groups} == {10, 25}
    assert any(c.named_groups and c.margin for c in families.values())
    assert {(c.model, c.n) for c in families.values() if c.model in SCHEME_MODELS} == {
        (m, n) for m in SCHEME_MODELS for n in (5, 10, 30, 100)
    }  # fmt: skip
    assert {c.model for c in families.values() if c.plan} == {"conc-continuous",
                                                              "conc-binary-p0.70"}  # fmt: skip
    # every family has a cell in the reduced grid
    reduced = [c for c in reduced_grid() if is_family(c)]
    assert len(reduced) == len(REDUCED_FAMILY_IDS) >= 6
    for pick in ("skewed-", "bimodal", "heavy", "mnar", "groups", "rubric", "objective", "conc-"):
        assert any(pick in c.id for c in reduced), pick


def test_named_groups_pass_no_cluster_option() -> None:
    """The engine's default clustering is what those cells measure."""
    from calipers.verdicts.compare import compare_staged

    assert engine.cluster_option(True) == "group" and engine.cluster_option(False) == "sample_id"
    assert engine.cluster_option(False, default=True) is None
    assert "cluster" not in engine._options(compare_staged, False, default_cluster=True)
    assert engine._options(compare_staged, True).get("cluster", "group") == "group"


def _direct(
    model: str,
    *,
    n: int,
    epochs: int,
    shift: float,
    failure: float,
    seed: int,
    dropped: float = 0.0,
    cell: Cell | None = None,
) -> tuple[engine.Outcome, list[dict[str, object]]]:
    """The harness's fast path on one simulated experiment (as `cell` runs it: its bounds,
    named groups and lost outcomes), and the same experiment as samples."""
    cell = cell or Cell(model, n, epochs)
    m = models.model(model)
    rng = np.random.default_rng(seed)
    sim = experiment(
        m,
        n=n,
        epochs=epochs,
        grouped=cell.clustered,
        shifts={"A": 0.0, "B": shift},
        failure={"B": failure},
        rng=rng,
        dropped=dropped,
        group_size=cell.groups or 5,
        correlation=0.5 if cell.named_groups else 0.3,
        lose={"T": "B", "C": "A"}.get(cell.mnar),
    )
    outcome = engine.compare(
        sim.staged(bounds=declared_bounds(cell, m)),
        treatments=["B"],
        grouped=cell.grouped,
        confidence_level=0.95,
        n_resamples=1000,
        seed=seed,
        default_cluster=cell.named_groups,
    )
    return outcome, sim.records()


@pytest.mark.parametrize(
    ("model", "options", "n", "epochs", "shift", "failure", "dropped", "cell"),
    [
        ("layered-judgefail", {}, 30, 2, 0.4, 0.3, 0.0, None),
        ("binary-p0.70", {"metric": "correct"}, 40, 1, 0.6, 0.0, 0.0, None),
        # the continuous kind is a 0–1 metric: declared, as a proportion or --bounds 0,1 is
        ("continuous", {"metric": "value", "bounds": "0,1"}, 25, 3, 0.3, 0.0, 0.0, None),
        ("continuous", {"metric": "value", "bounds": "0,1"}, 25, 3, 0.3, 0.0, 0.3, None),
        ("layered", {}, 30, 3, 0.4, 0.0, 0.3, None),
        # the families: declared bounds, lost outcomes, named groups with no cluster option
        ("skewed-s0.15", {"metric": "value", "bounds": "0,1"}, 30, 1, 0.5, 0.0, 0.0,
         Cell("skewed-s0.15", 30, declare=True)),
        ("heavy", {"metric": "value"}, 30, 1, 0.26, 0.0, 0.0, Cell("heavy", 30, declare=True)),
        ("heavy-capped", {"metric": "value", "bounds": "0,20"}, 30, 1, 0.26, 0.0, 0.0,
         Cell("heavy-capped", 30, declare=True)),
        ("continuous", {"metric": "value", "bounds": "0,1"}, 60, 1, 0.0, 0.0, 0.0,
         Cell("continuous", 60, declare=True, mnar="T")),
        ("binary-p0.70", {"metric": "correct"}, 60, 1, 0.0, 0.0, 0.0,
         Cell("binary-p0.70", 60, declare=True, mnar="C")),
        ("continuous", {"metric": "value", "bounds": "0,1"}, 100, 3, 0.2, 0.0, 0.0,
         Cell("continuous", 100, 3, groups=10, declare=True)),
    ],
)  # fmt: skip
def test_the_fast_path_gives_what_the_public_api_gives(
    model: str,
    options: dict[str, str],
    n: int,
    epochs: int,
    shift: float,
    failure: float,
    dropped: float,
    cell: Cell | None,
) -> None:
    direct, records = _direct(
        model, n=n, epochs=epochs, shift=shift, failure=failure, seed=7, dropped=dropped,
        cell=cell,
    )  # fmt: skip
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
    if cell is not None and cell.mnar:  # lost outcomes are samples with an error and no score
        lost = [r for r in records if "error" in r]
        assert lost and {r["run"] for r in lost} == {"B" if cell.mnar == "T" else "A"}
        bounds = getattr(pair, "missing_bounds", None)
        if bounds is not None and direct.pairs[0].bounds is not None:
            assert bounds.low == pytest.approx(direct.pairs[0].bounds.low, abs=1e-9)
            assert bounds.high == pytest.approx(direct.pairs[0].bounds.high, abs=1e-9)
    if cell is not None and cell.named_groups:
        assert {r["group"] for r in records} == {f"g{i:04d}" for i in range(n // cell.groups)}


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
    settings = Settings(seed=11, reps_null=20, reps_alt=10, n_resamples=500)
    cells = [Cell("binary-p0.70", 50), Cell("layered-gate", 10, 3), Cell("robustness", 3)]
    first = [_figures(run_cell(c, settings)) for c in cells]
    again = [_figures(o) for o in run_grid(cells, settings, jobs=2)]
    assert first == again
    assert first[0]["phases"]["mde"]["reps"] == 10  # type: ignore[index]
    other = _figures(run_cell(cells[0], Settings(seed=12, reps_null=20, reps_alt=10)))
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


# the families' truths (skewed, bimodal, heavy, concentrated) run in `make test-all`, as the
# families' reduced grid does
_FAMILY_TRUTHS = ("skewed-s0.05", "skewed-s0.15", "bimodal", "heavy-capped", "heavy",
                  "conc-continuous", "conc-binary-p0.70")  # fmt: skip


@pytest.mark.parametrize(
    "name",
    ["binary-p0.70", "binary-p0.02", "binary-p0.98", "judge", "continuous", "rare", "layered",
     "layered-gate",
     *(pytest.param(name, marks=pytest.mark.extended) for name in _FAMILY_TRUTHS)],
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


@pytest.mark.parametrize(
    ("name", "shift"),
    [("skewed-s0.05", 0.5), ("skewed-s0.15", -0.5), ("conc-continuous", 0.4),
     ("conc-binary-p0.70", math.inf), ("heavy", math.log(1.3)), ("heavy-capped", math.log(1.3))],
)  # fmt: skip
@pytest.mark.extended  # a family's: make test-all, as the families' reduced grid
def test_each_family_alternative_agrees_with_a_million_items(name: str, shift: float) -> None:
    """The alternatives the families run (a step on a share of items and its mirror, items that
    always pass, scores × 1.3): the paired difference of a 10⁶-item Monte Carlo."""
    model = models.model(name)
    rng = np.random.default_rng(zlib.crc32(f"{name}/{shift}".encode()))
    sim = experiment(
        model, n=1_000_000, epochs=1, grouped=False, shifts={"A": 0.0, "B": shift}, failure={},
        rng=rng,
    )  # fmt: skip
    staged = sim.staged()
    diff = staged.composite("B") - staged.composite("A")
    se = float(np.std(diff)) / 1000.0
    assert abs(float(diff.mean()) - model.diff_truth(shift)) < 5 * se + 1e-9


@pytest.mark.parametrize(
    ("name", "step"),
    [("bimodal", 0.3), ("bimodal", -0.2), ("heavy-capped", 4.0), ("heavy-capped", -0.5)],
)
def test_each_spread_alternative_agrees_with_a_million_items(name: str, step: float) -> None:
    """Detection at the MDE on a family whose own shift is not spread over the items (bimodal
    levels cross the modes, lognormal scores are multiplied): every item's score moved by one
    step within the scale, as the MDE assumes — its truth against a 10⁶-item Monte Carlo."""
    own = models.model(name)
    model = models.spread(own)
    assert model is not own and isinstance(model, models.Concentrated) and model.share == 1.0
    assert model.bounds == own.bounds and model.arm_truth(0.0) == own.arm_truth(0.0)
    rng = np.random.default_rng(zlib.crc32(f"spread/{name}/{step}".encode()))
    sim = experiment(
        model, n=1_000_000, epochs=1, grouped=False, shifts={"A": 0.0, "B": step}, failure={},
        rng=rng,
    )  # fmt: skip
    staged = sim.staged()
    values = staged.composite("B")
    assert own.bounds is not None
    assert values.min() >= own.bounds[0] and values.max() <= own.bounds[1]
    diff = values - staged.composite("A")
    se = float(np.std(diff)) / 1000.0
    assert abs(float(diff.mean()) - model.diff_truth(step)) < 5 * se + 1e-9
    # the models whose latent shift is spread already are left as they are
    assert models.spread(models.model("continuous")) == models.model("continuous")


def test_the_own_effect_is_measured_where_the_mde_phase_spread_it() -> None:
    bimodal, skewed = Cell("bimodal", 25, declare=True), Cell("skewed-s0.15", 30, declare=True)
    own = models.model("bimodal")
    spread = models.spread(own)
    at = models.shift_for(spread, 0.2)
    assert at is not None
    shift = runner._own_shift(bimodal, own, spread, 0.2, at, 0.0)
    assert shift is not None and own.diff_truth(shift) == pytest.approx(0.2, abs=1e-9)
    # a cell whose fixed phase already measures the family's own effect, or a spread model
    with_fixed = Cell("skewed-s0.15", 30, declare=True, fixed_shift=0.5)
    conc = models.model("skewed-s0.15")
    assert runner._own_shift(with_fixed, conc, models.spread(conc), 0.2, 0.2, 0.0) is None
    plain = models.model("continuous")
    assert runner._own_shift(skewed, plain, plain, 0.05, 0.1, 0.0) is None


def test_family_truths_against_closed_forms() -> None:
    # lognormal, log sd 1.2: E = exp(1.2²/2), × 1.3 at a shift of log 1.3
    heavy = models.model("heavy")
    assert heavy.arm_truth(0.0) == pytest.approx(math.exp(0.72), rel=1e-10)
    assert heavy.arm_truth(math.log(1.3)) == pytest.approx(1.3 * math.exp(0.72), rel=1e-10)
    assert heavy.bounds is None and not heavy.scheme_declares
    # capped at 20: E[min(X, 20)] over the lognormal's own law, by adaptive quadrature
    for scale in (1.0, 1.3):
        value, _ = integrate.quad(
            lambda t, c=scale: min(c * math.exp(1.2 * t), 20.0) * stats.norm.pdf(t), -12, 12,
            points=[math.log(20.0 / scale) / 1.2], limit=200,
        )  # fmt: skip
        capped = models.model("heavy-capped")
        assert capped.arm_truth(math.log(scale)) == pytest.approx(value, abs=1e-8)
    # bimodal: E over the mixture of clip(m + N(0, 0.1), 0, 1), m at 0 (40%), 1 (50%), U(0, 1)
    clipped = models.clipped_normal_mean
    at = {m: float(clipped(np.array([m]), 0.1)[0]) for m in (0.0, 1.0)}
    middle, _ = integrate.quad(lambda m: float(clipped(np.array([m]), 0.1)[0]), 0.0, 1.0)
    expected = 0.4 * at[0.0] + 0.5 * at[1.0] + 0.1 * middle
    assert models.model("bimodal").arm_truth(0.0) == pytest.approx(expected, abs=1e-6)
    # a share that always passes gains share · (1 − the pass rate)
    flip = models.model("conc-binary-p0.70")
    assert isinstance(flip, models.Concentrated)
    assert flip.diff_truth(math.inf) == pytest.approx(0.12 * (1 - flip.arm_truth(0.0)), abs=1e-12)
    # a step on a share: share · E[h(m + step) − h(m)], here as a quadrature over the Beta law
    skewed = models.model("skewed-s0.15")
    assert isinstance(skewed, models.Concentrated)

    def gain(m: float) -> float:
        moved = clipped(np.array([m + 0.5]), 0.05)[0] - clipped(np.array([m]), 0.05)[0]
        return float(moved * stats.beta.pdf(m, 5, 2))

    value, _ = integrate.quad(gain, 0.0, 1.0)
    assert skewed.diff_truth(0.5) == pytest.approx(0.15 * value, abs=1e-7)


def test_bimodal_scores_sit_at_the_bounds() -> None:
    rng = np.random.default_rng(4)
    sim = experiment(
        models.model("bimodal"), n=200_000, epochs=1, grouped=False, shifts={"A": 0.0},
        failure={}, rng=rng,
    )  # fmt: skip
    x = sim.arms["A"].values["value"]
    assert (x == 0.0).mean() == pytest.approx(0.2, abs=0.005)  # half the draws of 40% of items
    assert (x == 1.0).mean() == pytest.approx(0.25, abs=0.005)


@pytest.mark.parametrize("kind", ["binary-p0.70", "continuous"])
def test_lost_outcomes_track_the_bad_draws(kind: str) -> None:
    """30% of an arm's bad draws (failures; scores below the item's median) and 3% of the
    others are lost; the other arm keeps all; the truth stays the full data's mean."""
    model = models.model(kind)
    rng = np.random.default_rng(8)
    sim = experiment(
        model, n=400_000, epochs=1, grouped=False, shifts={"A": 0.0, "B": 0.0}, failure={},
        rng=rng, lose="B",
    )  # fmt: skip
    a, b = sim.arms["A"].values["value"], sim.arms["B"].values["value"]
    assert np.isfinite(a).all()
    lost = ~np.isfinite(b)
    # the same items' draws in A say nothing of B's; the rate over B's own draws is what matters
    rate = lost.mean()
    bad_share = (a < 0.5).mean() if kind == "binary-p0.70" else 0.5
    assert rate == pytest.approx(0.30 * bad_share + 0.03 * (1 - bad_share), abs=0.003)
    # complete cases overstate the arm: the bias the worst/best-case bounds must absorb
    assert np.nanmean(b) > model.arm_truth(0.0) + 0.01
    assert float(a.mean()) == pytest.approx(model.arm_truth(0.0), abs=0.003)


def _rubric_finals(sim: schemes.RubricSamples) -> np.ndarray:
    """The rubric's final score, vectorised: Σ w·(1 + 9(s − 1)/4) rounded half up to cents,
    − 0.5 per red flag, floor 1, + 0.25 per bonus, ceiling 10."""
    from calipers.schemes.rubric.definition import DEFAULT_WEIGHTS, DIMENSIONS

    w = np.array([float(DEFAULT_WEIGHTS[d]) for d in DIMENSIONS])
    cents = np.floor((1.0 + 9.0 * (sim.scores - 1) / 4.0) @ w * 100.0 + 0.5 + 1e-9)
    after = np.maximum(100.0, cents - 50.0 * sim.flags.sum(axis=1))
    return np.asarray(np.minimum(1000.0, after + 25.0 * sim.bonus) / 100.0, dtype=np.float64)


def test_the_rubric_truth_agrees_with_a_million_items() -> None:
    rng = np.random.default_rng(21)
    few = schemes.rubric_samples(rng, 300)
    assert [float(e.final) for e in few.evaluations()] == pytest.approx(_rubric_finals(few))
    finals = _rubric_finals(schemes.rubric_samples(rng, 1_000_000))
    se = float(finals.std()) / 1000.0
    assert abs(float(finals.mean()) - schemes.rubric_truth()) < 5 * se
    assert 7.0 < schemes.rubric_truth() < 8.5  # skewed high, with mass at the ceiling
    assert (finals == 10.0).mean() > 0.02


def test_the_objective_truth_agrees_with_a_million_items() -> None:
    rng = np.random.default_rng(22)
    for shift in (0.0, schemes.OBJECTIVE_SHIFT):
        a, b = schemes.objective_pair(rng, 1_000_000, shift)
        base_a, base_b = a.task().base, b.task().base
        assert float(base_a.mean()) == pytest.approx(
            schemes.objective_truth(0.0), abs=5 * base_a.std() / 1000
        )
        assert float(base_b.mean()) == pytest.approx(
            schemes.objective_truth(shift), abs=5 * base_b.std() / 1000
        )


def test_the_schemes_fast_path_gives_what_the_schemes_give(make_samples: Any) -> None:
    from calipers.schemes.objective.verdict import compare_objective

    rng = np.random.default_rng(23)
    rubric = schemes.rubric_samples(rng, 12)
    fast = schemes.rubric_interval(rubric, confidence_level=0.95, n_resamples=1000, seed=5)
    run = calipers.score(rubric.records(), "rubric", n_resamples=1000, seed=5).runs["A"]  # type: ignore[attr-defined]
    assert fast.estimate == pytest.approx(run.mean_final, abs=1e-12)
    assert (fast.low, fast.high) == pytest.approx(run.interval, abs=1e-12)
    a, b = schemes.objective_pair(rng, 15, 0.3)
    found = schemes.objective_compare(a, b, confidence_level=0.95, n_resamples=1000, seed=5)
    public = compare_objective(
        make_samples(a.records("A") + b.records("B")), baseline="A", candidate="B",
        n_resamples=1000, seed=5,
    )  # fmt: skip
    assert public.interval is not None
    assert found.net_gain.estimate == pytest.approx(public.net_gain, abs=1e-12)
    assert (found.net_gain.low, found.net_gain.high) == pytest.approx(
        (public.interval.low, public.interval.high), abs=1e-12
    )
    assert found.verdict == public.verdict.value and found.promote == public.promote


def test_the_planner_is_told_the_effect_share_when_it_can_be() -> None:
    from dataclasses import fields

    from calipers.verdicts import planning

    design = planning.Design.from_numbers(sd=0.2)
    goal = planning.Goal(effect=0.05)
    made = engine.plan(design, goal, 0.1)
    has = "effect_share" in {f.name for f in fields(planning.Goal)} or "effect_share" in (
        inspect.signature(planning.plan).parameters
    )
    assert made.share_passed == has
    assert made.plan.items is not None and made.power_at(made.plan.units or 2) > 0
    assert not engine.plan(design, goal, None).share_passed
