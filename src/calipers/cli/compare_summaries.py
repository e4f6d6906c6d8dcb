"""`calipers compare --parquet PATH|GLOB`, `--summaries FILE` and `--engine duckdb|ray`: the
verdict from the pair's summary table (docs/scale.md), computed where the data live — DuckDB over
Parquet (files, globs, hive-partitioned datasets, object storage) or over the store, the Ray Data
engine over Parquet, or a warehouse whose result is the FILE — and decided by the engine's own
rules. Where the decision needs what the summaries do not hold (the betting interval), the rows
are read instead, with a note."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from calipers.cli.main import stderr_console
from calipers.cli.options import LocalPath, given_scheme_options
from calipers.errors import GateFailed, InputError
from calipers.render.text import escape

ENGINES = ("duckdb", "ray")
# the Ray Data engine (another module, same table): parquet_summaries(path, *, baseline,
# candidate, metric, cluster) → calipers.data.summaries.ComputedSummaries
RAY_ENGINE = "calipers.data.ray_summaries"
# the compare options a comparison from summaries takes (parameter names)
TAKES = {
    "scheme_name", "baseline", "candidates", "metric", "bounds", "interval", "cluster",
    "n_resamples", "seed", "confidence", "trivial_diff", "min_effect", "margin", "equivalence",
    "gate", "json_out", "quiet", "db", "parquet", "summaries", "engine",
}  # fmt: skip


def summary_options(func: Any) -> Any:
    for option in reversed([
        click.option("--parquet", "parquet", default=None, metavar="PATH|GLOB",
                     help="Compare from the pair's summaries computed by DuckDB (or --engine "
                     "ray) over Parquet: a file, a glob, a directory or a hive-partitioned "
                     "dataset (run=NAME/…), local or s3://, gs://, https:// (docs/scale.md). "
                     "Needs --baseline, --candidate and --metric."),
        click.option("--summaries", "summaries", default=None, metavar="FILE",
                     type=LocalPath(path_type=Path, dir_okay=False),
                     help="Compare from a summary table (CSV, Parquet or JSON Lines): what a "
                     "warehouse returned for `calipers sql`'s query."),
        click.option("--engine", "engine", type=click.Choice(ENGINES), default=None,
                     help="Where the summaries are computed: duckdb (the default with "
                     "--parquet; on the store, compare from summaries instead of the rows) or "
                     "ray (Ray Data over --parquet)."),
    ]):  # fmt: skip
        func = option(func)
    return func


def wants_summaries(params: dict[str, Any]) -> bool:
    return any(params.get(k) is not None for k in ("parquet", "summaries", "engine"))


def compare_from_summaries(
    *, files: tuple[Path, ...], vs: tuple[Path, ...], gating: tuple[Any, Any], **given: Any
) -> None:
    """The `compare` command's body for --parquet, --summaries and --engine; `gating`: the
    command's (gate_result, gate_line), the gate's report and line as every comparison has them."""
    from calipers.cli.output import emit
    from calipers.render.summaries import summary_terminal

    _refuse_others(files, vs, given)
    parquet, file, engine = given["parquet"], given["summaries"], given["engine"]
    if sum(x is not None for x in (parquet, file)) > 1:
        raise InputError("give either --parquet or --summaries, not both")
    if file is not None and engine is not None:
        raise InputError("--engine computes the summaries; --summaries reads them made already")
    if (given.get("scheme_name") or "metric") != "metric":
        raise InputError(
            f"a comparison from summaries is the metric scheme's, not {given['scheme_name']}'s",
            hint="Use --scheme metric (or leave it out).",
        )
    gate = given["gate"]
    if gate == "worth-it":
        raise InputError("--gate worth-it needs the runs' costs, which the summaries do not hold",
                         hint="Gates here: no-regress, ship, non-inferior, none.")  # fmt: skip
    baseline, candidate = _names(given, required=file is None)
    metric = given.get("metric") or ("value" if file is not None else None)
    if metric is None:
        raise InputError(
            "a comparison from summaries needs --metric NAME",
            hint="correct, a scores.NAME column, a key of `scores`, or a column.",
        )
    gate_result, gate_line = gating
    result = _compare(parquet, file, engine, baseline, candidate, metric, given, gating)
    if result is None:
        return
    failure = result.gate_failure(gate)
    report = result.to_dict()
    if gate != "none":
        report["gate"] = gate_result(gate, failure, "metric", report)

    def show(console: Any) -> None:
        summary_terminal(report, console)
        if "gate" in report:
            console.print(gate_line(report["gate"]), highlight=False)

    emit(report, json_out=given.get("json_out"), html_out=None, show=show)
    if failure:
        raise GateFailed(failure, hint=result.reason)


def _refuse_others(files: tuple[Path, ...], vs: tuple[Path, ...], given: dict[str, Any]) -> None:
    if files or vs:
        raise InputError(
            "a comparison from summaries reads --parquet, --summaries or the store, not FILEs",
            hint="Drop the FILEs, or drop --parquet/--summaries/--engine.",
        )
    ctx = click.get_current_context()
    for param in ctx.command.params:
        name = param.name or ""
        typed = ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
        if typed and name not in TAKES and isinstance(param, click.Option):
            raise InputError(
                f"{param.opts[0]} does not apply to a comparison from summaries",
                hint="It takes --metric, --bounds, --interval, --cluster, --margin, "
                "--equivalence, --min-effect, --trivial-diff, --confidence, --n-resamples, "
                "--seed, --gate and --json (docs/scale.md).",
            )


def _names(given: dict[str, Any], *, required: bool) -> tuple[str, str]:
    baseline, candidates = given.get("baseline"), tuple(given.get("candidates") or ())
    if len(candidates) > 1:
        raise InputError("a comparison from summaries pairs one baseline with one candidate",
                         hint="Give one --candidate (run it once per candidate).")  # fmt: skip
    if required and (baseline is None or not candidates):
        raise InputError("a comparison from summaries needs --baseline RUN and --candidate RUN",
                         parameters=["baseline", "candidates"])  # fmt: skip
    return baseline or "baseline", candidates[0] if candidates else "candidate"


def _compare(parquet: str | None, file: Path | None, engine: str | None, baseline: str,
             candidate: str, metric: str, given: dict[str, Any],
             gating: tuple[Any, Any]) -> Any:  # fmt: skip
    from calipers.data.summaries import ComputedSummaries
    from calipers.stats.summary_stats import NotSummarizable, SummaryTable
    from calipers.verdicts.summary_compare import compare_summaries

    cluster = given.get("cluster") or "auto"
    if file is not None:
        from calipers.data.summary_files import read_summary_file

        columns = read_summary_file(file)
        computed = ComputedSummaries(
            columns, str(file), "file", _file_unit(columns, cluster), metric, "", 0.0
        )
    else:
        computed = _computed(parquet, engine or "duckdb", baseline, candidate, metric, cluster,
                             given)  # fmt: skip
    options = {k: given[k] for k in ("bounds", "min_effect", "trivial_diff", "margin")
               if given.get(k) is not None}  # fmt: skip
    try:
        return compare_summaries(
            SummaryTable.from_columns(computed.columns), control=baseline, treatment=candidate,
            origin=computed.origin, engine=computed.engine, metric=metric,
            cluster=computed.cluster.cluster, cluster_reason=computed.cluster.reason,
            confidence_level=given.get("confidence") or 0.95,
            n_resamples=given.get("n_resamples") or 10_000, seed=given["seed"],
            interval=given.get("interval") or "auto", equivalence=bool(given.get("equivalence")),
            notes=[*computed.notes, _timing(computed)], **options,
        )  # fmt: skip
    except NotSummarizable as why:
        if file is not None:
            raise
        _rows_instead(why, parquet, baseline, candidate, metric, given, gating)
        return None


def _file_unit(columns: dict[str, Any], cluster: str) -> Any:
    from calipers.data.summaries import ClusterUnit

    named = any(u is not None for u in columns["unit"])
    if cluster not in ("auto", "group", "task", "sample_id"):
        raise InputError(f"unknown `cluster` '{cluster}'", parameters=["cluster"])
    if not named:
        return ClusterUnit(None, "sample_id", "the table's units are its items")
    return ClusterUnit(
        "unit",
        cluster if cluster != "auto" else "unit",
        "the table's units are its named clusters",
    )


def _computed(parquet: str | None, engine: str, baseline: str, candidate: str, metric: str,
              cluster: str, given: dict[str, Any]) -> Any:  # fmt: skip
    if engine == "ray":
        if parquet is None:
            raise InputError("--engine ray reads Parquet: give --parquet PATH|GLOB")
        try:
            module = importlib.import_module(RAY_ENGINE)
        except ImportError as exc:
            raise InputError(f"the Ray Data engine is not available here ({exc})",
                             hint="Install Ray (pip install 'calipers[ray]'), or use --engine "
                             "duckdb.") from exc  # fmt: skip
        return module.parquet_summaries(parquet, baseline=baseline, candidate=candidate,
                                        metric=metric, cluster=cluster)  # fmt: skip
    from calipers.data.summaries import duckdb_summaries, parquet_summaries

    if parquet is not None:
        return parquet_summaries(parquet, baseline=baseline, candidate=candidate, metric=metric,
                                 cluster=cluster)  # fmt: skip
    from calipers.data.store import Store

    with Store(given["db"], read_only=True) as store:
        return duckdb_summaries(store.con, "samples", origin=str(store.path), baseline=baseline,
                                candidate=candidate, metric=metric, cluster=cluster)  # fmt: skip


def _timing(computed: Any) -> str:
    if computed.engine == "file":
        return f"summaries read from {computed.origin}"
    rows = len(computed.columns["count"])
    return f"summaries: {rows} rows, computed by {computed.engine} in {computed.seconds:.2f} s"


def _rows_instead(why: Any, parquet: str | None, baseline: str, candidate: str, metric: str,
                  given: dict[str, Any], gating: tuple[Any, Any]) -> None:  # fmt: skip
    """The decision needs the rows: run the ordinary comparison on them (every row in memory:
    the cost docs/scale.md states), saying so."""
    from calipers import api
    from calipers.data.summaries import parquet_rows

    stderr_console().print(
        f"[dim]note:[/] {escape(why.message)}; reading the rows instead (every row in memory)",
        highlight=False,
    )
    samples = api.open(db=given["db"]) if parquet is None else parquet_rows(parquet, metric)
    options = {k: v for k, v in given_scheme_options(given).items() if k != "metric"}
    _compare_rows(samples, baseline, candidate, metric, options, given, gating)


def _compare_rows(samples: Any, baseline: str, candidate: str, metric: str,
                  options: dict[str, Any], given: dict[str, Any],
                  gating: tuple[Any, Any]) -> None:  # fmt: skip
    from calipers import api
    from calipers.cli.output import emit
    from calipers.schemes import get_scheme

    gate_result, gate_line = gating
    scheme = get_scheme("metric")
    try:
        result = api.compare(samples, "metric", baseline=baseline, candidates=[candidate],
                             metric=metric, **options)  # fmt: skip
    finally:
        getattr(samples, "close", samples.con.close)()
    gate = given["gate"]
    failure = result.gate_failure(gate)
    report = result.to_dict()
    if gate != "none":
        report["gate"] = gate_result(gate, failure, "metric", report)

    def show(console: Any) -> None:
        scheme.compare_terminal(result, console)
        if "gate" in report:
            console.print(gate_line(report["gate"]), highlight=False)

    emit(report, json_out=given.get("json_out"), html_out=None, show=show)
    if failure:
        raise GateFailed(failure, hint=result.reason)
