"""Every option shared by several commands, defined once: the store (`--db`), `-q`, `--json`,
`--html`, the scheme options of `score` and `compare` (which the chosen scheme's declaration then
accepts or refuses), judges (`run`, `grade`) and executors (`run`, `check`, `grade`).

A scheme option is passed to the library only when the user gave it, so the scheme's own typed
options decide the defaults, and an option the scheme does not take is an error naming it."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from calipers.data.model import CLUSTERS  # not verdicts/: `check` needs no DuckDB
from calipers.errors import InputError
from calipers.stats import DEFAULT_SEED
from calipers.stats.estimate import INTERVAL_METHODS
from calipers.workspace import DEFAULT_DB, JUDGE_CACHE

if TYPE_CHECKING:
    from calipers.running.judging import JudgeOptions

_QUIET = "calipers.quiet"

# library parameter → the flag that sets it (where the two names differ)
FLAGS = {
    "runs": "--run",
    "rename": "--as",
    "map": "--map",
    "confidence_level": "--confidence",
    "baseline": "--baseline",
    "candidates": "--candidate",
    "history": "--record-history/--no-history",
    "config": "--config",
    "scheme": "--scheme",
    "source": "FILE",
    "db": "--db",
    "detail": "--tasks",
}


class LocalPath(click.Path):
    """A path option or argument: click's Path, and refused when it can name nothing — empty
    (an unset variable: `--db "$STORE"`), or under a file (`two.jsonl/x`: the directory to
    create is a file) — when the options are read, before any work, rather than as an OSError
    from deep inside a command."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        text = os.fsdecode(value) if isinstance(value, bytes | os.PathLike) else str(value)
        if not text.strip():
            self.fail("an empty path (an unset variable?): give a path.", param, ctx)
        if text != "-" or not self.allow_dash:
            parent = next((p for p in Path(text).absolute().parents if p.exists()), None)
            if parent is not None and not parent.is_dir():
                self.fail(f"{text!r}: {str(parent)!r} is a file, not a directory.", param, ctx)
        return super().convert(value, param, ctx)


class FiniteRange(click.FloatRange):
    """A number option: click's float (and FloatRange) take `nan`, `inf` and `-inf`, which no
    option means; they are refused as usage errors (exit 1). Without bounds, any finite number."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number

    def _describe_range(self) -> str:
        return super()._describe_range() if (self.min, self.max) != (None, None) else "finite"


FINITE = FiniteRange()
# the gates a comparison's exit code can follow (compare, watch, run --stop): one list, so a new
# gate reaches every command that gates
GATES = ("no-regress", "ship", "non-inferior", "worth-it", "none")


def flag_for(parameter: str) -> str:
    """The command-line spelling of a library parameter."""
    return FLAGS.get(parameter, "--" + parameter.replace("_", "-"))


def _add(func: Any, options: list[Any]) -> Any:
    for option in reversed(options):
        func = option(func)
    return func


def runs_option(func: Any) -> Any:
    """`--run NAME` (repeatable): which runs, on every command; never a rename (that is --as)."""
    return click.option(
        "--run",
        "runs",
        multiple=True,
        metavar="NAME",
        help="Only this run (repeatable). Names the runs as they are (after --as).",
    )(func)


def as_option(func: Any) -> Any:
    """`--as NAME`: the run name of every sample read from a file."""
    return click.option(
        "--as",
        "rename",
        default=None,
        metavar="NAME",
        help="Name the run of every sample read (overrides the file's run names).",
    )(func)


def map_option(func: Any) -> Any:
    """`--map FIELD=COLUMN,…`: a file whose columns have other names; and `--task NAME`, the
    task of every sample read, which travels in the map's value (`mapping.with_task`), so every
    command that takes `--map` takes it."""
    from calipers.data.mapping import with_task

    def remember(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
        ctx.meta["calipers.task"] = value

    def carry(ctx: click.Context, _: click.Parameter, value: str | None) -> str | None:
        return with_task(value, ctx.meta.get("calipers.task"))

    func = click.option(
        "--task",
        default=None,
        metavar="NAME",
        is_eager=True,
        expose_value=False,
        callback=remember,
        help="The task of every sample read (a table without a task column; replaces the "
        "file's tasks).",
    )(func)
    return click.option(
        "--map",
        "column_map",
        default=None,
        metavar="FIELD=COLUMN,…",
        callback=carry,
        help="Read a JSONL/CSV/Parquet file with other column names, e.g. "
        "sample_id=doc_id,scores.acc=acc,run=model; a nested field with dots "
        "(scores.acc=outputs.score).",
    )(func)


def db_option(func: Any) -> Any:
    """`--db PATH`: the store, for every command that touches it (remembered for the error
    boundary, which names it when the store fails underneath the command)."""

    def remember(ctx: click.Context, _: click.Parameter, value: Path) -> Path:
        ctx.meta["calipers.store"] = value  # failures.STORE_KEY
        return value

    return click.option(
        "--db",
        type=LocalPath(path_type=Path, dir_okay=False),
        default=DEFAULT_DB,
        envvar="CALIPERS_DB",
        show_default=True,
        callback=remember,
        help="The store: an embedded DuckDB file.",
    )(func)


def quiet_option(func: Any) -> Any:
    """`-q/--quiet` on every command that prints: it silences `stdout_console()` and progress bars
    for the rest of the command (errors and warnings still go to stderr)."""

    def silence(ctx: click.Context, _: click.Parameter, value: bool) -> bool:
        if value:
            ctx.meta[_QUIET] = True
        return value

    return click.option(
        "-q",
        "--quiet",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=silence,
        help="Print nothing on stdout (errors and warnings still go to stderr).",
    )(func)


def is_quiet() -> bool:
    context = click.get_current_context(silent=True)
    return bool(context and context.meta.get(_QUIET))


def output_path(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A report's path, checked when the options are read — before a pipeline or a judge is
    called — not after the work, when a run has already been stored: not empty, not a
    directory, not under a file. `-` (stdout) passes where the option allows it."""
    if value is None or str(value) == "-":
        return value
    text = str(value)
    if not text.strip():
        raise click.BadParameter(
            "an empty path (an unset variable?): give a file, or - for stdout where allowed."
        )
    path = Path(text)
    if path.is_dir():
        raise click.BadParameter(f"{text}: is a directory; give a file path.")
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise click.BadParameter(f"{text}: {parent} is a file, not a directory.")
    return value


def json_option(func: Any) -> Any:
    """`--json PATH|-` (parameter `json_out`): the JSON report to a file, or stdout for -."""
    return click.option(
        "--json",
        "json_out",
        default=None,
        callback=output_path,
        metavar="PATH|-",
        help="Write the JSON report to PATH (atomically), or to stdout for - (which then holds "
        "nothing else).",
    )(func)


def html_option(func: Any) -> Any:
    """`--html PATH` (parameter `html_out`): the result as one self-contained HTML page."""
    return click.option(
        "--html",
        "html_out",
        type=LocalPath(path_type=Path, dir_okay=False),
        default=None,
        callback=output_path,
        metavar="PATH",
        help="Write the report as one self-contained HTML page.",
    )(func)


def markdown_option(func: Any) -> Any:
    """`--markdown PATH|-` (parameter `markdown_out`): a compact Markdown summary for a pull
    request comment or `$GITHUB_STEP_SUMMARY`, to a file (atomically) or stdout for -."""

    def not_empty(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise click.BadParameter(
                "an empty path: is $GITHUB_STEP_SUMMARY set? (Outside GitHub Actions, give a "
                "file, or - for stdout.)"
            )
        checked: str | None = output_path(ctx, param, value)
        return checked

    return click.option(
        "--markdown",
        "markdown_out",
        default=None,
        callback=not_empty,
        metavar="PATH|-",
        help="Write a compact GitHub-flavoured Markdown summary (for a PR comment or "
        "$GITHUB_STEP_SUMMARY); - for stdout. The file is replaced, not appended to.",
    )(func)


def one_stdout(**outputs: str | Path | None) -> None:
    """Refuse two reports on stdout (`--json - --markdown -`): they would be mixed."""
    dashes = [name for name, value in outputs.items() if str(value) == "-"]
    if len(dashes) > 1:
        raise InputError(
            " and ".join(f"--{name} -" for name in dashes) + ": only one report can go to stdout",
            hint="Write the others to files.",
        )


# ------------------------------------------------------------------------ scheme options

# click parameter → library option of a scheme (passed only when given on the command line)
SCHEME_PARAMETERS = {
    "z": "z",
    "tier_order": "tier_order",
    "metric": "metric",
    "bounds": "bounds",
    "weights": "weights",
    "standardize": "standardize",
    "calibrate_judges": "calibrate_judges",
    "threshold": "threshold",
    "n_resamples": "n_resamples",
    "seed": "seed",
    "confidence": "confidence_level",
    "rubric": "rubric",
    "trivial_diff": "trivial_diff",
    "min_effect": "min_effect",
    "margin": "margin",
    "equivalence": "equivalence",
    "adjust": "adjust",
    "errors": "errors",
    "interval": "interval",
    "cluster": "cluster",
    "objective_config": "config",
    "min_composite_gain": "min_composite_gain",
    "regression_composite_drop": "regression_composite_drop",
    "objective_drop_is_regression": "objective_drop_is_regression",
    "w_obj": "w_obj",
    "w_judge": "w_judge",
    "cost_weight": "cost_weight",
    "value_per_solved": "value_per_solved",
}


def given_scheme_options(params: dict[str, Any]) -> dict[str, Any]:
    """The scheme options the user gave on the command line (or through the environment)."""
    ctx = click.get_current_context()
    given = {}
    for name, option in SCHEME_PARAMETERS.items():
        source = ctx.get_parameter_source(name)
        if name in params and source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            given[option] = params[name]
    return given


def bootstrap_options(func: Any) -> Any:
    """Interval options of every scheme that bootstraps (`score`, `compare`)."""
    return _add(func, [
        click.option("--n-resamples", type=click.IntRange(min=100), default=10_000,
                     show_default=True,
                     help="Bootstrap resamples (where a bootstrap interval is used)."),
        click.option("--seed", type=click.IntRange(min=0), default=DEFAULT_SEED,
                     show_default=True, help="Seed of the bootstrap (recorded in the report)."),
        click.option("--confidence", type=FiniteRange(0, 1, min_open=True, max_open=True),
                     default=0.95, show_default=True,
                     help="Confidence level (split α/K over K treatments)."),
    ])  # fmt: skip


def layered_metric_options(func: Any) -> Any:
    """Options of the layered and metric schemes."""
    return _add(func, [
        click.option("--metric", default=None, help="metric: scores{NAME} or `correct`."),
        click.option("--bounds", default=None, metavar="LOW,HIGH",
                     help="metric: the metric's declared bounds (e.g. 0,10). They give the "
                     "distribution-free interval and the scale of --min-effect, the trivial "
                     "difference and % margins; proportions (f1, accuracy, …) and 0/1 values "
                     "have them already. Without: unbounded, no scale read from the values."),
        click.option("--weights", default=None, metavar="LAYER=W,…",
                     help="layered: e.g. fact=2,judge=1."),
        click.option("--standardize", is_flag=True,
                     help="layered: z-score each layer before weighting."),
        click.option("--calibrate-judges", is_flag=True,
                     help="layered: correct the judge layer (each run's mean and each paired "
                     "difference) by the samples with human labels, by PPI++ (docs/judges.md); "
                     "at least 30 labelled samples."),
        click.option("--threshold", type=FINITE, default=3.5, show_default=True,
                     help="layered: the gate every present layer's mean must reach."),
        click.option("--interval", type=click.Choice(list(INTERVAL_METHODS)), default="auto",
                     show_default=True,
                     help="layered, metric: auto picks score (Wilson / Newcombe) for 0/1 "
                     "outcomes; otherwise t where enough units vary and skewness is mild, else "
                     "betting (declared bounds: distribution-free) or studentized (none); "
                     "percentile and bca bootstrap (≥ 200 units)."),
        click.option("--cluster", type=click.Choice(list(CLUSTERS)), default="auto",
                     show_default=True,
                     help="layered, metric: the independent unit — a sample with its epochs, a "
                     "`group` of samples, or a task; auto: by group when every sample names "
                     "one, else by sample (sample_id opts out)."),
    ])  # fmt: skip


def rubric_options(func: Any) -> Any:
    """Options of the rubric scheme (`score`, `rank`)."""
    return _add(func, [
        click.option("--rubric", type=LocalPath(path_type=Path, dir_okay=False), default=None,
                     help="rubric: a rubric file (YAML or JSON); default: the packaged one."),
        click.option("--record-history/--no-history", "record_history", default=None,
                     help="rubric: record the evaluations in the store's history (--db, table "
                     "rubric_history) and flag each dimension more than 2 SD from its task's "
                     "last 10 evaluations. Off by default: scoring and ranking write nothing "
                     "(--no-history, the former opt-out, is the default)."),
    ])  # fmt: skip


def objective_options(func: Any) -> Any:
    """The objective comparison's thresholds and weights (over those of --config)."""
    return _add(func, [
        click.option("--config", "objective_config", type=LocalPath(path_type=Path,
                     dir_okay=False), default=None,
                     help="objective: thresholds and weights from a YAML or JSON file."),
        click.option("--min-composite-gain", type=FINITE, default=None,
                     help="objective: a net gain above this is improved, at or below its "
                     "negative regressed (default 0.01)."),
        click.option("--regression-composite-drop", type=FINITE, default=None,
                     help="objective: a task whose composite falls by more than this is a hard "
                     "regression (default 0.05)."),
        click.option("--objective-drop-is-regression/--objective-drop-allowed", default=None,
                     help="objective: any objective drop is a hard regression (default on)."),
        click.option("--w-obj", type=FINITE, default=None,
                     help="objective: weight of the objective checks in the composite "
                     "(default 0.6)."),
        click.option("--w-judge", type=FINITE, default=None,
                     help="objective: weight of the judge score in the composite (default 0.4)."),
        click.option("--cost-weight", type=FINITE, default=None,
                     help="objective: the largest cost adjustment, up or down (default 0.1)."),
    ])  # fmt: skip


# ------------------------------------------------------------------------ judges, executors


def judge_options(func: click.decorators.FC) -> click.decorators.FC:
    """Judge flags shared by `run` and `grade`."""
    return _add(func, [  # type: ignore[no-any-return]
        click.option("--judge", "judges", multiple=True, metavar="SPEC",
                     help="openai:MODEL or 'command:PROGRAM ARGS' (repeat for an ensemble)."),
        click.option("--judge-base-url", default=None, help="OpenAI-compatible endpoint URL."),
        click.option("--judge-key-env", default="OPENAI_API_KEY", show_default=True,
                     help="Environment variable holding the endpoint's key."),
        click.option("--judge-kind", type=click.Choice(["overall", "objective"]),
                     default="overall", show_default=True,
                     help="overall 1–5 (layered) or objective 0–1; tasks with a rubric use it."),
        click.option("--judge-timeout", type=FiniteRange(min=0, min_open=True),
                     default=None, metavar="SECONDS",
                     help="Seconds a judge call may take (default: 60 for openai, 120 for "
                     "command judges)."),
        click.option("--judge-retries", type=click.IntRange(min=0), default=None, metavar="N",
                     help="Retries of a failed judge call (default: 3 openai, 2 command)."),
        click.option("--max-judge-failures", type=FiniteRange(0, 1), default=None,
                     metavar="FRACTION",
                     help="Exit 2 when a judge's failed share of calls exceeds this (always when "
                     "every call of a judge failed). The samples are stored either way."),
        click.option("--judge-repeat", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Calls per judge and sample (the report gives mean and SD)."),
        click.option("--no-debias-length", is_flag=True,
                     help="Leave out the prompt paragraph against rewarding length."),
    ])  # fmt: skip


def executor_options(func: click.decorators.FC) -> click.decorators.FC:
    """Where invocations and judge calls run: threads here, or Ray tasks."""
    return _add(func, [  # type: ignore[no-any-return]
        click.option("--executor", type=click.Choice(["local", "ray"]), default="local",
                     show_default=True,
                     help="local thread pool, or Ray tasks (needs Ray: pip install ray)."),
        click.option("--ray-address", default=None, metavar="ADDRESS",
                     help="Ray cluster to use (default: RAY_ADDRESS, else a private local one)."),
    ])  # fmt: skip


def judging_from(
    judges: tuple[str, ...], base_url: str | None, key_env: str, kind: str, repeat: int,
    no_debias: bool, *, timeout_s: float | None = None, retries: int | None = None,
    refresh: bool = False,
) -> JudgeOptions:  # fmt: skip
    from calipers.grading.judges import judges_from_specs
    from calipers.running.judging import JudgeOptions

    built = judges_from_specs(judges, base_url=base_url, api_key_env=key_env)
    for judge in built:  # a hung endpoint holds a worker timeout × (1 + retries) at most
        if timeout_s is not None:
            judge.timeout_s = timeout_s
        if retries is not None:
            judge.max_retries = retries
    return JudgeOptions(
        judges=built, kind=kind, repeats=repeat, debias_length=not no_debias,
        cache_dir=JUDGE_CACHE, refresh=refresh,
    )  # fmt: skip
