"""Terminal view of an objective comparison: the verdict and promote decision in one line, a table
of per-task deltas, and the hard regressions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.render import cost_leaderboard as costs
from calipers.render.terminal import notes as print_notes
from calipers.render.terminal import num
from calipers.render.text import escape
from calipers.schemes.objective.scoring import ObjectiveResult
from calipers.schemes.objective.verdict import ObjectiveComparison, ObjectiveVerdict

STYLE = {
    ObjectiveVerdict.IMPROVED: "bold green",
    ObjectiveVerdict.NEUTRAL: "bold blue",
    ObjectiveVerdict.REGRESSED: "bold red",
}


def _signed(x: float | None) -> str:
    return "—" if x is None else f"{x:+.3f}"


def comparison(result: ObjectiveComparison, console: Console) -> None:
    verdict = result.verdict
    promote = "[green]promote[/]" if result.promote else "[red]do not promote[/]"
    console.print(
        f"[{STYLE[verdict]}]{verdict.value.upper()}[/] · {promote} · "
        f"{escape(result.candidate)} vs {escape(result.baseline)}: {escape(result.reason)}",
        highlight=False,
    )
    table = Table(title="per task (composite 0–1)", title_justify="left", pad_edge=False)
    for name, justify in (
        ("task", "left"), ("baseline", "right"), ("candidate", "right"), ("delta", "right"),
        ("objective", "right"), ("cost adj", "right"),
    ):  # fmt: skip
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    flagged = {r.task for r in result.regressions}
    for t in result.tasks:
        objective = f"{num(t.objective_before, '.2f')}→{num(t.objective_after, '.2f')}"
        label = escape(t.task) + (" [red]✗[/]" if t.task in flagged else "")
        table.add_row(
            label, num(t.baseline, ".3f"), num(t.candidate, ".3f"), _signed(t.delta), objective,
            _signed(t.cost_adjustment),
        )  # fmt: skip
    console.print(table)
    line = f"net gain {result.net_gain:+.4f} (threshold ±{result.settings.min_composite_gain:g})"
    if result.interval is not None:
        i = result.interval
        line += f", {i.confidence_level:.0%} interval [{i.low:+.4f}, {i.high:+.4f}]"
    console.print(line, highlight=False)
    for r in result.regressions:
        console.print(
            f"[red]regression[/] {escape(r.task)}: {r.kind} — {escape(r.detail)}", highlight=False
        )
    print_notes(result.notes, console)


def task_scores(result: ObjectiveResult, console: Console) -> None:
    """Per run, each task's objective, judge, cost adjustment and composite, and beside them the
    cost per unit of base; then the runs' composite, base and cost with the labels."""
    report = {"cost": result.cost.to_dict()} if result.cost is not None else {}
    cost = costs.shown(report)
    for run, tasks in result.tasks.items():
        table = Table(
            title=f"{escape(run)}: objective composite", title_justify="left", pad_edge=False
        )
        for name in ("task", "n", "objective", "judge", "cost adj", "composite"):
            table.add_column(name, justify="left" if name == "task" else "right", overflow="fold")
        if cost is not None:
            table.add_column(escape(costs.column(cost)), justify="right", overflow="fold")
        for t in tasks.values():
            cells = [
                escape(t.task), str(t.n), num(t.objective, ".3f"), num(t.judge, ".3f"),
                _signed(t.cost_adjustment), num(t.composite, ".3f"),
            ]  # fmt: skip
            if cost is not None:
                cells.append(escape(costs.task_cell(cost, run, t.task)))
            table.add_row(*cells)
        console.print(table)
    if cost is not None:
        runs(result, cost, console)
    costs.print_sentences(report, console)
    print_notes(result.notes, console)


def runs(result: ObjectiveResult, cost: Mapping[str, Any], console: Console) -> None:
    """The runs side by side: the mean composite (cost adjustment in it), the mean base (no
    cost), the cost per unit of base with its interval, and the label when a margin was given."""
    table = Table(title="cost beside the composite", title_justify="left", pad_edge=False)
    header = ["run", "composite (with cost adj)", "base (no cost)", costs.column(cost)]
    header += ["cost label"] if costs.labelled(cost) else []
    for name in header:
        table.add_column(escape(name), justify="left" if name in ("run", "cost label")
                         else "right", overflow="fold")  # fmt: skip
    for run, tasks in result.tasks.items():
        scores = list(tasks.values())
        cells = [
            escape(run), num(sum(t.composite for t in scores) / len(scores), ".3f"),
            num(sum(t.base for t in scores) / len(scores), ".3f"),
            escape(costs.run_cell(cost, run)),
        ]  # fmt: skip
        if costs.labelled(cost):
            cells.append(escape(costs.label_cell(cost, run)))
        table.add_row(*cells)
    console.print(table)
