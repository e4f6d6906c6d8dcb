"""`calipers run`: a suite through the user's pipeline, graded and judged, into the store."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click

from calipers.cli.judge_output import judge_failure, judges_table, with_calls
from calipers.cli.main import cli, stdout_console
from calipers.cli.options import (
    GATES,
    FiniteRange,
    LocalPath,
    db_option,
    html_option,
    is_quiet,
    judge_options,
    judging_from,
    output_path,
    quiet_option,
)
from calipers.cli.run_data import dataset_options, run_on_dataset
from calipers.cli.run_stop import make_stopper, stop_lines, stop_section
from calipers.errors import CalipersError, DataError, InputError, Interrupted
from calipers.render.text import escape
from calipers.running.executor import default_workers
from calipers.running.judging import CallCounts, JudgeSummary, judge_failures, summarize
from calipers.running.preflight import check_run
from calipers.running.run_suite import (
    PairwisePlan,
    RunInterrupted,
    RunOptions,
    SuiteRun,
    check_pairwise,
    judge_against,
    pairwise_plan,
    run_suite,
)
from calipers.running.suite import load_suite

RUN_SCHEMA_VERSION = 1


def store_rows(rows: list[dict[str, object]], db: Path) -> tuple[int, int]:
    """(samples written, earlier samples replaced): a re-run replaces every earlier sample of the
    run's tasks, whatever its epoch, so a re-run with fewer epochs leaves no stale ones."""
    from calipers.data.store import Store

    with Store(db) as store:
        summary = store.import_rows(rows, replace_tasks=True)
    return summary.samples, summary.replaced


@cli.command("run")
@click.argument("suite", type=LocalPath(path_type=Path, dir_okay=False), required=False)
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
    type=FiniteRange(min=0, min_open=True),
    default=None,
    help="Seconds per invocation (default: the suite's pipeline.timeout_s, else 150).",
)
@click.option(
    "--retry-exit-code",
    "transient_exit",
    type=click.IntRange(min=1, max=255),
    multiple=True,
    help="A pipeline exit code that means 'try again' (repeatable; adds to the suite's "
    "pipeline.transient_exit_codes).",
)
@click.option(
    "--attempts",
    type=click.IntRange(min=1, max=20),
    default=None,
    help="Tries per invocation for transient exit codes (default 3 when any is given).",
)
@click.option(
    "--no-cache",
    "--refresh",
    "no_cache",
    is_flag=True,
    help="Invoke the pipeline and ask the judges even where a result is cached.",
)
@click.option(
    "--pipeline-version",
    default=None,
    metavar="VERSION",
    help="The pipeline's version, part of the cache key: outputs cached under another version "
    "are not reused (default: the suite's pipeline.version).",
)
@click.option(
    "--reuse-from",
    default=None,
    metavar="RUN",
    help="Also reuse the cached outputs RUN made with the same command, inputs, files, version "
    "and environment (by default a run reuses only its own); the summary and the report say "
    "how many.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the retry jitter (recorded).",
)
@judge_options
@click.option(
    "--pairwise-against",
    "pairwise_against",
    multiple=True,
    metavar="RUN",
    help="After the run is stored, judge its outputs against RUN's (a run in the store) on the "
    "samples they share, in both orders, with the --judge judges (repeatable; replaces the "
    "suite's judge.pairwise.against); then `calipers rank --pairwise`.",
)
@click.option(
    "--no-pairwise",
    is_flag=True,
    help="Skip the pairwise judging the suite asks for (judge.pairwise).",
)
@click.option(
    "--stop",
    "stop_design",
    default=None,
    metavar="DESIGN",
    help="Stop as soon as the comparison with --baseline is decided: hybrid (a confidence "
    "sequence at every task plus the exact test at the suite's size), sequence, obf or pocock "
    "(group-sequential looks, obf:5). Tasks run in an order drawn from --seed; a task counts "
    "when all its epochs are in, in that order; a failed task counts as the worst outcome. "
    "docs/sequential.md",
)
@click.option(
    "--baseline",
    "stop_baseline",
    default=None,
    metavar="RUN",
    help="With --stop: the stored run of the same suite to compare with.",
)
@click.option(
    "--metric",
    "stop_metric",
    default=None,
    metavar="NAME",
    help="With --stop: compare this metric (scores{NAME} or correct) instead of the "
    "layered composite.",
)
@click.option(
    "--bounds",
    "stop_bounds",
    default=None,
    metavar="LOW,HIGH",
    help="With --stop --metric: the metric's bounds, when it has none known.",
)
@click.option(
    "--margin",
    "stop_margin",
    default=None,
    metavar="M",
    help="With --stop: also decide non-inferior / inferior at this margin.",
)
@click.option(
    "--gate",
    "stop_gate",
    type=click.Choice(GATES),
    default="no-regress",
    show_default=True,
    help="With --stop: exit 3 as compare's gates do (REGRESS; unless PROGRESS; unless "
    "non-inferior at --margin).",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray", "ray-data"]),
    default="local",
    show_default=True,
    help="local thread pool, Ray tasks, or Ray Data over a Parquet input of cases (--input, "
    "--output; needs Ray: pip install ray).",
)
@click.option(
    "--ray-address",
    default=None,
    metavar="ADDRESS",
    help="Ray cluster to use (default: RAY_ADDRESS, else a private local one).",
)
@dataset_options
@click.option(
    "--json",
    "json_path",
    default=None,
    callback=output_path,
    metavar="PATH|-",
    help="Write the run report to PATH (atomically), or to stdout for -.",
)
@html_option
@quiet_option
@db_option
@click.pass_context
def run_command(
    ctx: click.Context, suite: Path | None, command: str, run_name: str, jobs: int | None,
    epochs: int | None, stdio: bool,
    timeout_s: float | None, transient_exit: tuple[int, ...], attempts: int | None,
    no_cache: bool, pipeline_version: str | None, reuse_from: str | None, seed: int,
    judges: tuple[str, ...],
    judge_base_url: str | None, judge_key_env: str, judge_kind: str, judge_repeat: int,
    judge_timeout: float | None, judge_retries: int | None, max_judge_failures: float | None,
    no_debias_length: bool, pairwise_against: tuple[str, ...], no_pairwise: bool, executor: str,
    ray_address: str | None, json_path: str | None, html_out: Path | None, db: Path,
    stop_design: str | None = None, stop_baseline: str | None = None,
    stop_metric: str | None = None, stop_bounds: str | None = None,
    stop_margin: str | None = None, stop_gate: str = "no-regress",
    cases_input: Path | None = None, shards_output: Path | None = None,
    block_size: int | None = None,
) -> None:  # fmt: skip
    """Run SUITE's tasks through the pipeline (bounded pool, cached, resumable), grade their
    assertions, call the judges and record every sample in the store.

    With --pairwise-against RUN (or the suite's judge.pairwise.against), the stored run is then
    judged against RUN in both orders on their shared samples (docs/rankings.md).

    With --executor ray-data, the cases come from --input (Parquet) instead of SUITE and the
    samples go to Parquet shards in --output instead of the store (docs/running.md).

    Exit codes: 0 ok, 1 a suite or option problem, 2 every invocation failed, or a judge
    failed on every call (or beyond --max-judge-failures), or the run shares no sample with a
    run it is compared with; the samples are stored either way.
    """
    if run_on_dataset(ctx, suite, executor, cases_input, shards_output, block_size):
        return  # --executor ray-data: cli/run_data.py
    assert suite is not None  # run_on_dataset refuses a missing SUITE otherwise
    if no_pairwise and pairwise_against:
        raise InputError("--no-pairwise and --pairwise-against contradict each other")
    if reuse_from is not None and (no_cache or reuse_from == run_name):
        raise InputError(
            f"--reuse-from {reuse_from}: "
            + ("--no-cache reuses nothing" if no_cache else "that is the run being made (--run)"),
            hint="A run reuses its own cached outputs anyway; --reuse-from names another run.",
        )
    loaded = load_suite(suite)
    codes = tuple(sorted({*loaded.pipeline.transient_exit_codes, *transient_exit}))
    options = RunOptions(
        run_name=run_name, workers=jobs, epochs=epochs, use_cache=not no_cache, stdio=stdio,
        timeout_s=timeout_s or loaded.pipeline.timeout_s or 150.0,
        attempts=attempts or loaded.pipeline.attempts or (3 if codes else 1),
        transient_exit=codes, seed=seed, progress=False if is_quiet() else None,
        judging=judging_from(
            judges, judge_base_url, judge_key_env, judge_kind, judge_repeat, no_debias_length,
            timeout_s=judge_timeout if judge_timeout is not None else loaded.judge.timeout_s,
            retries=judge_retries if judge_retries is not None else loaded.judge.retries,
            refresh=no_cache,
        ),
        executor="ray" if executor == "ray" else "local", ray_address=ray_address,
        pipeline_version=pipeline_version or loaded.pipeline.version,
        env=tuple(loaded.pipeline.env), reuse_from=reuse_from,
    )  # fmt: skip
    check_run(loaded, command, stdio=stdio, judging=options.judging)  # before anything runs
    stopper = make_stopper(loaded, run_name, db, seed, design=stop_design, baseline=stop_baseline,
                       metric=stop_metric, bounds=stop_bounds, margin=stop_margin,
                       gate=stop_gate)  # fmt: skip
    options.stopper = stopper
    plan, plan_notes = pairwise_plan(loaded, run_name, pairwise_against, off=no_pairwise)
    if plan is not None:  # before the pipeline runs: a typo in a run name costs nothing
        check_pairwise(plan, db, loaded, options.judging)
    try:
        result = run_suite(loaded, command, options)
    except RunInterrupted as stop:
        kept = stop.partial
        stored, _ = store_rows(kept.rows, db) if kept.rows else (0, 0)
        raise Interrupted(
            f"run '{run_name}' stopped: {stored} of {stop.planned} samples had finished and are "
            f"stored in {db}",
            hint="Run the same command again to finish: finished pipeline invocations and judge "
            "replies are cached and not repeated.",
        ) from None
    finally:
        if stopper is not None:
            stopper.close()
    result.notes.extend(plan_notes)
    stored, replaced = store_rows(result.rows, db)
    body = run_report(result, loaded.name, options, stored, replaced)
    failure = run_failure(result, summarize(result.rows)[0], max_judge_failures)
    if stopper is not None:
        body["stop"], gate_failed = stop_section(stopper, result, stop_gate)
        failure = failure or gate_failed
    pairs = None
    if plan is not None and failure is None:  # a broken pipeline or judge: no pairs to judge
        pairs, failure = judge_pairwise(plan, options, db, stored, max_judge_failures)
        body["pairwise"] = pairs
    if json_path is not None:
        from calipers.render.json_report import write_json

        write_json(body, json_path)
    if html_out is not None:
        from calipers.render.html import report_page, write_html

        write_html(report_page(body, title=f"calipers run · {run_name}"), html_out)
    if not is_quiet() and json_path != "-":
        report(body, result, db)
        if "stop" in body:
            stop_lines(body["stop"])
        if pairs is not None:
            pairwise_report(pairs, options.run_name, db)
    if failure is not None:
        raise failure


def run_failure(
    result: SuiteRun, summaries: list[JudgeSummary], max_judge_failures: float | None
) -> CalipersError | None:
    """Why the run exits 2, if it does: every invocation failed, or a judge did."""
    if result.failed == len(result.rows):
        return DataError(
            f"every invocation failed ({result.rows[0].get('error')})",
            hint="Run the pipeline by hand on one task's input; see docs/running.md for the "
            'output contract ({"output": …}).',
        )
    return judge_failure(summaries, max_judge_failures)


def judge_pairwise(
    plan: PairwisePlan, options: RunOptions, db: Path, stored: int,
    max_judge_failures: float | None,
) -> tuple[dict[str, Any], CalipersError | None]:  # fmt: skip
    """The stored run against the plan's runs, pairwise: the report's `pairwise` section, and
    why the command exits 2 if it does (nothing shared, or a judge failed)."""
    from calipers.grading.pairwise import judge_stats, load_template, pair_tallies

    template = load_template(debias_length=options.judging.debias_length)
    section: dict[str, Any] = {
        "against": list(plan.against), "prompt_hash": template.sha256, "pairs": 0,
        "replaced": 0, "unshared": list(plan.against), "without_input": 0, "judges": [],
        "outcomes": [],
    }  # fmt: skip
    try:
        judged = judge_against(
            db, options.run_name, plan, options.judging, workers=options.workers,
            executor=options.executor, ray_address=options.ray_address,
            progress=options.progress,
        )  # fmt: skip
    except DataError as nothing_shared:
        return section, nothing_shared
    except Interrupted as stop:
        raise Interrupted(
            f"run '{options.run_name}' is stored ({stored} samples in {db}); pairwise {stop}",
            hint=stop.hint,
        ) from None
    stats = judge_stats(judged.rows)
    section.update(
        pairs=len({(r.run_a, r.run_b, r.task, r.sample_id, r.epoch) for r in judged.rows}),
        replaced=judged.replaced,
        unshared=sorted({r for pair in judged.unshared for r in pair} - {options.run_name}),
        without_input=judged.without_input,
        judges=[
            {**s.to_dict(), "cached": judged.calls.get(s.judge, CallCounts()).cached,
             "called": judged.calls.get(s.judge, CallCounts()).called}
            for s in stats
        ],
        outcomes=[t.to_dict() for t in pair_tallies(judged.rows)],
    )  # fmt: skip
    summaries = [
        JudgeSummary(s.judge, (0.0, 1.0), s.pairs, s.calls, s.failed, None, None, s.first_error)
        for s in stats
    ]
    why = judge_failures(summaries, max_judge_failures)
    failure = None if why is None else DataError(
        f"pairwise: {why}",
        hint="Check the judge's key (--judge-key-env), endpoint and model; the verdicts are "
        "stored with the failed orders missing (never a tie), and a re-run asks again.",
    )  # fmt: skip
    return section, failure


def pairwise_report(section: dict[str, Any], run: str, db: Path) -> None:
    """How many pairs were judged, each judge's flip rate, the outcomes; where to rank them."""
    from calipers.report.pairwise import judges_table, pairs_table

    console = stdout_console()
    against = ", ".join(escape(r) for r in section["against"])
    console.print(
        f"[bold]pairwise[/] {escape(run)} against {against}: {section['pairs']:,} pair(s) of "
        f"outputs judged in both orders"
        + (
            f" ({section['replaced']:,} earlier verdict(s) replaced)" if section["replaced"] else ""
        ),
        highlight=False,
    )
    if section["judges"]:
        judges_table(section["judges"], console)
        pairs_table(section["outcomes"], console, orders="both")
        rates = [
            f"{escape(j['judge'])} {j['flip_rate']:.2f}" for j in section["judges"]
            if j["flip_rate"] is not None
        ]  # fmt: skip
        if rates:
            console.print(
                f"  position-flip rate (verdict changed with the order): {', '.join(rates)}",
                highlight=False,
            )
    for other in section["unshared"]:
        console.print(
            f"[yellow]note:[/] {escape(run)} and {escape(other)} share no sample with an output: "
            "not compared",
            highlight=False,
        )
    if section["without_input"]:
        console.print(
            f"[yellow]note:[/] {section['without_input']} pair(s) of samples have no recorded "
            "input; their judges saw the task name instead.",
            highlight=False,
        )
    console.print(
        f"[dim]Rank the runs: calipers rank --pairwise --db {escape(shlex.quote(str(db)))}[/]",
        highlight=False,
    )


def run_report(
    result: SuiteRun, suite: str, options: RunOptions, stored: int, replaced: int = 0
) -> dict[str, Any]:
    """The run's JSON report (schema `calipers schema --report run`)."""
    summaries, agreement = summarize(result.rows)
    prompts = sorted(
        {j["prompt_hash"] for r in result.rows for j in r.get("judgments") or []} - {None}
    )
    assertions = [a for r in result.rows for a in r.get("assertions") or []]
    return {
        "schema_version": RUN_SCHEMA_VERSION,
        "kind": "run",
        "suite": suite,
        "run": options.run_name,
        "seed": options.seed,
        "executor": options.executor,
        "samples": len(result.rows),
        "stored": stored,
        "replaced": replaced,
        "failed": result.failed,
        "invocations": result.invocations,
        "cached": result.cached,
        "reused": result.reused,
        "pipeline": {
            "timeout_s": options.timeout_s,
            "attempts": options.attempts,
            "transient_exit_codes": list(options.transient_exit),
            "cache": options.use_cache,
            "reuse_from": options.reuse_from,
            **(result.identity.to_dict() if result.identity is not None else {}),
        },
        "assertions": {
            "total": len(assertions),
            "passed": sum(1 for a in assertions if a.get("passed")),
        },
        "judging": {
            "kind": options.judging.kind,
            "repeats": options.judging.repeats,
            "debias_length": options.judging.debias_length,
            "prompt_hashes": prompts,
            "judged_samples": result.judged,
            "judges": with_calls(summaries, result.judge_calls),
            "agreement": agreement,
        },
        "notes": result.notes,
    }


def report(body: dict[str, Any], result: SuiteRun, db: Path) -> None:
    console = stdout_console()
    a = body["assertions"]
    console.print(
        f"[bold]{escape(body['suite'])}[/] → run [bold]{escape(body['run'])}[/]: "
        f"{body['samples']} samples, {body['failed']} failed · assertions "
        f"{a['passed']}/{a['total']} passed · {result.judged} judged",
        highlight=False,
    )
    if body["judging"]["judges"]:
        judges_table(body["judging"], console)
    other = body["pipeline"]["reuse_from"]
    reused = (
        f" ({body['reused']} of them outputs of run '{escape(other)}', --reuse-from)"
        if other is not None
        else ""
    )
    console.print(
        f"[dim]{body['invocations']} pipeline invocations, {body['cached']} from the cache"
        f"{reused} ({body['executor']}) · {body['stored']} samples in {escape(str(db))}"
        + (
            f", replacing {body['replaced']} earlier sample(s) of this run's tasks"
            if body["replaced"]
            else ""
        )
        + "[/]",
        highlight=False,
    )
    for note in result.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
