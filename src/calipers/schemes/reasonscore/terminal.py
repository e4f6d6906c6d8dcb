"""ReasonScore in the terminal: the leaderboard by score/token and the per-task tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from calipers.render.terminal import notes, num
from calipers.render.text import escape

if TYPE_CHECKING:
    from calipers.schemes.reasonscore.scoring import ReasonScoreResult


def reasonscore_leaderboard(result: ReasonScoreResult, console: Console) -> None:
    """Runs ranked by score/token, with each tier's ReasonScore and token use."""
    tiers: list[str] = []
    for run in result.runs.values():
        tiers.extend(t for t in run.tiers if t not in tiers)
    table = Table(title="ReasonScore leaderboard", title_justify="left", pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("run", overflow="fold")
    for tier in tiers:
        table.add_column(escape(tier), justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("score/token", justify="right")
    for rank, run in enumerate(result.ranked(), start=1):
        cells = [str(rank), escape(run.run)]
        for tier in tiers:
            t = run.tiers.get(tier)
            cells.append(num(t.score if t else None, ".0f"))
        cells += [num(run.avg_tokens, ".0f"), num(run.score_per_token, ".4f")]
        table.add_row(*cells)
    console.print(table)
    notes(result.notes, console)


def reasonscore_tasks(result: ReasonScoreResult, console: Console) -> None:
    """Per run, the task scores of each tier (0–1, after the 0.01 floor)."""
    for run in result.ranked():
        table = Table(title=f"{escape(run.run)}: task scores", title_justify="left", pad_edge=False)
        table.add_column("task")
        tiers = list(run.tiers)
        for tier in tiers:
            table.add_column(escape(tier), justify="right")
        tasks = sorted({task for t in run.tiers.values() for task in t.tasks})
        for task in tasks:
            cells = [escape(task)]
            for tier in tiers:
                ts = run.tiers[tier].tasks.get(task)
                cells.append(num(ts.score if ts else None, ".3f"))
            table.add_row(*cells)
        console.print(table)
