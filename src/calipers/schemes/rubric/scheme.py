"""The rubric scheme's declaration: its options (the rubric file, the history store), views,
report schema and its section of the store report; the numbers are made in `scoring`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from calipers.data.sampleset import SampleSet
from calipers.schemes.base import BootstrapOptions, Scheme
from calipers.schemes.registry import register
from calipers.schemes.rubric import html, scoring, terminal
from calipers.schemes.rubric.definition import Rubric
from calipers.schemes.rubric.history import history_series, record_in_history
from calipers.schemes.rubric.scoring import RubricResult

if TYPE_CHECKING:
    from rich.console import Console

    from calipers.data.store import Store


class RubricOptions(BootstrapOptions):
    rubric: str | Path | Rubric | None = None  # a rubric file; None: the packaged one
    # a store to record each evaluation in and flag it against (None: no history)
    history: str | Path | None = None


@register
class RubricScheme(Scheme):
    name = "rubric"
    description = "seven weighted dimensions on 1–10, red flags, bonuses and a grade"
    required_fields = ("judgments",)
    higher_is_better = True
    Options = RubricOptions
    report_schema = "rubric"

    def compute(self, samples: SampleSet, options: RubricOptions) -> RubricResult:
        result = scoring.score_samples(samples, options, name=self.name)
        if options.history is not None:
            record_in_history(result, options.history)
        return result

    def terminal(self, result: Any, console: Console, *, detail: bool = False) -> None:
        terminal.rubric_report(result, console)
        if detail:  # score --tasks
            from calipers.render.terminal import frame_table

            console.print(frame_table(result.to_frame("task"), title="rubric per run and task"))

    def html_section(self, report: dict[str, Any]) -> dict[str, Any]:
        return html.rubric_section(report)

    def report_section(self, result: Any, store: Store) -> dict[str, Any]:
        """The store report shows the history as it stands (it records nothing)."""
        section = dict(result.to_dict())
        rows = store.con.execute("SELECT DISTINCT task FROM rubric_history").fetchall()
        tasks = sorted({e.task for e in result.evaluations} & {r[0] for r in rows})
        if tasks:
            section["history"] = history_series(store, tasks)
        return section
