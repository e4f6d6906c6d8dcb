"""`calipers watch`: compare runs as the data arrive, with a decision that stays valid however
often it is looked at (`calipers.watch`, docs/sequential.md). It reads a file, a directory or the
store once (a finished pair replayed in its order), or with --follow again and again while
another tool writes it, and stops at the first decisive look."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from calipers import api
from calipers.cli.compare import gate_line, gate_result
from calipers.cli.compare_inputs import VsCommand, open_compared, vs_option
from calipers.cli.data import print_warnings
from calipers.cli.main import cli, stderr_console
from calipers.cli.options import (
    GATES,
    FiniteRange,
    LocalPath,
    db_option,
    given_scheme_options,
    html_option,
    json_option,
    layered_metric_options,
    map_option,
    markdown_option,
    quiet_option,
)
from calipers.cli.output import emit
from calipers.errors import CalipersError, GateFailed, InputError
from calipers.render.sequential import watch_markdown, watch_page, watch_terminal
from calipers.render.text import escape
from calipers.schemes.metric import MetricScheme
from calipers.verdicts.sequential_compare import SequentialComparison
from calipers.verdicts.sequential_units import ORDERS


@cli.command("watch", cls=VsCommand)
@click.argument("files", metavar="[FILE|DIR]...", nargs=-1, type=LocalPath(path_type=Path))
@vs_option
@click.option(
    "--scheme",
    "scheme_name",
    type=click.Choice(["metric", "layered"]),
    default="metric",
    show_default=True,
    help="What is compared: one metric, or the layered composite.",
)
@click.option("--baseline", "--control", "baseline", help="The run to compare against.")
@click.option(
    "--candidate",
    "--treatment",
    "candidates",
    multiple=True,
    help="A run to compare with the baseline (repeat for several: α is split).",
)
@click.option(
    "--design",
    default=None,
    metavar="DESIGN",
    help="sequence (a betting confidence sequence, valid at every unit, no planned size; the "
    "default without --n-planned), hybrid (the sequence at every unit plus the exact fixed "
    "test at N; the default with --n-planned), obf or pocock (group-sequential looks, "
    "obf:5). docs/sequential.md",
)
@click.option(
    "--n-planned",
    type=click.IntRange(min=2),
    default=None,
    metavar="N",
    help="The planned number of units (samples, or groups): hybrid and group designs "
    "need it; the report says how many were not needed.",
)
@click.option(
    "--order",
    type=click.Choice(list(ORDERS)),
    default="arrival",
    show_default=True,
    help="The order units are looked at: as the rows were written (arrival), or a "
    "permutation drawn from --seed (random: for a finished file whose order may "
    "depend on the outcomes).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Seed of the random order (recorded in the report).",
)
@click.option(
    "--every",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Look after every K units (any K is valid; 1 stops soonest).",
)
@click.option(
    "--margin",
    metavar="M",
    default=None,
    help="Also decide non-inferior / inferior / superior (and equivalent with "
    "--equivalence) from the same sequence: on the metric's scale (0.05) or 2%.",
)
@click.option(
    "--equivalence", is_flag=True, default=False, help="With --margin, also decide equivalence."
)
@click.option(
    "--min-effect",
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="The improvement sought: a pair whose sequence rules it out is futile "
    "(default 5% of the scale).",
)
@click.option(
    "--by",
    type=click.Choice(["task", "none"]),
    default="none",
    show_default=True,
    help="Decide each task on its own (α split over tasks), or all together.",
)
@click.option(
    "--follow",
    is_flag=True,
    default=False,
    help="Read the input again every --poll seconds until every pair is decided, "
    "--n-planned units are in, or --timeout passes; a line per new look.",
)
@click.option(
    "--poll",
    type=FiniteRange(min=0.05),
    default=2.0,
    show_default=True,
    help="With --follow: seconds between reads.",
)
@click.option(
    "--timeout",
    type=FiniteRange(min=0),
    default=None,
    help="With --follow: stop following after this many seconds (undecided: exit 0 "
    "under the default gate).",
)
@click.option(
    "--full-path",
    is_flag=True,
    default=False,
    help="Trace a decided pair's sequence past its stop to the last unit (the interval at the "
    "last unit, the whole path drawn); by default the report ends at the stop, where the "
    "decision was made.",
)
@layered_metric_options
@click.option(
    "--gate",
    type=click.Choice(GATES),
    default="no-regress",
    show_default=True,
    help="As compare's: exit 3 on REGRESS (no-regress), unless PROGRESS (ship), unless every "
    "candidate is non-inferior at --margin (non-inferior), or never.",
)
@map_option
@json_option
@html_option
@markdown_option
@quiet_option
@db_option
def watch_command(
    files: tuple[Path, ...],
    vs: tuple[Path, ...],
    column_map: str | None,
    scheme_name: str,
    baseline: str | None,
    candidates: tuple[str, ...],
    design: str | None,
    n_planned: int | None,
    order: str,
    seed: int | None,
    every: int,
    by: str,
    follow: bool,
    poll: float,
    timeout: float | None,
    full_path: bool,
    gate: str,
    json_out: str | None,
    html_out: Path | None,
    markdown_out: str | None,
    db: Path,
    **params: Any,
) -> None:
    """Compare runs of FILE (or the store) as their samples arrive, with a verdict that holds
    however often you look: a confidence sequence instead of a fixed-n interval, so a run can
    stop as soon as its answer is clear. Looking at `calipers compare` again and again while a
    run grows gives false verdicts far more often than α; this does not.

    Units (a sample with its epochs, or a group) count when both runs have them, in the order
    they were written (--order arrival) or a seeded random order. Each pair stops at its first
    decisive look: PROGRESS or REGRESS (and the margin decision with --margin), with the
    interval at the stop and what it saved against --n-planned.

    Exit codes: 0 the gate passes (an undecided pair passes no-regress), 1 input problem, 2 the
    runs share no sample, 3 the verdict fails the gate.
    """
    options = given_scheme_options(params)
    for name, value in (("margin", params.get("margin")), ("min_effect", params.get("min_effect"))):
        if value is not None:
            options[name] = value
    if params.get("equivalence"):
        options["equivalence"] = True
    options["by_task"] = by == "task"
    if seed is not None:
        options["seed"] = seed
    if gate == "worth-it":
        raise InputError(
            "--gate worth-it is calipers compare's: the sequential decision weighs no cost",
            hint="Gate the finished runs with `calipers compare … --value-per-solved V --gate "
            "worth-it`.",
        )
    if gate == "non-inferior" and "margin" not in options:
        raise InputError("--gate non-inferior needs a margin", hint="Add --margin M.")
    chosen = design or ("hybrid" if n_planned is not None else "sequence")
    started = time.monotonic()
    seen: int | None = None
    failed_at: tuple[int, ...] | None = None
    while True:
        try:
            result = _look(
                files,
                vs,
                baseline,
                candidates,
                db=db,
                column_map=column_map,
                scheme=scheme_name,
                design=chosen,
                n_planned=n_planned,
                order=order,
                every=every,
                full_path=full_path,
                options=options,
            )
        except CalipersError:
            # a writer caught mid-line (or holding the store's lock): read again once the
            # input has grown; an input that fails twice at the same size is really bad, and
            # its error stands
            sizes = _sizes(files, vs) if files or vs else _sizes((db,), ())
            if not follow or sizes == failed_at:
                raise
            failed_at = sizes
            time.sleep(poll)
            continue
        failed_at = None
        if not follow:
            break
        n = max((p.n_seen for p in result.result.pairs), default=0)
        if n != seen:
            seen = n
            _progress(result)
        planned_in = n_planned is not None and n >= n_planned
        late = timeout is not None and time.monotonic() - started >= timeout
        if result.decided or planned_in or late:
            break
        time.sleep(poll)
    failure = result.gate_failure(gate)
    report = result.to_dict()
    if gate != "none":
        # the gate's rule names the margin on the metric's scale, as compare's does (the
        # report's `margin` is the text given: "2%")
        on_scale = {**report["parameters"], "margin": report["parameters"].get("margin_on_scale")}
        report["gate"] = gate_result(gate, failure, scheme_name, {**report, "parameters": on_scale})

    def show(console: Console) -> None:
        watch_terminal(report, console)
        if "gate" in report:
            console.print(gate_line(report["gate"]), highlight=False)

    emit(
        report,
        json_out=json_out,
        html_out=html_out,
        page=watch_page,
        show=show,
        markdown_out=markdown_out,
        markdown=lambda r: watch_markdown(r, gate=gate, gate_failure=failure),
    )
    if failure:
        raise GateFailed(failure, hint=result.reason)


def _look(
    files: tuple[Path, ...],
    vs: tuple[Path, ...],
    baseline: str | None,
    candidates: tuple[str, ...],
    *,
    db: Path,
    column_map: str | None,
    scheme: str,
    design: str,
    n_planned: int | None,
    order: str,
    every: int,
    full_path: bool,
    options: dict[str, Any],
) -> SequentialComparison:
    """One read of the input and the decisions on everything in it."""
    samples, base, runs = open_compared(
        files, vs, baseline, candidates, db=db, column_map=column_map
    )
    with samples:
        print_warnings(samples.warnings)
        if scheme == "metric":
            # the built-in scheme itself rather than `get_scheme`, which imports every scheme
            # (rubric's pyarrow and YAML, …: a tenth of a second of the command); a plugin
            # cannot take the name "metric" (`register` refuses a second class under a name)
            found = MetricScheme().watch(
                samples, baseline=base, candidates=list(runs), design=design,
                n_planned=n_planned, order=order, every=every, **options,
            )  # fmt: skip
        else:
            made = api.watch(
                samples, scheme, baseline=base, candidates=runs, design=design,
                n_planned=n_planned, order=order, every=every, full_path=full_path, **options,
            )  # fmt: skip
            assert isinstance(made, SequentialComparison)
            found = made
    found.result.trace_full(full_path)
    return found


def _sizes(files: tuple[Path, ...], vs: tuple[Path, ...]) -> tuple[int, ...]:
    """The inputs' sizes (a directory: the sum of its files'), to tell a growing input."""
    found = []
    for path in (*files, *vs):
        try:
            found.append(
                sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
                if path.is_dir()
                else path.stat().st_size
            )
        except OSError:
            found.append(-1)
    return tuple(found)


def _progress(result: SequentialComparison) -> None:
    """One line per look while following, on stderr (stdout keeps the final report)."""
    parts = []
    for p in result.result.pairs:
        d = p.decision
        interval = "" if d.low is None else f" [{d.low:+.3g}, {d.high:+.3g}]"
        parts.append(f"{p.treatment}: {d.verdict}{interval} at n = {p.n_seen}")
    stderr_console().print("[dim]look:[/] " + escape("; ".join(parts)), highlight=False)
