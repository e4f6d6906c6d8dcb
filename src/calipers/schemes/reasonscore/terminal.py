"""ReasonScore in the terminal: the leaderboard by score/token and the per-task tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from calipers.render import cost_leaderboard as costs
from calipers.render.terminal import notes, num
from calipers.render.text import escape
from calipers.schemes.reasonscore.ordering import RULES

if TYPE_CHECKING:
    from calipers.schemes.reasonscore.scoring import ReasonScoreResult


def reasonscore_leaderboard(result: ReasonScoreResult, console: Console) -> None:
    """Runs ranked by score/token within each group of comparable runs (the same (tier, task)
    pairs), with each tier's ReasonScore, easiest tier first; a run alone in its group is shown
    unranked."""
    groups = result.groups()
    report = {"cost": result.cost.to_dict()} if result.cost is not None else {}
    cost = costs.shown(report)
    for number, group in enumerate(groups, start=1):
        heading = "[bold]ReasonScore leaderboard[/]"
        if len(groups) > 1:
            heading += f" · group {number} of {len(groups)}"
        shares = escape(group.heading())
        if group.ranked:
            heading += f" · {len(group.runs)} runs ranked by score/token, sharing {shares}"
        else:
            heading += f" · not ranked: the only run with {shares}"
        console.print(heading, highlight=False)
        table = Table(pad_edge=False)
        table.add_column("#", justify="right")
        longest = max((len(r.run) for r in group.runs), default=3)
        table.add_column("run", overflow="fold", min_width=min(30, longest))  # names stay whole
        for tier in group.shared.tiers:
            table.add_column(escape(tier), justify="right")
        table.add_column("output tokens", justify="right")
        table.add_column("score/token", justify="right")
        if cost is not None:
            table.add_column(escape(costs.column(cost)), justify="right", overflow="fold")
            if costs.labelled(cost) and group.ranked:
                table.add_column("cost label", overflow="fold")
        bounds = {r["run"]: r for r in (group.ranks or {}).get("runs", [])}
        for rank, run in enumerate(group.runs, start=1):
            shown = str(rank) if group.ranked else "—"
            low, high = (bounds[run.run]["rank_low"], bounds[run.run]["rank_high"]) if (
                run.run in bounds) else (rank, rank)  # fmt: skip
            if (low, high) != (rank, rank):  # an interval, or a place outside its interval
                shown += f" [{low}–{high}]"
            cells = [shown, escape(run.run)]
            for tier in group.shared.tiers:
                t = run.tiers.get(tier)
                cells.append(num(t.score if t else None, ".0f"))
            cells += [num(run.avg_tokens, ".0f"), num(run.score_per_token, ".4f")]
            if cost is not None:
                cells.append(escape(costs.run_cell(cost, run.run)))
                if costs.labelled(cost) and group.ranked:
                    cells.append(escape(costs.label_cell(cost, run.run)))
            table.add_row(*cells)
        console.print(table)
        if group.ranks:
            tied = [g for g in group.ranks["groups"] if len(g) > 1]
            console.print(
                f"[dim]{escape('# [low–high]')}: the rank and its "
                f"{group.ranks['confidence_level']:.0%} rank interval, from "
                f"{group.ranks['n_resamples']} resamples of each run's samples, seed "
                f"{group.ranks['seed']}"
                + ("; tied: " + "; ".join(", ".join(escape(r) for r in g) for g in tied)
                   if tied else "")
                + " (docs/rankings.md)[/]"
            )  # fmt: skip
    if len(result.tier_order) > 1:
        rule = RULES.get(result.tier_order_rule, result.tier_order_rule)
        console.print(
            f"tiers easiest first ({escape(rule)}): {escape(', '.join(result.tier_order))}",
            highlight=False,
        )
    costs.print_sentences(report, console)
    notes(result.notes, console)


def reasonscore_tasks(result: ReasonScoreResult, console: Console) -> None:
    """Per run, the task scores of each tier (0–1, after the 0.01 floor)."""
    for run in (r for g in result.groups() for r in g.runs):
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
