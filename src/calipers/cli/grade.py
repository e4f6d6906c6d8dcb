"""`calipers grade`: evaluate assertion specs against outputs and telemetry, and record results;
with `--judge`, (re-)judge the outputs already in the store."""

from __future__ import annotations

from pathlib import Path

import click

from calipers.cli.main import cli, stdout_console
from calipers.cli.options import (
    LocalPath,
    db_option,
    executor_options,
    is_quiet,
    judge_options,
    judging_from,
    output_path,
    quiet_option,
    runs_option,
)
from calipers.errors import DataError, InputError
from calipers.grading.grade import grade_file, grade_store
from calipers.render.text import escape
from calipers.running.judging import JudgeOptions


@cli.command("grade")
@click.argument("file", required=False, type=LocalPath(path_type=Path))
@click.option(
    "-o",
    "--out",
    type=LocalPath(path_type=Path, dir_okay=False),
    callback=output_path,
    help="With FILE: write here.",
)
@runs_option
@judge_options
@click.option(
    "--pairwise",
    is_flag=True,
    help="With --judge: judge pairs of runs on their shared samples, in both orders "
    "(docs/rankings.md); then `calipers rank --pairwise`.",
)
@click.option(
    "--rubric",
    type=LocalPath(path_type=Path, dir_okay=False),
    default=None,
    help="With --judge: judge on this rubric's seven dimensions.",
)
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Judge calls at once.")
@click.option(
    "--no-cache",
    "--refresh",
    "refresh",
    is_flag=True,
    help="Ask the judges again even where a reply is cached (the new replies are cached).",
)
@executor_options
@quiet_option
@db_option
def grade(
    file: Path | None, out: Path | None, runs: tuple[str, ...], judges: tuple[str, ...],
    judge_base_url: str | None, judge_key_env: str, judge_kind: str, judge_repeat: int,
    judge_timeout: float | None, judge_retries: int | None, max_judge_failures: float | None,
    no_debias_length: bool, pairwise: bool, rubric: Path | None, jobs: int | None,
    refresh: bool,
    executor: str, ray_address: str | None, db: Path,
) -> None:  # fmt: skip
    """Evaluate the assertion specs of FILE into OUT, or of the store in place; with --judge,
    judge the store's outputs (again).

    A spec is an assertion without `passed`: its type and value are checked against the
    sample's output, tool calls and telemetry (see docs/layered.md for every type). With
    --judge, each sample's earlier judgments by judges of the same names are replaced, in one
    transaction (see docs/judges.md).
    """
    if pairwise:
        from calipers.cli.pairwise import grade_pairwise_command, refuse_with_pairwise

        if not judges:
            raise InputError("--pairwise needs a judge", hint="Add --judge SPEC.")
        refuse_with_pairwise(FILE=file, **{"-o": out, "--rubric": rubric,
                                           "--judge-kind": judge_kind != "overall"})  # fmt: skip
        grade_pairwise_command(
            db, runs, judging_from(judges, judge_base_url, judge_key_env, judge_kind,
                                  judge_repeat, no_debias_length, timeout_s=judge_timeout,
                                  retries=judge_retries, refresh=refresh),
            jobs=jobs, executor=executor, ray_address=ray_address, quiet=is_quiet(),
            max_judge_failures=max_judge_failures,
        )  # fmt: skip
        return
    if judges:
        if file is not None:
            raise InputError(
                "--judge re-judges the store's samples, not a FILE",
                hint="Import the file first (`calipers import FILE`), then `calipers grade "
                "--judge …`.",
            )
        judge_store_command(
            db, runs, judging_from(judges, judge_base_url, judge_key_env, judge_kind,
                                  judge_repeat, no_debias_length, timeout_s=judge_timeout,
                                  retries=judge_retries, refresh=refresh),
            rubric=rubric, jobs=jobs, executor=executor, ray_address=ray_address, quiet=is_quiet(),
            max_judge_failures=max_judge_failures,
        )  # fmt: skip
        return
    if rubric is not None or refresh:
        flag = "--rubric" if rubric is not None else "--no-cache"
        raise InputError(f"{flag} is for judging", hint="Add --judge SPEC.")
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
        if runs:
            stored_runs(db, runs)
        summary = grade_store(db, runs=runs)
        where = str(db)
    if not is_quiet():
        stdout_console().print(
            f"Graded {summary.assertions:,} assertion(s) on {summary.samples:,} sample(s): "
            f"{summary.passed:,} passed → {escape(where)}"
        )


def judge_store_command(
    db: Path, runs: tuple[str, ...], judging: JudgeOptions, *, rubric: Path | None,
    jobs: int | None, max_judge_failures: float | None = None,
    executor: str, ray_address: str | None, quiet: bool,
) -> None:  # fmt: skip
    from calipers.cli.judge_output import judges_table, raise_judge_failures, with_calls
    from calipers.running.executor import open_backend
    from calipers.running.judging import judge_store, summarize

    if not db.is_file():
        raise DataError(f"no store at {db}", hint="Import or run something first, or give --db.")
    if runs:
        stored_runs(db, runs)
    backend = open_backend(
        "ray" if executor == "ray" else "local", workers=jobs, ray_address=ray_address
    )
    try:
        result = judge_store(
            db, judging, backend, runs=runs, rubric=rubric, progress=False if quiet else None
        )
    except BaseException:  # an interrupt (stored what finished) or an error
        backend.close(cancel=True)  # calls in flight are not waited for
        raise
    finally:
        backend.close()
    summaries, agreement = summarize(result.rows)
    if quiet:
        raise_judge_failures(summaries, max_judge_failures)
        return
    console = stdout_console()
    console.print(
        f"Judged {result.samples:,} sample(s) with {len(judging.judges)} judge(s) × "
        f"{judging.repeats} → {escape(str(db))} ({result.replaced:,} earlier judgment(s) "
        "replaced)",
        highlight=False,
    )
    if summaries:
        judges_table(
            {"judges": with_calls(summaries, result.calls), "agreement": agreement}, console
        )
    if result.without_input:
        console.print(
            f"[yellow]note:[/] {result.without_input} sample(s) have no recorded input; their "
            "judges saw the task name instead (`calipers run` records inputs)."
        )
    raise_judge_failures(summaries, max_judge_failures)


def stored_runs(db: Path, runs: tuple[str, ...]) -> None:
    """`--run` names runs of the store: an unknown one is an error, not an empty grading."""
    from calipers.data.store import Store

    with Store(db, read_only=True) as store:
        present = {info.run for info in store.runs()}
    missing = [r for r in runs if r not in present]
    if missing:
        raise InputError(
            f"--run {', '.join(missing)}: no such run in the store {db}",
            hint=f"Runs there: {', '.join(sorted(present)) or '(none)'} (`calipers runs`).",
        )
