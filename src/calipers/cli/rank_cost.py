"""`calipers rank --cost --margin Δ`: the cheapest run that is good enough (docs/cost.md). Stages
the metric (`correct` by default) of the runs of FILE or the store and hands them to
`calipers.verdicts.cost_ranking`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from calipers.cli.options import FiniteRange, _add
from calipers.data.model import CLUSTERS
from calipers.data.sampleset import SampleSet
from calipers.errors import InputError
from calipers.verdicts.cost_ranking import CostRanking, rank_by_cost


def cost_rank_options(func: Any) -> Any:
    """Options of `calipers rank --cost`."""
    return _add(func, [
        click.option("--cost", is_flag=True,
                     help="Rank the runs by cost: the cheapest run shown within --margin of the "
                     "best (simultaneous bounds), and which are confidently dominated "
                     "(docs/cost.md)."),
        click.option("--margin", type=FiniteRange(min=0, min_open=True), default=None,
                     metavar="DELTA",
                     help="With --cost: how much worse than the best is still good enough, on "
                     "the metric's scale (0.03: three points of accuracy)."),
        click.option("--metric", default=None,
                     help="With --cost: the outcome, `correct` (default) or scores{NAME} with a "
                     "bounded scale."),
        click.option("--bounds", default=None, metavar="LOW,HIGH",
                     help="With --cost: the metric's bounds, when calipers does not know them."),
        click.option("--cluster", type=click.Choice(list(CLUSTERS)), default="auto",
                     show_default=True,
                     help="With --cost: the independent unit (auto: the samples' group when "
                     "every sample names one)."),
    ])  # fmt: skip


def cost_ranking(
    samples: SampleSet,
    *,
    margin: float,
    metric: str | None = None,
    runs: list[str] | None = None,
    bounds: str | None = None,
    cluster: str = "auto",
    confidence: float = 0.95,
    n_resamples: int = 2_000,
    seed: int = 0,
) -> CostRanking:
    """The ranking of `runs` (default: every run of `samples`) by cost within `margin`."""
    from calipers.schemes.metric import stage_metric

    chosen = list(runs) if runs else list(samples.runs())
    name = metric or "correct"
    staged = stage_metric(samples, chosen, metric=name, bounds=bounds)
    return rank_by_cost(
        staged, samples, chosen, margin=margin, metric=name, cluster=cluster,
        confidence_level=confidence, n_resamples=n_resamples, seed=seed,
        source=str(samples.origin),
    )  # fmt: skip


def rank_cost_command(
    *, file: Path | None, db: Path, runs: tuple[str, ...], margin: float | None,
    metric: str | None, bounds: str | None, cluster: str, json_out: str | None,
    html_out: Path | None, markdown_out: str | None, n_resamples: int, seed: int,
    confidence: float,
) -> None:  # fmt: skip
    from calipers import api
    from calipers.cli.output import emit
    from calipers.render import cost_ranking as view

    if margin is None:
        raise InputError(
            "--cost needs --margin DELTA: how much worse than the best is still good enough",
            hint="e.g. --margin 0.03 (three points of accuracy).", parameters=["margin"],
        )  # fmt: skip
    where = None if file is not None else db
    with api.open(file, db=where, runs=list(runs)) as samples:
        made = cost_ranking(
            samples, margin=margin, metric=metric, runs=list(runs), bounds=bounds,
            cluster=cluster, confidence=confidence, n_resamples=n_resamples, seed=seed,
        )  # fmt: skip
    report = made.to_dict()
    emit(
        report, json_out=json_out, html_out=html_out, page=view.page,
        show=lambda console: view.terminal(report, console),
        markdown_out=markdown_out, markdown=view.markdown,
    )  # fmt: skip
