"""`calipers leaderboard` for the comparable schemes (layered, metric): the runs ranked by their
headline number — the metric's mean, or the layered composite — with each run's rank interval and
tie group (`calipers.verdicts.ranking`, the same machinery as the ReasonScore leaderboard)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.render.terminal import notes as print_notes
from calipers.render.terminal import num
from calipers.render.text import escape
from calipers.schemes.layered.scoring import SummaryResult, value_label


def leaderboard_order(result: SummaryResult) -> list[dict[str, Any]]:
    """One row per run, best first: run, rank, rank_low, rank_high, group (from the ranking over
    the samples every run has; without one, by the run's mean, no interval), mean, low, high, n."""
    ranked = (result.ranking or {}).get("runs") or []
    rows: list[dict[str, Any]] = []
    if ranked:
        for r in ranked:
            rows.append({"run": r["run"], "rank": r["rank"], "rank_low": r["rank_low"],
                         "rank_high": r["rank_high"], "group": r["group"]})  # fmt: skip
    else:
        means = sorted(
            result.runs.values(),
            key=lambda s: (s.composite.mean is None, -(s.composite.mean or 0.0), s.run),
        )
        previous, rank = None, 0
        for i, s in enumerate(means, start=1):
            if s.composite.mean != previous:
                rank, previous = i, s.composite.mean
            rows.append({"run": s.run, "rank": rank, "rank_low": None, "rank_high": None,
                         "group": None})  # fmt: skip
    for row in rows:
        s = result.runs[row["run"]]
        interval = s.composite.interval
        row.update(
            mean=s.composite.mean,
            low=interval.low if interval else None,
            high=interval.high if interval else None,
            n=s.n_samples,
        )
    return rows


def leaderboard(result: SummaryResult, console: Console) -> None:
    """The runs best first: rank with its rank interval, tie group, value with its interval, n."""
    label = value_label(result.scheme, result.parameters)
    rows = leaderboard_order(result)
    ranking = result.ranking
    heading = f"[bold]{escape(result.scheme)} leaderboard[/] · {len(rows)} runs ranked by "
    heading += f"{escape(label)} (higher is better)" if result.scheme == "metric" else (
        "the composite (higher is better)")  # fmt: skip
    if result.lacking:
        heading += f"; {len(result.lacking)} without a value, not ranked (—)"
    console.print(heading, highlight=False)
    level = f"{result.parameters.get('confidence_level', 0.95):.0%}"
    table = Table(pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("run", overflow="fold")
    table.add_column(escape(label), justify="right", overflow="fold")
    table.add_column(f"{level} interval", justify="right")
    table.add_column("n", justify="right")
    if ranking:
        table.add_column("tie group", justify="right")
    for row in rows:
        shown = str(row["rank"])
        if row["rank_low"] is not None and (row["rank_low"], row["rank_high"]) != (
            row["rank"], row["rank"]):  # fmt: skip
            shown += f" [{row['rank_low']}–{row['rank_high']}]"
        interval = (
            "—" if row["low"] is None or row["high"] is None
            else f"[{row['low']:.3f}, {row['high']:.3f}]"
        )  # fmt: skip
        cells = [shown, escape(row["run"]), num(row["mean"], ".3f"), interval, str(row["n"])]
        if ranking:
            cells.append(str(row["group"]))
        table.add_row(*cells)
    for run in result.lacking:  # listed, not ranked: no sample has the metric (or any layer)
        table.add_row("—", escape(run), "no value", "—", "0", *(["—"] if ranking else []))
    console.print(table)
    if ranking:
        tied = [g for g in ranking["groups"] if len(g) > 1]
        console.print(
            f"[dim]{escape('# [low–high]')}: the rank and its {level} rank interval, over "
            f"{ranking['n_samples']} samples every run has, {ranking['n_resamples']} resamples, "
            f"seed {ranking['seed']}"
            + ("; tied (the data cannot order them): "
               + "; ".join(", ".join(escape(r) for r in g) for g in tied) if tied else "")
            + " (docs/rankings.md)[/]"
        )  # fmt: skip
    elif len(rows) > 1:
        console.print("[dim]no rank intervals: ordered by each run's mean (see the notes)[/]")
    print_notes(result.notes, console)
