"""`calipers grade --pairwise` and `calipers rank --pairwise`: judge pairs of runs in both orders,
then rank the runs by Bradley–Terry with bootstrap and rank intervals (docs/rankings.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from calipers.cli.main import stdout_console
from calipers.cli.options import FiniteRange, _add
from calipers.errors import DataError, InputError
from calipers.render.text import escape
from calipers.running.judging import JudgeOptions
from calipers.stats import DEFAULT_SEED


def pairwise_rank_options(func: Any) -> Any:
    """Options of `calipers rank --pairwise`."""
    return _add(func, [
        click.option("--pairwise", is_flag=True,
                     help="Rank the runs by Bradley–Terry over the store's pairwise verdicts "
                     "(`calipers grade --pairwise`), or over the preferences in FILE "
                     "(model_a, model_b, winner; or a, b, winner: docs/rankings.md)."),
        click.option("--judge-name", "pairwise_judges", multiple=True, metavar="NAME",
                     help="With --pairwise: only this judge's verdicts (repeatable; default all; "
                     "a file's `judge` column)."),
        click.option("--orders", type=click.Choice(["both", "ab"]), default="both",
                     show_default=True,
                     help="With --pairwise: both orders (a flip is a tie), or order ab alone "
                     "(the first run by name shown first: to see what position bias does)."),
        click.option("--prior", type=FiniteRange(min=0), default=1.0, show_default=True,
                     help="With --pairwise: virtual ties per compared pair of runs (0: the plain "
                     "maximum-likelihood strengths)."),
        click.option("--rank-method", type=click.Choice(["marginal", "simultaneous",
                                                          "percentile"]),
                     default="marginal", show_default=True,
                     help="With --pairwise: rank intervals for each run, or holding for all "
                     "runs at once (docs/rankings.md)."),
        click.option("--n-resamples", type=click.IntRange(min=100), default=10_000,
                     show_default=True, help="With --pairwise: bootstrap resamples."),
        click.option("--seed", type=click.IntRange(min=0), default=DEFAULT_SEED,
                     show_default=True, help="With --pairwise: seed of the bootstrap (reported)."),
        click.option("--confidence", type=FiniteRange(0, 1, min_open=True, max_open=True),
                     default=0.95, show_default=True, help="With --pairwise: confidence level."),
    ])  # fmt: skip


def rank_pairwise_command(
    *, file: Path | None = None, db: Path, runs: tuple[str, ...], json_out: str | None,
    html_out: Path | None = None, pairwise_judges: tuple[str, ...],
    orders: str, prior: float, rank_method: str, n_resamples: int, seed: int, confidence: float,
) -> None:  # fmt: skip
    from calipers.cli.output import emit
    from calipers.grading.pairwise import rank_pairs
    from calipers.report.pairwise import ranking
    from calipers.running.pairwise import pairwise_input

    rows, source, preferences = pairwise_input(file, db=db, runs=runs, judges=pairwise_judges)
    report = rank_pairs(
        rows, source=source, orders=orders,  # type: ignore[arg-type]
        prior=prior, n_resamples=n_resamples, confidence_level=confidence,
        rank_method=rank_method,  # type: ignore[arg-type]
        seed=seed, preferences=preferences,
    ).report  # fmt: skip
    from calipers.render.html import report_page

    emit(
        report, json_out=json_out, html_out=html_out,
        page=lambda body: report_page(body, title="calipers rank --pairwise"),
        show=lambda console: ranking(report, console),
    )  # fmt: skip


def grade_pairwise_command(
    db: Path, runs: tuple[str, ...], judging: JudgeOptions, *, jobs: int | None,
    executor: str, ray_address: str | None, quiet: bool, max_judge_failures: float | None,
) -> None:  # fmt: skip
    from calipers.grading.pairwise import judge_stats, pair_tallies
    from calipers.report.pairwise import judging as show
    from calipers.running.executor import open_backend
    from calipers.running.judging import JudgeSummary, judge_failures
    from calipers.running.pairwise import judge_pairs

    if not db.is_file():
        raise DataError(f"no store at {db}", hint="Import or run something first, or give --db.")
    backend = open_backend(
        "ray" if executor == "ray" else "local", workers=jobs, ray_address=ray_address
    )
    try:
        result = judge_pairs(db, judging, backend, runs=runs, progress=False if quiet else None)
    except BaseException:
        backend.close(cancel=True)
        raise
    finally:
        backend.close()
    stats = judge_stats(result.rows)
    if not quiet:
        notes = [
            f"{escape(a)} and {escape(b)} share no sample with an output: not compared"
            for a, b in result.unshared
        ]
        if result.without_input:
            notes.append(
                f"{result.without_input} pair(s) of samples have no recorded input; their judges "
                "saw the task name instead."
            )
        draws = len({(r.run_a, r.run_b, r.task, r.sample_id, r.epoch) for r in result.rows})
        show(
            stats, [t.to_dict() for t in pair_tallies(result.rows)], stdout_console(),
            headline=(
                f"Judged {draws:,} pair(s) of outputs in both orders ({result.run_pairs} pair(s) "
                f"of runs) with {len(judging.judges)} judge(s) × {judging.repeats} → "
                f"{escape(str(db))} ({result.replaced:,} earlier verdict(s) replaced)"
            ),
            notes=notes,
        )  # fmt: skip
    summaries = [
        JudgeSummary(s.judge, (0.0, 1.0), s.pairs, s.calls, s.failed, None, None, s.first_error)
        for s in stats
    ]
    why = judge_failures(summaries, max_judge_failures)
    if why is not None:
        raise DataError(
            why,
            hint="Check the judge's key (--judge-key-env), endpoint and model; the verdicts are "
            "stored with the failed orders missing (never a tie), and a re-run asks again.",
        )


def refuse_with_pairwise(**given: Any) -> None:
    """Options that mean nothing with --pairwise: an error, not silently ignored."""
    for flag, value in given.items():
        if value:
            raise InputError(f"{flag} does not apply with --pairwise")
