"""The layered scheme: fact / behavior / judge layers on 1–5, their composite, layer gates, and the
six-verdict paired comparison. `PairedScheme` is the part it shares with the metric scheme: the
paired engine as comparator, and the views of summaries and comparisons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from calipers.schemes.base import BootstrapOptions, ComparableScheme
from calipers.schemes.layered import html, terminal
from calipers.schemes.layered.scoring import (
    LAYERS,
    SummaryResult,
    parse_weights,
    stage_layers,
    summarize,
)
from calipers.schemes.registry import register
from calipers.verdicts.compare import CompareResult, check_runs, compare_staged
from calipers.verdicts.gates import DEFAULT_THRESHOLD, DEFAULT_TRIVIAL_DIFF
from calipers.verdicts.persample import StagedScores

if TYPE_CHECKING:
    from rich.console import Console

    from calipers.data.sampleset import SampleSet

__all__ = ["LAYERS", "LayeredScheme", "PairedScheme", "SummaryResult", "parse_weights"]


class PairedScheme(ComparableScheme):
    """A scheme whose comparator is the paired engine (`calipers.verdicts.compare`)."""

    def stage_parameters(self, options: Any) -> dict[str, Any]:
        """The scheme's own options as the comparison report records them."""
        return {}

    def compare(
        self, samples: SampleSet, *, baseline: str, candidates: list[str], **options: Any
    ) -> CompareResult:
        o = self.compare_options(**options)
        treatments = list(candidates)
        check_runs(samples.runs(), samples.origin, baseline, treatments)
        staged = self.stage(samples, [baseline, *treatments], o)
        return compare_staged(
            staged,
            scheme=self.name,
            origin=samples.origin,
            control=baseline,
            treatments=treatments,
            scheme_options=self.stage_parameters(o),
            threshold=getattr(o, "threshold", None),
            confidence_level=o.confidence_level,  # type: ignore[attr-defined]
            n_resamples=o.n_resamples,  # type: ignore[attr-defined]
            seed=o.seed,  # type: ignore[attr-defined]
            trivial_diff=o.trivial_diff,  # type: ignore[attr-defined]
        )

    def summary_parameters(self, options: Any) -> dict[str, Any]:
        """The scheme's own options as a score report records them."""
        return {}

    def compute(self, samples: SampleSet, options: Any) -> SummaryResult:
        """Per run: the composite and each component with their intervals."""
        runs = samples.runs()
        staged = self.stage(samples, runs, options)
        parameters = {
            **self.summary_parameters(options),
            "confidence_level": options.confidence_level,
            "n_resamples": options.n_resamples,
            "seed": options.seed,
        }
        return summarize(
            staged,
            runs,
            scheme=self.name,
            origin=samples.origin,
            parameters=parameters,
            threshold=getattr(options, "threshold", float("nan")),
            confidence_level=options.confidence_level,
            n_resamples=options.n_resamples,
            seed=options.seed,
        )

    def terminal(self, result: Any, console: Console, *, detail: bool = False) -> None:
        terminal.summary(result, console)

    def compare_terminal(self, result: Any, console: Console) -> None:
        terminal.comparison(result, console)

    def html_section(self, report: dict[str, Any]) -> dict[str, Any]:
        return html.summary_section(report)

    def compare_page(self, report: dict[str, Any]) -> str:
        return html.compare_page(report)


class LayeredOptions(BootstrapOptions):
    weights: str | Mapping[str, Any] | None = None  # "fact=2,judge=1" or a mapping
    standardize: bool = False  # z-score each layer before weighting
    threshold: float = DEFAULT_THRESHOLD  # the gate every present layer's mean must reach


class LayeredCompareOptions(LayeredOptions):
    trivial_diff: float = Field(default=DEFAULT_TRIVIAL_DIFF, ge=0)


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
        }
