"""The paired engine: one control against one or more treatments, each pair paired sample by
sample and decided by the gates policy, and the roll-up over pairs. Schemes whose runs pair
(layered, metric) stage their per-sample components and hand them to `compare_staged`."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from calipers.errors import InputError

if TYPE_CHECKING:  # pandas is imported by `to_frame` alone: 0.4 s a command that shows no frame
    import pandas as pd
from calipers.render.json_report import COMPARE_SCHEMA_VERSION
from calipers.stats import z_from_confidence
from calipers.verdicts.base import Comparison
from calipers.verdicts.by_task import adjust_p
from calipers.verdicts.cost_figures import CostComparison
from calipers.verdicts.flips import PairFlips
from calipers.verdicts.gates import (
    DEFAULT_THRESHOLD,
    MIN_EFFECT_FRACTION,
    SEVERITY,
    TRIVIAL_FRACTION,
    Decision,
    Thresholds,
    Verdict,
    badges,
    decide,
)
from calipers.verdicts.margin import Margin, MarginDecision, decide_margin, parse_margin
from calipers.verdicts.paired import PairedComparison, compare_pair
from calipers.verdicts.persample import StagedScores, resolve_cluster
from calipers.verdicts.run_summary import RunSummary, summarize_run
from calipers.verdicts.threads import parts_runner


@dataclass
class PairResult:
    comparison: PairedComparison
    alpha: float  # family α split over the treatments (Bonferroni)
    decision: Decision
    badges: dict[str, Any]
    margin: MarginDecision | None = None  # with --margin
    judge_calibration: dict[str, Any] | None = None  # --calibrate-judges (PPI++)
    flips: PairFlips | None = None  # the samples that changed (`calipers.verdicts.flips`)

    def to_dict(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "control": c.control,
            "treatment": c.treatment,
            "verdict": self.decision.verdict.value,
            "reason": self.decision.reason,
            "n_pairs": c.n_pairs,
            "n_observation_pairs": c.n_observation_pairs,
            "unpaired": {"control": c.unpaired_control, "treatment": c.unpaired_treatment},
            "missing": {n: m.to_dict() for n, m in c.missing.items()},
            "missing_differs": c.missing_differs,
            "missing_bounds": None if c.missing_bounds is None else c.missing_bounds.to_dict(),
            "cluster": c.cluster,
            "gates": {n: g.to_dict() for n, g in c.gates.items()},
            "alpha": self.alpha,
            "confidence_level": c.confidence_level,
            "composite": c.composite.to_dict(),
            "layers": {n: d.to_dict() for n, d in c.components.items()},
            "mde": None if c.mde is None or math.isinf(c.mde) else c.mde,
            "hotelling": c.hotelling.to_dict() if c.hotelling else None,
            "badges": self.badges,
            "margin": None if self.margin is None else self.margin.to_dict(),
            "decision": None if self.margin is None else self.margin.decision,
            "tests": c.tests,
            "tasks": c.tasks,
            "task_adjust": c.task_adjust,
            "repeats": None if c.repeats is None else c.repeats.to_dict(),
            **(
                {"judge_calibration": self.judge_calibration}
                if self.judge_calibration is not None
                else {}
            ),
            "notes": c.notes,
        }


@dataclass(repr=False)  # the readable repr of the base class
class CompareResult(Comparison):
    scheme: str
    origin: str
    parameters: dict[str, Any]
    control: str
    variants: dict[str, RunSummary]
    pairs: list[PairResult]
    verdict: Verdict
    reason: str
    badges: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    # cost per solved item per run, and what each candidate's gain costs (`verdicts.cost`);
    # None when no compared observation has a cost and no value per solved item was given
    cost: CostComparison | None = None
    gates: ClassVar[tuple[str, ...]] = ("no-regress", "ship", "non-inferior", "worth-it", "none")

    @property
    def seed(self) -> int:
        return int(self.parameters["seed"])

    @property
    def verdict_text(self) -> str:
        return self.verdict.value

    @property
    def flips(self) -> dict[str, PairFlips]:
        """Per candidate, the samples that changed: counts overall and per task, the largest
        regressions and improvements with their text, where they concentrate."""
        return {p.comparison.treatment: p.flips for p in self.pairs if p.flips is not None}

    def gate_failure(self, gate: str) -> str | None:
        """no-regress fails on REGRESS; ship fails unless PROGRESS; non-inferior fails unless
        every treatment is non-inferior, equivalent or superior at the margin; worth-it fails
        unless every treatment's net benefit at the value per solved item is above 0 (its
        interval's low end > 0); none never."""
        if gate == "worth-it":
            if self.cost is None:
                if self.parameters.get("value_per_solved") is None:
                    raise InputError(
                        "--gate worth-it needs a value per solved item",
                        hint="Add --value-per-solved V (what one more solved item is worth).",
                        parameters=["value_per_solved"],
                    )
                return "no cost to weigh the gain against (gate worth-it)"
            return self.cost.gate_failure()
        if gate == "non-inferior":
            if not self.pairs:
                return "there is no treatment to hold against the margin (gate non-inferior)"
            if any(p.margin is None for p in self.pairs):
                raise InputError(
                    "--gate non-inferior needs a margin",
                    hint="Add --margin M (on the compared quantity's scale) or --margin 2%.",
                    parameters=["margin"],
                )
            failing = [p for p in self.pairs if p.margin is not None and not p.margin.passes]
            if failing:
                names = ", ".join(
                    f"{p.comparison.treatment} {p.margin.decision}" for p in failing if p.margin
                )
                return f"not every treatment is non-inferior at the margin: {names}"
            return None
        if gate == "no-regress" and self.verdict is Verdict.REGRESS:
            return "the verdict is REGRESS (gate no-regress)"
        if gate == "ship" and self.verdict is not Verdict.PROGRESS:
            return f"the verdict is {self.verdict.value}, not PROGRESS (gate ship)"
        return None

    def to_frame(self, level: str = "pair") -> pd.DataFrame:
        """level "pair": one row per treatment (verdict, composite difference and interval);
        "component": one row per treatment and component (composite and each layer);
        "run": one row per variant (composite mean and interval, n); "task": one row per
        treatment and task (difference, interval, p-values, n, and how many samples moved);
        "sample": one row per treatment and paired sample (both values, the change, its
        direction and class, `calipers.verdicts.flips`)."""
        import pandas as pd

        if level == "task":
            return pd.DataFrame(self._task_rows())
        if level == "sample":
            frames = [p.flips.sample_frame() for p in self.pairs if p.flips is not None]
            return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        if level == "run":
            return pd.DataFrame(
                [
                    {"run": name, "n_samples": v.n_samples, "composite": v.composite.mean,
                     "low": v.composite.interval.low if v.composite.interval else None,
                     "high": v.composite.interval.high if v.composite.interval else None}
                    for name, v in self.variants.items()
                ]
            )  # fmt: skip
        rows = []
        for pair in self.pairs:
            c = pair.comparison
            parts = (
                {"composite": c.composite, **c.components}
                if level == "component"
                else {"composite": c.composite}
            )
            for name, d in parts.items():
                row: dict[str, Any] = {"control": c.control, "treatment": c.treatment}
                if level == "component":
                    row["component"] = name
                row.update(
                    verdict=pair.decision.verdict.value,
                    n_pairs=c.n_pairs,
                    **{k: d.to_dict().get(k) for k in ("estimate", "low", "high")},
                )
                rows.append(row)  # fmt: skip
        if level not in ("pair", "component"):
            raise InputError(
                f"unknown level '{level}' of a comparison",
                hint="Levels: pair, component, run, task, sample.",
            )
        return pd.DataFrame(rows)

    def _task_rows(self) -> list[dict[str, Any]]:
        rows = []
        for pair in self.pairs:
            c = pair.comparison
            moved = pair.flips.tasks if pair.flips is not None else {}
            for task, t in c.tasks.items():
                f = moved.get(task, {})
                rows.append({
                    "control": c.control, "treatment": c.treatment, "task": task,
                    "n": t.get("n"), "control_mean": t.get("control"),
                    "treatment_mean": t.get("treatment"), "difference": t.get("diff"),
                    "low": t.get("low"), "high": t.get("high"), "p_value": t.get("p_value"),
                    "p_adjusted": t.get("p_adjusted"), "moved": t.get("moved"),
                    "up": f.get("up"), "down": f.get("down"), "unchanged": f.get("unchanged"),
                    "regressions": f.get("n_regressions"),
                    "improvements": f.get("n_improvements"),
                })  # fmt: skip
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": COMPARE_SCHEMA_VERSION,
            "kind": "compare",
            "scheme": self.scheme,
            "source": self.origin,
            "parameters": self.parameters,
            "control": self.control,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "badges": self.badges,
            "seed": self.seed,
            "n_resamples": self.parameters["n_resamples"],
            "variants": {k: v.to_dict() for k, v in self.variants.items()},
            "pairs": [p.to_dict() for p in self.pairs],
            "flips": [p.flips.to_dict() for p in self.pairs if p.flips is not None],
            "notes": self.notes,
            **({"cost": self.cost.to_dict()} if self.cost is not None else {}),
        }


def check_runs(available: list[str], origin: str, control: str, treatments: list[str]) -> None:
    """Every run named exists, and none twice."""
    wanted = [control, *treatments]
    missing = [r for r in wanted if r not in available]
    if missing:
        raise InputError(
            f"run(s) not found in {origin}: {', '.join(missing)}",
            hint=f"Runs there: {', '.join(available)}.",
            parameters=["baseline", "candidates"],
        )
    if len(set(wanted)) != len(wanted):
        raise InputError(
            "a run is named twice among `baseline` and `candidates`",
            parameters=["baseline", "candidates"],
        )


def compare_staged(
    staged: StagedScores,
    *,
    scheme: str,
    origin: str,
    control: str,
    treatments: list[str],
    scheme_options: dict[str, Any] | None,
    threshold: float | None,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    trivial_diff: float | None = None,
    min_effect: float | None = None,
    interval: str = "auto",
    cluster: str = "auto",
    margin: Margin | str | float | None = None,
    equivalence: bool = False,
    by_task: bool | None = None,
    adjust: str = "holm",
) -> CompareResult:
    """Compare `control` with each of `treatments` (none: a SOLO report on the control) on the
    per-sample components `staged` holds for all of them. `trivial_diff` and `min_effect` are on
    the composite's scale; None takes TRIVIAL_FRACTION and MIN_EFFECT_FRACTION of its span.
    `margin` adds a decision per pair (`calipers.verdicts.margin`); `by_task` tests each task's
    difference, adjusted by `adjust` (None: when there are several tasks). `cluster` is the
    independent unit (`resolve_cluster`: auto clusters by group when every sample names one)."""
    margin_spec = None if margin is None else parse_margin(margin)
    if equivalence and margin_spec is None:
        raise InputError(
            "--equivalence needs a margin", hint="Add --margin M.", parameters=["margin"]
        )
    adjust_p([], adjust)  # an unknown adjustment is an error before any work
    wanted = [control, *treatments]
    choice = resolve_cluster([staged.fetch(run) for run in wanted], cluster)
    cluster = choice.cluster
    k = max(1, len(treatments))
    pair_confidence = 1.0 - (1.0 - confidence_level) / k
    z = z_from_confidence(confidence_level)
    gate = (DEFAULT_THRESHOLD if threshold is None else threshold) if staged.gated else None
    # Analytic intervals cost microseconds; a bootstrap (--interval percentile or bca) spends its
    # time in numpy's sampler, which releases the GIL: over large runs the run summaries and the
    # pairs run side by side (small ones one after another: `calipers.verdicts.threads`). Each
    # has its own seeded generator, so results do not depend on the scheduling.
    # The pairs are submitted first: one pair (its intervals, per-task differences, MDE) takes
    # longer than a run's summary, and on two workers a pair queued behind a summary ran after
    # it — 2 × 1M metric samples (py-spy, load 4): a summary then the pair on one worker, 9.3 s,
    # while the other worker's summary was done at 4.3 s.
    rows = sum(staged.fetch(run).sid.size for run in wanted) / len(wanted)
    with parts_runner(rows, workers=min(4, os.cpu_count() or 1)) as pool:
        comparisons = [
            pool.submit(
                compare_pair,
                staged,
                control,
                treatment,
                confidence_level=pair_confidence,
                n_resamples=n_resamples,
                seed=seed,
                interval=interval,
                cluster=cluster,
                threshold=gate,
                by_task=by_task,
                adjust=adjust,
                bounds=staged.bounds,
            )
            for treatment in treatments
        ]
        summaries = {
            run: pool.submit(
                summarize_run,
                staged,
                staged.fetch(run),
                threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
                confidence_level=confidence_level,
                n_resamples=n_resamples,
                seed=seed,
                z=z,
                component_intervals=False,
                interval=interval,
                cluster=cluster,
            )
            for run in wanted
        }
        variants = {run: future.result() for run, future in summaries.items()}
        paired = [future.result() for future in comparisons]
    span, scale_source = composite_scale(staged, wanted)
    if margin_spec is not None and margin_spec.percent and span is None:
        raise InputError(
            f"a margin in % ({margin_spec}) needs the scale's width, and {scale_source}",
            hint="Give the margin on the value's own scale (--margin 0.05), or --bounds.",
            parameters=["margin", "bounds"],
        )
    limits = Thresholds(
        min_effect=(
            min_effect
            if min_effect is not None
            else None
            if span is None
            else MIN_EFFECT_FRACTION * span
        ),
        trivial_diff=(
            trivial_diff
            if trivial_diff is not None
            else 0.0
            if span is None
            else TRIVIAL_FRACTION * span
        ),
        threshold=gate,
        span=span,
        use_cv=staged.gated,
    )
    parameters = {
        **(scheme_options or {}),
        "threshold": threshold if staged.gated else None,
        "confidence_level": confidence_level,
        "pair_confidence_level": pair_confidence,
        "n_resamples": n_resamples,
        "seed": seed,
        "interval": interval,
        "cluster": cluster,
        "cluster_reason": choice.reason,
        "scale_span": span,
        "scale_source": scale_source,
        "bounds": None if staged.bounds is None else list(staged.bounds),
        "trivial_diff": limits.trivial_diff,
        "min_effect": limits.min_effect,
        "margin": None if margin_spec is None else margin_spec.on_scale(span or 0.0),
        "margin_given": None if margin_spec is None else str(margin_spec),
        "equivalence": equivalence,
        "adjust": adjust,
        "policy": "gates",
    }
    notes = list(staged.notes) + ([choice.note] if choice.note else [])
    notes += peek_notes(staged, control, treatments)
    if not treatments:
        return CompareResult(
            scheme, origin, parameters, control, variants, [], Verdict.SOLO,
            f"only '{control}' is given: nothing to compare against (add --treatment RUN)",
            {}, notes,
        )  # fmt: skip
    # what the value is called in the verdict's words: the metric scheme's metric by its name
    label = str((scheme_options or {}).get("metric") or "composite")
    pairs = []
    for comparison in paired:
        treatment = comparison.treatment
        c, t = variants[control], variants[treatment]
        decision = decide(comparison, c, t, gated=staged.gated, limits=limits, label=label)
        held = None
        if margin_spec is not None:
            held = decide_margin(
                comparison.composite, margin_spec.on_scale(span or 0.0), given=str(margin_spec),
                equivalence=equivalence, confidence_level=pair_confidence,
            )  # fmt: skip
        pairs.append(
            PairResult(
                comparison,
                1.0 - pair_confidence,
                decision,
                badges(comparison, c, t, judged=staged.gated),
                held,
            )
        )
        if comparison.composite.monte_carlo_uncertain:
            notes.append(
                f"{treatment}: a bound of the composite interval is within Monte Carlo error of 0; "
                "whether it is significant could change with another seed (raise --n-resamples)"
            )
    worst = max(pairs, key=lambda p: SEVERITY[p.decision.verdict])
    reason = worst.decision.reason
    if len(pairs) > 1:
        reason = (
            f"{worst.comparison.treatment} vs {control}: {reason} (worst of {len(pairs)} pairs)"
        )
    return CompareResult(
        scheme, origin, parameters, control, variants, pairs,
        worst.decision.verdict, reason, worst.badges, notes,
    )  # fmt: skip


def peek_notes(staged: StagedScores, control: str, treatments: list[str]) -> list[str]:
    """A note per candidate that lacks samples the baseline has: most often a run still going.
    A fixed-n verdict read again and again as a run grows is wrong far more often than its α
    (17% over ten looks on identical pass/fail systems, issue 36); `calipers watch` is the
    comparison that stays valid at every look."""
    # the sample codes are dense: marks, not sorts (0.01 s over 2 × 1M rows, not 1 s)
    width = 1 + max(int(staged.fetch(r).sid.max(initial=-1)) for r in [control, *treatments])
    have = np.zeros(width, dtype=bool)
    have[staged.fetch(control).sid] = True
    n_have = int(np.count_nonzero(have))
    notes = []
    for treatment in treatments:
        seen = np.zeros(width, dtype=bool)
        seen[staged.fetch(treatment).sid] = True
        got = int(np.count_nonzero(have & seen))
        if got < n_have:
            notes.append(
                f"{treatment} has {got} of the {n_have} samples of {control}: if it is still "
                "running, this verdict is a peek, and comparing again as it grows gives false "
                "verdicts far more often than α; `calipers watch` decides as the data arrives, "
                "valid at every look (docs/sequential.md)"
            )
    return notes


def composite_scale(staged: StagedScores, runs: list[str]) -> tuple[float | None, str]:
    """The width of the composite's scale and where it came from: the declared bounds (scheme,
    importer, user), a width the scheme declares, or 1 when every value is 0 or 1 (pass/fail);
    otherwise None — never the observed range, which one outlier would set
    (`calipers.data.metric_scales`)."""
    if staged.bounds is not None:
        return staged.bounds[1] - staged.bounds[0], staged.bounds_source or "declared bounds"
    if staged.span is not None:
        return staged.span, staged.bounds_source or "declared by the scheme"
    values = [staged.composite(r) for r in runs]
    finite = np.concatenate([v[np.isfinite(v)] for v in values]) if values else np.zeros(0)
    if finite.size and bool(np.all((finite == 0) | (finite == 1))):
        return 1.0, "every value is 0 or 1: a pass/fail outcome"
    return None, staged.bounds_source or (
        "no bounds are declared: the value is treated as unbounded and no scale is read from "
        "the data (declare them with --bounds LOW,HIGH)"
    )


def scale_span(staged: StagedScores, runs: list[str]) -> float | None:
    """The width of the composite's scale (None: unbounded, none declared)."""
    return composite_scale(staged, runs)[0]
