"""The layered scheme: fact / behavior / judge layers on 1–5, their composite, layer gates, and the
six-verdict paired comparison. `PairedScheme` is the part it shares with the metric scheme: the
paired engine as comparator, and the views of summaries and comparisons."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent import futures
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field

from calipers.data.model import CLUSTERS
from calipers.errors import InputError
from calipers.schemes.base import BootstrapOptions, ComparableScheme
from calipers.schemes.layered import html, leaderboard, terminal
from calipers.schemes.layered.scoring import (
    LAYERS,
    SummaryResult,
    parse_weights,
    stage_layers,
    summarize,
)
from calipers.schemes.registry import register
from calipers.stats.estimate import INTERVAL_METHODS
from calipers.verdicts.by_task import ADJUSTMENTS
from calipers.verdicts.compare import CompareResult, check_runs, compare_staged, scale_span
from calipers.verdicts.cost import analyse_cost
from calipers.verdicts.cost_figures import CostComparison
from calipers.verdicts.flips import LISTED, PairFlips, pair_flips
from calipers.verdicts.gates import DEFAULT_THRESHOLD
from calipers.verdicts.judge_calibration import calibrate_pair, calibrate_run
from calipers.verdicts.missing_bounds import ERRORS, score_errors_worst
from calipers.verdicts.persample import StagedScores, resolve_cluster
from calipers.verdicts.planning import Design
from calipers.verdicts.threads import parts_runner

if TYPE_CHECKING:
    from rich.console import Console

    from calipers.data.sampleset import SampleSet
    from calipers.verdicts.sequential_compare import SequentialComparison

__all__ = [
    "LAYERS", "LayeredScheme", "PairedCompareOptions", "PairedOptions", "PairedScheme",
    "SummaryResult", "parse_weights",
]  # fmt: skip


def _planning_scale(staged: StagedScores, runs: list[str]) -> float:
    """The scale the planner searches effects on: the declared width; for an unbounded value with
    none declared, ten standard deviations of the baseline's per-sample values (the search range
    of the effect the design detects, not a scale for margins or trivial differences)."""
    span = scale_span(staged, runs)
    if span is not None:
        return span
    values = staged.composite(runs[0])
    sd = float(np.nanstd(values)) if np.isfinite(values).sum() > 1 else 0.0
    return 10.0 * sd if sd > 0 else 1.0


class PairedScheme(ComparableScheme):
    """A scheme whose comparator is the paired engine (`calipers.verdicts.compare`)."""

    ranks_runs = True  # by the mean (metric) or the composite (layered), with rank intervals

    def stage_parameters(self, options: Any) -> dict[str, Any]:
        """The scheme's own options as the comparison report records them."""
        return {}

    def compare(
        self,
        samples: SampleSet,
        *,
        baseline: str,
        candidates: list[str],
        cost: bool = True,
        **options: Any,
    ) -> CompareResult:
        """`cost` False leaves the cost section out (`result.cost` None): for a view that does
        not show it — its bootstraps can be most of a comparison's time — with `cost_of` to add
        it when one does."""
        o = self.compare_options(**options)
        treatments = list(candidates)
        staged = self._staged(samples, baseline, treatments, o)
        errors = o.errors  # type: ignore[attr-defined]
        # The flips (the samples that changed, with their text) need none of the comparison's
        # figures, only the pair's α, as `compare_staged` splits the family's over the
        # candidates: they run beside it (their DuckDB calls take the connection's lock; 2 × 1M
        # metric samples: about 1 s of the main thread after the comparison, 2026-11-27);
        # over small runs first, in this thread (`calipers.verdicts.threads`).
        k = max(1, len(treatments))
        alpha = 1.0 - (1.0 - (1.0 - o.confidence_level) / k)  # type: ignore[attr-defined]
        adjust, listed = o.adjust, o.flips  # type: ignore[attr-defined]
        rows = sum(staged.fetch(run).sid.size for run in [baseline, *treatments])
        with parts_runner(rows / (1 + len(treatments)), workers=2) as pool:
            flips = {
                treatment: pool.submit(
                    pair_flips, staged, samples, runs=[baseline, *treatments], control=baseline,
                    treatment=treatment, alpha=alpha, adjust=adjust, listed=listed, locked=True,
                )
                for treatment in treatments
            }  # fmt: skip
            result = compare_staged(
                staged,
                scheme=self.name,
                origin=samples.origin,
                control=baseline,
                treatments=treatments,
                scheme_options={**self.stage_parameters(o), "errors": errors},
                threshold=getattr(o, "threshold", None),
                confidence_level=o.confidence_level,  # type: ignore[attr-defined]
                n_resamples=o.n_resamples,  # type: ignore[attr-defined]
                seed=o.seed,  # type: ignore[attr-defined]
                trivial_diff=o.trivial_diff,  # type: ignore[attr-defined]
                min_effect=o.min_effect,  # type: ignore[attr-defined]
                interval=o.interval,  # type: ignore[attr-defined]
                cluster=o.cluster,  # type: ignore[attr-defined]
                margin=o.margin,  # type: ignore[attr-defined]
                equivalence=o.equivalence,  # type: ignore[attr-defined]
                by_task=o.by_task,  # type: ignore[attr-defined]
                adjust=o.adjust,  # type: ignore[attr-defined]
            )
            # the cost section queries the connection outside the lock: the flips end first
            futures.wait(list(flips.values()))
        result.parameters["value_per_solved"] = o.value_per_solved  # type: ignore[attr-defined]
        if cost:
            result.cost = self._cost(staged, samples, result, o)
        if getattr(o, "calibrate_judges", False):
            for pair in result.pairs:
                pair.judge_calibration = calibrate_pair(
                    staged.fetch(baseline), staged.fetch(pair.comparison.treatment),
                    cluster=result.parameters["cluster"],  # resolved (auto: group or sample_id)
                    confidence_level=o.confidence_level,  # type: ignore[attr-defined]
                )  # fmt: skip
        for pair in result.pairs:  # errors raised in the order of the serial steps
            found = flips[pair.comparison.treatment].result()
            if pair.alpha != alpha:  # the same expression: never; were it ever, the pair's α
                found = pair_flips(
                    staged, samples, runs=[baseline, *treatments], control=baseline,
                    treatment=pair.comparison.treatment, alpha=pair.alpha, adjust=adjust,
                    listed=listed,
                )  # fmt: skip
            pair.flips = found
        return result

    def _cost(
        self, staged: StagedScores, samples: SampleSet, result: CompareResult, o: Any
    ) -> CostComparison | None:
        """The cost section of `result` (`calipers.verdicts.cost`), from its staged runs."""
        return analyse_cost(
            staged,
            samples,
            control=result.control,
            treatments=[p.comparison.treatment for p in result.pairs],
            cluster=result.parameters["cluster"],
            confidence_level=o.confidence_level,
            pair_confidence_level=result.parameters["pair_confidence_level"],
            value_per_solved=o.value_per_solved,
            label=str(self.stage_parameters(o).get("metric") or "composite"),
            seed=o.seed,
        )

    def cost_of(self, samples: SampleSet, result: CompareResult, **options: Any) -> None:
        """Add to `result`, made with `cost=False` from `samples` and these `options`, the cost
        section `compare` would have given it."""
        o = self.compare_options(**options)
        treatments = [p.comparison.treatment for p in result.pairs]
        result.cost = self._cost(self._staged(samples, result.control, treatments, o),
                                 samples, result, o)  # fmt: skip

    def _staged(
        self, samples: SampleSet, baseline: str, treatments: list[str], o: Any
    ) -> StagedScores:
        """The compared runs staged, errors scored as `errors` says."""
        check_runs(samples.runs(), samples.origin, baseline, treatments)
        staged: StagedScores = self.stage(samples, [baseline, *treatments], o)
        if o.errors == "worst":  # a system error that left no outcome is the worst outcome
            score_errors_worst(staged)
        return staged

    def flips(
        self, samples: SampleSet, *, baseline: str, candidate: str, **options: Any
    ) -> PairFlips:
        """The flips of `candidate` against `baseline`, as a comparison of the two runs finds
        them (`compare(...).flips[candidate]`, the same options), without the rest of the
        comparison: over 2 × 1M samples the runs' summaries and the paired intervals are most
        of a comparison's time, and the flips need none of them."""
        o = self.compare_options(**options)
        staged = self._staged(samples, baseline, [candidate], o)
        # the pair's α, as `compare_staged` splits the family's over one candidate
        alpha = 1.0 - (1.0 - (1.0 - o.confidence_level))  # type: ignore[attr-defined]
        return pair_flips(
            staged, samples, runs=[baseline, candidate], control=baseline, treatment=candidate,
            alpha=alpha, adjust=o.adjust, listed=o.flips,  # type: ignore[attr-defined]
        )  # fmt: skip

    def watch(
        self,
        samples: SampleSet,
        *,
        baseline: str,
        candidates: list[str],
        design: str = "sequence",
        n_planned: int | None = None,
        order: str = "arrival",
        every: int = 1,
        **options: Any,
    ) -> SequentialComparison:
        """The sequential comparison of `candidates` with `baseline`: the units (samples with
        their epochs, or groups) in `order`, looked at after every `every` of them under
        `design` (`calipers.verdicts.sequential`); valid however often it is looked at."""
        # Imported here: the sequential engine (and scipy.special) is 0.3–0.4 s of imports that
        # every other use of the scheme (scoring, compare, staging for ReasonScore) does without.
        from calipers.verdicts.sequential import decide_sequentially, parse_design
        from calipers.verdicts.sequential_compare import SequentialComparison, watch_parameters
        from calipers.verdicts.sequential_units import paired_units

        o = self.compare_options(**options)
        treatments = list(candidates)
        if not treatments:
            raise InputError(
                "watch needs a candidate to compare with the baseline",
                hint="Add --candidate RUN.",
                parameters=["candidates"],
            )
        check_runs(samples.runs(), samples.origin, baseline, treatments)
        staged = self.stage(samples, [baseline, *treatments], o)
        if o.errors == "worst":  # type: ignore[attr-defined]
            score_errors_worst(staged)
        choice = resolve_cluster(
            [staged.fetch(r) for r in [baseline, *treatments]],
            o.cluster,  # type: ignore[attr-defined]
        )
        seed = o.seed  # type: ignore[attr-defined]
        units = paired_units(
            staged, samples, control=baseline, treatments=treatments, cluster=choice.cluster,
            order=order, seed=seed, by_task=bool(o.by_task),  # type: ignore[attr-defined]
        )  # fmt: skip
        plan = parse_design(design, n_planned=n_planned)
        result = decide_sequentially(
            units,
            design=plan,
            margin=o.margin,  # type: ignore[attr-defined]
            higher_is_better=self.higher_is_better,
            every=every,
            equivalence=o.equivalence,  # type: ignore[attr-defined]
            min_effect=o.min_effect,  # type: ignore[attr-defined]
        )
        parameters = watch_parameters(
            self.stage_parameters(o), design=design, n_planned=n_planned, order=order,
            seed=seed, every=every, cluster=choice, bounds=staged.bounds,
            bounds_source=staged.bounds_source, by_task=bool(o.by_task),  # type: ignore[attr-defined]
            margin=o.margin,  # type: ignore[attr-defined]
        )  # fmt: skip
        notes = list(staged.notes) + ([choice.note] if choice.note else [])
        return SequentialComparison(self.name, samples.origin, parameters, result, notes)

    def plan(
        self,
        samples: SampleSet,
        *,
        baseline: str,
        candidate: str | None,
        correlation: float,
        epochs: int | None,
        **options: Any,
    ) -> Design:
        """The design of a comparison measured on `baseline` (and a pilot `candidate`)."""
        o = self.compare_options(**options)
        runs = [baseline, *([candidate] if candidate else [])]
        check_runs(samples.runs(), samples.origin, baseline, runs[1:])
        staged = self.stage(samples, runs, o)
        return Design.from_runs(
            staged,
            baseline,
            candidate,
            cluster=o.cluster,  # type: ignore[attr-defined]
            correlation=correlation,
            epochs=epochs,
            scale=_planning_scale(staged, runs),
        )

    def summary_parameters(self, options: Any) -> dict[str, Any]:
        """The scheme's own options as a score report records them."""
        return {}

    def compute(self, samples: SampleSet, options: Any) -> SummaryResult:
        """Per run: the composite and each component with their intervals. A run with no value
        at all (a run without the metric, or without any layer) is listed as lacking it, not
        scored or ranked, as long as another run has values."""
        runs = samples.runs()
        return self.compute_staged(samples, options, runs, self.stage(samples, runs, options))

    def compute_staged(
        self, samples: SampleSet, options: Any, runs: list[str], staged: StagedScores
    ) -> SummaryResult:
        """`compute` from `runs` (`samples.runs()`) already staged as `stage(samples, runs,
        options)` stages them: `calipers view` ranks the same runs again with other intervals,
        confidence or seed without staging them again (about a third of such a leaderboard)."""
        scored = [run for run in runs if np.isfinite(staged.composite(run)).any()]
        lacking = [run for run in runs if run not in scored] if scored else []
        runs = scored or runs  # none scored: summarize says which run has no value
        parameters = {
            **self.summary_parameters(options),
            "confidence_level": options.confidence_level,
            "n_resamples": options.n_resamples,
            "seed": options.seed,
            "interval": options.interval,
            "cluster": options.cluster,
        }
        result = summarize(
            staged,
            runs,
            scheme=self.name,
            origin=samples.origin,
            parameters=parameters,
            threshold=getattr(options, "threshold", float("nan")),
            confidence_level=options.confidence_level,
            n_resamples=options.n_resamples,
            seed=options.seed,
            interval=options.interval,
            cluster=options.cluster,
        )
        if lacking:
            what = (f"the metric '{options.metric}'" if self.name == "metric"
                    else "a score in any layer")  # fmt: skip
            result.lacking = lacking
            result.notes.append(
                f"not scored or ranked: {', '.join(lacking)} (no sample has {what})"
            )
        if getattr(options, "calibrate_judges", False):
            result.judge_calibration = {
                run: calibrate_run(staged.fetch(run), cluster=result.parameters["cluster"],
                                   confidence_level=options.confidence_level)
                for run in runs
            }  # fmt: skip
        return result

    def terminal(self, result: Any, console: Console, *, detail: bool = False) -> None:
        terminal.summary(result, console, detail=detail)

    def leaderboard_terminal(self, result: Any, console: Console) -> None:
        leaderboard.leaderboard(result, console)

    def compare_terminal(self, result: Any, console: Console) -> None:
        terminal.comparison(result, console)

    def html_section(self, report: dict[str, Any]) -> dict[str, Any]:
        return html.summary_section(report)

    def compare_page(self, report: dict[str, Any]) -> str:
        return html.compare_page(report)


class PairedOptions(BootstrapOptions):
    """How the comparable schemes make intervals: the method (`auto` picks by the kind of data)
    and the independent unit (a sample with its epochs, a group, a task; `auto`: by group when
    every sample names one, else by sample — `calipers.verdicts.persample.resolve_cluster`)."""

    interval: Literal[INTERVAL_METHODS] = "auto"  # type: ignore[valid-type]
    cluster: Literal[CLUSTERS] = "auto"  # type: ignore[valid-type]


class LayeredOptions(PairedOptions):
    weights: str | Mapping[str, Any] | None = None  # "fact=2,judge=1" or a mapping
    # correct the judge layer by the human-labelled samples (PPI++, docs/judges.md)
    calibrate_judges: bool = False
    standardize: bool = False  # z-score each layer before weighting
    threshold: float = DEFAULT_THRESHOLD  # the gate every present layer's mean must reach


class PairedCompareOptions(PairedOptions):
    """What a paired comparison decides with, beyond the intervals (docs/decisions.md)."""

    trivial_diff: float | None = Field(default=None, ge=0)  # composite's scale; None: a fraction
    min_effect: float | None = Field(default=None, gt=0)
    margin: str | float | None = None  # "0.05" or "2%" of the scale: a decision per pair
    equivalence: bool = False  # with a margin: two one-sided tests
    by_task: bool | None = None  # per-task tests; None: when there are several tasks
    adjust: Literal[ADJUSTMENTS] = "holm"  # type: ignore[valid-type]
    # a sample whose `error` is set and has no score: a missing outcome, bounded (missing), or
    # the scale's low bound (worst) — `calipers.verdicts.missing_bounds`
    errors: Literal[ERRORS] = "missing"  # type: ignore[valid-type]
    # regressions, and improvements, per pair listed with their text (`calipers.verdicts.flips`;
    # the counts always cover every sample)
    flips: int = Field(default=LISTED, ge=0)
    # what one more solved item (one more unit of the outcome) is worth, in the cost's currency:
    # the net benefit per item and `--gate worth-it` (`calipers.verdicts.cost`, docs/cost.md)
    value_per_solved: float | None = Field(default=None, ge=0, allow_inf_nan=False)


class LayeredCompareOptions(LayeredOptions, PairedCompareOptions):
    pass


@register
class LayeredScheme(PairedScheme):
    name = "layered"
    description = "fact / behavior / judge layers on 1–5 and their mean"
    required_fields = ("assertions", "judgments")
    higher_is_better = True
    Options = LayeredOptions
    CompareOptions = LayeredCompareOptions
    report_schema = "layered"
    compare_report_schema = "compare"

    def stage(self, samples: SampleSet, runs: list[str], options: LayeredOptions) -> StagedScores:
        weights = parse_weights(options.weights)
        return stage_layers(samples, runs, weights=weights, standardize=options.standardize)

    def stage_parameters(self, options: LayeredOptions) -> dict[str, Any]:
        return {"weights": options.weights, "standardize": options.standardize}

    def summary_parameters(self, options: LayeredOptions) -> dict[str, Any]:
        return {
            "weights": parse_weights(options.weights),
            "standardize": options.standardize,
            "threshold": options.threshold,
            "calibrate_judges": options.calibrate_judges,
        }
