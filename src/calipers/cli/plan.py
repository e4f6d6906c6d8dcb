"""`calipers plan`: how many items a comparison needs, before it is run — from a baseline run
(and a pilot candidate) in a file or the store, or from numbers. One call to `calipers.plan`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from calipers import api
from calipers.cli.data import print_warnings
from calipers.cli.main import cli
from calipers.cli.options import (
    FINITE,
    FiniteRange,
    LocalPath,
    db_option,
    html_option,
    json_option,
    map_option,
    quiet_option,
)
from calipers.cli.output import emit
from calipers.render.html import report_page
from calipers.render.text import escape
from calipers.verdicts.planning import Plan


@cli.command("plan")
@click.argument("file", required=False, type=LocalPath(path_type=Path))
@click.option(
    "--effect",
    type=FINITE,
    default=None,
    metavar="E",
    help="Plan to detect a difference of E (on the compared quantity's scale).",
)
@click.option(
    "--margin",
    default=None,
    metavar="M",
    help="Plan to show non-inferiority at margin M (0.05, or 2% of the scale).",
)
@click.option("--equivalence", is_flag=True, help="With --margin: plan for equivalence (±M).")
@click.option(
    "--truth",
    type=FINITE,
    default=0.0,
    show_default=True,
    help="With --margin: the true difference assumed (0: the systems are alike).",
)
@click.option(
    "--effect-share",
    type=FiniteRange(0, 1, min_open=True),
    default=None,
    metavar="S",
    help="Plan for an effect concentrated on a share S of the items (each moved by δ/S, the "
    "rest unchanged); default: spread over items the way the pilot varies.",
)
@click.option(
    "--power",
    type=FINITE,
    default=0.8,
    show_default=True,
    help="The probability of reaching the decision.",
)
@click.option(
    "--alpha", type=FINITE, default=0.05, show_default=True, help="1 − the comparison's confidence."
)
@click.option(
    "--treatments",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Treatments compared with the baseline (each pair gets α/K).",
)
@click.option(
    "--scheme",
    "scheme_name",
    default="metric",
    show_default=True,
    help="With data: metric (--metric NAME) or layered (the composite).",
)
@click.option("--metric", default=None, help="metric: scores{NAME} or `correct`.")
@click.option(
    "--cluster",
    type=click.Choice(["auto", "sample_id", "group"]),
    default="auto",
    show_default=True,
    help="With data: the unit the comparison will resample (auto: by group when every sample "
    "names one).",
)
@click.option("--baseline", default=None, help="With data: the run the design is measured on.")
@click.option(
    "--candidate",
    default=None,
    help="With data: a pilot candidate; its paired differences give the design directly.",
)
@click.option(
    "--epochs",
    type=click.IntRange(min=1),
    default=None,
    help="Epochs per item to plan for (default: the data's, or 1).",
)
@click.option(
    "--correlation",
    type=FINITE,
    default=0.0,
    show_default=True,
    help="Without a pilot candidate: how the two systems correlate on an item.",
)
@click.option("--sd", type=FINITE, default=None, help="No data: the SD of one score.")
@click.option("--pass-rate", type=FINITE, default=None, help="No data: the baseline pass rate.")
@click.option(
    "--discordance",
    type=FINITE,
    default=None,
    help="No data: the share of items on which the two systems' 0/1 outcomes differ.",
)
@click.option(
    "--icc",
    type=FINITE,
    default=0.0,
    show_default=True,
    help="No data: the intra-group correlation of the differences.",
)
@click.option(
    "--cluster-size",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="No data: items per group.",
)
@map_option
@json_option
@html_option
@quiet_option
@db_option
def plan_command(
    file: Path | None,
    column_map: str | None,
    json_out: str | None,
    html_out: Path | None,
    db: Path,
    **params: Any,
) -> None:
    """How many items (and epochs) a comparison needs.

    With FILE or the store and --baseline RUN (a FILE holding one run: that run, said), the
    design is measured on that run (and on --candidate RUN, a pilot comparison, when given);
    with no data, from --sd, --pass-rate or --discordance. Give --effect E (detect a difference
    of E) or --margin M (show non-inferiority at M). See docs/decisions.md.

    Exit codes: 0 planned (or not reachable, said plainly), 1 input problem.
    """
    scheme_name, metric, cluster = (params.pop(k) for k in ("scheme_name", "metric", "cluster"))
    with_data = file is not None or params["baseline"] is not None
    if with_data:
        options = {"cluster": cluster, **({"metric": metric} if metric else {})}
        numbers = ("sd", "pass_rate", "discordance")
        given = [n for n in numbers if params[n] is not None]
        if given:
            from calipers.errors import InputError

            raise InputError(
                f"--{given[0].replace('_', '-')} is for planning without data",
                hint="Plan from the data (FILE --baseline RUN) or from numbers, not both.",
            )
        for key in ("sd", "pass_rate", "discordance", "icc", "cluster_size"):
            params.pop(key)
        with api.open(file, db=None if file else db, map=column_map) as samples:
            print_warnings(samples.warnings)
            result = api.plan(samples, scheme_name, **params, **options)
    else:
        for key in ("baseline", "candidate"):
            params.pop(key)
        result = api.plan(None, **params)
    emit(
        {"kind": "plan", **result.to_dict()},
        json_out=json_out,
        html_out=html_out,
        page=lambda report: report_page(report, title="calipers plan"),
        show=lambda console: show_plan(result, console),
    )


def show_plan(plan: Plan, console: Console) -> None:
    d = plan.design
    if plan.units is None:
        console.print(f"[yellow]not reachable[/]: {escape(plan.reason)}")
    else:
        console.print(f"[bold]plan[/]: {escape(plan.reason)}")
    console.print(f"  design   {escape(d.source)}")
    parts = [f"{d.outcome}", f"unit variance {d.unit_var():.4g}"]
    if d.discordance is not None:
        parts.append(f"discordance {d.discordance:.3g}")
    if d.cluster_size > 1:
        parts.append(f"groups of {d.cluster_size}")
    console.print("  model    " + escape(" · ".join(parts)))
    if d.cluster_reason is not None:
        console.print(f"  units    by {escape(d.cluster)} ({escape(d.cluster_reason)})")
    if plan.assumption:
        console.print(f"  assumes  {escape(plan.assumption)}")
    if plan.power is not None:
        console.print(f"  formula  {escape(plan.formula)} · power at the plan {plan.power:.3f}")
        curve = " · ".join(f"{p['items']:,.0f} items {p['power']:.2f}" for p in plan.curve)
        console.print(f"  power    {curve}")
    if plan.by_epochs:
        costs = " · ".join(
            f"{b['epochs']} → {b['items']:,} items ({b['runs']:,} runs)" for b in plan.by_epochs
        )
        console.print(f"  epochs   {costs}")
    seen = plan.at_observed
    if seen is not None:
        what = "effect" if plan.goal.effect is not None else "margin"
        size = (
            "none within the scale"
            if seen["detectable"] == float("inf")
            else (f"{seen['detectable']:.3g}")
        )
        console.print(
            f"  at the data's {seen['items']:,.0f} items: power {seen['power']:.2f}; the "
            f"smallest {what} reached with {plan.goal.power:.0%} power is {size}"
        )
    for note in d.notes:
        console.print(f"[dim]note:[/] {escape(note)}")
