"""The planner (`calipers plan`) against independent references: statsmodels' t-test power for
scores (superiority and the one-sided test non-inferiority is), its normal power for 0/1
outcomes, variance components recovered from data simulated with known components, and the
command line (exit codes, JSON against its schema). The power promise itself is measured by the
calibration harness (plan/ cells)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

import calipers
from calipers.cli.main import main
from calipers.errors import InputError
from calipers.stats.estimate import paired_interval
from calipers.verdicts.planning import Design, Goal, plan, power_at


@pytest.mark.parametrize(("sd", "effect"), [(1.0, 0.3), (0.8, 0.25), (0.2, 0.03)])
def test_scores_plan_is_statsmodels_paired_t_power(sd: float, effect: float) -> None:
    design = Design("scores", item_var=sd * sd)
    result = plan(design, Goal(effect=effect))
    assert result.units is not None and result.power is not None
    ref = TTestPower()
    # statsmodels adds the far tail (a significant drop), ~1e-7 here
    for n in (result.units - 1, result.units, result.units + 7):
        expected = ref.power(effect_size=effect / sd, nobs=n, alpha=0.05)
        assert power_at(design, Goal(effect=effect), n) == pytest.approx(expected, abs=1e-6)
    solved = ref.solve_power(effect_size=effect / sd, alpha=0.05, power=0.8)
    assert result.units == math.ceil(solved)
    assert result.power >= 0.8 > power_at(design, Goal(effect=effect), result.units - 1)


@pytest.mark.parametrize("truth", [0.0, 0.01, -0.01])
def test_non_inferiority_is_a_one_sided_t_test_at_half_alpha(truth: float) -> None:
    design = Design("scores", item_var=0.04)
    goal = Goal(margin=0.03, truth=truth)
    for n in (40, 163, 400):
        # L > −M ⇔ a one-sided test of δ ≤ −M at α/2 rejects (the interval is two-sided 1 − α)
        expected = TTestPower().power(
            effect_size=(truth + 0.03) / 0.2, nobs=n, alpha=0.025, alternative="larger"
        )
        assert power_at(design, goal, n) == pytest.approx(expected, abs=1e-10)


def test_equivalence_needs_both_bounds_and_more_items() -> None:
    design = Design("scores", item_var=0.04)
    one = plan(design, Goal(margin=0.03))
    both = plan(design, Goal(margin=0.03, equivalence=True))
    assert both.units is not None and one.units is not None and both.units > one.units
    n = both.units
    # the two one-sided tests at truth 0: P(L > −M and H < M) ≥ P1 + P2 − 1 (Bonferroni)
    p1 = TTestPower().power(effect_size=0.15, nobs=n, alpha=0.025, alternative="larger")
    assert power_at(design, Goal(margin=0.03, equivalence=True), n) == pytest.approx(2 * p1 - 1)


def test_binary_plan_reads_the_interval_the_engine_will_give() -> None:
    # Pass rate 0.7, no item spread: an effect of 0.1 gives the expected table of 1,000 pairs
    # both 560, treatment only 240, control only 140, neither 60 (ψ₁ = 0.42 + 0.1·(1 − 1.4)).
    design = Design.from_numbers(pass_rate=0.7)
    assert design.discordance == pytest.approx(2 * 0.7 * 0.3)
    assert design.discordance_at(0.1) == pytest.approx(0.38)
    c = np.repeat([1, 0, 1, 0], [560, 240, 140, 60]).astype(float)
    t = np.repeat([1, 1, 0, 0], [560, 240, 140, 60]).astype(float)
    engine = paired_interval(c, t)
    assert engine.formula == "newcombe-cc" and engine.estimate == pytest.approx(0.1)
    width = engine.estimate - engine.low  # what the decision needs the estimate to clear
    se = math.sqrt((0.38 - 0.01) / 1000)
    expected = stats.norm.cdf((0.1 - width) / se)
    assert power_at(design, Goal(effect=0.1), 1000) == pytest.approx(expected, abs=1e-12)
    result = plan(design, Goal(effect=0.1))
    assert result.formula == "newcombe-cc expected" and result.units is not None
    assert result.power is not None and result.power >= 0.8
    assert power_at(design, Goal(effect=0.1), result.units - 1) < 0.8


def test_item_spread_moves_the_discordance_less() -> None:
    # logit-normal items (sd 1 around logit 0.7): two identical systems disagree at 2E[p(1 − p)];
    # a uniform logit shift to +0.1 — computed here by direct quadrature — changes it by less
    # than δ(1 − 2p̄), since the middling items move most
    z = np.linspace(-10, 10, 20001)
    w = stats.norm.pdf(z) * (z[1] - z[0])
    p = 1 / (1 + np.exp(-(math.log(0.7 / 0.3) + z)))
    p_bar, psi0 = float(w @ p), float(w @ (2 * p * (1 - p)))
    from scipy.optimize import brentq

    shift = brentq(lambda s: float(w @ (1 / (1 + np.exp(-(math.log(0.7 / 0.3) + z + s))))) - p_bar
                   - 0.1, 0, 5)  # fmt: skip
    q = 1 / (1 + np.exp(-(math.log(0.7 / 0.3) + z + shift)))
    psi1 = float(w @ (p * (1 - q) + q * (1 - p)))
    design = Design("binary", item_var=psi0, pass_rate=p_bar, discordance=psi0)
    assert design.discordance_at(0.1) == pytest.approx(psi1, abs=1e-6)
    assert psi1 > psi0 + 0.1 * (1 - 2 * p_bar)


def test_treatments_split_alpha_and_need_more_items() -> None:
    design = Design("scores", item_var=1.0)
    one, three = plan(design, Goal(effect=0.3)), plan(design, Goal(effect=0.3, treatments=3))
    assert one.units is not None and three.units is not None
    solved = TTestPower().solve_power(effect_size=0.3, alpha=0.05 / 3, power=0.8)
    assert three.units == math.ceil(solved) > one.units


def test_clusters_plan_groups_on_the_design_effect() -> None:
    # groups of 5 with an intra-group correlation 0.3: design effect 1 + 4·0.3 = 2.2
    plain = Design.from_numbers(sd=1.0)
    grouped = Design.from_numbers(sd=1.0, icc=0.3, cluster_size=5)
    assert grouped.unit_var() * 5 == pytest.approx(plain.unit_var() * 2.2)
    g, p = plan(grouped, Goal(effect=0.3)), plan(plain, Goal(effect=0.3))
    assert g.units is not None and g.items == 5 * g.units
    assert p.items is not None and g.items > 2 * p.items  # ≈ 2.2× the items, t on G − 1 df


def _nested(rng: np.random.Generator, groups: int, k: int, epochs: int) -> list[dict[str, Any]]:
    """Two identical systems: a group effect (sd 0.3) and an item effect (sd 0.5) shared by
    both, and per-run item effects (sd 0.4) and epoch noise (sd 0.6) drawn per run."""
    rows = []
    for g in range(groups):
        shared_g = rng.normal(0, 0.3)
        for i in range(k):
            shared_i = shared_g + rng.normal(0, 0.5)
            for run in ("A", "B"):
                own = rng.normal(0, 0.4)
                for e in range(epochs):
                    value = shared_i + own + rng.normal(0, 0.6)
                    rows.append({"run": run, "task": "t", "sample_id": f"g{g}-{i}",
                                 "group": f"g{g}", "epoch": e + 1,
                                 "scores": {"x": value}})  # fmt: skip
    return rows


def test_components_are_recovered_from_a_pilot_comparison() -> None:
    import pandas as pd

    rows = _nested(np.random.default_rng(3), groups=600, k=4, epochs=3)
    with calipers.open(pd.DataFrame(rows)) as samples:
        pilot = calipers.plan(samples, "metric", metric="x", baseline="A", candidate="B",
                              cluster="group", effect=0.2)  # fmt: skip
        alone = calipers.plan(samples, "metric", metric="x", baseline="A", cluster="group",
                              effect=0.2, correlation=0.0)  # fmt: skip
    d = pilot.design
    # B − A: the shared group and item effects cancel; 2·0.4² between items, 2·0.6² per epoch
    assert d.epoch_var == pytest.approx(2 * 0.36, rel=0.06)
    assert d.item_var == pytest.approx(2 * 0.16, rel=0.15)
    assert d.group_var == pytest.approx(0.0, abs=0.02)
    assert (d.cluster_size, d.epochs) == (4, 3)
    # One run: twice its components, none shared (correlation 0) — an upper bound, and said so
    a = alone.design
    assert a.epoch_var == pytest.approx(2 * 0.36, rel=0.06)
    assert a.item_var == pytest.approx(2 * (0.25 + 0.16), rel=0.15)
    assert a.group_var == pytest.approx(2 * 0.09, rel=0.3)
    assert any("upper bound" in n for n in a.notes)
    assert alone.items is not None and pilot.items is not None and alone.items > pilot.items


def test_api_refuses_a_goal_that_is_not_one(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="one of --effect"):
        calipers.plan(sd=1.0)
    with pytest.raises(InputError, match="one of --effect"):
        calipers.plan(sd=1.0, effect=0.1, margin=0.1)
    with pytest.raises(InputError, match="nothing to plan from"):
        calipers.plan(effect=0.1)
    with pytest.raises(InputError, match="must be a positive"):
        calipers.plan(sd=1.0, effect=-0.1)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cli_plans_from_numbers_and_from_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.json"
    assert main(["plan", "--pass-rate", "0.7", "--effect", "0.1", "--json", str(out)]) == 0
    body = json.loads(out.read_text())
    expected = plan(Design.from_numbers(pass_rate=0.7), Goal(effect=0.1)).items
    assert body["kind"] == "plan" and body["items"] == expected and body["power"] >= 0.8
    assert f"{expected} items to detect a difference of 0.1" in capsys.readouterr().out

    rng = np.random.default_rng(8)
    rows = []
    for i in range(400):
        p = 1 / (1 + math.exp(-(0.85 + rng.normal())))
        for run in ("A", "B"):
            rows.append({"run": run, "task": "t", "sample_id": f"s{i}",
                         "correct": bool(rng.random() < p)})  # fmt: skip
    data = _write(tmp_path / "pilot.jsonl", rows)
    args = ["plan", str(data), "--metric", "correct", "--baseline", "A", "--candidate", "B"]
    assert main([*args, "--margin", "5%", "--json", str(out)]) == 0
    body = json.loads(out.read_text())
    assert body["goal"]["margin"] == pytest.approx(0.05)  # 5% of a pass rate's scale of 1
    assert body["design"]["outcome"] == "binary"
    discordant = sum(
        rows[2 * i]["correct"] != rows[2 * i + 1]["correct"] for i in range(400)
    )  # fmt: skip
    assert body["design"]["discordance"] == pytest.approx(discordant / 400)
    assert "non-inferiority at margin 0.05" in capsys.readouterr().out


def test_cli_input_errors_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--effect", "0.1"]) == 1
    assert "nothing to plan from" in capsys.readouterr().err
    data = _write(
        tmp_path / "a.jsonl", [{"run": "A", "task": "t", "sample_id": "s", "correct": True}]
    )
    assert main(["plan", str(data), "--baseline", "A", "--sd", "1", "--effect", "0.1"]) == 1
    assert "without data" in capsys.readouterr().err
    assert main(["plan", str(data), "--baseline", "Z", "--effect", "0.1"]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_epochs_trade_items_for_repeats_on_the_within_item_variance() -> None:
    design = Design("scores", item_var=0.2, epoch_var=0.9, epochs=3)
    result = plan(design, Goal(effect=0.25))
    assert [b["epochs"] for b in result.by_epochs] == [1, 2, 3, 5, 10]
    for b in result.by_epochs:
        sd = math.sqrt(0.2 + 0.9 / b["epochs"])  # an item mean's SD at that many epochs
        solved = TTestPower().solve_power(effect_size=0.25 / sd, alpha=0.05, power=0.8)
        assert b["items"] == math.ceil(solved) and b["runs"] == b["items"] * b["epochs"]
    assert result.items == result.by_epochs[2]["items"]  # the planned 3 epochs
    assert (
        Design("scores", item_var=1.0).epoch_var == 0
        and not plan(Design("scores", item_var=1.0), Goal(effect=0.3)).by_epochs
    )  # nothing to trade without a within-item part


def test_scores_that_differ_by_one_are_scores_not_pass_fail() -> None:
    import pandas as pd

    rng = np.random.default_rng(2)
    rows = []
    for i in range(300):
        a = int(rng.integers(2, 5))
        b = a + int(rng.integers(-1, 2))  # 1–5 judge scores, the two runs within one point
        rows += [{"run": "A", "task": "t", "sample_id": f"s{i}", "scores": {"q": a}},
                 {"run": "B", "task": "t", "sample_id": f"s{i}", "scores": {"q": b}}]  # fmt: skip
    with calipers.open(pd.DataFrame(rows)) as samples:
        result = calipers.plan(samples, "metric", metric="q", baseline="A", candidate="B",
                               effect=0.2)  # fmt: skip
        assert result.design.outcome == "scores" and result.formula == "noncentral t"
        with pytest.raises(InputError, match="has the metric 'missing'"):
            calipers.plan(samples, "metric", metric="missing", baseline="A", effect=0.2)
    one = [*rows, {"run": "C", "task": "t", "sample_id": "s0", "scores": {"q": 3}}]
    with calipers.open(pd.DataFrame(one)) as samples, pytest.raises(InputError, match="fewer"):
        calipers.plan(samples, "metric", metric="q", baseline="C", effect=0.2)


# --- an effect concentrated on a share of the items (--effect-share, issue 33) -------------------


def _concentrated(rng: np.random.Generator, n: int, sd: float, delta: float, share: float
                  ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Control and treatment scores of n items: the differences' noise has SD `sd`, and a random
    share of the items each gain delta/share."""
    base = rng.normal(0.5, 0.1, n)
    hit = rng.random(n) < share
    noise = rng.normal(0, sd / math.sqrt(2), (2, n))
    return base + noise[0], base + noise[1] + np.where(hit, delta / share, 0.0)


def _engine_power(n: int, reps: int, seed: int, **effect: float) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        c, t = _concentrated(rng, n, **effect)
        # the engine's interval, method auto, on bounds that hold every value drawn
        hits += paired_interval(c, t, bounds=(-1.0, 2.0)).low > 0
    return hits / reps


def test_concentrated_effect_plan_delivers_its_power_and_the_spread_plan_warns() -> None:
    # An A/A pilot measures the differences' SD 0.1; the effect +0.03 lands on 10% of the items
    effect = {"sd": 0.1, "delta": 0.03, "share": 0.1}
    design = Design("scores", item_var=0.01, observed_units=4000, source="pilot comparison B − A")
    spread = plan(design, Goal(effect=0.03))
    assert "shifts items the way the pilot varies" in spread.assumption
    assert "--effect-share" in spread.assumption
    concentrated = plan(design, Goal(effect=0.03), effect_share=0.1)
    assert concentrated.items is not None and spread.items is not None
    assert concentrated.design.effect_share == 0.1 and concentrated.items > 1.5 * spread.items
    assert "0.1 of the items, each moved by +0.3" in concentrated.assumption
    assert concentrated.to_dict()["assumption"] == concentrated.assumption
    assert concentrated.power is not None and spread.power is not None
    # 600 seeded experiments at each planned n (Monte Carlo SE ≈ 1.6 points)
    achieved = _engine_power(concentrated.items, 600, 1, **effect)
    assert abs(achieved - concentrated.power) < 0.05, (achieved, concentrated.power)
    short = _engine_power(spread.items, 600, 2, **effect)
    assert short < spread.power - 0.15, (short, spread.power)  # what the warning is about


def test_concentrated_power_is_the_simulated_t_statistic() -> None:
    """The planner's power (K ~ Bin(n, S) units moved, the t statistic averaged over K) against
    20,000 t statistics drawn directly, for a gain, a rare large gain, and non-inferiority and
    equivalence at a concentrated true drop."""
    from scipy.stats import t as student

    rng = np.random.default_rng(11)
    cases = [
        (Goal(effect=0.03), 0.01, 0.1, 150),
        (Goal(effect=0.02), 0.0004, 0.05, 120),
        (Goal(margin=0.05, truth=-0.02), 0.01, 0.2, 200),
        (Goal(margin=0.05, truth=-0.02, equivalence=True), 0.01, 0.2, 300),
    ]
    for goal, noise, share, n in cases:
        design = Design("scores", item_var=noise, effect_share=share)
        delta = goal.effect if goal.effect is not None else goal.truth
        d = rng.normal(0, math.sqrt(noise), (20_000, n))
        d += np.where(rng.random((20_000, n)) < share, delta / share, 0.0)
        mean, se = d.mean(axis=1), d.std(axis=1, ddof=1) / math.sqrt(n)
        crit = student.ppf(1 - goal.alpha / 2, n - 1)
        low, high = mean - crit * se, mean + crit * se
        if goal.effect is not None:
            reached = low > 0
        else:
            assert goal.margin is not None
            reached = (low > -goal.margin) & ((high < goal.margin) | (not goal.equivalence))
        assert power_at(design, goal, n) == pytest.approx(reached.mean(), abs=0.015), goal


def test_effect_share_adds_the_variance_of_where_the_effect_lands() -> None:
    design = Design("scores", item_var=0.01, epoch_var=0.02, epochs=2)
    same = replace(design, effect_share=1.0)
    assert same.at_effect(0.05) == design.at_effect(0.05) == pytest.approx(0.02)
    share = replace(design, effect_share=0.25)
    assert share.at_effect(0.05) == pytest.approx(0.02 + 0.05**2 * (1 / 0.25 - 1))
    # one share of 1 is the spread plan itself
    assert (
        plan(design, Goal(effect=0.05), effect_share=1.0).units
        == plan(design, Goal(effect=0.05)).units
    )
    with pytest.raises(InputError, match="effect-share"):
        plan(design, Goal(effect=0.05), effect_share=0.0)
    with pytest.raises(InputError, match="effect-share"):
        plan(design, Goal(effect=0.05), effect_share=1.5)
    # 0.3 on 20% of the items moves each by 1.5: more than a 0–1 scale allows
    with pytest.raises(InputError, match=r"moves each by 1\.5, more than the scale allows"):
        plan(replace(design, scale=1.0), Goal(effect=0.3), effect_share=0.2)


def test_binary_discordance_grows_by_up_to_the_effect() -> None:
    # pass rate 0.7, A/A discordance 0.3: a gain of 0.05 on 10% of the items lands on items the
    # baseline fails (the 10% can all fail: p_S = 0), each gaining 0.5; ψ₁ = ψ₀ + δ
    design = Design.from_numbers(discordance=0.3, pass_rate=None)
    design = replace(design, pass_rate=0.7, effect_share=0.1)
    assert design.discordance_at(0.05) == pytest.approx(0.35)
    # on 80% of the items: the share must hold passing items, p_S = (0.7 − 0.2)/0.8
    wide = replace(design, effect_share=0.8)
    p_s = 0.5 / 0.8
    assert wide.discordance_at(0.05) == pytest.approx(0.3 + 0.05 * (1 - 2 * p_s))
    # with S = 1 every item moves by δ: the spread formula without item spread
    from calipers.verdicts.plan_effects import concentrated_discordance

    assert concentrated_discordance(0.7, 0.3, 0.05, 1.0) == pytest.approx(0.3 + 0.05 * (1 - 1.4))
    # one epoch, no groups: the unit variance is ψ₁ − δ²
    assert design.at_effect(0.05) == pytest.approx(design.unit_var() + 0.35 - 0.3 - 0.05**2)
    more = plan(design, Goal(effect=0.05))
    fewer = plan(replace(design, effect_share=1.0), Goal(effect=0.05))
    assert more.items is not None and fewer.items is not None and more.items > fewer.items
    assert "the discordance grows from 0.3 to 0.35" in more.assumption


def test_cli_effect_share_and_the_stated_assumption(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.json"
    args = ["plan", "--sd", "0.1", "--effect", "0.03"]
    assert main([*args, "--json", str(out)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "assumes the power holds for an effect that shifts every item alike" in shown
    assert "--effect-share" in shown
    spread = json.loads(out.read_text())
    assert spread["design"]["effect_share"] == 1.0 and "--effect-share" in spread["assumption"]
    assert main([*args, "--effect-share", "0.1", "--json", str(out)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "concentrated on a share 0.1 of the items, each moved by +0.3" in shown
    body = json.loads(out.read_text())
    assert body["design"]["effect_share"] == 0.1 and body["items"] > spread["items"]
    assert main([*args, "--effect-share", "0"]) == 1  # S ≤ 0 is refused
    assert main(["plan", "--sd", "0.1", "--effect", "0.5", "--effect-share", "0.2"]) == 1
    assert "more than the scale allows" in capsys.readouterr().err
