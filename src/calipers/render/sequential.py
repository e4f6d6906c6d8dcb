"""How a sequential comparison (`calipers watch`, `compare --sequential`) shows: the terminal, a
Markdown summary and an HTML page with the anytime-valid interval drawn over n.

Everything is built from the JSON document (`SequentialComparison.to_dict()`), so the three
outputs say the same thing; names from the data are escaped for each medium."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from calipers.render import markdown_text as md
from calipers.render.figure import BAD, GOOD, MUTED, drawing, plain_text
from calipers.render.html import render
from calipers.render.text import escape

_COLOURS = {"PROGRESS": "green", "REGRESS": "red", "continue": "yellow"}


def _signed(x: Any, digits: int = 3) -> str:
    return "—" if x is None else f"{float(x):+.{digits}g}"


def _pair_name(pair: Mapping[str, Any]) -> str:
    name = f"{pair['treatment']} vs {pair['control']}"
    return name if pair.get("task") is None else f"{name}, task {pair['task']}"


def stop_text(pair: Mapping[str, Any]) -> str:
    """Where the pair stopped and what it saved, in words (plain text: escape before showing)."""
    planned, saved = pair.get("n_planned"), pair.get("units_saved")
    if pair.get("stopped_at") is None:
        seen = pair["n_seen"]
        return f"not decided after {seen} unit(s)" + (
            "" if planned is None else f" of {planned} planned"
        )
    text = f"stopped at unit {pair['stopped_at']}"
    if planned is not None:
        text += f" of {planned}"
        if saved:
            text += f": {saved} unit(s) not needed ({saved / planned:.0%})"
    return text


def order_text(params: Mapping[str, Any]) -> str:
    """How the units were ordered and what a unit is."""
    order = params.get("order")
    how = (
        f"units in a random order (seed {params.get('seed')})"
        if order == "random"
        else "units in the order they were written"
    )
    return f"{how}, one per {params.get('cluster')}"


def watch_terminal(report: Mapping[str, Any], console: Console) -> None:
    """The verdict, the design, then one line per pair: its decision, interval and stop."""
    verdict = str(report["verdict"])
    colour = _COLOURS.get(verdict, "bold")
    console.print(
        f"[bold {colour}]{escape(verdict)}[/]  {escape(report['reason'])}", highlight=False
    )
    params = report.get("parameters") or {}
    design = report.get("design") or {}
    console.print(
        f"[dim]design: {escape(design.get('description', ''))}; {escape(order_text(params))}; "
        f"α {report['alpha']:g} (per pair {report['pair_alpha']:.3g})[/]",
        highlight=False,
    )
    for pair in report["pairs"]:
        d = pair["decision"]
        low, high = d.get("low"), d.get("high")
        interval = "no interval" if low is None else f"[{_signed(low)}, {_signed(high)}]"
        margin = "" if d.get("margin") is None else f"; margin: {d['margin']}"
        console.print(
            f"  {escape(_pair_name(pair))}: [{_COLOURS.get(d['verdict'], 'bold')}]"
            f"{escape(d['verdict'])}[/] {_signed(d.get('estimate'))} {interval} at n = {d['n']}"
            f"{escape(margin)}; {escape(stop_text(pair))}",
            highlight=False,
        )
    for note in report.get("notes") or []:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)


def sequential_lines(report: Mapping[str, Any], console: Console) -> None:
    """`compare --sequential`: each pair's anytime-valid interval on all the data, under the
    fixed-n verdict, and the unit at which the sequence first decided (if it did)."""
    design = (report.get("design") or {}).get("description", "")
    console.print(f"[bold]anytime-valid[/] ({escape(design)})", highlight=False)
    for pair in report["pairs"]:
        last = pair.get("interval_at_last")
        interval = (
            "no interval"
            if not last or last[0] is None
            else f"[{_signed(last[0])}, {_signed(last[1])}]"
        )
        verdict = pair["decision"]["verdict"]
        decided = (
            "not decided"
            if pair.get("stopped_at") is None
            else f"{escape(verdict)} since unit {pair['stopped_at']}"
        )
        console.print(
            f"  {escape(_pair_name(pair))}: {interval} at n = {pair['n_seen']}; {decided}",
            highlight=False,
        )


def watch_markdown(
    report: Mapping[str, Any], *, gate: str | None = None, gate_failure: str | None = None
) -> str:
    """A compact summary for a pull request: verdict, design, one row per pair."""
    design = report.get("design") or {}
    lines = [
        f"### calipers watch: **{md.escape(report['verdict'])}**",
        "",
        md.escape(report["reason"]),
        "",
        f"Design: {md.escape(design.get('description', ''))}; α {report['alpha']:g}; "
        f"{md.escape(order_text(report.get('parameters') or {}))}.",
        "",
    ]
    rows = []
    for pair in report["pairs"]:
        d = pair["decision"]
        rows.append(
            [
                md.escape(_pair_name(pair)),
                md.escape(d["verdict"]),
                md.signed(d.get("estimate")),
                "—" if d.get("low") is None else f"[{md.signed(d['low'])}, {md.signed(d['high'])}]",
                str(d["n"]),
                md.escape(d.get("margin") or "—"),
                md.escape(stop_text(pair)),
            ]
        )
    lines += md.table(
        ["pair", "verdict", "difference", "anytime-valid interval", "n", "margin", "stop"], rows
    )
    if gate and gate != "none":
        lines += [
            "",
            f"Gate {md.escape(gate)}: "
            + ("passed" if gate_failure is None else f"**failed**: {md.escape(gate_failure)}"),
        ]
    lines += [""] + [f"> note: {md.escape(n)}" for n in report.get("notes") or []]
    return "\n".join(lines).rstrip("\n") + "\n"


def sequence_plot(pair: Mapping[str, Any], *, margin: float | None = None) -> str:
    """The anytime-valid interval of the difference after each look (a band over n), the zero
    line, the margin where one is given, and the stop."""
    path: Sequence[Sequence[float | None]] = pair.get("path") or []
    points = [(n, lo, hi) for n, lo, hi in path if lo is not None and hi is not None]
    with drawing(7.0, 2.8) as (fig, axes):
        if points:
            ns = [p[0] for p in points]
            axes.fill_between(
                ns,
                [p[1] for p in points],
                [p[2] for p in points],
                color="#cfe0f5",
                step="post",
                label="anytime-valid interval",
            )
        axes.axhline(0.0, color=MUTED, linewidth=1, linestyle="--")
        if margin:
            axes.axhline(-margin, color=BAD, linewidth=1, label="−margin")
        stop = pair.get("stopped_at")
        if stop is not None:
            axes.axvline(stop, color=GOOD, linewidth=1.5, label=f"stop at {stop}")
        axes.set_xlabel("units seen (n)")
        axes.set_ylabel("candidate − baseline")
        axes.set_title(plain_text(_pair_name(pair)), loc="left")
        if points or stop is not None:
            axes.legend(loc="upper right")
        return fig.svg()


def watch_page(report: dict[str, Any]) -> str:
    params = report.get("parameters") or {}
    margin = params.get("margin_on_scale")
    plots = {str(i): sequence_plot(p, margin=margin) for i, p in enumerate(report["pairs"])}
    rows = [(p, stop_text(p)) for p in report["pairs"]]
    return render(
        "watch", report, plots=plots, rows=rows, order=order_text(params), title="calipers watch"
    )
