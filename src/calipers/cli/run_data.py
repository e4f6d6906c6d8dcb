"""`calipers run --executor ray-data --input CASES --output DIR`: the cases of a Parquet input
through the pipeline on Ray Data, into resumable Parquet shards of samples
(`calipers.running.ray_data`); the rest of `calipers run` is cli/run.py."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from calipers.cli.main import stdout_console
from calipers.cli.options import LocalPath, is_quiet, judging_from
from calipers.errors import DataError, InputError
from calipers.render.text import escape

# Options of `calipers run` that a run into shards has no use for, by parameter: each is refused
# when typed, rather than silently ignored.
_STORE_ONLY = {
    "db": "--db", "json_path": "--json", "html_out": "--html", "no_cache": "--no-cache",
    "reuse_from": "--reuse-from", "pairwise_against": "--pairwise-against",
    "stop_design": "--stop", "stop_baseline": "--baseline", "stop_metric": "--metric",
    "stop_bounds": "--bounds", "stop_margin": "--margin", "stop_gate": "--gate",
}  # fmt: skip


def dataset_options(func: Any) -> Any:
    """--input, --output and --block-size: the options of --executor ray-data."""
    for option in reversed([
        click.option("--input", "cases_input", type=LocalPath(path_type=Path), default=None,
                     metavar="PATH",
                     help="With --executor ray-data: the cases, a Parquet file or a directory "
                     "of them (id, input, and optionally expected, assertions, epochs), "
                     "instead of SUITE."),
        click.option("--output", "shards_output", type=LocalPath(path_type=Path), default=None,
                     metavar="DIR",
                     help="With --executor ray-data: the directory of the Parquet shards of "
                     "samples; a re-run resumes, writing only the missing ones."),
        click.option("--block-size", type=click.IntRange(min=1), default=None, metavar="N",
                     help="With --executor ray-data: cases per block, and per shard "
                     "(default 500)."),
    ]):  # fmt: skip
        func = option(func)
    return func


def run_on_dataset(
    ctx: click.Context, suite: Path | None, executor: str, cases_input: Path | None,
    shards_output: Path | None, block_size: int | None,
) -> bool:  # fmt: skip
    """Run into shards when --executor ray-data asks for it (True: done); refuse the options of
    one way of running given with the other."""
    if executor != "ray-data":
        named = (("--input", cases_input), ("--output", shards_output),
                 ("--block-size", block_size))  # fmt: skip
        given = [flag for flag, value in named if value is not None]
        if given:
            raise InputError(
                f"{', '.join(given)} go with --executor ray-data",
                hint="Add --executor ray-data to run the Parquet cases on Ray Data into shards; "
                "for the thread pool or Ray tasks, give a SUITE (its cases_file: takes JSON "
                "Lines).",
            )
        if suite is None:
            raise InputError(
                "calipers run needs SUITE, the suite file",
                hint="calipers run SUITE --pipeline CMD --run NAME, or --executor ray-data "
                "--input CASES.parquet --output DIR for Parquet cases.",
            )
        return False
    if suite is not None:
        raise InputError(
            f"--executor ray-data reads its cases from --input, not from SUITE ({suite})",
            hint="Drop SUITE and give the cases as Parquet (--input), the epochs with --epochs "
            "and the pipeline's settings with their options (--timeout, --attempts, …).",
        )
    if cases_input is None or shards_output is None:
        raise InputError(
            "--executor ray-data needs --input (the Parquet cases) and --output (a directory "
            "for the shards)",
            hint="calipers run --executor ray-data --input cases.parquet --output shards/ "
            "--pipeline CMD --run NAME",
        )
    # typed on the command line: a store named by CALIPERS_DB is a default, not a request
    typed = [flag for name, flag in _STORE_ONLY.items()
             if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE]  # fmt: skip
    if typed:
        raise InputError(
            f"--executor ray-data writes Parquet shards, not the store: {', '.join(typed)} "
            "do not apply",
            hint="Drop them; import the shards afterwards with `calipers import DIR --db PATH`, "
            "and compare or gate from the store.",
        )
    _run(ctx.params, cases_input, shards_output, block_size)
    return True


def _run(p: dict[str, Any], cases: Path, output: Path, block_size: int | None) -> None:
    from calipers.running.preflight import check_run
    from calipers.running.ray_data import DEFAULT_BLOCK_SIZE, DatasetOptions, run_dataset
    from calipers.running.suite import Suite

    codes = tuple(sorted(set(p["transient_exit"])))
    options = DatasetOptions(
        run_name=p["run_name"], input=cases, output=output,
        block_size=block_size or DEFAULT_BLOCK_SIZE, workers=p["jobs"], epochs=p["epochs"],
        stdio=p["stdio"], timeout_s=p["timeout_s"] or 150.0,
        attempts=p["attempts"] or (3 if codes else 1), transient_exit=codes, seed=p["seed"],
        judging=judging_from(
            p["judges"], p["judge_base_url"], p["judge_key_env"], p["judge_kind"],
            p["judge_repeat"], p["no_debias_length"], timeout_s=p["judge_timeout"],
            retries=p["judge_retries"],
        ),
        pipeline_version=p["pipeline_version"], ray_address=p["ray_address"],
        progress=False if is_quiet() else None,
    )  # fmt: skip
    # the command's checks, before anything runs (no suite: no rubric to read)
    empty = Suite(path=cases, name=cases.name, epochs=1, tasks=[], inputs={})
    check_run(empty, p["command"], stdio=options.stdio, judging=options.judging)
    done = run_dataset(p["command"], options)
    if not is_quiet():
        _report(done, options.run_name, cases)
    failure = _failure(done, p["max_judge_failures"])
    if failure is not None:
        raise failure


def _failure(done: Any, max_fraction: float | None) -> DataError | None:
    """Exit 2 as `calipers run` does: every invocation written now failed, or a judge did."""
    if done.written and done.new_samples and done.failed == done.new_samples:
        return DataError(
            f"every invocation failed ({done.failed} samples with an error, in the shards "
            f"written in {done.output})",
            hint="Run the pipeline by hand on one case's input; see docs/running.md for the "
            'output contract ({"output": …}).',
        )
    for judge, (calls, failed) in sorted(done.judge_calls.items()):
        over = max_fraction is not None and failed / max(calls, 1) > max_fraction
        if calls and failed and (failed >= calls or over):
            return DataError(
                f"judge {judge}: {failed} of {calls} calls failed",
                hint="Check the judge's key (--judge-key-env), endpoint and model; the samples "
                "are in the shards with the failed judgments missing (never a 0).",
            )
    return None


def _report(done: Any, run: str, cases: Path) -> None:
    console = stdout_console()
    console.print(
        f"[bold]{escape(str(cases))}[/] → run [bold]{escape(run)}[/]: {done.blocks} block(s), "
        f"{done.written} shard(s) written now, {done.kept} kept from before · "
        f"{done.samples:,} samples in {escape(str(done.output))}"
        + (f" · {done.failed} failed invocation(s)" if done.failed else ""),
        highlight=False,
    )
    for judge, (calls, failed) in sorted(done.judge_calls.items()):
        console.print(f"  judge {escape(judge)}: {calls} call(s), {failed} failed", highlight=False)
    for note in done.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    console.print(
        f"[dim]Import them: calipers import {escape(shlex.quote(str(done.output)))} --db PATH[/]",
        highlight=False,
    )
