"""`calipers score` and `calipers leaderboard`: score runs with a registered scheme."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from calipers.cli.compare import comparison_options, scheme_options
from calipers.cli.data import print_warnings
from calipers.cli.main import cli, db_option, stdout_console
from calipers.cli.options import html_option
from calipers.data.history import history_series, record_history
from calipers.data.source import open_samples
from calipers.errors import InputError
from calipers.report import (
    terminal,
    terminal_compare,
    terminal_objective,
    terminal_robustness,
    terminal_rubric,
)
from calipers.report.html.score_pages import write_score_page
from calipers.report.json_report import write_json
from calipers.schemes import SchemeResult, available, get_scheme
from calipers.schemes.layered import SummaryResult
from calipers.schemes.objective import ObjectiveResult
from calipers.schemes.reasonscore import ReasonScoreResult
from calipers.schemes.robustness import RobustnessResult
from calipers.schemes.rubric import RubricResult


def score_samples(
    source: Path | None, *, db: Path, scheme: str, run: str | None, options: dict[str, Any]
) -> SchemeResult:
    """The one library call behind `score` and `leaderboard`."""
    samples = open_samples(source, db=db, run=run)
    print_warnings(samples.warnings)
    return get_scheme(scheme).score(samples, **options)


def write_reports(report: dict[str, Any], *, json_out: str | None, html_out: Path | None) -> None:
    if json_out:
        write_json(report, json_out)
    if html_out:
        write_score_page(report, html_out)


def rubric_options(func: Any) -> Any:
    """Options of the rubric scheme, shared by `score` and `rank`."""
    func = click.option(
        "--no-history",
        is_flag=True,
        help="rubric: do not record evaluations in the store's history, nor flag against it.",
    )(func)
    return click.option(
        "--rubric",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        help="rubric: a rubric file (YAML or JSON); default: the packaged one.",
    )(func)


def score_rubric(
    source: Path | None,
    *,
    db: Path,
    run: str | None,
    rubric: Path | None,
    history: bool,
    options: dict[str, Any],
) -> RubricResult:
    """Score with the rubric scheme, then record the evaluations in the store's history and flag
    them against it. The samples' connection is closed first: when they come from the store it is
    read-only, and DuckDB allows one configuration per file in a process."""
    samples = open_samples(source, db=db, run=run)
    print_warnings(samples.warnings)
    try:
        result = get_scheme("rubric").score(samples, rubric=rubric, **options)
    finally:
        samples.con.close()
    assert isinstance(result, RubricResult)
    if history:
        new = record_history(db, result.evaluations, rubric_sha256=result.rubric["sha256"])
        result.history = history_series(db, sorted({e.task for e in result.evaluations}))
        flagged = sum(1 for e in result.evaluations if e.history_flags)
        result.parameters["history"] = str(db)
        result.notes.append(
            f"history: {new} new evaluation(s) recorded in {db}; {flagged} flagged for review"
        )
    else:
        result.parameters["history"] = None
    return result


@cli.command()
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("--scheme", "scheme", required=True, help="Scoring scheme (see `calipers schemes`).")
@click.option("--z", type=float, default=None, help="Wilson z (reasonscore; default 1.96).")
@click.option(
    "--run",
    "run",
    default=None,
    help="With FILE: the run name of its samples (overrides theirs). Without: score only this run.",
)
@click.option("--tasks", "show_tasks", is_flag=True, help="Also print per-task scores.")
@click.option(
    "--baseline", default=None, help="objective: cost adjustments against this run's tasks."
)
@comparison_options
@rubric_options
@click.option("--json", "json_out", default=None, metavar="PATH|-", help="Write the JSON report.")
@html_option
@click.option("-q", "--quiet", is_flag=True, help="No terminal tables.")
@db_option
def score(
    file: Path | None,
    scheme: str,
    z: float | None,
    run: str | None,
    show_tasks: bool,
    baseline: str | None,
    metric: str | None,
    weights: str | None,
    standardize: bool,
    threshold: float,
    n_resamples: int,
    seed: int,
    confidence: float,
    rubric: Path | None,
    no_history: bool,
    json_out: str | None,
    html_out: Path | None,
    quiet: bool,
    db: Path,
) -> None:
    """Score FILE (read directly, not imported) or the store's runs with a scheme.

    The rubric scheme records every evaluation in the store's history (--db) and flags dimensions
    more than 2 SD from their task's history; --no-history skips both."""
    if scheme == "rubric":
        rubric_result = score_rubric(
            file, db=db, run=run, rubric=rubric, history=not no_history,
            options={"confidence_level": confidence, "n_resamples": n_resamples, "seed": seed},
        )  # fmt: skip
        write_reports(rubric_result.to_dict(), json_out=json_out, html_out=html_out)
        if not quiet and json_out != "-":
            terminal_rubric.rubric_report(rubric_result, stdout_console())
        return
    options: dict[str, Any] = {k: v for k, v in {"z": z}.items() if v is not None}
    if scheme in ("layered", "metric"):
        options = scheme_options(scheme, metric=metric, weights=weights, standardize=standardize)
        options.update(confidence_level=confidence, n_resamples=n_resamples, seed=seed)
        if scheme == "layered":
            options["threshold"] = threshold
    if scheme == "objective":
        options = {"baseline": baseline}
    if scheme == "robustness":
        options = {"confidence_level": confidence, "n_resamples": n_resamples, "seed": seed}
    result = score_samples(file, db=db, scheme=scheme, run=run, options=options)
    write_reports(result.to_dict(), json_out=json_out, html_out=html_out)
    if quiet or json_out == "-":
        return
    console = stdout_console()
    if isinstance(result, ReasonScoreResult):
        terminal.reasonscore_leaderboard(result, console)
        if show_tasks:
            terminal.reasonscore_tasks(result, console)
    elif isinstance(result, SummaryResult):
        terminal_compare.summary(result, console)
    elif isinstance(result, ObjectiveResult):
        terminal_objective.task_scores(result, console)
    elif isinstance(result, RobustnessResult):
        terminal_robustness.robustness_report(result, console)


@cli.command()
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option(
    "--scheme", "scheme", default="reasonscore", show_default=True, help="Scheme that ranks runs."
)
@click.option("--z", type=float, default=None, help="Wilson z (default 1.96).")
@click.option("--json", "json_out", default=None, metavar="PATH|-", help="Write the JSON report.")
@html_option
@click.option("-q", "--quiet", is_flag=True, help="No terminal table.")
@db_option
def leaderboard(
    file: Path | None,
    scheme: str,
    z: float | None,
    json_out: str | None,
    html_out: Path | None,
    quiet: bool,
    db: Path,
) -> None:
    """Rank runs (ReasonScore: by score/token, with per-tier scores)."""
    if scheme != "reasonscore":
        raise InputError(f"leaderboard supports --scheme reasonscore, not '{scheme}'")
    options = {k: v for k, v in {"z": z}.items() if v is not None}
    result = score_samples(file, db=db, scheme=scheme, run=None, options=options)
    write_reports(result.to_dict(), json_out=json_out, html_out=html_out)
    if not quiet and json_out != "-":
        assert isinstance(result, ReasonScoreResult)
        terminal.reasonscore_leaderboard(result, stdout_console())


@cli.command("schemes")
def list_schemes() -> None:
    """List the registered scoring schemes."""
    console = stdout_console()
    for name, cls in available().items():
        direction = "higher is better" if cls.higher_is_better else "lower is better"
        console.print(
            f"[bold]{name}[/]  {cls.description} ({direction}; needs "
            f"{', '.join(cls.required_fields)})"
        )
