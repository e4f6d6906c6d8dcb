"""`calipers compare`: pair a baseline run with candidates under a scheme and give a verdict that
can gate CI. The scheme's declaration says whether it compares, which options it takes, how its
result looks and which gates it knows; this module parses flags and calls `calipers.compare`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from calipers import api
from calipers.cli.data import print_warnings
from calipers.cli.main import cli
from calipers.cli.options import (
    bootstrap_options,
    db_option,
    given_scheme_options,
    html_option,
    json_option,
    layered_metric_options,
    markdown_option,
    objective_options,
    one_stdout,
    quiet_option,
)
from calipers.cli.output import emit
from calipers.errors import GateFailed, InputError
from calipers.render.markdown import compare_markdown
from calipers.schemes import get_scheme


@cli.command("compare")
@click.argument("files", metavar="[FILE]...", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--scheme",
    "scheme_name",
    required=True,
    help="A scheme that compares runs: layered, metric, objective (`calipers schemes`).",
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
    type=click.FloatRange(min=0),
    default=None,
    help="layered, metric: a significant difference smaller than this is CAUTIOUS, gain or drop "
    "(on the composite's scale; default 2.5% of it: 0.1 on 1–5 layers, 0.025 on pass rates).",
)
@click.option(
    "--min-effect",
    type=click.FloatRange(min=0, min_open=True),
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
    "--gate",
    type=click.Choice(["no-regress", "ship", "non-inferior", "none"]),
    default="no-regress",
    show_default=True,
    help="Exit 3 on REGRESS (no-regress), unless PROGRESS / promoted (ship), unless every "
    "treatment is non-inferior or better at --margin (non-inferior), or never.",
)
@json_option
@html_option
@markdown_option
@quiet_option
@db_option
def compare_command(
    files: tuple[Path, ...],
    scheme_name: str,
    baseline: str | None,
    candidates: tuple[str, ...],
    gate: str,
    json_out: str | None,
    html_out: Path | None,
    markdown_out: str | None,
    db: Path,
    by: str | None,
    **params: Any,
) -> None:  # fmt: skip
    """Compare runs of FILE (read directly; several files are read together, as one import
    would store them) or of the store.

    layered and metric: paired bootstrap by sample, layer gates, and one of six verdicts
    (PROGRESS, CAUTIOUS, REGRESS, NOISE, UNDERPOWERED, SOLO); --gate ship passes on PROGRESS.
    With --margin M each pair also gets superior / equivalent / non-inferior / inferior /
    inconclusive; --gate non-inferior passes when every pair is non-inferior or better.
    objective: per-task composite deltas, hard regressions, improved / neutral / regressed and
    the promote decision; --gate ship passes only when the candidate is promoted.

    --markdown PATH|- writes a compact summary (verdict, interval, margin decision, the tasks
    that moved, seed, samples) for a pull request comment or $GITHUB_STEP_SUMMARY.

    Exit codes: 0 the verdict passes the gate, 1 input problem (an option the scheme does not
    take included), 2 the runs share no sample, 3 the verdict fails the gate.
    """
    scheme = get_scheme(scheme_name)
    one_stdout(json=json_out, markdown=markdown_out)
    if gate == "non-inferior" and params.get("margin") is None:
        raise InputError(
            "--gate non-inferior needs a margin",
            hint="Add --margin M on the compared quantity's scale (0.05) or --margin 2%.",
        )
    options = given_scheme_options(params)
    if by is not None:
        options["by_task"] = by == "task"
    scheme.compare_options(**options)  # refuse what the scheme does not take before reading data
    if baseline is None:
        raise InputError("give the run to compare against: --baseline RUN (or --control RUN)")
    source = None if not files else files[0] if len(files) == 1 else list(files)
    with api.open(source, db=None if files else db) as samples:
        print_warnings(samples.warnings)
        result = api.compare(
            samples, scheme.name, baseline=baseline, candidates=list(candidates), **options
        )
    failure = result.gate_failure(gate)
    emit(
        result.to_dict(),
        json_out=json_out,
        html_out=html_out,
        page=scheme.compare_page,
        show=lambda console: scheme.compare_terminal(result, console),
        markdown_out=markdown_out,
        markdown=lambda report: compare_markdown(report, gate=gate, gate_failure=failure),
    )
    if failure:
        raise GateFailed(failure, hint=result.reason)
