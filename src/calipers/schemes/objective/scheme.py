"""The objective scheme's declaration: its options, its comparator (the verdict and the promotion
gate), views and report schemas; the numbers are made in `scoring` and `verdict`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from calipers.data.sampleset import SampleSet
from calipers.errors import InputError
from calipers.schemes.base import BootstrapOptions, Scheme, SchemeOptions
from calipers.schemes.objective import html, scoring, terminal
from calipers.schemes.objective.costs import objective_cost
from calipers.schemes.objective.scoring import COST_WEIGHT, W_JUDGE, W_OBJ, ObjectiveResult
from calipers.schemes.objective.verdict import compare_objective, load_settings
from calipers.schemes.registry import register
from calipers.stats import DEFAULT_SEED
from calipers.verdicts.base import Comparison

if TYPE_CHECKING:
    from rich.console import Console


class ObjectiveCompareOptions(BootstrapOptions):
    """The comparison's thresholds and weights: from `config` (YAML or JSON), then the ones given
    here on top (None: the config's, else the default)."""

    config: Path | None = None
    min_composite_gain: float | None = None
    regression_composite_drop: float | None = None
    objective_drop_is_regression: bool | None = None
    w_obj: float | None = None
    w_judge: float | None = None
    cost_weight: float | None = None


class ObjectiveOptions(SchemeOptions):
    baseline: str | None = None  # cost adjustments against this run's tasks
    w_obj: float = Field(default=W_OBJ, gt=0, allow_inf_nan=False)
    w_judge: float = Field(default=W_JUDGE, ge=0, allow_inf_nan=False)
    cost_weight: float = Field(default=COST_WEIGHT, ge=0, allow_inf_nan=False)
    # with cost_usd: label the cheapest run shown within this margin of the best (on base)
    margin: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    seed: int = Field(default=DEFAULT_SEED, ge=0)  # the labels' bootstrap


@register
class ObjectiveScheme(Scheme):
    name = "objective"
    description = "objective checks, judge and cost in one [0, 1] composite per task"
    required_fields = ("assertions",)
    higher_is_better = True
    Options = ObjectiveOptions
    CompareOptions = ObjectiveCompareOptions
    report_schema = "objective"
    compare_report_schema = "objective-compare"

    def compute(self, samples: SampleSet, options: ObjectiveOptions) -> ObjectiveResult:
        """The composites, and beside them the cost per unit of base (`costs`)."""
        result = scoring.score_samples(samples, options, name=self.name)
        weights = scoring.Weights(options.w_obj, options.w_judge, options.cost_weight)
        result.cost = objective_cost(
            samples, list(result.tasks), weights, margin=options.margin, seed=options.seed
        )
        if options.margin is not None:
            result.parameters["margin"] = options.margin
        return result

    def terminal(self, result: Any, console: Console, *, detail: bool = False) -> None:
        terminal.task_scores(result, console)

    def html_section(self, report: dict[str, Any]) -> dict[str, Any]:
        return html.objective_section(report)

    def compare(
        self, samples: SampleSet, *, baseline: str, candidates: list[str], **options: Any
    ) -> Comparison:
        """One candidate against the baseline: per-task composite deltas, hard regressions, the
        verdict and the promote decision."""
        o = self.compare_options(**options)
        assert isinstance(o, ObjectiveCompareOptions)
        if len(candidates) != 1:
            raise InputError(
                f"the objective scheme compares one candidate with the baseline, "
                f"got {len(candidates)}",
                hint="Give exactly one run in `candidates`.",
                parameters=["candidates"],
            )
        overrides = o.model_dump(exclude={"config", "confidence_level", "n_resamples", "seed"})
        settings = load_settings(o.config, **overrides)
        return compare_objective(
            samples, baseline=baseline, candidate=candidates[0], settings=settings,
            confidence_level=o.confidence_level, n_resamples=o.n_resamples, seed=o.seed,
        )  # fmt: skip

    def compare_terminal(self, result: Any, console: Console) -> None:
        terminal.comparison(result, console)

    def compare_page(self, report: dict[str, Any]) -> str:
        return html.objective_compare_page(report)
