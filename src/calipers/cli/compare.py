"""`calipers compare`: pair a control run with treatments and give a verdict that can gate CI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from calipers.cli.data import print_warnings
from calipers.cli.main import cli, db_option, stdout_console
from calipers.data.source import open_samples
from calipers.errors import GateFailed
from calipers.report import terminal_compare
from calipers.report.json_report import write_json
from calipers.schemes.layered import DEFAULT_THRESHOLD
from calipers.stats import DEFAULT_SEED
from calipers.verdicts.compare import CompareResult, compare
from calipers.verdicts.gates import DEFAULT_TRIVIAL_DIFF, Verdict


def scheme_options(
    scheme: str, *, metric: str | None, weights: str | None, standardize: bool
) -> dict[str, Any]:
    """The options each comparable scheme takes, from the shared command-line flags."""
    if scheme == "metric":
        return {"metric": metric}
    if scheme == "layered":
        return {"weights": weights, "standardize": standardize}
    return {}


def gate_failure(result: CompareResult, gate: str) -> str | None:
    """Why the verdict fails the gate, or None when it passes."""
    if gate == "no-regress" and result.verdict is Verdict.REGRESS:
        return "the verdict is REGRESS (gate no-regress)"
    if gate == "ship" and result.verdict is not Verdict.PROGRESS:
        return f"the verdict is {result.verdict.value}, not PROGRESS (gate ship)"
    return None


def comparison_options(func: Any) -> Any:
    """Statistical options shared by `compare` and `score` for the comparable schemes."""
    options = [
        click.option("--metric", default=None, help="metric scheme: scores{NAME} or `correct`."),
        click.option(
            "--weights", default=None, metavar="LAYER=W,…", help="layered: e.g. fact=2,judge=1."
        ),
        click.option(
            "--standardize", is_flag=True, help="layered: z-score each layer before weighting."
        ),
        click.option(
            "--threshold",
            type=float,
            default=DEFAULT_THRESHOLD,
            show_default=True,
            help="layered: the gate every present layer's mean must reach.",
        ),
        click.option(
            "--n-resamples", type=click.IntRange(min=100), default=10_000, show_default=True
        ),
        click.option("--seed", type=click.IntRange(min=0), default=DEFAULT_SEED, show_default=True),
        click.option(
            "--confidence",
            type=click.FloatRange(0, 1, min_open=True, max_open=True),
            default=0.95,
            show_default=True,
            help="Confidence level (split α/K over K treatments).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@cli.command("compare")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("--scheme", required=True, help="layered or metric.")
@click.option("--control", required=True, help="The run to compare against.")
@click.option(
    "--treatment", "treatments", multiple=True, help="A run to compare (repeat for several)."
)
@comparison_options
@click.option(
    "--trivial-diff",
    type=float,
    default=DEFAULT_TRIVIAL_DIFF,
    show_default=True,
    help="A significant gain smaller than this is CAUTIOUS, not PROGRESS.",
)
@click.option(
    "--gate",
    type=click.Choice(["no-regress", "ship", "none"]),
    default="no-regress",
    show_default=True,
    help="Exit 3 on REGRESS (no-regress), unless PROGRESS (ship), or never (none).",
)
@click.option("--json", "json_out", default=None, metavar="PATH|-", help="Write the JSON report.")
@click.option("-q", "--quiet", is_flag=True, help="No terminal output.")
@db_option
def compare_command(
    file: Path | None,
    scheme: str,
    control: str,
    treatments: tuple[str, ...],
    metric: str | None,
    weights: str | None,
    standardize: bool,
    threshold: float,
    n_resamples: int,
    seed: int,
    confidence: float,
    trivial_diff: float,
    gate: str,
    json_out: str | None,
    quiet: bool,
    db: Path,
) -> None:
    """Compare runs of FILE (read directly) or of the store: paired bootstrap by sample, layer
    gates, and one of six verdicts (PROGRESS, CAUTIOUS, REGRESS, NOISE, UNDERPOWERED, SOLO).

    Exit codes: 0 the verdict passes the gate, 1 input problem, 2 the runs share no sample,
    3 the verdict fails the gate.
    """
    samples = open_samples(file, db=db)
    print_warnings(samples.warnings)
    result = compare(
        samples,
        scheme=scheme,
        control=control,
        treatments=list(treatments),
        scheme_options=scheme_options(
            scheme, metric=metric, weights=weights, standardize=standardize
        ),
        threshold=threshold,
        confidence_level=confidence,
        n_resamples=n_resamples,
        seed=seed,
        trivial_diff=trivial_diff,
    )
    if json_out:
        write_json(result.to_dict(), json_out)
    if not quiet and json_out != "-":
        terminal_compare.comparison(result, stdout_console())
    failure = gate_failure(result, gate)
    if failure:
        raise GateFailed(failure, hint=result.reason)
