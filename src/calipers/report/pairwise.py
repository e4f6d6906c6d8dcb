"""Terminal views of pairwise judging (`calipers grade --pairwise`) and of the Bradley–Terry
ranking over it (`calipers rank --pairwise`). Names of runs and judges are data: escaped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.grading.pairwise import JudgeStats
from calipers.render.text import escape

MAX_ROWS = 30  # more judges or pairs of runs than this (an arena log): totals, the rest in JSON


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def judges_table(judges: Sequence[dict[str, Any]], console: Console) -> None:
    """Per judge: pairs judged in both orders, failed calls, position flips and how often the
    output shown first was chosen (0.50 for a judge without position bias)."""
    single = any(j.get("one_order") for j in judges)
    table = Table(box=None, pad_edge=False, show_edge=False)
    columns = ("judge", "pairs", "failed", "flips", "flip rate", "first shown", "ties")
    for column in columns + (("one order",) if single else ()):
        table.add_column(column, justify="left" if column == "judge" else "right")
    for j in judges:
        failed = f"{j['failed']}/{j['calls']}"
        table.add_row(
            escape(j["judge"]), str(j["pairs"]), f"[red]{failed}[/]" if j["failed"] else failed,
            str(j["flips"]), _num(j["flip_rate"]), _num(j["first_shown"]), str(j["ties"]),
            *((str(j.get("one_order", 0)),) if single else ()),
        )  # fmt: skip
    console.print(table)
    for j in judges:
        if j["failed"]:
            console.print(
                f"  [red]{escape(j['judge'])}: {j['failed']} of {j['calls']} calls failed[/]; "
                f"first error: {escape(j.get('first_error') or 'unknown')}",
                highlight=False,
            )


def pairs_table(
    pairs: Sequence[dict[str, Any]], console: Console, *, orders: str, one_order: bool = False
) -> None:
    if len(pairs) > MAX_ROWS:
        console.print(f"outcomes: {len(pairs):,} pairs of runs (each in the JSON report, --json)",
                      highlight=False)  # fmt: skip
        return
    title = "both orders; a flip counts as a tie" if orders == "both" else "order ab only"
    if one_order and orders == "both":
        title = "a pair judged in both orders: a flip counts as a tie; in one order: its verdict"
    table = Table(box=None, pad_edge=False, show_edge=False, title_justify="left",
                  title=f"outcomes ({title})")  # fmt: skip
    for column in ("run a", "run b", "a wins", "ties", "b wins", "flips", "missing"):
        table.add_column(column, justify="left" if column.startswith("run") else "right")
    for p in pairs:
        table.add_row(
            escape(p["run_a"]), escape(p["run_b"]), str(p["a_wins"]), str(p["ties"]),
            str(p["b_wins"]), str(p["flips"]), str(p["missing"]),
        )  # fmt: skip
    console.print(table)


def strengths_table(fit: dict[str, Any], console: Console) -> None:
    """Runs by strength: log-strength with its interval, rank interval and tie group."""
    level = f"{fit['confidence_level']:.0%}"
    table = Table(box=None, pad_edge=False, show_edge=False)
    for column in ("rank", "run", "strength", f"{level} interval", "rank interval", "group",
                   "wins", "of"):  # fmt: skip
        table.add_column(column, justify="left" if column == "run" else "right")
    for r in fit["runs"]:
        ranks = str(r["rank_low"]) if r["rank_low"] == r["rank_high"] else (
            f"{r['rank_low']}–{r['rank_high']}"
        )  # fmt: skip
        table.add_row(
            str(r["rank"]), escape(r["run"]), f"{r['strength']:+.2f}",
            f"[{r['low']:+.2f}, {r['high']:+.2f}]", ranks, str(r["group"]),
            f"{r['wins']:g}", f"{r['comparisons']:g}",
        )  # fmt: skip
    console.print(table)
    groups = [g for g in fit["groups"] if len(g) > 1]
    for g in groups:
        console.print(
            "  tied (rank intervals overlap): " + ", ".join(escape(n) for n in g), highlight=False
        )
    console.print(
        f"[dim]Bradley–Terry, ties as half a win, log-strength with mean 0; prior "
        f"{fit['prior']:g} virtual tie(s) per compared pair; {fit['n_units']} samples resampled "
        f"as units, {fit['n_resamples']:,} resamples, seed {fit['seed']}; rank intervals: "
        f"{fit['rank_method']}[/]",
        highlight=False,
    )


def ranking(report: dict[str, Any], console: Console) -> None:
    """`calipers rank --pairwise`: what a preference file held, the judges, the outcomes per
    pair, the strengths."""
    held = report.get("preferences")
    if held:
        console.print(
            f"{held['rows']:,} judgment(s) from {escape(held['file'])} ({held['shape']} shape): "
            f"{held['both_orders']:,} judged in both orders, {held['one_order']:,} in one order",
            highlight=False,
        )
    judges = report["judges"]
    if len(judges) > MAX_ROWS and "judges_pooled" in report:
        judges = [report["judges_pooled"]]  # each judge's in the JSON report
    judges_table(judges, console)
    pairs_table(report["pairs"], console, orders=report["orders"],
                one_order=bool(held and held["one_order"]))  # fmt: skip
    strengths_table(report["bradley_terry"], console)


def judging(
    stats: Sequence[JudgeStats], pairs: Sequence[dict[str, Any]], console: Console, *,
    headline: str, notes: Sequence[str] = (),
) -> None:  # fmt: skip
    """`calipers grade --pairwise`: what was judged, per judge and per pair of runs."""
    console.print(headline, highlight=False)
    judges_table([s.to_dict() for s in stats], console)
    pairs_table(pairs, console, orders="both")
    for note in notes:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
