"""The report of `calipers rank --cost` (`calipers.verdicts.cost_ranking`, schema cost-rank) as
words and tables: the same rows and sentences in the terminal, the Markdown summary and the HTML
page. Plain text here; each view escapes it (names are data)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.render import markdown_text as md
from calipers.render.cost import money
from calipers.render.text import escape


def measures(report: Mapping[str, Any]) -> list[str]:
    """The usage measures (tokens, seconds) some run's telemetry has, in the report's order."""
    found: dict[str, None] = {}
    for r in report.get("runs") or []:
        found.update(dict.fromkeys((r.get("cost_per_solved") or {}).get("usage") or {}))
    return list(found)


def columns(report: Mapping[str, Any]) -> list[str]:
    level = f"{report.get('confidence_level', 0.95):.0%}"
    per = report.get("outcome", "solved item")
    return ["run", "label", f"accuracy [{level}]", "cost per item",
            f"cost per {per} [{level}]",
            *[f"{m} per {per} [{level}]" for m in measures(report)],
            "vs best: lower bound", "dominated by", "items to decide"]  # fmt: skip


def _short(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def _count(x: float | None) -> str:
    """Tokens or seconds: whole numbers with separators from 1,000 on."""
    return "—" if x is None else f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _span(low: Any, high: Any, fmt: Callable[[float | None], str] = _short) -> str:
    if low is None and high is None:
        return ""
    return f" [{'unbounded' if low is None else fmt(low)}, " + (
        f"{'unbounded' if high is None else fmt(high)}]"
    )


def _per_solved(c: Mapping[str, Any], fmt: Callable[[float | None], str] = _short) -> str:
    """Cost, tokens or seconds per solved item with its interval, or why there is none."""
    est = c.get("estimate")
    if est is None:
        return "refused" if c.get("refusal") else "—"
    if c.get("refusal"):
        return f"{fmt(est)} (no interval)"
    return fmt(est) + _span(c.get("low"), c.get("high"), fmt)


def _to_decide(r: Mapping[str, Any]) -> str:
    p = r.get("plan")
    if not p:
        return ""
    if p.get("items") is None:
        return "beyond the margin" if p.get("observed_difference", 0) <= 0 else "not planned"
    return f"~{p['items']:,}"


def rows(report: Mapping[str, Any]) -> list[list[str]]:
    """One row per run, in the report's order (cheapest first), as plain text."""
    out = []
    shown = measures(report)
    for r in report.get("runs") or []:
        a = r.get("accuracy_interval") or {}
        acc = f"{r['accuracy']:.3f}" + _span(a.get("low"), a.get("high"))
        cost = r.get("cost_per_solved") or {}
        usage = cost.get("usage") or {}
        out.append([
            str(r["run"]), str(r["label"]), acc, money(r.get("cost_per_item")),
            _per_solved(cost), *[_per_solved(usage.get(m) or {}, _count) for m in shown],
            f"{r['lower_bound_vs_best']:+.4f}", ", ".join(r.get("dominated_by") or []) or "—",
            _to_decide(r),
        ])  # fmt: skip
    return out


def headline(report: Mapping[str, Any]) -> str:
    chosen = report.get("chosen")
    margin = report.get("margin")
    if chosen is None:
        return (
            f"No run is shown within {margin:g} of the best: no cheapest acceptable run "
            "(more items would decide: see 'items to decide')"
        )
    return (
        f"Cheapest acceptable: {chosen} — shown within {margin:g} of the best "
        f"({report.get('metric')}), the lowest {report.get('order_by')} of those shown"
    )


def sentences(report: Mapping[str, Any]) -> list[str]:
    """What the figures mean, how they were made, the frontier and the assumptions of the
    plans: shown under the table in every view."""
    meaning = report.get("meaning") or {}
    lines = [
        f"{report.get('n_samples')} samples every run has, {report.get('n_units')} units "
        f"({report.get('cluster_reason')}); system cost cost_usd, graders' cost apart"
        + (
            f"; the system's {' and '.join(measures(report))} (tokens_in + tokens_out, "
            "latency_s) per solved item beside it, never the graders'"
            if measures(report)
            else ""
        )
        + ".",
        f"vs best (lower): {meaning.get('lower_bound_vs_best')}.",
        f"acceptable: {meaning.get('acceptable')}.",
        f"dominated: {meaning.get('dominated')}.",
        f"frontier (cheapest first): {' → '.join(report.get('frontier') or [])}: "
        f"{meaning.get('frontier')}.",
    ]
    for r in report.get("runs") or []:
        c = r.get("cost_per_solved") or {}
        if c.get("refusal"):
            lines.append(f"{r['run']}: cost per {report.get('outcome')}: {c['refusal']}")
        lines += [f"{r['run']}: warning: {w}" for w in c.get("warnings") or []]
        for m, u in (c.get("usage") or {}).items():
            if u.get("refusal"):
                lines.append(f"{r['run']}: {m} per {report.get('outcome')}: {u['refusal']}")
            lines += [f"{r['run']}: warning: {m}: {w}" for w in u.get("warnings") or []]
    plans = [r for r in report.get("runs") or [] if r.get("plan")]
    for r in plans:
        p = r["plan"]
        if p.get("items") is not None:
            lines.append(f"items to decide {r['run']}: {p['reason']} (against {p['against']})")
        else:
            lines.append(f"items to decide {r['run']}: {p.get('reason')}")
    assumed = [r["plan"]["assumption"] for r in plans if r["plan"].get("assumption")]
    if assumed:
        lines.append(f"items to decide assume: {assumed[0]}.")
    lines += [f"note: {n}" for n in report.get("notes") or []]
    return lines


def terminal(report: Mapping[str, Any], console: Console) -> None:
    console.print(f"[bold]{escape(headline(report))}[/]", highlight=False)
    table = Table(pad_edge=False, title_justify="left")
    for name in columns(report):
        table.add_column(name, overflow="fold")
    for row in rows(report):
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
    for line in sentences(report):
        style = "yellow" if line.startswith("note:") else "dim"
        console.print(f"[{style}]{escape(line)}[/]", highlight=False)


def markdown(report: Mapping[str, Any]) -> str:
    lines = [
        f"## calipers rank --cost: margin {md.escape(report.get('margin'))}",
        "",
        f"**{md.escape(headline(report))}**",
        "",
        *md.table(columns(report), [[md.escape(c) for c in row] for row in rows(report)]),
        "",
        *[f"- {md.escape(line)}" for line in sentences(report)],
    ]
    return "\n".join(lines) + "\n"


def page(report: dict[str, Any]) -> str:
    from calipers.render.html import render

    tables = [
        ("Runs", {"columns": columns(report), "rows": rows(report)}),
        ("What the figures mean", {"columns": ["line"],
                                   "rows": [[s] for s in sentences(report)]}),
    ]  # fmt: skip
    dominance = report.get("dominance") or []
    if dominance:
        tables.append(("Confident dominance", {
            "columns": ["dominated", "by", "p (more accurate)", "p (cheaper per item)"],
            "rows": [[d["dominated"], d["by"], f"{d['p_more_accurate']:.3g}",
                      f"{d['p_cheaper']:.3g}"] for d in dominance],
        }))  # fmt: skip
    shown = {**report, "verdict": headline(report), "reason": ""}
    return render("generic-compare", shown, title="calipers rank --cost", tables=tables)
