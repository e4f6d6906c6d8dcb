"""`calipers score`, `calipers leaderboard` and `calipers schemes`: score runs with a registered
scheme. Which options apply, how the result looks in the terminal and on a page, all come from the
scheme's declaration; this module only parses flags and calls `calipers.score`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from calipers import api
from calipers.cli.data import print_warnings
from calipers.cli.main import cli, stdout_console
from calipers.cli.options import (
    FINITE,
    FiniteRange,
    LocalPath,
    as_option,
    bootstrap_options,
    db_option,
    given_scheme_options,
    html_option,
    json_option,
    layered_metric_options,
    map_option,
    markdown_option,
    one_stdout,
    quiet_option,
    rubric_options,
    runs_option,
)
from calipers.cli.output import emit
from calipers.errors import InputError
from calipers.render.markdown import score_markdown
from calipers.render.text import escape
from calipers.report.score_pages import score_page
from calipers.schemes import available, get_scheme
from calipers.schemes.base import Scheme, SchemeResult


def score_command_call(
    file: Path | None,
    *,
    db: Path,
    scheme: Scheme,
    runs: tuple[str, ...] | list[str] = (),
    rename: str | None = None,
    column_map: str | None = None,
    options: dict[str, Any],
    record_history: bool | None = None,
) -> SchemeResult:
    """The one library call behind `score`, `leaderboard` and `rank`. A scheme that keeps a
    history (rubric) records it in the store `--db` only with --record-history (scoring is
    read-only by default); its result then says so in a note, and otherwise where and how it
    would be recorded (`history_note`)."""
    keeps_history = "history" in scheme.Options.model_fields
    if keeps_history:
        options = {**options, "history": db if record_history else None}
    elif record_history is not None:  # refused by the scheme, naming --record-history
        options = {**options, "history": None}
    with _open(file, db=db, runs=runs, rename=rename, column_map=column_map) as samples:
        print_warnings(samples.warnings)
        result = api.score(samples, scheme.name, **options)
    if keeps_history and not record_history:
        result.notes.append(history_note(db))
    return result


def history_note(db: Path) -> str:
    """The one line that says the rubric history was not recorded, where it would be and how."""
    return (
        f"history: not recorded (scoring writes nothing); --record-history records these "
        f"evaluations in {db} (table rubric_history) and flags each dimension more than 2 SD "
        "from its task's last 10 evaluations"
    )


def _open(
    file: Path | None,
    *,
    db: Path,
    runs: tuple[str, ...] | list[str],
    rename: str | None,
    column_map: str | None = None,
) -> api.Samples:
    """FILE or the store; `--run` picks runs in either, `--as` names a FILE's run, `--map` maps
    a FILE's columns."""
    return api.open(
        file, db=None if file is not None else db, runs=list(runs), rename=rename, map=column_map
    )


def reasonscore_options(func: Any) -> Any:
    """`--z`, `--tier-order` and `--margin`, for score and leaderboard."""
    func = click.option(
        "--margin",
        type=FiniteRange(min=0, max=1, min_open=True),
        default=None,
        metavar="DELTA",
        help="reasonscore, objective: beside each run's cost per solved item, label the "
        "cheapest run shown within DELTA of the best (simultaneous bounds, as `rank --cost`; "
        "docs/cost.md). Needs cost_usd.",
    )(func)
    func = click.option(
        "--tier-order",
        default=None,
        metavar="TIER,…",
        help="reasonscore: tiers easiest first, e.g. easy,medium,hard (default: trivial < easy "
        "< medium < hard < extreme, numbered tiers by number, otherwise by observed difficulty).",
    )(func)
    return click.option(
        "--z", type=FINITE, default=None, help="reasonscore: Wilson z (default 1.96)."
    )(func)


@cli.command()
@click.argument("file", required=False, type=LocalPath(path_type=Path))
@click.option("--scheme", "scheme_name", required=True, help="Scoring scheme (`calipers schemes`).")
@reasonscore_options
@runs_option
@as_option
@map_option
@click.option(
    "--tasks",
    "detail",
    is_flag=True,
    help="Also print per-task scores (layered, metric: each run's mean and observations per "
    "task; reasonscore: per task and tier; rubric: per run and task; objective: always shown; "
    "robustness: refused, it scores cases).",
)
@click.option(
    "--baseline", default=None, help="objective: cost adjustments against this run's tasks."
)
@layered_metric_options
@bootstrap_options
@rubric_options
@json_option
@html_option
@markdown_option
@quiet_option
@db_option
def score(
    file: Path | None,
    scheme_name: str,
    runs: tuple[str, ...],
    rename: str | None,
    column_map: str | None,
    detail: bool,
    baseline: str | None,
    record_history: bool | None,
    json_out: str | None,
    html_out: Path | None,
    markdown_out: str | None,
    db: Path,
    **params: Any,
) -> None:
    """Score FILE (read directly, not imported) or the store's runs with a scheme.

    Options a scheme does not take are refused (exit 1). Scoring writes nothing: with
    --record-history the rubric scheme records every evaluation in the store's history (--db,
    table rubric_history) and flags dimensions more than 2 SD from their task's history; without
    it, a note says where that history is and how to record it. --markdown PATH|- writes a
    compact summary (one row per run: score, interval, samples) for a pull request comment or
    $GITHUB_STEP_SUMMARY."""
    scheme = get_scheme(scheme_name)
    one_stdout(json=json_out, markdown=markdown_out)
    if detail and scheme.no_tasks:
        raise InputError(f"--tasks: {scheme.no_tasks}", hint="Leave out --tasks.")
    options = given_scheme_options(params)
    if baseline is not None:
        options["baseline"] = baseline
    result = score_command_call(
        file, db=db, scheme=scheme, runs=runs, rename=rename, column_map=column_map,
        options=options, record_history=record_history,
    )  # fmt: skip
    emit(
        result.to_dict(),
        json_out=json_out,
        html_out=html_out,
        page=score_page,
        show=lambda console: scheme.terminal(result, console, detail=detail),
        markdown_out=markdown_out,
        markdown=lambda report: score_markdown(report, reading=_reading(scheme.name)),
    )


def _reading(scheme: str) -> Callable[..., str] | None:
    """The words a scheme gives a score's band in its terminal view (robustness: kelvin's,
    judged on the score's interval)."""
    if scheme != "robustness":
        return None
    from calipers.schemes.robustness.terminal import band

    return band


@cli.command()
@click.argument("file", required=False, type=LocalPath(path_type=Path))
@click.option(
    "--scheme",
    "scheme_name",
    default="reasonscore",
    show_default=True,
    help="A scheme that ranks runs: reasonscore (score/token), metric (the mean of --metric), "
    "layered (the composite).",
)
@reasonscore_options
@runs_option
@as_option
@map_option
@layered_metric_options
@bootstrap_options
@json_option
@html_option
@markdown_option
@quiet_option
@db_option
def leaderboard(
    file: Path | None,
    scheme_name: str,
    runs: tuple[str, ...],
    rename: str | None,
    column_map: str | None,
    json_out: str | None,
    html_out: Path | None,
    markdown_out: str | None,
    db: Path,
    **params: Any,
) -> None:
    """Rank runs by a scheme's headline number, best first, with each run's rank interval and
    tie group (runs the data cannot order): reasonscore by score/token with per-tier scores (the
    default); metric by the mean of --metric; layered by the composite. Rank intervals for metric
    and layered are over the samples every run has (docs/rankings.md)."""
    scheme = get_scheme(scheme_name)
    if not scheme.ranks_runs:
        ranking = [name for name, cls in available().items() if cls.ranks_runs]
        rubric = " `calipers rank` ranks rubric evaluations per task." if (
            scheme_name == "rubric") else ""  # fmt: skip
        raise InputError(
            f"the scheme '{scheme_name}' does not rank runs",
            hint=f"Schemes with a leaderboard: {', '.join(ranking)}.{rubric}",
            parameters=["scheme"],
        )
    options = given_scheme_options(params)
    result = score_command_call(
        file, db=db, scheme=scheme, runs=runs, rename=rename, column_map=column_map,
        options=options,
    )  # fmt: skip
    emit(
        result.to_dict(),
        json_out=json_out,
        html_out=html_out,
        page=score_page,
        show=lambda console: scheme.leaderboard_terminal(result, console),
        markdown_out=markdown_out,
        markdown=score_markdown,
    )


@cli.command("schemes")
@quiet_option
def list_schemes() -> None:
    """List the registered scoring schemes."""
    console = stdout_console()
    for name, cls in available().items():
        direction = "higher is better" if cls.higher_is_better else "lower is better"
        compares = "; compares runs" if cls.CompareOptions is not None else ""
        console.print(
            f"[bold]{escape(name)}[/]  {escape(cls.description)} ({direction}{compares}; needs "
            f"{escape(', '.join(cls.required_fields))})",
            highlight=False,
        )
