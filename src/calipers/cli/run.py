"""`calipers run`: a suite through the user's pipeline, graded and judged, into the store."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape

from calipers.cli.main import cli, db_option, stdout_console
from calipers.errors import DataError
from calipers.grading.judges import judge_from_spec
from calipers.running.executor import default_workers
from calipers.running.run_suite import JudgeOptions, RunOptions, SuiteRun, run_suite
from calipers.running.suite import load_suite


def judge_options(func: click.decorators.FC) -> click.decorators.FC:
    """Judge flags shared by `run` and `grade`."""
    options = [
        click.option("--judge", "judges", multiple=True, metavar="SPEC",
                     help="openai:MODEL or 'command:PROGRAM ARGS' (repeat for an ensemble)."),
        click.option("--judge-base-url", default=None, help="OpenAI-compatible endpoint URL."),
        click.option("--judge-key-env", default="OPENAI_API_KEY", show_default=True,
                     help="Environment variable holding the endpoint's key."),
        click.option("--judge-kind", type=click.Choice(["overall", "objective"]),
                     default="overall", show_default=True,
                     help="overall 1–5 (layered) or objective 0–1; tasks with a rubric use it."),
        click.option("--judge-repeat", type=click.IntRange(min=1), default=1, show_default=True),
        click.option("--no-debias-length", is_flag=True,
                     help="Leave out the prompt paragraph against rewarding length."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


def judging_from(
    judges: tuple[str, ...], base_url: str | None, key_env: str, kind: str, repeat: int,
    no_debias: bool,
) -> JudgeOptions:  # fmt: skip
    return JudgeOptions(
        judges=[judge_from_spec(s, base_url=base_url, api_key_env=key_env) for s in judges],
        kind=kind, repeats=repeat, debias_length=not no_debias,
        cache_dir=Path(".calipers") / "judge-cache",
    )  # fmt: skip


def store_rows(rows: list[dict[str, object]], name: str, db: Path) -> int:
    from calipers.data.store import Store

    with Store(db) as store:
        return store.import_rows(rows, name=name).samples


@cli.command("run")
@click.argument("suite", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--pipeline",
    "command",
    required=True,
    help="Shell command with {input} and {output}, or reading stdin with --stdio.",
)
@click.option("--run", "run_name", required=True, help="Run name in the store.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help=f"Invocations at once (default {default_workers()}).",
)
@click.option(
    "--epochs",
    type=click.IntRange(min=1),
    default=None,
    help="Runs of each task (overrides the suite).",
)
@click.option("--stdio", is_flag=True, help="Input on stdin, JSON on stdout.")
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=150.0,
    show_default=True,
    help="Seconds per invocation.",
)
@click.option("--no-cache", is_flag=True, help="Invoke the pipeline even for cached inputs.")
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the retry jitter (recorded).",
)
@judge_options
@click.option("-q", "--quiet", is_flag=True, help="No terminal output.")
@db_option
def run_command(
    suite: Path, command: str, run_name: str, jobs: int | None, epochs: int | None, stdio: bool,
    timeout_s: float, no_cache: bool, seed: int, judges: tuple[str, ...],
    judge_base_url: str | None, judge_key_env: str, judge_kind: str, judge_repeat: int,
    no_debias_length: bool, quiet: bool, db: Path,
) -> None:  # fmt: skip
    """Run SUITE's tasks through the pipeline (bounded pool, cached, resumable), grade their
    assertions, call the judges and record every sample in the store.

    Exit codes: 0 ok, 1 a suite or option problem, 2 every invocation failed.
    """
    loaded = load_suite(suite)
    options = RunOptions(
        run_name=run_name, workers=jobs, epochs=epochs, use_cache=not no_cache, stdio=stdio,
        timeout_s=timeout_s, seed=seed, progress=False if quiet else None,
        judging=judging_from(judges, judge_base_url, judge_key_env, judge_kind, judge_repeat,
                             no_debias_length),
    )  # fmt: skip
    result = run_suite(loaded, command, options)
    stored = store_rows(result.rows, run_name, db)
    if not quiet:
        report(result, loaded.name, run_name, stored, db)
    if result.failed == len(result.rows):
        raise DataError(
            f"every invocation failed ({result.rows[0].get('error')})",
            hint="Run the pipeline by hand on one task's input; see docs/running.md for the "
            'output contract ({"output": …}).',
        )


def report(result: SuiteRun, suite: str, run: str, stored: int, db: Path) -> None:
    console = stdout_console()
    passed = sum(1 for r in result.rows for a in r.get("assertions") or [] if a.get("passed"))
    total = sum(len(r.get("assertions") or []) for r in result.rows)
    console.print(
        f"[bold]{escape(suite)}[/] → run [bold]{escape(run)}[/]: {len(result.rows)} samples, "
        f"{result.failed} failed · assertions {passed}/{total} passed · "
        f"{result.judged} judged",
        highlight=False,
    )
    console.print(
        f"[dim]{result.invocations} pipeline invocations, {result.cached} from the cache · "
        f"{stored} samples in {db}[/]",
        highlight=False,
    )
    for note in result.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
