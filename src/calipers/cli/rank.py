"""`calipers rank`: rubric evaluations by final score, then the rubric's nine tie-break levels;
with --pairwise, runs by Bradley–Terry strength; with --cost, the cheapest run that is good
enough (`calipers.cli.rank_cost`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from calipers.cli.main import cli
from calipers.cli.options import (
    LocalPath,
    db_option,
    html_option,
    json_option,
    markdown_option,
    quiet_option,
    rubric_options,
    runs_option,
)
from calipers.cli.output import emit
from calipers.cli.pairwise import pairwise_rank_options, rank_pairwise_command
from calipers.cli.rank_cost import cost_rank_options, rank_cost_command
from calipers.cli.score import score_command_call
from calipers.errors import InputError
from calipers.render.terminal import notes as print_notes
from calipers.schemes import get_scheme
from calipers.schemes.rubric import terminal
from calipers.schemes.rubric.html import rank_page
from calipers.schemes.rubric.rank import rank
from calipers.schemes.rubric.scoring import RubricResult


@cli.command("rank")
@click.argument("file", required=False, type=LocalPath(path_type=Path))
@click.option("--scheme", default="rubric", show_default=True, help="Only rubric ranks for now.")
@runs_option
@rubric_options
@json_option
@html_option
@markdown_option
@pairwise_rank_options
@cost_rank_options
@quiet_option
@db_option
def rank_command(
    file: Path | None,
    scheme: str,
    runs: tuple[str, ...],
    rubric: Path | None,
    record_history: bool | None,
    json_out: str | None,
    html_out: Path | None,
    markdown_out: str | None,
    db: Path,
    pairwise: bool,
    cost: bool,
    margin: float | None,
    metric: str | None,
    bounds: str | None,
    cluster: str,
    **pairwise_options: Any,
) -> None:
    """Rank the evaluations of FILE (or the store) per task: final score first, then correctness,
    safety, completeness, actionability, adherence, efficiency, consistency, fewer red flags and
    more bonuses. Says which level broke each tie; evaluations equal on all are equivalent.
    Writes nothing unless --record-history (the rubric history in --db, as `score`).

    With --pairwise: the runs by Bradley–Terry strength over the store's pairwise verdicts, or
    over the preferences in FILE (CSV, JSON Lines, JSON array or Parquet: model_a, model_b,
    winner as in arena logs, or a, b, winner), with bootstrap intervals, rank intervals and tie
    groups (docs/rankings.md).

    With --cost --margin Δ: the cheapest run shown within Δ of the best (multiple comparisons
    with the best), each run's accuracy and cost per solved item with intervals, and which runs
    are confidently dominated (docs/cost.md)."""
    if cost:
        if pairwise or rubric is not None or record_history is not None:
            raise InputError("--cost does not apply with --pairwise, --rubric or --record-history")
        rank_cost_command(
            file=file, db=db, runs=runs, margin=margin, metric=metric, bounds=bounds,
            cluster=cluster, json_out=json_out, html_out=html_out, markdown_out=markdown_out,
            n_resamples=pairwise_options["n_resamples"], seed=pairwise_options["seed"],
            confidence=pairwise_options["confidence"],
        )  # fmt: skip
        return
    if margin is not None or metric is not None or bounds is not None or cluster != "auto":
        raise InputError("--margin, --metric, --bounds and --cluster apply with --cost")
    if markdown_out:
        raise InputError("--markdown applies with --cost")
    if pairwise:
        if rubric is not None:
            raise InputError("--rubric does not apply with --pairwise")
        rank_pairwise_command(
            file=file, db=db, runs=runs, json_out=json_out, html_out=html_out,
            **pairwise_options,
        )  # fmt: skip
        return
    if scheme != "rubric":
        raise InputError(f"rank supports --scheme rubric, not '{scheme}'", parameters=["scheme"])
    options: dict[str, Any] = {"rubric": rubric} if rubric is not None else {}
    result = score_command_call(
        file,
        db=db,
        scheme=get_scheme("rubric"),
        runs=runs,
        options=options,
        record_history=record_history,
    )
    assert isinstance(result, RubricResult)
    ranked = rank(
        result.evaluations,
        origin=result.origin,
        parameters={"rubric": result.parameters["rubric"], "run": ", ".join(runs) or None},
    )
    emit(
        ranked.to_dict(),
        json_out=json_out,
        html_out=html_out,
        page=rank_page,
        show=lambda console: _show(ranked, result.notes, console),
    )


def _show(ranked: Any, notes: list[str], console: Any) -> None:
    """The ranking, then the line that says whether the rubric history was recorded."""
    terminal.ranking(ranked, console)
    print_notes([n for n in notes if n.startswith("history:")], console)
