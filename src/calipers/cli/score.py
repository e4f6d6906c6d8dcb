"""`calipers score` and `calipers leaderboard`: score runs with a registered scheme."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from calipers.cli.compare import comparison_options, scheme_options
from calipers.cli.data import print_warnings
from calipers.cli.main import cli, db_option, stdout_console
from calipers.data.source import open_samples
from calipers.errors import InputError
from calipers.report import terminal, terminal_compare
from calipers.report.json_report import write_json
from calipers.schemes import SchemeResult, available, get_scheme
from calipers.schemes.layered import SummaryResult
from calipers.schemes.reasonscore import ReasonScoreResult


def score_samples(
    source: Path | None, *, db: Path, scheme: str, run: str | None, options: dict[str, Any]
) -> SchemeResult:
    """The one library call behind `score` and `leaderboard`."""
    samples = open_samples(source, db=db, run=run)
    print_warnings(samples.warnings)
    return get_scheme(scheme).score(samples, **options)


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
@comparison_options
@click.option("--json", "json_out", default=None, metavar="PATH|-", help="Write the JSON report.")
@click.option("-q", "--quiet", is_flag=True, help="No terminal tables.")
@db_option
def score(
    file: Path | None,
    scheme: str,
    z: float | None,
    run: str | None,
    show_tasks: bool,
    metric: str | None,
    weights: str | None,
    standardize: bool,
    threshold: float,
    n_resamples: int,
    seed: int,
    confidence: float,
    json_out: str | None,
    quiet: bool,
    db: Path,
) -> None:
    """Score FILE (read directly, not imported) or the store's runs with a scheme."""
    options: dict[str, Any] = {k: v for k, v in {"z": z}.items() if v is not None}
    if scheme in ("layered", "metric"):
        options = scheme_options(scheme, metric=metric, weights=weights, standardize=standardize)
        options.update(confidence_level=confidence, n_resamples=n_resamples, seed=seed)
        if scheme == "layered":
            options["threshold"] = threshold
    result = score_samples(file, db=db, scheme=scheme, run=run, options=options)
    if json_out:
        write_json(result.to_dict(), json_out)
    if quiet or json_out == "-":
        return
    console = stdout_console()
    if isinstance(result, ReasonScoreResult):
        terminal.reasonscore_leaderboard(result, console)
        if show_tasks:
            terminal.reasonscore_tasks(result, console)
    elif isinstance(result, SummaryResult):
        terminal_compare.summary(result, console)


@cli.command()
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option(
    "--scheme", "scheme", default="reasonscore", show_default=True, help="Scheme that ranks runs."
)
@click.option("--z", type=float, default=None, help="Wilson z (default 1.96).")
@click.option("--json", "json_out", default=None, metavar="PATH|-", help="Write the JSON report.")
@db_option
def leaderboard(
    file: Path | None, scheme: str, z: float | None, json_out: str | None, db: Path
) -> None:
    """Rank runs (ReasonScore: by score/token, with per-tier scores)."""
    if scheme != "reasonscore":
        raise InputError(f"leaderboard supports --scheme reasonscore, not '{scheme}'")
    options = {k: v for k, v in {"z": z}.items() if v is not None}
    result = score_samples(file, db=db, scheme=scheme, run=None, options=options)
    if json_out:
        write_json(result.to_dict(), json_out)
    if json_out != "-":
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
