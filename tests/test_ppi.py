"""PPI++ for judge scores against human labels (`calipers.stats.ppi`, `ppi_binary`,
`rogan_gladen`): the paper's estimator and interval equal `ppi_py`'s (test-only oracle), the
closed forms at λ = 0 and λ = 1, the cross-fitted λ̂ against a brute-force loop, clusters and
weights against collapsed data, the stratified 0/1 form against Wilson bounds solved by brentq,
Rogan–Gladen's delta method against the multinomial delta method with a numerical gradient, and a
smoke run of the calibration study."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from calipers.stats.estimate import mean_interval, paired_interval
from calipers.stats.interval_parts import NoInterval
from calipers.stats.ppi import (
    MIN_LABELS,
    TooFewLabels,
    ppi_mean,
    ppi_paired_difference,
)
from calipers.stats.rogan_gladen import corrected_proportion
from interval_refs import cc_score_bounds

N, LABELLED = 600, 80


def scale_run(seed: int = 3, n: int = LABELLED, bias: float = 0.8, noise: float = 1.0):  # type: ignore[no-untyped-def]
    """A 1–5 run: human labels, a lenient noisy judge on every sample, n labelled at random."""
    rng = np.random.default_rng(seed)
    y = rng.choice(np.arange(1.0, 6.0), N, p=[0.05, 0.1, 0.2, 0.35, 0.3])
    f = np.clip(np.round(y + bias + noise * rng.standard_normal(N)), 1, 5)
    labelled = np.zeros(N, dtype=bool)
    labelled[rng.choice(N, n, replace=False)] = True
    return f, y, labelled, np.where(labelled, y, np.nan)


def binary_run(seed: int = 4, n: int = LABELLED, p: float = 0.7, se: float = 0.85, sp: float = 0.8):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    y = (rng.random(N) < p).astype(float)
    u = rng.random(N)
    f = np.where(y == 1, u < se, u >= sp).astype(float)
    labelled = np.zeros(N, dtype=bool)
    labelled[rng.choice(N, n, replace=False)] = True
    return f, y, labelled, np.where(labelled, y, np.nan)


# ---- the paper's estimator against ppi_py -------------------------------------------------------


@pytest.mark.parametrize("run", [scale_run, binary_run])
@pytest.mark.parametrize("lam", [None, 0.0, 1.0, 0.37])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_the_papers_estimator_and_interval_equal_ppi_py(run, lam, level) -> None:  # type: ignore[no-untyped-def]
    """ppi_py's `Yhat_unlabeled` is the judge on the samples WITHOUT a label (the paper's X̃),
    its λ̂ Ĉov(1/n)/((1 + n/N)·V̂ar pooled (1/(N − 1))) clipped to [0, 1], its interval normal
    with plug-in (1/n) variances: calipers' `cross_fit=False, asymptotic=True`."""
    ppi_py = pytest.importorskip("ppi_py")  # the `dev` extra's test-only oracle
    f, y, labelled, human = run()
    ours = ppi_mean(
        f, human, lam="auto" if lam is None else lam, cross_fit=False, asymptotic=True,
        confidence_level=level,
    )  # fmt: skip
    args = (y[labelled], f[labelled], f[~labelled])
    estimate = float(np.squeeze(ppi_py.ppi_mean_pointestimate(*args, lam=lam)))
    low, high = (float(np.squeeze(b)) for b in ppi_py.ppi_mean_ci(*args, alpha=1 - level, lam=lam))
    assert ours.ppi is not None
    assert ours.ppi.estimate == pytest.approx(estimate, abs=1e-9)
    assert (ours.ppi.low, ours.ppi.high) == pytest.approx((low, high), abs=1e-9)
    assert ours.ppi.df is None and ours.ppi.formula == "ppi++-z"
    if lam is None:
        assert 0.0 < ours.lam <= 1.0 and ours.lam_method == "in-sample"


def test_lambda_zero_is_the_t_interval_of_the_labels() -> None:
    f, y, labelled, human = scale_run()
    result = ppi_mean(f, human, lam=0.0)
    labels = y[labelled]
    low, high = stats.t.interval(0.95, labels.size - 1, labels.mean(), stats.sem(labels))
    assert result.ppi is not None
    assert result.ppi.estimate == pytest.approx(labels.mean(), abs=1e-12)
    assert (result.ppi.low, result.ppi.high) == pytest.approx((low, high), abs=1e-10)
    assert result.effective_labels == pytest.approx(labelled.sum())


def test_lambda_one_is_plain_ppi() -> None:
    """θ̂ = f̄_U + mean(y − f) over the labels; Var = s²(f_U)/(N − n) + s²(y − f)/n, ddof 1, on
    Welch–Satterthwaite df."""
    f, y, labelled, human = scale_run()
    result = ppi_mean(f, human, lam=1.0)
    fu, rect = f[~labelled], y[labelled] - f[labelled]
    v_u, v_r = fu.var(ddof=1) / fu.size, rect.var(ddof=1) / rect.size
    df = (v_u + v_r) ** 2 / (v_u**2 / (fu.size - 1) + v_r**2 / (rect.size - 1))
    estimate = fu.mean() + rect.mean()
    half = stats.t.ppf(0.975, df) * math.sqrt(v_u + v_r)
    assert result.ppi is not None
    assert result.ppi.estimate == pytest.approx(estimate, abs=1e-12)
    assert result.ppi.df == pytest.approx(df, rel=1e-12)
    assert (result.ppi.low, result.ppi.high) == pytest.approx(
        (estimate - half, estimate + half), abs=1e-10
    )


def test_cross_fitted_lambda_is_leave_one_out() -> None:
    """Each labelled sample's λ̂ from the other labels only: Ĉov/((1 + n/(N − n))·V̂ar), clipped;
    θ̂ = mean over labels of y_i + λ̂₋ᵢ·(f̄_U − f_i) — a brute-force loop."""
    f, y, labelled, human = scale_run()
    result = ppi_mean(f, human)
    yl, fl, fu = y[labelled], f[labelled], f[~labelled]
    n = yl.size
    lams = []
    for i in range(n):
        keep = np.arange(n) != i
        cov = np.cov(yl[keep], fl[keep], ddof=0)[0, 1]
        lams.append(min(1.0, max(0.0, cov / ((1 + n / fu.size) * fl[keep].var()))))
    lam = np.array(lams)
    estimate = float(np.mean(yl + lam * (fu.mean() - fl)))
    assert result.lam_method == "cross-fit"
    assert result.lam == pytest.approx(lam.mean(), abs=1e-12)
    assert result.estimate == pytest.approx(estimate, abs=1e-12)
    rect = yl - lam * fl
    v = lam.mean() ** 2 * fu.var(ddof=1) / fu.size + rect.var(ddof=1) / n
    assert result.ppi is not None and result.ppi.standard_error == pytest.approx(math.sqrt(v))


def test_a_useful_judge_gains_and_a_lenient_one_is_corrected() -> None:
    f, y, _, human = scale_run(n=60, bias=1.0, noise=0.5)
    result = ppi_mean(f, human)
    assert result.source == "ppi" and not result.judge_too_weak
    assert result.gain > 1.5 and result.effective_labels == pytest.approx(60 * result.gain)
    assert result.judge_bias > 0.5  # the lenient judge alone overstates the mean
    assert result.interval.contains(float(y.mean()))
    assert result.ppi is not None and result.human_only is not None
    assert result.ppi.high - result.ppi.low < result.human_only.high - result.human_only.low


def test_never_wider_than_the_labels_alone() -> None:
    """An unrelated judge: wherever PPI++'s interval is wider, the human-only one is shown."""
    rng = np.random.default_rng(11)
    fell_back = 0
    for _ in range(40):
        y = rng.choice(np.arange(1.0, 6.0), N)
        f = rng.choice(np.arange(1.0, 6.0), N)
        human = np.where(np.arange(N) < 30, y, np.nan)
        result = ppi_mean(f, human)
        human_only = mean_interval(y[:30], method="t")  # the CLT interval PPI++ is held to
        assert result.human_only == human_only
        assert result.high - result.low <= human_only.high - human_only.low
        assert result.judge_too_weak
        if result.fell_back:
            fell_back += 1
            assert result.interval == human_only and result.estimate == human_only.estimate
            assert any("human-only interval is shown" in note for note in result.notes)
    assert fell_back > 0


def test_too_few_labels_are_refused() -> None:
    f, _, _, human = scale_run(n=MIN_LABELS - 1)
    with pytest.raises(TooFewLabels, match=f"{MIN_LABELS - 1} labelled samples") as caught:
        ppi_mean(f, human)
    assert isinstance(caught.value, NoInterval) and caught.value.minimum == MIN_LABELS
    assert ppi_mean(f, human, min_labels=10).n_labelled == MIN_LABELS - 1


def test_bad_input() -> None:
    f, _, _, human = scale_run()
    with pytest.raises(ValueError, match="finite judge score"):
        ppi_mean(np.where(np.arange(N) == 0, np.nan, f), human)
    with pytest.raises(ValueError, match="one length"):
        ppi_mean(f[:-1], human)
    with pytest.raises(ValueError, match="lam must be"):
        ppi_mean(f, human, lam="tuned")  # type: ignore[arg-type]


# ---- clusters and weights ----------------------------------------------------------------------


def test_epochs_clustered_by_sample_equal_the_collapsed_samples() -> None:
    """Every sample twice (two identical epochs), clustered by sample: the same estimate, λ̂ and
    interval as the samples once (leave one cluster out = leave one sample out)."""
    f, _, _, human = scale_run()
    once = ppi_mean(f, human)
    twice = ppi_mean(np.repeat(f, 2), np.repeat(human, 2), clusters=np.repeat(np.arange(N), 2))
    assert twice.estimate == pytest.approx(once.estimate, abs=1e-12)
    assert twice.lam == pytest.approx(once.lam, abs=1e-12)
    assert (twice.low, twice.high) == pytest.approx((once.low, once.high), abs=1e-10)
    assert twice.n_labelled == 2 * once.n_labelled and twice.n_labelled_units == LABELLED


def test_weights_make_the_mean_of_per_sample_means() -> None:
    """Unequal epochs (1–3 per sample, the judge varying by epoch, one label per sample) with
    weights 1/epochs and clusters by sample: at a fixed λ, PPI on the per-sample means."""
    rng = np.random.default_rng(5)
    f, _, _, human = scale_run()
    epochs = rng.integers(1, 4, N)
    sample = np.repeat(np.arange(N), epochs)
    f_rows = np.clip(f[sample] + rng.integers(-1, 2, sample.size), 1, 5)
    per_sample = np.bincount(sample, weights=f_rows) / epochs
    rows = ppi_mean(f_rows, human[sample], clusters=sample, weights=1.0 / epochs[sample], lam=0.6)
    collapsed = ppi_mean(per_sample, human, lam=0.6)
    assert rows.estimate == pytest.approx(collapsed.estimate, abs=1e-12)
    assert (rows.low, rows.high) == pytest.approx((collapsed.low, collapsed.high), abs=1e-10)


def test_groups_partly_labelled_count_the_overlap() -> None:
    """Groups holding labelled and unlabelled samples: the variance is the CR1 variance of the
    groups' influence values on θ̂ = λ·f̄_U + ȳ_L − λ·f̄_L (cross term included), per part."""
    f, y, labelled, human = scale_run()
    groups = np.arange(N) // 6
    result = ppi_mean(f, human, clusters=groups, lam=0.5)
    u_rows = np.where(~labelled, 0.5 * (f - f[~labelled].mean()) / (~labelled).sum(), 0.0)
    rect = y - 0.5 * f
    l_rows = np.where(labelled, (rect - rect[labelled].mean()) / labelled.sum(), 0.0)
    a, b = np.bincount(groups, weights=u_rows), np.bincount(groups, weights=l_rows)
    g_u, g_l, g = (np.unique(groups[m]).size for m in (~labelled, labelled, np.ones(N, bool)))
    variance = g_u / (g_u - 1) * a @ a + g_l / (g_l - 1) * b @ b + g / (g - 1) * 2 * a @ b
    assert result.ppi is not None
    assert result.ppi.standard_error == pytest.approx(math.sqrt(variance), rel=1e-12)
    assert result.n_labelled_units == g_l


# ---- paired differences ------------------------------------------------------------------------


def test_paired_difference_is_ppi_on_the_differences() -> None:
    fc, yc, labelled, hc = scale_run(seed=1)
    ft, yt, _, _ = scale_run(seed=2)
    ht = np.where(labelled, yt, np.nan)
    ht_one_side = ht.copy()
    first = np.flatnonzero(labelled)[0]
    ht_one_side[first] = np.nan  # labelled in control only: unlabelled for the difference
    result = ppi_paired_difference(fc, ft, hc, ht_one_side)
    both = labelled.copy()
    both[first] = False
    direct = ppi_mean(ft - fc, np.where(both, yt - yc, np.nan))
    assert result.ppi is not None and direct.ppi is not None
    assert (result.ppi.estimate, result.ppi.low, result.ppi.high) == pytest.approx(
        (direct.ppi.estimate, direct.ppi.low, direct.ppi.high), abs=1e-12
    )
    assert result.human_only == paired_interval(yc[both], yt[both], method="t")
    assert any("1 sample labelled in one run only" in note for note in result.notes)


# ---- pass/fail judges ---------------------------------------------------------------------------


def test_binary_stratified_form() -> None:
    """θ̂ = π̂·â + (1 − π̂)·b̂ = PPI at λ = (N − n)/N·(â − b̂); the interval is MOVER over the
    continuity-corrected Wilson bounds of π, a and b, solved here by brentq."""
    f, y, labelled, human = binary_run()
    result = ppi_mean(f, human)
    pi = f.mean()
    n1 = int((labelled & (f == 1)).sum())
    n0 = int((labelled & (f == 0)).sum())
    x1 = float(y[labelled & (f == 1)].sum())
    x0 = float(y[labelled & (f == 0)].sum())
    a, b = x1 / n1, x0 / n0
    estimate = pi * a + (1 - pi) * b
    l_pi, u_pi = cc_score_bounds(f.sum(), N)
    l_a, u_a = cc_score_bounds(x1, n1)
    l_b, u_b = cc_score_bounds(x0, n0)
    assert a > b
    low = estimate - math.sqrt((pi * (a - l_a)) ** 2 + ((1 - pi) * (b - l_b)) ** 2
                               + ((a - b) * (pi - l_pi)) ** 2)  # fmt: skip
    high = estimate + math.sqrt((pi * (u_a - a)) ** 2 + ((1 - pi) * (u_b - b)) ** 2
                                + ((a - b) * (u_pi - pi)) ** 2)  # fmt: skip
    assert result.lam_method == "stratified" and result.ppi is not None
    assert result.ppi.formula == "ppi-stratified-wilson-cc"
    assert result.ppi.estimate == pytest.approx(estimate, abs=1e-12)
    assert (result.ppi.low, result.ppi.high) == pytest.approx((low, high), abs=1e-8)
    lam = (~labelled).sum() / N * (a - b)
    assert result.lam == pytest.approx(lam, abs=1e-12)
    assert ppi_mean(f, human, lam=lam).estimate == pytest.approx(estimate, abs=1e-12)


def test_binary_judge_agreeing_with_every_label_still_has_width() -> None:
    """An accurate judge that disagrees with none of 30 labels: the t interval would take its
    width from the unlabelled samples alone; the stratified one from Wilson bounds of a and b."""
    f, y, labelled, _ = binary_run(n=30, p=0.85, se=0.97, sp=0.97)
    agree = labelled & (f == y)
    human = np.where(agree, y, np.nan)
    result = ppi_mean(f, human, min_labels=20)
    t_form = ppi_mean(f, human, lam=float(result.lam), min_labels=20)
    assert result.ppi is not None and t_form.ppi is not None
    width = result.ppi.high - result.ppi.low
    assert t_form.ppi.high - t_form.ppi.low < 0.5 * width
    assert t_form.effective_labels > 10 * t_form.n_labelled  # precision it does not have
    assert result.interval.contains(float(y.mean()))


def test_binary_without_labels_on_one_verdict_falls_back() -> None:
    f, y, labelled, _ = binary_run()
    human = np.where(labelled & (f == 1), y, np.nan)
    result = ppi_mean(f, human, min_labels=10)
    assert result.ppi is None and result.fell_back
    assert "judge marked fail" in (result.ppi_reason or "")


def test_rogan_gladen_point_estimate_and_delta_method() -> None:
    """p̂ = (q̂ + Ŝp − 1)/(Ŝe + Ŝp − 1); its variance is the delta method over the six-cell
    multinomial of (labelled?, human, judge), gradient by central differences."""
    f, y, labelled, human = binary_run()
    result = corrected_proportion(f, human)
    se_hat = f[labelled & (y == 1)].mean()
    sp_hat = 1 - f[labelled & (y == 0)].mean()
    p_hat = (f.mean() + sp_hat - 1) / (se_hat + sp_hat - 1)
    assert (result.sensitivity, result.specificity) == pytest.approx((se_hat, sp_hat), abs=1e-12)
    assert result.estimate == pytest.approx(p_hat, abs=1e-12)

    def estimator(cells: np.ndarray) -> float:  # unlabelled f=0, f=1; labelled (y, f) 00 01 10 11
        q = cells[1] + cells[3] + cells[5]
        se = cells[5] / (cells[4] + cells[5])
        sp = cells[2] / (cells[2] + cells[3])
        return float((q + sp - 1) / (se + sp - 1))

    un = ~labelled
    cells = np.array([
        np.sum(un & (f == 0)), np.sum(un & (f == 1)),
        *(np.sum(labelled & (y == yy) & (f == ff)) for yy in (0, 1) for ff in (0, 1)),
    ], dtype=float) / N  # fmt: skip
    grad = np.array([
        (estimator(cells + h) - estimator(cells - h)) / 2e-7 for h in np.eye(6) * 1e-7
    ])  # fmt: skip
    variance = grad @ (np.diag(cells) - np.outer(cells, cells)) @ grad / N
    assert result.standard_error == pytest.approx(math.sqrt(variance), rel=1e-5)
    z = stats.norm.ppf(0.975)
    assert (result.low, result.high) == pytest.approx(
        (p_hat - z * math.sqrt(variance), p_hat + z * math.sqrt(variance)), rel=1e-5
    )


def test_rogan_gladen_refuses_a_chance_judge_and_one_sided_labels() -> None:
    f, y, labelled, human = binary_run(se=0.5, sp=0.52)
    with pytest.raises(NoInterval, match="no better than chance"):
        corrected_proportion(f, human)
    f, y, labelled, _ = binary_run()
    with pytest.raises(NoInterval, match="all pass"):
        corrected_proportion(f, np.where(labelled & (y == 1), 1.0, np.nan))
    with pytest.raises(ValueError, match="pass/fail"):
        corrected_proportion(f + 0.5, np.where(labelled, y, np.nan))


# ---- the calibration study ---------------------------------------------------------------------


def test_calibration_study_smoke() -> None:
    from calipers.calibration import ppi as study

    cells = [c for c in study.grid((30,)) if c.kind in ("binary", "grouped-scale")][:2]
    cells.append(study.PPICell("paired-scale", 30, bias=1.0, noise=1.0))
    results = study.run(cells, reps=20, seed=1)
    again = study.run(cells, reps=20, seed=1)
    assert [r["coverage"] for r in results] == [r["coverage"] for r in again]
    for r in results:
        assert 0.0 <= r["coverage"] <= 1.0 and r["not_wider"] == 1.0
        assert r["refused"] == 0.0
    assert results[0]["rg_coverage"] is not None
    table = study.markdown(results)
    assert table.count("\n") == 2 + len(cells)
    assert study.truth(study.PPICell("grouped-scale", 30)) == pytest.approx(
        float(np.arange(1, 6) @ study._grouped_levels())
    )


def test_every_sample_labelled_gives_the_labels_interval_without_a_0_over_0() -> None:
    """With no unlabelled unit there is nothing for the judge to correct: the labels' own t
    interval, the reason said, and no 0/0 on the way (it warned, and named the wrong reason:
    "the corrected scores do not vary")."""

    rng = np.random.default_rng(1)
    judge = rng.uniform(1, 5, 60)
    human = np.clip(judge + rng.normal(0, 0.5, 60), 1, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = ppi_mean(judge, human)
    alone = mean_interval(human, method="t")
    assert result.source == "human-only" and result.ppi is None
    assert (result.interval.low, result.interval.high) == (alone.low, alone.high)
    assert result.effective_labels == 60 and "nothing to add" in (result.ppi_reason or "")
