"""The sequential engine (`calipers.verdicts.sequential`): designs, the monitor a run feeds unit by
unit against the replay of the same units, the α split, the hybrid's fixed test at N against
statsmodels, orientation, and what a look costs."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from calipers.errors import InputError
from calipers.verdicts.sequential import (
    PairedUnits,
    SequentialDesign,
    SequentialMonitor,
    decide_sequentially,
    parse_design,
)
from calipers.verdicts.sequential_rules import (
    VERDICTS,
    Evidence,
    classify,
    classify_one,
    make_plan,
    replay,
)

DESIGNS = [
    SequentialDesign("hybrid", n_planned=600),
    SequentialDesign("sequence"),
    SequentialDesign("sequence", n_planned=600),
    SequentialDesign("obrien-fleming", n_planned=600),
    SequentialDesign("pocock", n_planned=600, looks=4),
]


def _pass_fail(seed: int, n: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(n)
    base = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(float)
    cand = (rng.random(n) < 1 / (1 + np.exp(-z - shift))).astype(float)
    return base, cand


def _scores(seed: int, n: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m = rng.beta(2, 5, n)
    base = np.clip(m + rng.normal(0, 0.1, n), 0, 1)
    cand = np.clip(m + shift + rng.normal(0, 0.1, n), 0, 1)
    return base, cand


def test_parse_design_names_and_errors() -> None:
    assert parse_design("hybrid", n_planned=100) == SequentialDesign("hybrid", n_planned=100)
    assert parse_design("auto", n_planned=None).kind == "sequence"
    assert parse_design("auto", n_planned=50).kind == "hybrid"
    assert parse_design("OBF:3", n_planned=90) == SequentialDesign(
        "obrien-fleming", n_planned=90, looks=3
    )
    assert parse_design("pocock", n_planned=90).looks == 5
    with pytest.raises(InputError, match="needs the total number of units") as err:
        parse_design("hybrid", n_planned=None)
    assert "sequence" in (err.value.hint or "") and "n_planned" in err.value.parameters
    with pytest.raises(InputError, match="unknown sequential design") as err:
        parse_design("bayes", n_planned=10)
    assert "obf" in (err.value.hint or "")
    with pytest.raises(InputError, match="no number of looks"):
        parse_design("hybrid:5", n_planned=10)
    with pytest.raises(InputError, match="sequence_share"):
        SequentialDesign("hybrid", n_planned=10, sequence_share=1.5)


@pytest.mark.parametrize("design", DESIGNS, ids=lambda d: f"{d.kind}-{d.n_planned}")
@pytest.mark.parametrize(("kind", "shift"), [("pass", 0.0), ("pass", 0.5), ("scores", 0.03)])
def test_the_monitor_makes_the_replays_decisions(
    design: SequentialDesign, kind: str, shift: float
) -> None:
    """A run fed unit by unit and looked at after each stops where the replay stops, with the
    same verdict and margin decision."""
    maker = _pass_fail if kind == "pass" else _scores
    for seed in range(3):
        base, cand = maker(seed, 700, shift)
        binary = kind == "pass"
        units = PairedUnits("A", "B", None, base, cand, (0.0, 1.0), binary)
        replayed = decide_sequentially([units], design=design, margin=0.05).pairs[0]
        monitor = SequentialMonitor(
            [("A", "B", None)], bounds=(0.0, 1.0), binary=binary, design=design, margin=0.05
        )
        look = monitor.look()
        for b, c in zip(base, cand, strict=True):
            monitor.add(0, b, c)
            look = monitor.look()
            if monitor.stopped:
                break
        made = look.decisions[0]
        assert replayed.stopped_at == (made.n if made.decisive else None)
        assert replayed.decision.verdict == made.verdict
        assert replayed.decision.margin == made.margin
        if made.low is not None and replayed.decision.low is not None:
            # the monitor's interval is on a grid (401 or 1001 candidates over the gains' range
            # [−1, 1]), conservative by at most one step
            assert made.low <= replayed.decision.low + 1e-9
            assert replayed.decision.low - made.low <= 2 / 400 + 1e-9


def test_the_replay_engine_agrees_rep_by_rep_with_decide_sequentially() -> None:
    design = SequentialDesign("hybrid", n_planned=400)
    rows = [_scores(seed, 400, 0.02) for seed in range(12)]
    base = np.array([r[0] for r in rows])
    cand = np.array([r[1] for r in rows])
    plan = make_plan(design, n_pairs=1, bounds=(0.0, 1.0), binary=False)
    batch = replay(plan, base, cand)
    for i, (b, c) in enumerate(rows):
        one = decide_sequentially([PairedUnits("A", "B", None, b, c, (0.0, 1.0), False)],
                                  design=design).pairs[0]  # fmt: skip
        assert one.stopped_at == batch.stop[i]
        assert one.decision.verdict == VERDICTS[batch.verdict[i]]


def test_alpha_is_split_over_every_pair_as_bonferroni() -> None:
    b, c = _pass_fail(1, 300, 0.0)
    pairs = [
        PairedUnits("A", t, task, b, c, (0.0, 1.0), True)
        for t in ("B", "C") for task in ("x", "y", "z")
    ]  # fmt: skip
    made = decide_sequentially(pairs, design=SequentialDesign("sequence", alpha=0.06))
    assert made.pair_alpha == pytest.approx(0.01)
    assert all(p.decision.confidence_level == pytest.approx(0.99) for p in made.pairs)
    hybrid = decide_sequentially(pairs[:2], design=SequentialDesign("hybrid", n_planned=300))
    # two pairs: 0.025 each, of which the sequence gets 0.2 and the fixed test at N the rest
    for p in hybrid.pairs:
        share = 0.8 if p.decision.final else 0.2
        assert p.decision.confidence_level == pytest.approx(1 - 0.025 * share)
    assert hybrid.pair_alpha == pytest.approx(0.025)


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_the_hybrids_test_at_n_is_exact_mcnemar(seed: int) -> None:
    """No sequence decision before N: at N the verdict is the fixed test's, and its p-value is
    statsmodels' exact McNemar on the discordant pairs."""
    b, c = _pass_fail(seed, 500, 0.22)
    made = decide_sequentially(
        [PairedUnits("A", "B", None, b, c, (0.0, 1.0), True)],
        design=SequentialDesign("hybrid", n_planned=500),
    ).pairs[0]
    d = made.decision
    if not d.final:  # the sequence decided first
        assert d.interval == "sequence" and made.stopped_at is not None
        assert made.stopped_at < 500
        return
    assert d.final and d.interval == "fixed" and made.stopped_at == 500
    table = [[int(np.sum((b == 1) & (c == 1))), int(np.sum((b == 1) & (c == 0)))],
             [int(np.sum((b == 0) & (c == 1))), int(np.sum((b == 0) & (c == 0)))]]  # fmt: skip
    assert d.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-10)
    assert (d.verdict == "PROGRESS") == (d.p_value <= 0.04 and (d.low or 0) > 0)
    assert d.discordant is not None and d.discordant["candidate_only"] == table[1][0]


def test_lower_is_better_mirrors_the_decision() -> None:
    b, c = _scores(5, 800, 0.06)
    up = decide_sequentially([PairedUnits("A", "B", None, b, c, (0.0, 1.0), False)],
                             design=SequentialDesign("sequence")).pairs[0]  # fmt: skip
    down = decide_sequentially(
        [PairedUnits("A", "B", None, 1 - b, 1 - c, (0.0, 1.0), False)],
        design=SequentialDesign("sequence"), higher_is_better=False,
    ).pairs[0]  # fmt: skip
    assert up.decision.verdict == down.decision.verdict == "PROGRESS"
    assert up.stopped_at == down.stopped_at
    assert down.decision.high == pytest.approx(-up.decision.low)
    assert down.decision.estimate == pytest.approx(-up.decision.estimate)


def test_a_noise_stop_when_the_interval_lies_within_the_effect_sought() -> None:
    b, c = _scores(6, 4000, 0.0)
    made = decide_sequentially(
        [PairedUnits("A", "B", None, b, c, (0.0, 1.0), False)],
        design=SequentialDesign("sequence"), min_effect=0.02,
    ).pairs[0]  # fmt: skip
    d = made.decision
    assert d.verdict == "NOISE" and d.decisive and made.stopped_at is not None
    assert (d.low or -1) > -0.02 and (d.high or 1) < 0.02
    assert "no difference worth detecting" in d.reason


def test_the_result_is_json_ready_and_says_what_it_saved() -> None:
    b, c = _pass_fail(2, 1300, 0.6)
    made = decide_sequentially([PairedUnits("A", "B", None, b, c, (0.0, 1.0), True)],
                               design=SequentialDesign("hybrid", n_planned=1000))  # fmt: skip
    body = json.loads(json.dumps(made.to_dict(), allow_nan=False))
    pair = body["pairs"][0]
    assert body["verdict"] == "PROGRESS" and pair["stopped_at"] < 1000
    assert pair["units_saved"] == 1000 - pair["stopped_at"]
    assert 2 <= len(pair["path"]) <= 500
    assert made.notes == ["B vs A: 1300 units given, the design ends at N = 1000"]
    assert pair["interval_at_stop"][0] > 0
    assert pair["path"][-1][0] == 1000  # the trace runs to the last unit the design takes


def test_bad_units_are_errors_with_the_way_out() -> None:
    design = SequentialDesign("sequence")
    with pytest.raises(InputError, match="must be 0 or 1") as err:
        decide_sequentially(
            [PairedUnits("A", "B", None, np.array([0.4]), np.array([1.0]), (0.0, 1.0), True)],
            design=design,
        )
    assert "binary=False" in (err.value.hint or "")
    with pytest.raises(InputError, match="outside the bounds"):
        decide_sequentially(
            [PairedUnits("A", "B", None, np.array([2.0]), np.array([1.0]), (0.0, 1.0), False)],
            design=design,
        )
    with pytest.raises(InputError, match="finite bounds"):
        SequentialMonitor([("A", "B", None)], bounds=(0, math.inf), binary=False, design=design)


@pytest.mark.parametrize(("margin", "equivalence"), [(None, False), (0.05, False), (0.05, True)])
@pytest.mark.parametrize("final", [False, True])
def test_the_one_look_rules_are_the_array_rules(
    margin: float | None, equivalence: bool, final: bool
) -> None:
    """`classify_one` (the monitor's) and `classify` (the replay's) on every combination of
    rejected nulls: the same decision."""
    plan = make_plan(
        SequentialDesign("sequence"), n_pairs=1, bounds=(0.0, 1.0), binary=False,
        margin=margin, equivalence=equivalence, min_effect=0.03,
    )  # fmt: skip
    keys = [(side, v) for side in ("above", "below") for v in plan.nulls]
    combos = np.array(list(itertools.product((False, True), repeat=len(keys))))
    arrays = Evidence(
        {v: combos[:, i] for i, (side, v) in enumerate(keys) if side == "above"},
        {v: combos[:, i] for i, (side, v) in enumerate(keys) if side == "below"},
    )
    decisive, verdict, margins = classify(plan, arrays, final=final)
    for row, bits in enumerate(combos):
        one = Evidence(
            {v: bool(b) for (side, v), b in zip(keys, bits, strict=True) if side == "above"},
            {v: bool(b) for (side, v), b in zip(keys, bits, strict=True) if side == "below"},
        )
        assert classify_one(plan, one, final=final) == (
            bool(decisive[row]),
            int(verdict[row]),
            int(margins[row]),
        )


def test_a_replay_that_stops_early_does_not_compute_the_rest_of_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stop of a long run is found on its first blocks of units: the capitals are computed
    over the first units only (counted here), and the stop and decision are the ones a pass over
    the whole run in one block gives."""
    from calipers.stats import sequence_capitals

    b, c = _pass_fail(4, 40_000, 0.9)
    pairs = [PairedUnits("A", "B", None, b, c, (0.0, 1.0), True)]
    design = SequentialDesign("sequence")
    seen: list[int] = []
    real = sequence_capitals.NullCapitals.advance

    def counted(self: Any, stop: int) -> Any:
        seen.append(stop)
        return real(self, stop)

    monkeypatch.setattr(sequence_capitals.NullCapitals, "advance", counted)
    monkeypatch.setattr(sequence_capitals, "PREFIX", b.size)  # one block: everything
    monkeypatch.setattr(sequence_capitals, "BLOCK_CELLS", b.size)
    whole = decide_sequentially(pairs, design=design).pairs[0]
    assert max(seen) == b.size
    seen.clear()
    monkeypatch.undo()
    monkeypatch.setattr(sequence_capitals.NullCapitals, "advance", counted)
    made = decide_sequentially(pairs, design=design).pairs[0]
    assert made.stopped_at is not None and made.stopped_at == whole.stopped_at
    assert made.decision == whole.decision
    assert max(seen) <= sequence_capitals.PREFIX < b.size


def _replay_before(plan: Any, base: np.ndarray, cand: np.ndarray, every: int) -> Any:
    """`sequential_rules.replay` as it was: the paths over every unit at once
    (`sequence_paths`, the mixture at every unit), the evidence and the first decisive look."""
    from calipers.verdicts import sequential_rules as rules

    rows, n = base.shape
    end = plan.end
    if end is not None and n > end:
        base, cand, n = base[:, :end], cand[:, :end], end
    gains = rules.gains_of(plan, base, cand)
    paths = rules.sequence_paths(plan, gains)
    thr = rules.sequence_threshold(plan)
    ev = rules.Evidence({v: up >= thr for v, (up, _) in paths.items()},
                        {v: down >= thr for v, (_, down) in paths.items()})  # fmt: skip
    decisive, codes, margins = rules.classify(plan, ev, final=False)
    hit = np.logical_and(decisive, rules.look_mask(n, every, end)[None, :])
    first = np.argmax(hit, axis=1)
    found = hit[np.arange(rows), first]
    stop = np.where(found, first + 1, 0)
    verdict = np.where(found, codes[np.arange(rows), first], 0)
    margin = np.where(found, margins[np.arange(rows), first], 0)
    final = np.zeros(rows, dtype=bool)
    if plan.design.kind == "hybrid" and end is not None and n == end:
        for r in np.flatnonzero(~found):
            test = rules.final_test(plan, base[r], cand[r])
            _, v, mg = rules.classify(plan, rules.final_evidence(plan, test), final=True)
            stop[r], verdict[r], margin[r], final[r] = end, int(v), int(mg), True
    return stop, verdict, margin, final


def test_the_replay_in_blocks_is_the_replay_over_every_unit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows × units replayed block by block (each block's sums continuing the last's, the
    mixture computed only where a horizon's capital reaches the threshold) stop where the
    paths over every unit at once stop them, with the same verdicts — for the sequence with and
    without a margin and the hybrid, looking after every unit or every 9th, in small blocks."""
    from calipers.stats import sequence_capitals
    from calipers.verdicts import sequential_rules

    rng = np.random.default_rng(8)
    rows, n = 30, 6_000
    base = (rng.random((rows, n)) < 0.6).astype(float)
    cand = (rng.random((rows, n)) < np.linspace(0.56, 0.68, rows)[:, None]).astype(float)
    monkeypatch.setattr(sequence_capitals, "PREFIX", 700)
    monkeypatch.setattr(sequence_capitals, "BLOCK_CELLS", rows * 1_100)
    for kind, margin in (("sequence", None), ("hybrid", 0.05), ("sequence", 0.03)):
        design = SequentialDesign(kind, n_planned=None if kind == "sequence" else 5_000)  # type: ignore[arg-type]
        plan = sequential_rules.make_plan(design, n_pairs=1, bounds=(0.0, 1.0), binary=True,
                                          margin=margin)  # fmt: skip
        for every in (1, 9):
            made = sequential_rules.replay(plan, base, cand, every=every)
            before = _replay_before(plan, base, cand, every)
            for name, was in zip(("stop", "verdict", "margin", "final"), before, strict=True):
                assert np.array_equal(getattr(made, name), was), (kind, margin, every, name)
