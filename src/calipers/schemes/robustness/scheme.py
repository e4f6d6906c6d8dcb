"""The robustness scheme's declaration: its options, views and report schema; the numbers are
made in `scoring`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from calipers.schemes.base import BootstrapOptions, Scheme
from calipers.schemes.registry import register
from calipers.schemes.robustness import html, scoring, terminal
from calipers.schemes.robustness.scoring import RobustnessResult

if TYPE_CHECKING:
    from rich.console import Console

    from calipers.data.sampleset import SampleSet  # DuckDB: not loaded by `check`, which needs none


@register
class RobustnessScheme(Scheme):
    name = "robustness"
    description = "invariance, sensitivity and K under perturbed inputs, as kelvin"
    required_fields = ("perturbation", "decision")
    higher_is_better = True
    Options = BootstrapOptions
    report_schema = "robustness"
    no_tasks = "the robustness scheme scores cases, not tasks; its table shows every case"

    def compute(self, samples: SampleSet, options: BootstrapOptions) -> RobustnessResult:
        return scoring.score_samples(samples, options, name=self.name)

    def terminal(self, result: Any, console: Console, *, detail: bool = False) -> None:
        terminal.robustness_report(result, console)

    def html_section(self, report: dict[str, Any]) -> dict[str, Any]:
        return html.robustness_section(report)
