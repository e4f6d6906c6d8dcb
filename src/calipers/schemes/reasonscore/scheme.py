"""The reasonscore scheme's declaration: its options, views and report schema; the numbers are
made in `scoring`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from calipers.data.sampleset import SampleSet
from calipers.schemes.base import Scheme, SchemeOptions
from calipers.schemes.reasonscore import html, scoring, terminal
from calipers.schemes.reasonscore.ordering import parse_tier_order
from calipers.schemes.reasonscore.scoring import ReasonScoreResult
from calipers.schemes.registry import register
from calipers.stats import DEFAULT_SEED

if TYPE_CHECKING:
    from rich.console import Console


class ReasonScoreOptions(SchemeOptions):
    z: float = Field(default=1.96, gt=0, allow_inf_nan=False)  # Wilson z (1.96: 95%)
    seed: int = Field(default=DEFAULT_SEED, ge=0)  # the rank intervals' bootstrap
    # tiers easiest first ("easy,medium,hard" or a list); None: the rules of `ordering`
    tier_order: tuple[str, ...] | None = None
    # with cost_usd: label the cheapest run shown within this margin of the best (`correct`)
    margin: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)

    @field_validator("tier_order", mode="before")
    @classmethod
    def _tier_order(cls, value: Any) -> tuple[str, ...] | None:
        return parse_tier_order(value)


@register
class ReasonScore(Scheme):
    name = "reasonscore"
    description = "ReasonScore: Wilson on guessing-corrected counts, geometric mean, score/token"
    required_fields = ("run", "task", "correct")
    higher_is_better = True
    Options = ReasonScoreOptions
    report_schema = "reasonscore"
    ranks_runs = True

    def compute(self, samples: SampleSet, options: ReasonScoreOptions) -> ReasonScoreResult:
        return scoring.score_samples(samples, options, name=self.name)

    def terminal(self, result: Any, console: Console, *, detail: bool = False) -> None:
        terminal.reasonscore_leaderboard(result, console)
        if detail:
            terminal.reasonscore_tasks(result, console)

    def html_section(self, report: dict[str, Any]) -> dict[str, Any]:
        return html.reasonscore_section(report)
