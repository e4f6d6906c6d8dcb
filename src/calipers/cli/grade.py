"""`calipers grade`: evaluate assertion specs against outputs and telemetry, and record results."""

from __future__ import annotations

from pathlib import Path

import click

from calipers.cli.main import cli, db_option, stdout_console
from calipers.errors import InputError
from calipers.grading.grade import grade_file, grade_store


@cli.command("grade")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option(
    "-o", "--out", type=click.Path(path_type=Path, dir_okay=False), help="With FILE: write here."
)
@click.option("--run", default=None, help="Without FILE: grade only this run of the store.")
@db_option
def grade(file: Path | None, out: Path | None, run: str | None, db: Path) -> None:
    """Evaluate the assertion specs of FILE into OUT, or of the store in place.

    A spec is an assertion without `passed`: its type and value are checked against the
    sample's output, tool calls and telemetry (see docs/layered.md for every type).
    """
    if file is not None:
        if out is None:
            raise InputError("grading a FILE needs -o OUT", hint="e.g. -o graded.jsonl")
        if out.resolve() == file.resolve():
            raise InputError("-o must differ from FILE", hint="Write a new file, then rename it.")
        summary = grade_file(file, out)
        where = str(out)
    else:
        if out is not None:
            raise InputError("-o is for grading a FILE; the store is graded in place")
        summary = grade_store(db, run=run)
        where = str(db)
    stdout_console().print(
        f"Graded {summary.assertions:,} assertion(s) on {summary.samples:,} sample(s): "
        f"{summary.passed:,} passed → {where}"
    )
