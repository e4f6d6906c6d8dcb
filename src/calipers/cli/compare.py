"""`calipers compare`: pair a baseline run with candidates under a scheme and give a verdict that
can gate CI. The scheme's declaration says whether it compares, which options it takes, how its
result looks and which gates it knows; this module parses flags and calls `calipers.compare`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource
from rich.console import Console

from calipers import api
from calipers.cli.compare_inputs import VsCommand, open_compared, vs_option
from calipers.cli.compare_summaries import (
    compare_from_summaries,
    summary_options,
    wants_summaries,
)
from calipers.cli.data import print_warnings
from calipers.cli.main import cli
from calipers.cli.options import (
    GATES,
    FiniteRange,
    LocalPath,
    bootstrap_options,
    db_option,
    given_scheme_options,
    html_option,
    json_option,
    layered_metric_options,
    map_option,
    markdown_option,
    objective_options,
    one_stdout,
    quiet_option,
)
from calipers.cli.output import emit
from calipers.errors import GateFailed, InputError
from calipers.render.changes import FLIPS_SHOWN, flips_terminal
from calipers.render.cost import cost_terminal
from calipers.render.markdown import compare_markdown
from calipers.render.sequential import sequential_lines
from calipers.render.text import escape
from calipers.schemes import available, get_scheme
from calipers.verdicts.flips import LISTED


@cli.command("compare", cls=VsCommand)
@click.argument("files", metavar="[FILE|DIR]...", nargs=-1, type=LocalPath(path_type=Path))
@vs_option
@click.option(
    "--scheme",
    "scheme_name",
    default=None,
    help="A scheme that compares runs: layered, metric, objective (`calipers schemes`). "
    "Required; without it the error lists the schemes that compare.",
)
@click.option("--baseline", "--control", "baseline", help="The run to compare against.")
@click.option(
    "--candidate",
    "--treatment",
    "candidates",
    multiple=True,
    help="A run to compare with the baseline (repeat for several; objective: one).",
)
@layered_metric_options
@bootstrap_options
@objective_options
@click.option(
    "--trivial-diff",
    type=FiniteRange(min=0),
    default=None,
    help="layered, metric: a significant difference smaller than this is CAUTIOUS, gain or drop "
    "(on the composite's scale; default 2.5% of it: 0.1 on 1–5 layers, 0.025 on pass rates).",
)
@click.option(
    "--min-effect",
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="layered, metric: the smallest difference worth detecting; a comparison that could not "
    "detect it is UNDERPOWERED (default 5% of the scale: 0.2 on 1–5 layers, 0.05 on pass rates).",
)
@click.option(
    "--margin",
    metavar="M",
    default=None,
    help="layered, metric: also decide superior / non-inferior / inferior / inconclusive "
    "against this margin, on the compared quantity's scale (0.05) or as a percentage of the "
    "scale's width (2%). See docs/decisions.md.",
)
@click.option(
    "--equivalence",
    is_flag=True,
    default=False,
    help="layered, metric: with --margin, also decide equivalence (two one-sided tests).",
)
@click.option(
    "--by",
    "by",
    type=click.Choice(["task", "none"]),
    default=None,
    help="layered, metric: test each task's difference (task), or not (none). Default: per "
    "task when the runs have several tasks.",
)
@click.option(
    "--adjust",
    type=click.Choice(["holm", "bh", "none"]),
    default=None,
    help="layered, metric: how per-task p-values are adjusted: Holm (family-wise, the "
    "default), Benjamini–Hochberg (false discovery rate) or none.",
)
@click.option(
    "--errors",
    type=click.Choice(["missing", "worst"]),
    default=None,
    help="layered, metric: how a sample whose `error` is set (a pipeline error, a timeout) "
    "and has no score counts: a missing outcome, bounded worst/best-case (missing, the "
    "default), or the scale's low bound (worst). See docs/statistics.md.",
)
@click.option(
    "--flips",
    "flips",
    type=click.IntRange(min=0),
    default=FLIPS_SHOWN,
    show_default=True,
    metavar="N",
    help="layered, metric: the N largest regressions and improvements per pair shown in the "
    "terminal and the Markdown summary, with input, expected, both outputs (a word diff), the "
    "per-epoch values and the judges' rationales (the JSON report and the page list up to "
    f'max(N, {LISTED}); every sample: to_frame("sample")).',
)
@click.option(
    "--value-per-solved",
    "value_per_solved",
    type=FiniteRange(min=0),
    default=None,
    metavar="V",
    help="layered, metric: what one more solved item (one more unit of the compared score) is "
    "worth, in the cost's currency: each candidate's net benefit per item, V·Δaccuracy − Δcost, "
    "with its paired interval and P(net benefit > 0) over V (docs/cost.md). Cost per solved "
    "item and the cost of each additional one are shown whenever the runs have cost_usd.",
)
@click.option(
    "--gate",
    type=click.Choice(GATES),
    default="no-regress",
    show_default=True,
    help="Exit 3 on REGRESS (no-regress), unless PROGRESS / promoted (ship), unless every "
    "treatment is non-inferior or better at --margin (non-inferior), unless every candidate's "
    "net benefit at --value-per-solved is above 0 with confidence (worth-it), or never.",
)
@click.option(
    "--sequential",
    is_flag=True,
    default=False,
    help="layered, metric: also give the anytime-valid interval of each pair (a betting "
    "confidence sequence over the samples in the order they were written), the one to read "
    "when the runs are still growing and you will look again (docs/sequential.md; `calipers "
    "watch` decides and stops on it).",
)
@summary_options
@map_option
@json_option
@html_option
@markdown_option
@quiet_option
@db_option
def compare_command(
    files: tuple[Path, ...],
    vs: tuple[Path, ...],
    column_map: str | None,
    scheme_name: str | None,
    baseline: str | None,
    candidates: tuple[str, ...],
    gate: str,
    json_out: str | None,
    html_out: Path | None,
    markdown_out: str | None,
    db: Path,
    by: str | None,
    flips: int,
    sequential: bool,
    **params: Any,
) -> None:  # fmt: skip
    """Compare runs of FILE (read directly; several files are read together, as one import
    would store them; a directory stands for a harness's files in it) or of the store. Without
    --baseline, an input holding one run takes it.

    BASE... --vs CANDIDATE...: two sides, each one run (files or directories, e.g. two inspect
    log directories of one model), named by --baseline/--candidate or by what tells them apart.

    layered and metric: paired bootstrap by sample, layer gates, and one of six verdicts
    (PROGRESS, CAUTIOUS, REGRESS, NOISE, UNDERPOWERED, SOLO); --gate ship passes on PROGRESS.
    With --margin M each pair also gets superior / equivalent / non-inferior / inferior /
    inconclusive; --gate non-inferior passes when every pair is non-inferior or better.
    objective: per-task composite deltas, hard regressions, improved / neutral / regressed and
    the promote decision; --gate ship passes only when the candidate is promoted.

    layered and metric also show what changed: every task's difference with its interval,
    adjusted p and paired samples, and the samples that flipped (the 2×2 table of pass/fail
    samples or the quantiles of the changes, regressions and improvements by class — stable,
    flaky, judge-only, error — where they concentrate, and the --flips N largest with their
    text).

    --markdown PATH|- writes a compact summary (verdict, interval, margin decision, the tasks
    that moved and every task's numbers, seed, samples, the flips folded in a <details> block)
    for a pull request comment or $GITHUB_STEP_SUMMARY.

    Cost (layered, metric, when the runs have cost_usd): each run's cost per solved item (per
    unit of the score) with its interval, and each candidate's cost per additional solved item;
    with --value-per-solved V the net benefit V·Δaccuracy − Δcost per item and the chance it is
    positive over V; --gate worth-it passes only when every candidate's net benefit interval is
    above 0. A judge's cost (grader_cost_usd) is shown apart, never counted as the system's.

    --parquet PATH|GLOB, --summaries FILE, --engine duckdb|ray: the verdict from the pair's
    summary table, computed where the data live (docs/scale.md; `calipers sql` prints the query).

    Exit codes: 0 the verdict passes the gate, 1 input problem (an option the scheme does not
    take included; --gate worth-it without --value-per-solved), 2 the runs share no sample, 3
    the verdict fails the gate (worth-it: a net benefit not shown above 0, or no cost data).
    """
    if wants_summaries(params):
        compare_from_summaries(
            files=files, vs=vs, scheme_name=scheme_name, baseline=baseline,
            candidates=candidates, gate=gate, json_out=json_out, db=db,
            gating=(gate_result, gate_line), **params,
        )  # fmt: skip
        return
    if scheme_name is None:
        comparing = [name for name, cls in available().items() if cls.CompareOptions is not None]
        raise InputError(
            "compare needs --scheme: which method compares the runs",
            hint=f"Choose one of: {', '.join(comparing)} (metric: a harness's per-sample score "
            "such as accuracy, with --metric NAME; layered: assertions and judgments).",
        )
    scheme = get_scheme(scheme_name)
    one_stdout(json=json_out, markdown=markdown_out)
    if gate == "worth-it" and params.get("value_per_solved") is None:
        raise InputError(
            "--gate worth-it needs a value per solved item",
            hint="Add --value-per-solved V: what one more solved item is worth, in the cost's "
            "currency (0.50).",
        )
    if gate == "non-inferior" and params.get("margin") is None:
        raise InputError(
            "--gate non-inferior needs a margin",
            hint="Add --margin M on the compared quantity's scale (0.05) or --margin 2%.",
        )
    options = given_scheme_options(params)
    if by is not None:
        options["by_task"] = by == "task"
    typed = click.get_current_context().get_parameter_source("flips")
    if typed in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
        options["flips"] = max(flips, LISTED)  # a scheme without flips refuses --flips
    scheme.compare_options(**options)  # refuse what the scheme does not take before reading data
    samples, baseline, runs = open_compared(
        files, vs, baseline, candidates, db=db, column_map=column_map
    )
    candidates = tuple(runs)
    with samples:
        print_warnings(samples.warnings)
        result = api.compare(
            samples, scheme.name, baseline=baseline, candidates=list(candidates), **options
        )
        anytime = None
        if sequential:
            if scheme.name not in ("layered", "metric"):
                raise InputError(f"--sequential: the {scheme.name} scheme has no sequence",
                                 hint="Use --scheme metric or layered.")  # fmt: skip
            anytime = api.watch(
                samples, scheme.name, baseline=baseline, candidates=list(candidates),
                design="sequence", **options,
            )  # fmt: skip
    failure = result.gate_failure(gate)
    report = result.to_dict()
    if anytime is not None:
        report["sequential"] = anytime.to_dict()
    if gate != "none":  # how the gate went, in the JSON, on the page and in the terminal
        report["gate"] = gate_result(gate, failure, scheme.name, report)

    def show(console: Console) -> None:
        scheme.compare_terminal(result, console)
        cost_terminal(report, console)  # cost per solved, what the gain costs, if any
        flips_terminal(report, console, top=flips)  # the samples that changed, if any
        if "sequential" in report:
            sequential_lines(report["sequential"], console)
        if "gate" in report:
            console.print(gate_line(report["gate"]), highlight=False)

    emit(
        report,
        json_out=json_out,
        html_out=html_out,
        page=scheme.compare_page,
        show=show,
        markdown_out=markdown_out,
        markdown=lambda report: compare_markdown(
            report, gate=gate, gate_failure=failure, flips=flips
        ),
    )
    if failure:
        raise GateFailed(failure, hint=result.reason)


def gate_result(
    gate: str, failure: str | None, scheme: str, report: dict[str, Any]
) -> dict[str, Any]:
    """The gate's name, whether it passed, the rule it applies (with its threshold) and, when it
    failed, why."""
    margin = (report.get("parameters") or {}).get("margin")
    rules = {
        "no-regress": "fails on a REGRESS verdict",
        "ship": "passes only when the candidate is promoted" if scheme == "objective"
        else "passes only on PROGRESS",
        "non-inferior": "passes when every candidate is non-inferior or better at the margin"
        + ("" if margin is None else f" ±{margin:.3g}"),
        "worth-it": "passes when every candidate's net benefit per item at "
        + f"{(report.get('parameters') or {}).get('value_per_solved')} per solved item has its "
        "interval above 0",
    }  # fmt: skip
    return {"name": gate, "passed": failure is None, "rule": rules.get(gate, gate),
            "failure": failure}  # fmt: skip


def gate_line(found: dict[str, Any]) -> str:
    """The gate's line in the terminal: passed with its rule, or failed with why."""
    head = f"gate {escape(found['name'])}: "
    if found["passed"]:
        return head + f"[green]passed[/] ({escape(found['rule'])})"
    return head + f"[red]failed[/], exit 3 ({escape(found['rule'])}): {escape(found['failure'])}"
