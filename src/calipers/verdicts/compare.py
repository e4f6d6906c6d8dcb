"""`compare`: one control against one or more treatments, each pair paired and decided, and the
roll-up over pairs. The one library call behind `calipers compare --scheme layered|metric`."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from calipers.data.source import SampleSet
from calipers.errors import InputError
from calipers.schemes import get_scheme
from calipers.schemes.base import SCHEMA_VERSION, ComparableScheme
from calipers.schemes.layered import DEFAULT_THRESHOLD
from calipers.schemes.persample import RunSummary, summarize_run
from calipers.stats import DEFAULT_SEED, z_from_confidence
from calipers.verdicts.gates import (
    DEFAULT_TRIVIAL_DIFF,
    SEVERITY,
    Decision,
    Verdict,
    badges,
    decide,
)
from calipers.verdicts.paired import PairedComparison, compare_pair


@dataclass
class PairResult:
    comparison: PairedComparison
    alpha: float  # family α split over the treatments (Bonferroni)
    decision: Decision
    badges: dict[str, Any]

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
            "alpha": self.alpha,
            "confidence_level": c.confidence_level,
            "composite": c.composite.to_dict(),
            "layers": {n: d.to_dict() for n, d in c.components.items()},
            "mde": c.mde,
            "hotelling": c.hotelling.to_dict() if c.hotelling else None,
            "badges": self.badges,
            "tasks": c.tasks,
            "notes": c.notes,
        }


@dataclass
class CompareResult:
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

    @property
    def seed(self) -> int:
        return int(self.parameters["seed"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
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
            "notes": self.notes,
        }


def compare(
    samples: SampleSet,
    *,
    scheme: str,
    control: str,
    treatments: list[str] | tuple[str, ...] = (),
    scheme_options: dict[str, Any] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = DEFAULT_SEED,
    trivial_diff: float = DEFAULT_TRIVIAL_DIFF,
) -> CompareResult:
    """Compare `control` with each of `treatments` (none: a SOLO report on the control)."""
    impl = get_scheme(scheme)
    if not isinstance(impl, ComparableScheme):
        raise InputError(
            f"scheme '{scheme}' does not pair samples across runs",
            hint="Compare with --scheme layered or --scheme metric.",
        )
    if not 0.0 < confidence_level < 1.0:
        raise InputError(f"--confidence must be in (0, 1), got {confidence_level}")
    runs = samples.runs()
    wanted = [control, *treatments]
    missing = [r for r in wanted if r not in runs]
    if missing:
        raise InputError(
            f"run(s) not found in {samples.origin}: {', '.join(missing)}",
            hint=f"Runs there: {', '.join(runs)}.",
        )
    if len(set(wanted)) != len(wanted):
        raise InputError("a run is named twice among --control and --treatment")
    return _compare(samples, impl, scheme, control, list(treatments), scheme_options,
                    threshold, confidence_level, n_resamples, seed, trivial_diff)  # fmt: skip


def _compare(
    samples: SampleSet,
    impl: ComparableScheme,
    scheme: str,
    control: str,
    treatments: list[str],
    scheme_options: dict[str, Any] | None,
    threshold: float,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    trivial_diff: float,
) -> CompareResult:
    wanted = [control, *treatments]
    staged = impl.stage(samples, wanted, **(scheme_options or {}))
    k = max(1, len(treatments))
    pair_confidence = 1.0 - (1.0 - confidence_level) / k
    z = z_from_confidence(confidence_level)
    # Bootstraps spend their time in numpy's binomial sampler, which releases the GIL: the run
    # summaries and the pairs run side by side. Each has its own seeded generator, so results do
    # not depend on the scheduling.
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        summaries = {
            run: pool.submit(
                summarize_run,
                staged,
                staged.fetch(run),
                threshold=threshold,
                confidence_level=confidence_level,
                n_resamples=n_resamples,
                seed=seed,
                z=z,
                component_intervals=False,
            )
            for run in wanted
        }
        comparisons = [
            pool.submit(
                compare_pair,
                staged,
                control,
                treatment,
                confidence_level=pair_confidence,
                n_resamples=n_resamples,
                seed=seed,
            )
            for treatment in treatments
        ]
        variants = {run: future.result() for run, future in summaries.items()}
        paired = [future.result() for future in comparisons]
    parameters = {
        **(scheme_options or {}),
        "threshold": threshold if staged.gated else None,
        "confidence_level": confidence_level,
        "pair_confidence_level": pair_confidence,
        "n_resamples": n_resamples,
        "seed": seed,
        "trivial_diff": trivial_diff,
        "min_pairs": 20,
        "policy": "gates",
    }
    notes = list(staged.notes)
    if not treatments:
        return CompareResult(
            scheme, samples.origin, parameters, control, variants, [], Verdict.SOLO,
            f"only '{control}' is given: nothing to compare against (add --treatment RUN)",
            {}, notes,
        )  # fmt: skip
    pairs = []
    for comparison in paired:
        treatment = comparison.treatment
        c, t = variants[control], variants[treatment]
        decision = decide(
            comparison, c, t, gated=staged.gated, trivial_diff=trivial_diff, use_cv=staged.gated
        )
        pairs.append(
            PairResult(comparison, 1.0 - pair_confidence, decision, badges(comparison, c, t))
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
        scheme, samples.origin, parameters, control, variants, pairs,
        worst.decision.verdict, reason, worst.badges, notes,
    )  # fmt: skip
