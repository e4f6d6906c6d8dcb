"""The sufficient-statistics contract (docs/scale.md): the summary table computed by DuckDB's SQL
equals the one built in memory from `stage_rows`' arrays, every statistic from it equals the
other's to 1e-12 for the same seed (a 1M-row fixture made in SQL), the statistics equal the row
engine's (`calipers.compare` on the same store) where both compute them, and each is checked
against an independent reference (statsmodels, scipy, closed forms)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from scipy import stats as sps

import calipers
from calipers.data.store import Store
from calipers.data.summaries import duckdb_summaries
from calipers.stats.interval_parts import NoInterval
from calipers.stats.shape import t_adequacy
from calipers.stats.summary_bootstrap import cluster_bootstrap
from calipers.stats.summary_stats import (
    NotSummarizable,
    SummaryTable,
    build_summaries,
    clustered_standard_error,
    mcnemar,
    paired_means,
    paired_t,
    pass_at_k_of,
    sign_test,
    t_adequacy_counts,
    units_of,
)
from calipers.verdicts.persample import StagedScores, stage_rows
from calipers.verdicts.summary_compare import compare_summaries, summaries_from_staged

TOL = 1e-12
SKIP = {"seconds", "source", "engine", "notes", "summary"}  # where the tables came from

# 125,000 items × 4 epochs × 2 runs = 1M rows; pass/fail (`correct`) and a score on a dyadic
# grid: every item mean and every sum of them is exact in binary floating point, so SQL and numpy
# agree to the bit whatever order they add in. (With 5 epochs, means k/5 are rounded, and sums of
# 25,000 of them in another order moved the clustered z of 4 task clusters by 3e-12, relative.)
FIXTURE = """
CREATE TABLE samples AS
SELECT r AS run, 'task-' || (i % 8) AS task, 's' || i AS sample_id, e::BIGINT AS epoch,
       'g' || (i % 499) AS "group",
       ((hash(i, e, r) % 1000) < (CASE WHEN r = 'A' THEN 600 ELSE 610 END))::DOUBLE AS correct,
       (((hash(i, e, r, 7) % 8) + (CASE WHEN r = 'B' AND i % 5 = 0 THEN 1 ELSE 0 END)) / 8.0)
           AS score
FROM (SELECT unnest(['A', 'B']) AS r), range(125000) t(i), range(4) u(e)
WHERE NOT (r = 'B' AND i % 1000 = 7 AND e = 3)  -- an item short of an epoch on one side
"""


@pytest.fixture(scope="module")
def big() -> Any:
    con = duckdb.connect()
    con.execute(FIXTURE)
    yield con
    con.close()


_STAGED: dict[tuple[int, str], StagedScores] = {}


def _staged(con: duckdb.DuckDBPyConnection, metric: str) -> StagedScores:
    """The rows as the engine stages them (once per metric: 1M rows take a second)."""
    key = (id(con), metric)
    if key not in _STAGED:
        _STAGED[key] = _stage(con, metric)
    return _STAGED[key]


def _stage(con: duckdb.DuckDBPyConnection, metric: str) -> StagedScores:
    from calipers.data.sampleset import SampleSet

    rows = stage_rows(SampleSet(con, "samples", "<fixture>"), ["A", "B"],
                      {"value": f"{metric}::DOUBLE"})  # fmt: skip
    value = np.asarray(rows.columns["value"], dtype=np.float64)
    return StagedScores(
        runs=rows.run_arrays({"value": value}), tasks=rows.tasks, components=("value",),
        combine=lambda v: v["value"], raw_combine=lambda v: v["value"], gated=False,
    )  # fmt: skip


def _close(a: Any, b: Any, path: str = "$") -> list[str]:
    """Paths where two reports differ beyond TOL (relative for large magnitudes)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}: keys {sorted(set(a) ^ set(b))}"] if set(a) != set(b) else []
        for k in set(a) & set(b):
            if k not in SKIP:
                out += _close(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} {len(b)}"]
        return [
            p
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for p in _close(x, y, f"{path}[{i}]")
        ]
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool):
        ok = math.isclose(a, b, rel_tol=TOL, abs_tol=TOL) or (math.isnan(a) and math.isnan(b))
        return [] if ok else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def _tables_equal(sql: SummaryTable, mem: SummaryTable) -> None:
    def rows(t: SummaryTable) -> list[tuple[Any, ...]]:
        return sorted(
            zip(
                t.task.tolist(),
                t.n_a.tolist(),
                t.n_b.tolist(),
                t.sum_a.tolist(),
                t.sum_b.tolist(),
                t.items.tolist(),
                t.count.tolist(),
                strict=True,
            )
        )

    a, b = rows(sql), rows(mem)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x[0] == y[0]
        assert np.allclose(x[1:], y[1:], rtol=TOL, atol=TOL), (x, y)


@pytest.mark.parametrize(
    ("metric", "cluster", "interval"),
    [
        ("correct", "sample_id", "auto"),
        ("correct", "group", "auto"),
        ("correct", "task", "t"),
        ("score", "sample_id", "auto"),
        ("score", "group", "auto"),
        ("score", "sample_id", "bca"),
    ],
)
def test_sql_and_memory_agree_on_every_statistic(
    big: duckdb.DuckDBPyConnection, metric: str, cluster: str, interval: str
) -> None:
    computed = duckdb_summaries(big, "samples", origin="<fixture>", baseline="A", candidate="B",
                                metric=metric, cluster=cluster)  # fmt: skip
    sql = SummaryTable.from_columns(computed.columns)
    mem = summaries_from_staged(_staged(big, metric), "A", "B", cluster=cluster)
    if cluster == "sample_id":
        _tables_equal(sql, mem)
    if cluster == "sample_id" and metric == "correct":
        # collapsed: per task at most (K + 1)² cells of (Σa, Σb) at K = 4 epochs, and the cells
        # of the items one epoch short on one side — not 125,000 items
        assert sql.rows <= 8 * (25 + 20)
    options: dict[str, Any] = dict(control="A", treatment="B", origin="x", engine="x",
                                   metric=metric, cluster=cluster, interval=interval, seed=7,
                                   bounds="0,1", n_resamples=2_000)  # fmt: skip
    a = compare_summaries(sql, **options).to_dict()
    b = compare_summaries(mem, **options).to_dict()
    assert _close(a, b) == []
    assert a["bootstrap"] is not None and a["difference"]["interval"] is not None


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small stores the row engine compares in about a second each."""
    root = tmp_path_factory.mktemp("stores")
    made = {}
    specs = {
        "single": (3000, 1, "correct", "NULL"),
        "epochs": (3000, 3, "correct", "NULL"),
        "groups": (3000, 1, "correct", "'g' || (i % 97)"),
        "scores": (2000, 2, "score", "NULL"),
    }
    for name, (n, epochs, kind, group) in specs.items():
        value = ("MAP {'acc': (((hash(i, e, r) % 8) + (CASE WHEN r = 'B' AND i % 5 = 0 "
                 "THEN 1 ELSE 0 END)) / 8.0)::DOUBLE}") if kind == "score" else "NULL"  # fmt: skip
        correct = "NULL" if kind == "score" else (
            "(hash(i, e, r) % 1000) < (CASE WHEN r = 'A' THEN 600 ELSE 630 END)")  # fmt: skip
        path = root / f"{name}.duckdb"
        with Store(path) as store:
            store.con.execute(
                f"""INSERT INTO samples (run, task, sample_id, epoch, "group", correct, scores)
                SELECT r, 'task-' || (i % 3), 's' || i, e, {group}, {correct}, {value}
                FROM (SELECT unnest(['A', 'B']) r), range({n}) t(i), range({epochs}) u(e)"""
            )
        made[name] = path
    return made


@pytest.mark.parametrize(
    ("store", "metric", "interval", "formula"),
    [
        ("single", "correct", "auto", "newcombe-cc"),
        ("groups", "correct", "auto", "newcombe-cc"),
        ("epochs", "correct", "t", "t"),
        ("scores", "acc", "auto", "hall-t"),
    ],
)
def test_the_summaries_give_the_engines_numbers(
    stores: dict[str, Path], store: str, metric: str, interval: str, formula: str
) -> None:
    with calipers.open(db=stores[store]) as samples:
        engine = calipers.compare(samples, "metric", baseline="A", candidates=["B"],
                                  metric=metric, interval=interval, by_task=False)  # fmt: skip
    pair = engine.to_dict()["pairs"][0]
    with Store(stores[store], read_only=True) as st:
        computed = duckdb_summaries(st.con, "samples", origin="x", baseline="A", candidate="B",
                                    metric=metric)  # fmt: skip
    assert computed.cluster.cluster == pair["cluster"]
    ours = compare_summaries(
        SummaryTable.from_columns(computed.columns),
        control="A",
        treatment="B",
        origin="x",
        engine="duckdb",
        metric=metric,
        cluster=computed.cluster.cluster,
        interval=interval,
    ).to_dict()
    d, e = ours["difference"], pair["composite"]
    assert e["interval"]["formula"] == d["interval"]["formula"] == formula
    for key in ("estimate", "low", "high", "control_mean", "treatment_mean", "p_value",
                "exact_p"):  # fmt: skip
        assert d[key] == pytest.approx(e[key], rel=TOL, abs=TOL), key
    for name in ("mcnemar", "sign", "paired_t", "clustered_se"):
        mine, theirs = ours["tests"][name], pair["tests"][name]
        assert (mine is None) == (theirs is None), name
        if mine is not None:
            assert _close(mine, theirs) == [], name
    assert ours["mde"] == pytest.approx(pair["mde"], rel=TOL)
    assert ours["verdict"] == engine.verdict_text
    # the cluster bootstrap's standard error is the analytic one (CR0) within Monte Carlo error:
    # the SE of an SE estimated from B resamples is about SE/√(2B) (0.7% at 10,000)
    boot = ours["bootstrap"]
    assert boot["standard_error"] == pytest.approx(boot["analytic_standard_error"], rel=0.035)
    if store == "epochs":  # pass@k and pass^k of each run: the engine's repeats, item by item
        for side, run in (("control", "A"), ("treatment", "B")):
            theirs = engine.to_dict()["variants"][run]["repeats"]
            for kind in ("pass@k", "pass^k"):
                got = [e["estimate"] for e in ours["pass_at_k"][side][kind]]
                want = [e["estimate"] for e in theirs[kind]]
                assert got == pytest.approx(want, rel=TOL, abs=TOL)


def test_the_summary_bootstrap_is_the_engines_within_monte_carlo_error(
    stores: dict[str, Path],
) -> None:
    """Scores at 2,000 units: the engine's percentile bootstrap (resampling the rows' units) and
    the summaries' (multinomial counts over the distinct units) estimate one standard error."""
    with calipers.open(db=stores["scores"]) as samples:
        engine = calipers.compare(samples, "metric", baseline="A", candidates=["B"],
                                  metric="acc", interval="percentile", by_task=False)  # fmt: skip
    theirs = engine.to_dict()["pairs"][0]["composite"]["interval"]
    with Store(stores["scores"], read_only=True) as st:
        computed = duckdb_summaries(st.con, "samples", origin="x", baseline="A", candidate="B",
                                    metric="acc")  # fmt: skip
    ours = compare_summaries(
        SummaryTable.from_columns(computed.columns),
        control="A",
        treatment="B",
        origin="x",
        engine="duckdb",
        metric="acc",
        interval="percentile",
        seed=11,
    ).to_dict()["difference"]["interval"]
    assert ours["standard_error"] == pytest.approx(theirs["standard_error"], rel=0.05)
    assert ours["low"] == pytest.approx(theirs["low"], abs=0.1 * theirs["standard_error"])


# ----------------------------------------------------------------- against independent references


def _random_table(rng: np.random.Generator, *, n: int, epochs: int, clusters: int | None,
                  binary: bool) -> tuple[SummaryTable, dict[str, Any]]:  # fmt: skip
    """A table built from random observations, and the per-item means it came from."""
    items = np.repeat(np.arange(n), epochs)
    p = rng.uniform(0.2, 0.9, n)
    if binary:
        a = (rng.random(items.size) < p[items]).astype(float)
        b = (rng.random(items.size) < np.clip(p[items] + 0.05, 0, 1)).astype(float)
    else:
        a = rng.beta(2, 2, items.size)
        b = np.clip(a + rng.normal(0.03, 0.1, items.size), 0, 1)
    unit = None if clusters is None else rng.integers(0, clusters, n)
    table = build_summaries(
        tasks=["t0", "t1"], item_task=np.arange(n) % 2, item=np.r_[items, items],
        side=np.r_[np.zeros(items.size, bool), np.ones(items.size, bool)],
        values=np.r_[a, b], item_unit=unit,
    )  # fmt: skip
    abar = np.bincount(items, weights=a) / epochs
    bbar = np.bincount(items, weights=b) / epochs
    return table, {"a": abar, "b": bbar, "unit": unit, "successes": (a, b), "items": items}


def test_mcnemar_is_statsmodels() -> None:
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    table, raw = _random_table(np.random.default_rng(1), n=400, epochs=1, clusters=None,
                               binary=True)  # fmt: skip
    a, b = raw["a"], raw["b"]
    counts = [[np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))],
              [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))]]  # fmt: skip
    ours = mcnemar(units_of(table))
    reference = sm_mcnemar(counts, exact=True)
    assert ours.p_value == pytest.approx(reference.pvalue, rel=1e-10)
    assert ours.statistic == reference.statistic


@pytest.mark.parametrize("clusters", [None, 30])
def test_sign_and_paired_t_are_scipys_on_the_units(clusters: int | None) -> None:
    table, raw = _random_table(np.random.default_rng(2), n=300, epochs=3, clusters=clusters,
                               binary=False)  # fmt: skip
    d = raw["b"] - raw["a"]
    if clusters is not None:  # a unit's mean difference: the mean of its items' (each weighs 1)
        codes = raw["unit"]
        d = np.bincount(codes, weights=d) / np.bincount(codes)
        d = d[np.bincount(codes) > 0]
    units = units_of(table)
    pos, neg = int(np.sum(d > 0)), int(np.sum(d < 0))
    assert sign_test(units).p_value == pytest.approx(sps.binomtest(pos, pos + neg).pvalue,
                                                     rel=1e-10)  # fmt: skip
    ours, ref = paired_t(units), sps.ttest_1samp(d, 0.0)
    assert ours is not None
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-10)
    assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_clustered_standard_error_is_statsmodels_cluster_robust() -> None:
    from statsmodels.regression.linear_model import OLS

    table, raw = _random_table(np.random.default_rng(3), n=500, epochs=2, clusters=40,
                               binary=False)  # fmt: skip
    d = raw["b"] - raw["a"]  # per item (each item weighs the same)
    fit = OLS(d, np.ones_like(d)).fit(
        cov_type="cluster", cov_kwds={"groups": raw["unit"], "use_correction": False}
    )
    units = units_of(table)
    ours = clustered_standard_error(units)
    assert ours is not None
    assert ours.detail["mean"] == pytest.approx(float(fit.params[0]), rel=1e-12)
    assert ours.detail["standard_error"] == pytest.approx(float(fit.bse[0]), rel=1e-9)
    assert paired_means(units).difference == pytest.approx(d.mean(), rel=1e-12)


def test_pass_at_k_is_the_closed_form_item_by_item() -> None:
    table, raw = _random_table(np.random.default_rng(4), n=200, epochs=6, clusters=None,
                               binary=True)  # fmt: skip
    a, _ = raw["successes"]
    c = np.bincount(raw["items"], weights=a).astype(int)
    found = {(e.kind, e.k): e.estimate for e in pass_at_k_of(table, "a")}
    for k in range(1, 7):
        at = np.mean([1 - math.comb(6 - ci, k) / math.comb(6, k) for ci in c])
        hat = np.mean([math.comb(ci, k) / math.comb(6, k) for ci in c])
        assert found[("pass@k", k)] == pytest.approx(at, rel=1e-12)
        assert found[("pass^k", k)] == pytest.approx(hat, rel=1e-12)


def test_pass_at_k_needs_item_rows() -> None:
    table, _ = _random_table(np.random.default_rng(5), n=100, epochs=1, clusters=10,
                             binary=True)  # fmt: skip
    with pytest.raises(NotSummarizable, match="clusters"):
        pass_at_k_of(table, "a")


def test_t_rule_with_counts_is_the_t_rule_on_the_values() -> None:
    rng = np.random.default_rng(6)
    values = np.round(rng.gamma(0.5, 1, 40), 1)
    counts = rng.integers(1, 5, values.size).astype(float)
    ours = t_adequacy_counts(values, counts)
    theirs = t_adequacy(np.repeat(values, counts.astype(int)))
    assert (ours.holds, ours.n_units, ours.informative, ours.needed) == (
        theirs.holds, theirs.n_units, theirs.informative, theirs.needed)  # fmt: skip
    assert ours.skewness == pytest.approx(theirs.skewness, rel=1e-12)


def test_the_bootstrap_from_counts_is_resampling_units() -> None:
    """Multinomial draws over the rows (counting) and G indices drawn per resample (a plain
    loop over the expanded units) give one distribution; the test would see a shift of a tenth
    of a standard error."""
    table, raw = _random_table(np.random.default_rng(7), n=1000, epochs=4, clusters=None,
                               binary=True)  # fmt: skip
    units = units_of(table)
    ours = cluster_bootstrap(units, n_resamples=10_000, rng=3)
    assert ours.algorithm == "counting" and table.rows < 100
    d = raw["b"] - raw["a"]
    draws = np.random.default_rng(9).integers(0, d.size, size=(10_000, d.size))
    plain = d[draws].mean(axis=1)
    se = float(np.std(plain, ddof=1))
    assert sps.ks_2samp(ours.distribution, plain).pvalue > 0.001
    assert sps.ks_2samp(ours.distribution, plain + 0.1 * se).pvalue < 0.001
    assert ours.standard_error == pytest.approx(se, rel=0.05)


def test_the_seed_is_recorded_and_reproduces_the_draws() -> None:
    table, _ = _random_table(np.random.default_rng(8), n=500, epochs=2, clusters=None,
                             binary=True)  # fmt: skip
    units = units_of(table)
    first = cluster_bootstrap(units, n_resamples=500, rng=np.random.default_rng(1))
    again = cluster_bootstrap(units, n_resamples=500, rng=first.seed)
    assert np.array_equal(first.distribution, again.distribution)


def test_row_order_does_not_change_the_draws() -> None:
    table, _ = _random_table(np.random.default_rng(9), n=2000, epochs=3, clusters=None,
                             binary=True)  # fmt: skip
    shuffled = table.select(np.random.default_rng(0).permutation(table.rows))
    a = cluster_bootstrap(units_of(table), n_resamples=300, rng=5)
    b = cluster_bootstrap(units_of(shuffled), n_resamples=300, rng=5)
    assert np.array_equal(a.distribution, b.distribution)


def test_what_the_summaries_cannot_give_says_so() -> None:
    """Bounded scores the t rule refuses (20 skewed units): `auto` would use the betting
    interval, whose capital reads the units in order — not a function of the summaries."""
    rng = np.random.default_rng(10)
    table, _ = _random_table(rng, n=20, epochs=1, clusters=None, binary=False)
    with pytest.raises(NotSummarizable, match="betting"):
        compare_summaries(table, control="A", treatment="B", origin="x", engine="x",
                          metric="score", bounds="0,1")  # fmt: skip
    with pytest.raises(NotSummarizable, match="order"):
        compare_summaries(table, control="A", treatment="B", origin="x", engine="x",
                          metric="score", bounds="0,1", interval="betting")  # fmt: skip
    report = compare_summaries(table, control="A", treatment="B", origin="x", engine="x",
                               metric="score", bounds="0,1", interval="t").to_dict()  # fmt: skip
    withheld = {x["statistic"] for x in report["not_from_summaries"]}
    assert "the betting interval" in withheld and "saturation over epochs" in withheld


def test_several_epochs_of_pass_fail_have_no_newcombe_interval() -> None:
    table, _ = _random_table(np.random.default_rng(11), n=300, epochs=3, clusters=None,
                             binary=True)  # fmt: skip
    with pytest.raises(NotSummarizable, match="epochs"):
        compare_summaries(table, control="A", treatment="B", origin="x", engine="x",
                          metric="correct", interval="score")  # fmt: skip


def test_no_unit_no_interval() -> None:
    table, _ = _random_table(np.random.default_rng(12), n=1, epochs=2, clusters=None,
                             binary=True)  # fmt: skip
    report = compare_summaries(table, control="A", treatment="B", origin="x", engine="x",
                               metric="correct").to_dict()  # fmt: skip
    assert report["difference"]["interval"] is None and report["verdict"] == "UNDERPOWERED"
    with pytest.raises(NoInterval):
        cluster_bootstrap(units_of(table), n_resamples=100)
