"""The sequential comparison's own staging (`calipers.verdicts.sequential_staging`, what `calipers
watch` uses for one metric) makes exactly the units the scheme's generic staging makes, bit for
bit, in the same order — and so the same report; where it cannot (epochs, groups, a sample twice,
by task, …) it declines and the generic path runs. Also: the replay's paths reused at the last
unit, and the traced path's shortcuts, each equal to the computation they replace."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers
from calipers.data.store import Store
from calipers.schemes.layered import PairedScheme
from calipers.schemes.metric import MetricScheme
from calipers.stats import betting
from calipers.stats.sequence_trace import interval_trace
from calipers.stats.sequential import HORIZON_MIXTURE, bet_sizes, grid_interval
from calipers.verdicts import sequential as sequential_module
from calipers.verdicts import sequential_rules
from calipers.verdicts.persample import resolve_cluster
from calipers.verdicts.sequential import PairedUnits, decide_sequentially, parse_design
from calipers.verdicts.sequential_rules import make_plan
from calipers.verdicts.sequential_staging import fast_metric_units
from calipers.verdicts.sequential_units import paired_units

INSERT = (
    'INSERT INTO samples (run, task, sample_id, epoch, correct, scores, score_weights, "group")'
)


def _store(path: Path, rows: list[str]) -> Path:
    with Store(path) as store:
        store.con.execute(f"{INSERT} VALUES {', '.join(rows)}")
    return path


def _pass_fail(tmp: Path) -> Path:
    """Four runs, rows written in a shuffled order, samples missing from some runs, NULL
    outcomes, rows without a task (dropped by both paths), two tasks."""
    rng = random.Random(5)
    rows = []
    for i in range(1500):
        for run, p in (("control", 0.6), ("treatment", 0.72), ("t2", 0.6), ("t3", 0.45)):
            if (run == "t2" and i % 37 == 0) or (run == "control" and i % 401 == 0):
                continue
            value = "NULL" if run == "treatment" and i % 97 == 0 else str(rng.random() < p)
            task = "NULL" if i == 3 else f"'task{i % 2}'"
            rows.append(f"('{run}', {task}, 's{i}', 0, {value}, NULL, NULL, NULL)")
    rng.shuffle(rows)
    return _store(tmp / "passfail.duckdb", rows)


def _scores(tmp: Path, *, weighted: bool) -> Path:
    """A proportion by name, with NULL, NaN and −0.0 values (and one weight that is not 1)."""
    rng = random.Random(6)
    rows = []
    for i in range(1200):
        for run, mu in (("control", 0.5), ("treatment", 0.56)):
            v = min(1.0, max(0.0, rng.gauss(mu, 0.2)))
            special = {101: "NULL", 103: "'NaN'", 50: "-0.0"}
            text = next((t for k, t in special.items() if i % k == 0), repr(v))
            w = "MAP {'accuracy': 2.0}" if weighted and i == 5 and run == "control" else "NULL"
            value = f"MAP {{'accuracy': {text}::DOUBLE}}"
            rows.append(f"('{run}', 't', 'id{i:05d}', 0, NULL, {value}, {w}, NULL)")
    return _store(tmp / f"scores{int(weighted)}.duckdb", rows)


def _generic(
    samples: Any, control: str, treatments: list[str], options: dict[str, Any], order: str
) -> tuple[list[PairedUnits], Any, Any]:
    """The units as `PairedScheme.watch` makes them (the scheme's staging, then paired_units)."""
    scheme = MetricScheme()
    o: Any = scheme.compare_options(**options)
    staged = scheme.stage(samples, [control, *treatments], o)
    choice = resolve_cluster([staged.fetch(r) for r in [control, *treatments]], o.cluster)
    units = paired_units(staged, samples, control=control, treatments=treatments,
                         cluster=choice.cluster, order=order, seed=o.seed)  # fmt: skip
    return units, staged, choice


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


CASES = [
    ("passfail", "correct", ["treatment", "t2", "t3"], {}, "arrival"),
    ("passfail", "correct", ["treatment"], {"seed": 9}, "random"),
    ("passfail", "correct", ["t3"], {"cluster": "sample_id"}, "arrival"),
    ("scores", "accuracy", ["treatment"], {}, "arrival"),
    ("scores", "accuracy", ["treatment"], {"seed": 2}, "random"),
    ("weighted", "accuracy", ["treatment"], {}, "arrival"),
    ("scores", "accuracy", ["treatment"], {"bounds": "-1,2"}, "arrival"),
]


@pytest.mark.parametrize(("store", "metric", "treatments", "extra", "order"), CASES)
def test_the_units_are_the_generic_stagings_bit_for_bit(
    tmp_path: Path, store: str, metric: str, treatments: list[str], extra: dict[str, Any],
    order: str,
) -> None:  # fmt: skip
    path = {"passfail": lambda: _pass_fail(tmp_path),
            "scores": lambda: _scores(tmp_path, weighted=False),
            "weighted": lambda: _scores(tmp_path, weighted=True)}[store]()  # fmt: skip
    options = {"metric": metric, **extra}
    with Store(path, read_only=True) as opened:
        samples = opened.samples(["control", *treatments])
        want, staged, choice = _generic(samples, "control", treatments, options, order)
        o: Any = MetricScheme().compare_options(**options)
        got = fast_metric_units(
            samples, control="control", treatments=treatments, metric=metric,
            bounds=o.bounds, cluster=o.cluster, errors=o.errors, order=order, seed=o.seed,
            by_task=False,
        )  # fmt: skip
    assert got is not None
    assert len(got.units) == len(want) == len(treatments)
    for a, b in zip(got.units, want, strict=True):
        assert a.baseline.size > 100
        assert _same_bits(a.baseline, b.baseline) and _same_bits(a.candidate, b.candidate)
        assert (a.control, a.treatment, a.task, a.bounds, a.binary, a.unit_ids) == (
            b.control, b.treatment, b.task, b.bounds, b.binary, b.unit_ids)  # fmt: skip
    assert got.bounds == staged.bounds and got.bounds_source == staged.bounds_source
    assert got.notes == staged.notes and got.cluster == choice
    assert ("weighted by its score_weights" in " ".join(got.notes)) == (store == "weighted")


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"order": "random", "seed": 4, "margin": "3%", "equivalence": True},
        {"design": "hybrid", "n_planned": 1400, "every": 5},
        {"design": "obf:4", "n_planned": 1400},
        {"min_effect": 0.3},
    ],
)
def test_the_watch_report_is_calipers_watchs(tmp_path: Path, options: dict[str, Any]) -> None:
    """`calipers.watch` of a metric (which stages its units in one query here) against the
    scheme's generic `PairedScheme.watch`, whole documents compared, the traced paths and the
    intervals at the last unit included."""
    path = _pass_fail(tmp_path)
    opts = dict(options)
    look = {k: opts.pop(k) for k in ("design", "n_planned", "every", "order") if k in opts}
    with Store(path, read_only=True) as opened:
        samples = opened.samples(["control", "treatment", "t3"])
        o: Any = MetricScheme().compare_options(metric="correct", **opts)
        assert fast_metric_units(
            samples, control="control", treatments=["treatment", "t3"], metric="correct",
            bounds=None, cluster=o.cluster, errors=o.errors, order=look.get("order", "arrival"),
            seed=o.seed, by_task=False,
        ) is not None  # fmt: skip
        got = calipers.watch(samples, "metric", baseline="control", candidates=["treatment", "t3"],
                             metric="correct", full_path=True, **look, **opts)  # fmt: skip
        want = PairedScheme.watch(MetricScheme(), samples, baseline="control",
                                  candidates=["treatment", "t3"], metric="correct", **look,
                                  **opts)  # fmt: skip
    want.result.trace_full(True)
    assert got.to_dict() == want.to_dict()


def _epochs(tmp: Path) -> Path:
    return _store(tmp / "e.duckdb", [f"('{r}', 't', 's{i}', {e}, {(i * e + len(r)) % 3 == 0}, "
                                     "NULL, NULL, NULL)"
                                     for i in range(50) for e in range(2)
                                     for r in ("control", "treatment")])  # fmt: skip


def _groups(tmp: Path) -> Path:
    return _store(tmp / "g.duckdb", [f"('{r}', 't', 's{i}', 0, {i % 3 == 0}, NULL, NULL, "
                                     f"'g{i // 5}')" for i in range(50)
                                     for r in ("control", "treatment")])  # fmt: skip


def _twice(tmp: Path) -> Path:
    return _store(tmp / "d.duckdb", [f"('{r}', 't', 's{min(i, 40)}', 0, {i % 2 == 0}, NULL, "
                                     "NULL, NULL)" for i in range(50)
                                     for r in ("control", "treatment")])  # fmt: skip


@pytest.mark.parametrize(
    ("make", "kwargs"),
    [
        (_epochs, {}),
        (_groups, {}),
        (_twice, {}),
        (_pass_fail, {"by_task": True}),
        (_pass_fail, {"cluster": "group"}),
        (_pass_fail, {"errors": "worst"}),
        (_pass_fail, {"metric": "nothing"}),
        (_pass_fail, {"metric": None}),
    ],
)
def test_what_only_the_generic_staging_makes_is_left_to_it(
    tmp_path: Path, make: Any, kwargs: dict[str, Any]
) -> None:
    args: dict[str, Any] = {"metric": "correct", "bounds": None, "cluster": "auto",
                            "errors": "missing", "order": "arrival", "seed": 0,
                            "by_task": False, **kwargs}  # fmt: skip
    with Store(make(tmp_path), read_only=True) as opened:
        samples = opened.samples(["control", "treatment"])
        made = fast_metric_units(samples, control="control", treatments=["treatment"], **args)
    assert made is None


def test_an_unbounded_metric_is_left_to_the_generic_path_and_its_error(tmp_path: Path) -> None:
    rows = [f"('{r}', 't', 's{i}', 0, NULL, MAP {{'tokens': {i * 7 % 13}.0}}, NULL, NULL)"
            for i in range(40) for r in ("control", "treatment")]  # fmt: skip
    path = _store(tmp_path / "u.duckdb", rows)
    with Store(path, read_only=True) as opened:
        samples = opened.samples(["control", "treatment"])
        assert fast_metric_units(samples, control="control", treatments=["treatment"],
                                 metric="tokens", bounds=None, cluster="auto", errors="missing",
                                 order="arrival", seed=0, by_task=False) is None  # fmt: skip
        with pytest.raises(calipers.errors.InputError, match="needs the scale's bounds"):
            calipers.watch(samples, "metric", baseline="control", candidates=["treatment"],
                           metric="tokens")  # fmt: skip


def test_the_last_look_reads_the_replays_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """An undecided pair's decision at its last unit reuses the sequence's end the replay
    computed over every unit: the same decision, bit for bit, as computing it again (and one
    pass fewer)."""
    i = np.arange(20_000)  # benchmarks/bench_sequential.py's undecided pair: a gain of 0
    base = (i % 10 < 7).astype(float)
    cand = np.where(i % 20 == 7, 1.0, np.where(i % 20 == 3, 0.0, base))
    pairs = [PairedUnits("a", "b", None, base, cand, (0.0, 1.0), True)]
    design = parse_design("sequence", n_planned=None)
    calls: list[int] = []
    real = sequential_rules.sequence_end

    def counted(plan: Any, gains: np.ndarray) -> Any:
        calls.append(int(np.atleast_2d(gains).shape[1]))
        return real(plan, gains)

    monkeypatch.setattr(sequential_module, "sequence_end", counted)
    reused = decide_sequentially(pairs, design=design, min_effect=0.001).pairs[0]
    assert reused.stopped_at is None and calls == []  # the replay's own are not counted
    original = sequential_module._decision_at

    def fresh(*args: Any) -> Any:
        return original(*args[:6])  # without the replay's end

    monkeypatch.setattr(sequential_module, "_decision_at", fresh)
    again = decide_sequentially(pairs, design=design, min_effect=0.001).pairs[0]
    assert calls == [20_000]
    assert reused.decision == again.decision
    assert reused.to_dict() == again.to_dict()


@pytest.mark.parametrize("kind", ["undecided", "decided", "scores"])
def test_the_sequences_end_is_the_paths_end(kind: str) -> None:
    """`sequence_end` (block by block, the mixture only where a horizon's capital reaches the
    running maximum) gives the paths' last values and running maxima at 0, bit for bit."""
    rng = np.random.default_rng(3)
    n = 40_000
    if kind == "scores":
        base = rng.beta(4, 3, n)
        cand = np.clip(base + rng.normal(0.01, 0.1, n), 0, 1)
    else:
        base = (rng.random(n) < 0.7).astype(float)
        cand = base.copy() if kind == "undecided" else (rng.random(n) < 0.72).astype(float)
        cand[::10] = 1 - cand[::10]
    plan = make_plan(parse_design("sequence", n_planned=None), n_pairs=1, bounds=(0.0, 1.0),
                     binary=kind != "scores", min_effect=0.003)  # fmt: skip
    gains = sequential_rules.gains_of(plan, base, cand)
    for upto in (1, 2, 8_191, 8_192, 8_193, n):
        made = sequential_rules.sequence_end(plan, gains[:upto])
        paths = sequential_rules.sequence_paths(plan, gains[:upto])
        assert made.n == upto
        assert _same_bits(made.ups, np.array([paths[v][0][0, -1] for v in plan.nulls]))
        assert _same_bits(made.downs, np.array([paths[v][1][0, -1] for v in plan.nulls]))
        assert made.running == (max(0.0, float(paths[0.0][0].max())),
                                max(0.0, float(paths[0.0][1].max())))  # fmt: skip


def _trace_before(values: np.ndarray, at: np.ndarray, *, bounds: tuple[float, float], alpha: float,
                  horizon: Any, points: int, extra: tuple[float, ...]) -> np.ndarray:  # fmt: skip
    """`interval_trace` as it was before its shortcuts (fresh temporaries, every minimum)."""
    from calipers.stats.sequential import SEQUENCE_TRUNCATION, CapitalGrid, _mean_log

    lo, hi = bounds
    grid = CapitalGrid(bounds=bounds, alpha=alpha, horizon=horizon, points=points, extra=extra)
    lows, highs = np.empty(at.size), np.empty(at.size)
    z = (values[: int(at.max())] - lo) / (hi - lo)
    bets = [bet_sizes(z[None, :], alpha=alpha, horizon=h)[0] for h in grid.horizons or (None,)]
    m = grid.m
    with np.errstate(divide="ignore"):
        cap_up, cap_down = SEQUENCE_TRUNCATION / m, SEQUENCE_TRUNCATION / (1.0 - m)
    up, down = np.zeros((len(bets), m.size)), np.zeros((len(bets), m.size))
    threshold = math.log(2.0 / alpha)
    block = max(1, 2_000_000 // (m.size * len(bets)))
    done = 0
    for start in range(0, z.size, block):
        stop = min(z.size, start + block)
        ends = at[done:][at[done:] <= stop] - start
        cuts = np.unique(np.concatenate((ends, [stop - start])))
        starts = np.concatenate(([0], cuts[:-1]))
        step = z[start:stop, None] - m[None, :]
        ups, downs = [], []
        for u, d, lam in zip(up, down, bets, strict=True):
            bet = lam[start:stop, None]
            gain = np.minimum(bet, cap_up) * step
            ups.append(u + np.cumsum(np.add.reduceat(np.log1p(gain, out=gain), starts), axis=0))
            loss = np.minimum(bet, cap_down) * -step
            downs.append(d + np.cumsum(np.add.reduceat(np.log1p(loss, out=loss), starts), axis=0))
        while done < at.size and at[done] <= stop:
            row = int(np.searchsorted(cuts, int(at[done]) - start))
            lows[done], highs[done] = grid_interval(
                m, _mean_log([u[row] for u in ups]), _mean_log([d[row] for d in downs]),
                threshold, lo, hi,
            )  # fmt: skip
            done += 1
        up, down = np.stack([u[-1] for u in ups]), np.stack([d[-1] for d in downs])
    return np.asarray(np.c_[lows, highs], dtype=np.float64)


@pytest.mark.parametrize("horizon", [None, 16, 65_536, HORIZON_MIXTURE])
@pytest.mark.parametrize("data", ["steady", "reversing"])
def test_the_traced_path_is_the_one_before_its_shortcuts(horizon: Any, data: str) -> None:
    """Bets below every cap in a block (a long horizon), above every cap (a short one on a
    narrow spread), and mixed: the same ends, bit for bit, with blocks that end between looks —
    with the candidates far outside left out after the first block, and (an effect that
    reverses halfway, so that a left-out candidate comes back) traced again with all of them."""
    from calipers.stats import sequence_trace

    rng = np.random.default_rng(11)
    odds = [0.04, 0.9, 0.06] if data == "steady" else [0.02, 0.9, 0.08]
    gains = rng.choice([-1.0, 0.0, 1.0], size=60_000, p=odds)
    if data == "reversing":
        gains[30_000:] = -gains[30_000:]
    runs: list[bool] = []
    real = sequence_trace._Trace.run

    def counted(self: Any, *, live: bool) -> Any:
        runs.append(live)
        return real(self, live=live)

    at = np.unique(np.r_[np.linspace(1, gains.size, 300).round().astype(np.int64), 7, 9_999])
    plan = make_plan(parse_design("sequence", n_planned=None), n_pairs=1, bounds=(0.0, 1.0),
                     binary=True, higher_is_better=True, equivalence=False, min_effect=None,
                     margin=None)  # fmt: skip
    kw: dict[str, Any] = {"bounds": (-1.0, 1.0), "alpha": plan.sequence_alpha, "horizon": horizon,
                          "points": 41, "extra": plan.nulls}  # fmt: skip
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(sequence_trace._Trace, "run", counted)
        lows, highs = interval_trace(gains, at, **kw)
    assert _same_bits(np.c_[lows, highs], _trace_before(gains, at, **kw))
    assert runs[0] is True  # left-out candidates, then (reversing) every one again
    if data == "reversing" and horizon == HORIZON_MIXTURE:
        assert runs == [True, False]


def _log_capital_before(
    z: np.ndarray, lam: np.ndarray, stake: np.ndarray | None, m: np.ndarray, *, up: bool,
    c: float, most: float = math.inf,
) -> np.ndarray:  # fmt: skip
    """`betting._log_capital` as it was before it skipped the minimum (`most` unused)."""
    out = np.empty(m.size)
    with np.errstate(divide="ignore"):
        cap = c / (m if up else 1.0 - m)
    if m.size == 1:
        bet = np.minimum(lam, cap[0])
        if stake is not None:
            bet *= stake
        bet *= (z - m[0]) if up else (m[0] - z)
        out[0] = np.sum(np.log1p(bet, out=bet))
        return out
    stake = np.ones_like(z) if stake is None else stake
    block = max(1, betting.MATRIX_CELLS // max(z.size, 1))
    for start in range(0, m.size, block):
        mj = m[start : start + block, None]
        bet = np.minimum(lam[None, :], cap[start : start + block, None]) * stake[None, :]
        step = (z[None, :] - mj) if up else (mj - z[None, :])
        out[start : start + block] = np.sum(np.log1p(bet * step), axis=1)
    return out


def _found_before(excess: Any, far: float, estimate: float, precision: float,
                  ends: Any = None) -> float:  # fmt: skip
    """`betting._found` as it was: scipy's `find_root`, each bracket end evaluated by it."""
    from scipy.optimize.elementwise import find_root

    def signed(m: np.ndarray) -> np.ndarray:
        out = excess(np.atleast_1d(np.asarray(m, dtype=np.float64)).ravel())
        tiny = float(np.finfo(np.float64).tiny)
        return np.where(out >= 0, np.maximum(out, tiny), out).reshape(np.shape(m))

    a, b = sorted((far, estimate))
    tolerances = {"xatol": precision, "fatol": 0.0, "frtol": 0.0}
    found = find_root(signed, (np.array([a]), np.array([b])), tolerances=tolerances, maxiter=200)
    xl, xr = float(found.bracket[0][0]), float(found.bracket[1][0])
    return xl if float(found.f_bracket[0][0]) >= 0 else xr


# 45,000 units: the mixture's five horizons are past FINDER_CELLS (the root finder) and the values
# past PAIRWISE_LEAF (the capitals summed leaf by leaf), as at 90,000, in half the time
@pytest.mark.parametrize("size", [40, 3_000, 45_000])
def test_the_betting_ends_are_the_ones_before_the_shortcut(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exact ends (multisection below FINDER_CELLS, the root finder above) and p-values, bit
    for bit, with and without weights, for interval and sequence bets and the mixture: against
    the computation before its shortcuts (every minimum, each horizon's capital in one pass
    over the values, scipy's root finder evaluating the bracket's ends itself)."""
    rng = np.random.default_rng(size)
    x = np.round(rng.beta(2, 5, size), 3)
    w = rng.integers(1, 4, size).astype(float)
    cases: list[dict[str, Any]] = [
        {"schedule": "interval"},
        {"schedule": "interval", "weights": w},
        {"schedule": "sequence", "horizon": HORIZON_MIXTURE},
        {"schedule": "sequence", "horizon": HORIZON_MIXTURE, "weights": w, "null_value": 0.28},
        {"schedule": "sequence", "horizon": 65_536, "null_value": 0.3},
        {"schedule": "sequence", "orders": 3, "rng": 5},
        {"schedule": "sequence", "horizon": HORIZON_MIXTURE, "precision": 2.0**-20},
    ]
    for kw in cases:
        now = betting.betting_interval(x, bounds=(0.0, 1.0), **kw)
        with monkeypatch.context() as patched:
            patched.setattr(betting, "_log_capital", _log_capital_before)
            patched.setattr(betting, "PAIRWISE_LEAF", 10**12)  # one candidate: `_log_capital`
            patched.setattr(betting, "_found", _found_before)
            before = betting.betting_interval(x, bounds=(0.0, 1.0), **kw)
        assert now == before, kw


def test_the_mixtures_log_mean_is_the_one_before_it_went_in_place() -> None:
    """`_mean_log` of a list (a stack it owns: differences and exponentials in place) and of a
    caller's array (left as it was), bit for bit the earlier computation."""
    from calipers.stats.sequential import _mean_log

    rng = np.random.default_rng(4)
    logs = [np.cumsum(rng.normal(0, 0.3, (2, 5_000)), axis=1) for _ in range(5)]
    logs[2][0, :10] = -np.inf  # a capital of 0 on one horizon
    stacked = np.stack(logs)
    kept = stacked.copy()
    top = stacked.max(axis=0, keepdims=True)
    top[~np.isfinite(top)] = 0.0
    with np.errstate(divide="ignore"):
        before = np.squeeze(top + np.log(np.exp(stacked - top).sum(axis=0, keepdims=True) / 5), 0)
    assert _same_bits(_mean_log(logs), before)
    assert _same_bits(_mean_log(stacked, axis=0), before)
    assert _same_bits(stacked, kept)  # the caller's array untouched
