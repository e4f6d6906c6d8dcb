"""Terminal views of rubric scores and rankings: per run a grade summary, per evaluation its
breakdown (composite, each red flag and bonus, final, grade), and per task a ranking."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from calipers.render.terminal import notes as print_notes
from calipers.render.terminal import num
from calipers.render.text import escape
from calipers.schemes.rubric.rank import RankResult
from calipers.schemes.rubric.scoring import Evaluation, RubricResult


def _label(e: Evaluation) -> str:
    epoch = f"#{e.epoch}" if e.epoch else ""
    return escape(f"{e.run} · {e.task} · {e.sample_id}{epoch}")


def runs_table(result: RubricResult, console: Console) -> None:
    table = Table(title="Rubric scores by run", title_justify="left", pad_edge=False)
    table.add_column("run", overflow="fold")
    table.add_column("n", justify="right")
    table.add_column("mean final", justify="right")
    table.add_column("interval", justify="right")
    table.add_column("grades")
    for r in result.runs.values():
        low, high = r.interval if r.interval else (None, None)
        interval = "—" if low is None else f"[{num(low, '.2f')}, {num(high, '.2f')}]"
        grades = " ".join(f"{g}:{n}" for g, n in r.grades.items() if n)
        table.add_row(escape(r.run), str(r.n), f"{r.mean_final:.2f}", interval, escape(grades))
    console.print(table)


def breakdown(e: Evaluation, console: Console) -> None:
    """The seed's report: original composite, each red flag and bonus, final score and grade."""
    console.print(
        f"[bold]{_label(e)}[/]  composite {e.composite:.2f} → final [bold]{e.final:.2f}[/] "
        f"{escape(e.grade)} ({escape(e.label)})",
        highlight=False,
    )
    for kind, items in (("red flag", e.red_flags), ("bonus", e.bonuses)):
        for item in items:
            sign = "−" if kind == "red flag" else "+"
            capped = " (over the cap)" if item.capped else ""
            console.print(
                f"    {kind} {escape(item.id)}: {sign}{item.amount:.2f}{capped} — "
                f"{escape(item.explanation)}",
                highlight=False,
            )
    for flag in e.history_flags:
        console.print(
            f"    [yellow]review[/] {escape(flag.dimension)} {flag.score:.2f} vs history "
            f"{flag.mean:.2f} ± {flag.sd:.2f} (n={flag.n_history})",
            highlight=False,
        )


def rubric_report(result: RubricResult, console: Console, *, limit: int = 20) -> None:
    runs_table(result, console)
    shown = [e for e in result.evaluations if e.red_flags or e.bonuses or e.history_flags]
    rest = [e for e in result.evaluations if e not in shown]
    for e in (shown + rest)[:limit]:
        breakdown(e, console)
    hidden = len(result.evaluations) - limit
    if hidden > 0:
        console.print(f"… and {hidden} more evaluation(s); --json has them all.", highlight=False)
    print_notes(result.notes, console)


def ranking(result: RankResult, console: Console) -> None:
    for task_ranking in result.rankings:
        table = Table(
            title=f"Ranking: {escape(task_ranking.task)}", title_justify="left", pad_edge=False
        )
        table.add_column("#", justify="right")
        table.add_column("run", overflow="fold")
        table.add_column("sample", overflow="fold")
        table.add_column("final", justify="right")
        table.add_column("grade")
        table.add_column("tie broken by")
        for entry in task_ranking.entries:
            e = entry.evaluation
            why = "equivalent" if entry.equivalent_to_previous else (entry.tie_break or "")
            sample = f"{e.sample_id}#{e.epoch}" if e.epoch else e.sample_id
            table.add_row(
                str(entry.position), escape(e.run), escape(sample), f"{e.final:.2f}",
                escape(e.grade), escape(why),
            )  # fmt: skip
        console.print(table)
        if task_ranking.all_equivalent:
            console.print("All evaluations are equivalent on every tie-break level.")
