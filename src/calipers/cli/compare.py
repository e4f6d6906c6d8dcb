"""`calipers compare`: pair a control run with treatments and give a verdict that can gate CI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from calipers.cli.data import print_warnings
from calipers.cli.main import cli, db_option, stdout_console
from calipers.cli.options import html_option
from calipers.data.source import SampleSet, open_samples
from calipers.errors import GateFailed, InputError
from calipers.report import terminal_compare, terminal_objective
from calipers.report.json_report import write_json
from calipers.schemes.layered import DEFAULT_THRESHOLD
from calipers.stats import DEFAULT_SEED
from calipers.verdicts.compare import CompareResult, compare
from calipers.verdicts.gates import DEFAULT_TRIVIAL_DIFF, Verdict
from calipers.verdicts.objective import ObjectiveVerdict, compare_objective, load_settings


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


def objective_options(func: Any) -> Any:
    """The objective scheme's thresholds and weights (over those of --config)."""
    options = [
        click.option(
            "--config",
            "objective_config",
            type=click.Path(path_type=Path, dir_okay=False),
            default=None,
            help="objective: thresholds and weights from a YAML or JSON file.",
        ),
        click.option("--min-composite-gain", type=float, default=None, help="objective: 0.01."),
        click.option(
            "--regression-composite-drop", type=float, default=None, help="objective: 0.05."
        ),
        click.option(
            "--objective-drop-is-regression/--objective-drop-allowed",
            default=None,
            help="objective: any objective drop is a hard regression (default on).",
        ),
        click.option("--w-obj", type=float, default=None, help="objective: weight 0.6."),
        click.option("--w-judge", type=float, default=None, help="objective: weight 0.4."),
        click.option("--cost-weight", type=float, default=None, help="objective: cap 0.1."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def compare_objective_runs(
    samples: SampleSet,
    baseline: str,
    candidates: tuple[str, ...],
    objective: dict[str, Any],
    *,
    gate: str,
    json_out: str | None,
    html_out: Path | None,
    quiet: bool,
    options: dict[str, Any],
) -> None:
    """`compare --scheme objective`: one candidate against the baseline, gated on the verdict
    (no-regress) or on promotion (ship)."""
    if len(candidates) != 1:
        raise InputError(
            f"--scheme objective compares one candidate with the baseline, got {len(candidates)}",
            hint="Give exactly one --candidate RUN (or --treatment RUN).",
        )
    settings = load_settings(objective.pop("objective_config"), **objective)
    result = compare_objective(
        samples, baseline=baseline, candidate=candidates[0], settings=settings, **options
    )
    if json_out:
        write_json(result.to_dict(), json_out)
    if html_out is not None:
        from calipers.report.html.pages import write_page

        write_page("objective-compare", result.to_dict(), html_out)
    if not quiet and json_out != "-":
        terminal_objective.comparison(result, stdout_console())
    if gate == "no-regress" and result.verdict is ObjectiveVerdict.REGRESSED:
        raise GateFailed("the verdict is regressed (gate no-regress)", hint=result.reason)
    if gate == "ship" and not result.promote:
        raise GateFailed(
            f"the candidate is not promoted: the verdict is {result.verdict.value} (gate ship)",
            hint=result.reason,
        )


@cli.command("compare")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("--scheme", required=True, help="layered, metric or objective.")
@click.option("--control", "--baseline", "control", help="The run to compare against.")
@click.option(
    "--treatment",
    "--candidate",
    "treatments",
    multiple=True,
    help="A run to compare (repeat for several; objective: one).",
)
@comparison_options
@objective_options
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
@html_option
@click.option("-q", "--quiet", is_flag=True, help="No terminal output.")
@db_option
def compare_command(
    file: Path | None,
    scheme: str,
    control: str | None,
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
    html_out: Path | None,
    quiet: bool,
    db: Path,
    **objective: Any,
) -> None:
    """Compare runs of FILE (read directly) or of the store.

    layered and metric: paired bootstrap by sample, layer gates, and one of six verdicts
    (PROGRESS, CAUTIOUS, REGRESS, NOISE, UNDERPOWERED, SOLO); --gate ship passes on PROGRESS.
    objective: per-task composite deltas, hard regressions, improved / neutral / regressed and
    the promote decision; --gate ship passes only when the candidate is promoted.

    Exit codes: 0 the verdict passes the gate, 1 input problem, 2 the runs share no sample,
    3 the verdict fails the gate.
    """
    if control is None:
        raise InputError("give the run to compare against: --baseline RUN (or --control RUN)")
    samples = open_samples(file, db=db)
    print_warnings(samples.warnings)
    if scheme == "objective":
        compare_objective_runs(
            samples, control, treatments, objective, gate=gate, json_out=json_out,
            html_out=html_out, quiet=quiet,
            options={"confidence_level": confidence, "n_resamples": n_resamples, "seed": seed},
        )  # fmt: skip
        return
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
    if html_out is not None:
        from calipers.report.html.pages import write_page

        write_page("compare", result.to_dict(), html_out)
    if not quiet and json_out != "-":
        terminal_compare.comparison(result, stdout_console())
        if html_out is not None:
            stdout_console().print(f"[dim]HTML report → {html_out}[/]", highlight=False)
    failure = gate_failure(result, gate)
    if failure:
        raise GateFailed(failure, hint=result.reason)
