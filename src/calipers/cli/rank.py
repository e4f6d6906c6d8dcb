"""`calipers rank`: rubric evaluations by final score, then the seed's nine tie-break levels."""

from __future__ import annotations

from pathlib import Path

import click

from calipers.cli.main import cli, db_option, stdout_console
from calipers.cli.score import rubric_options, score_rubric
from calipers.errors import InputError
from calipers.report import terminal_rubric
from calipers.report.json_report import write_json
from calipers.verdicts.rank import rank


@cli.command("rank")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("--scheme", default="rubric", show_default=True, help="Only rubric ranks for now.")
@click.option("--run", default=None, help="Rank only this run's evaluations.")
@rubric_options
@click.option("--json", "json_out", default=None, metavar="PATH|-", help="Write the JSON report.")
@click.option("-q", "--quiet", is_flag=True, help="No terminal tables.")
@db_option
def rank_command(
    file: Path | None,
    scheme: str,
    run: str | None,
    rubric: Path | None,
    no_history: bool,
    json_out: str | None,
    quiet: bool,
    db: Path,
) -> None:
    """Rank the evaluations of FILE (or the store) per task: final score first, then correctness,
    safety, completeness, actionability, adherence, efficiency, consistency, fewer red flags and
    more bonuses. Says which level broke each tie; evaluations equal on all are equivalent."""
    if scheme != "rubric":
        raise InputError(f"rank supports --scheme rubric, not '{scheme}'")
    result = score_rubric(file, db=db, run=run, rubric=rubric, history=not no_history, options={})
    ranked = rank(
        result.evaluations,
        origin=result.origin,
        parameters={"rubric": result.parameters["rubric"], "run": run},
    )
    if json_out:
        write_json(ranked.to_dict(), json_out)
    if not quiet and json_out != "-":
        terminal_rubric.ranking(ranked, stdout_console())
