"""A comparison from summaries in the terminal (`calipers compare --parquet|--summaries|--engine`),
drawn from its JSON report (kind `summary-compare`, docs/scale.md)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from calipers.render.text import escape

_COLOURS = {"PROGRESS": "green", "REGRESS": "red", "CAUTIOUS": "yellow", "NOISE": "cyan",
            "UNDERPOWERED": "magenta"}  # fmt: skip


def _p(test: dict[str, Any] | None) -> str:
    return "—" if test is None else f"p = {test['p_value']:.3g}"


def summary_terminal(report: dict[str, Any], console: Console) -> None:
    d, s, params = report["difference"], report["summary"], report["parameters"]
    metric = escape(params["metric"])
    console.print(
        f"[bold]{metric}[/] from summaries ({escape(report['engine'])}: "
        f"{escape(report['source'])}): {escape(report['treatment'])} vs "
        f"{escape(report['control'])}",
        highlight=False,
    )
    interval = d.get("interval")
    span = "(no interval)" if interval is None else (
        f"[{d['low']:+.4f}, {d['high']:+.4f}] ({escape(interval['formula'])}, "
        f"{params['confidence_level']:.0%})"
    )  # fmt: skip
    console.print(
        f"  difference {d['estimate']:+.4f} {span}: {escape(report['control'])} "
        f"{d['control_mean']:.4f}, {escape(report['treatment'])} {d['treatment_mean']:.4f}",
        highlight=False,
    )
    console.print(
        f"  over {s['units']:,} units ({escape(params['cluster_reason'])}), {s['items']:,} items, "
        f"{s['observations']['control']:,} + {s['observations']['treatment']:,} observations; "
        f"{s['rows']:,} summary rows",
        highlight=False,
    )
    tests = report["tests"]
    console.print(
        f"  tests: McNemar {_p(tests.get('mcnemar'))}, sign {_p(tests.get('sign'))}, paired t "
        f"{_p(tests.get('paired_t'))}, clustered SE {_p(tests.get('clustered_se'))}; decided by "
        f"{escape(tests['decided_by'])}",
        highlight=False,
    )
    boot = report.get("bootstrap")
    if boot is not None:
        console.print(
            f"  cluster bootstrap ({boot['n_resamples']:,} resamples, seed {boot['seed']}, "
            f"{boot['seconds']:.2f} s): [{boot['low']:+.4f}, {boot['high']:+.4f}], SE "
            f"{boot['standard_error']:.5f} (analytic {boot['analytic_standard_error']:.5f})",
            highlight=False,
        )
    passes = report.get("pass_at_k")
    if passes is not None:
        for side in ("control", "treatment"):
            shown = ", ".join(f"@{e['k']} {e['estimate']:.3f}" for e in passes[side]["pass@k"])
            console.print(f"  pass@k {escape(report[side])}: {shown}", highlight=False)
    if report.get("margin") is not None:
        m = report["margin"]
        console.print(f"  margin {escape(m['given'])}: {escape(m['decision'])} — "
                      f"{escape(m['reason'])}", highlight=False)  # fmt: skip
    for note in report.get("notes", []):
        console.print(f"  [dim]note: {escape(note)}[/]", highlight=False)
    withheld = ", ".join(x["statistic"] for x in report.get("not_from_summaries", []))
    console.print(f"  [dim]not from the summaries (JSON `not_from_summaries`): "
                  f"{escape(withheld)}[/]", highlight=False)  # fmt: skip
    verdict = report["verdict"]
    colour = _COLOURS.get(verdict, "white")
    console.print(f"[bold {colour}]{verdict}[/]: {escape(report['reason'])}", highlight=False)
