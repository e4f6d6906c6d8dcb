"""`calipers import`, `runs`, `export` and `schema`: the store from the command line."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from calipers.cli.main import cli, stderr_console, stdout_console
from calipers.cli.options import (
    LocalPath,
    as_option,
    db_option,
    map_option,
    output_path,
    quiet_option,
    runs_option,
)
from calipers.data.adapters import ADAPTERS
from calipers.data.files import write_atomic
from calipers.data.mapping import parse_map
from calipers.data.run_metrics import run_metric_means
from calipers.data.store import Store, describe_runs
from calipers.errors import InputError
from calipers.render.text import escape


def print_warnings(warnings: list[str]) -> None:
    err = stderr_console()
    for w in warnings:
        err.print(f"[yellow]warning:[/] {escape(w)}", markup=True, highlight=False)


def print_not_imported(entries: list[dict[str, Any]]) -> None:
    """The import's notes on what another tool's files held and calipers left out (stderr)."""
    from calipers.data.adapters.unimported import lines

    err = stderr_console()
    for line in lines(entries):
        err.print(f"[cyan]note:[/] {escape(line)}", markup=True, highlight=False)


def _write_import_json(json_out: str, summary: Any, db: Path) -> None:
    """`import --json`: the summary as the `import` schema describes it."""
    report = {
        "kind": "import",
        "store": str(db),
        "files": summary.files,
        "observations": summary.samples,
        "replaced": summary.replaced,
        "runs": list(summary.runs),
        "warnings": list(summary.warnings),
        "not_imported": summary.not_imported,
    }
    text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    if json_out == "-":
        sys.stdout.write(text)
        return
    if Path(json_out).is_dir():
        raise InputError(f"--json {json_out}: is a directory", hint="Give a file path.")
    write_atomic(Path(json_out), text, shared=True)


@cli.command("import")
@click.argument(
    "files", metavar="PATHS...", nargs=-1, required=True, type=LocalPath(path_type=Path)
)
@runs_option
@as_option
@map_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "jsonl", "csv", "parquet", *ADAPTERS]),
    default="auto",
    show_default=True,
    help="File format. auto: another tool's output by its content (inspect_ai log, lm-eval "
    "samples or results, promptfoo results, kelvin directory, lighteval details, oaieval record "
    "log, deepeval test run, HELM run directory, NeMo Evaluator BYOB predictions, Phoenix "
    "experiment download (JSON or CSV), promptfoo -o results.csv, MLflow eval_results_table.json, "
    "ragas result, LangSmith results table, Braintrust experiment events, Every Eval Ever "
    "instance-level JSON Lines), else by extension.",
)
@click.option(
    "--name-by",
    type=click.Choice(["tool", "directory", "file"]),
    default="tool",
    show_default=True,
    help="Name each PATH's runs after the tool's names (the model, …), the directory given (or "
    "the file's directory), or the file's name: `import logs/v1 logs/v2 --name-by directory` "
    "makes runs v1 and v2 of two logs of one model.",
)
@click.option(
    "--json",
    "json_out",
    default=None,
    callback=output_path,
    metavar="PATH|-",
    help="Also write what was imported as JSON (schema `import`): runs, counts, warnings and "
    "`not_imported`, the metrics and fields of another tool's files left out and why; to PATH "
    "(atomically), or to stdout for - (instead of the summary line).",
)
@quiet_option
@db_option
def import_(
    files: tuple[Path, ...],
    runs: tuple[str, ...],
    rename: str | None,
    column_map: str | None,
    fmt: str,
    name_by: str,
    json_out: str | None,
    db: Path,
) -> None:
    """Validate PATHS and import them into the store, all in one transaction. A directory
    stands for a harness's output in it (an inspect_ai log directory, an lm-eval output
    directory, promptfoo files, …). --run imports only the runs named; --as names the run of
    everything imported; --name-by names each PATH's runs after it."""
    if rename is not None and name_by != "tool":
        raise InputError("--as and --name-by both name the runs: give one")
    with Store(db) as store:
        summary = store.import_files(
            list(files), rename=rename, runs=runs or None, format=fmt,
            mapping=parse_map(column_map), name_by=name_by,
        )  # fmt: skip
    print_warnings(summary.warnings)
    print_not_imported(summary.not_imported)
    if json_out:
        _write_import_json(json_out, summary, db)
        if json_out == "-":
            return
    replaced = (
        f" ({summary.replaced:,} replaced observations with the same key)"
        if summary.replaced
        else ""
    )
    stdout_console().print(
        f"Imported {summary.samples:,} observations from {summary.files} file(s) into "
        f"{escape(str(db))}"
        f"{replaced}; runs: {', '.join(escape(r) for r in summary.runs)}"
    )


@cli.command()
@click.option(
    "--json",
    "json_out",
    default=None,
    callback=output_path,
    is_flag=False,
    flag_value="-",
    metavar="PATH|-",
    help="Write the runs as a JSON list: to PATH (atomically), or to stdout for - (instead of "
    "the table); a bare --json (the earlier flag) means --json -.",
)
@quiet_option
@db_option
def runs(json_out: str | None, db: Path) -> None:
    """List the runs in the store with their counts — samples (distinct task and sample id) and
    observations (a sample once per epoch) — and headline numbers: the mean of `correct` and of
    each metric in `scores` over the run's observations, with how many have it (`calipers score
    --scheme metric` gives intervals, `calipers leaderboard` ranks)."""
    with Store(db, read_only=True) as store:
        infos = describe_runs(store.runs())
        means = run_metric_means(store)
    for info in infos:
        info["metrics"] = means.get(info["run"], {})
    if json_out:
        text = json.dumps(infos, indent=2) + "\n"
        if json_out == "-":
            sys.stdout.write(text)
            return
        if Path(json_out).is_dir():
            raise InputError(f"--json {json_out}: is a directory", hint="Give a file path.")
        write_atomic(Path(json_out), text, shared=True)
        stdout_console().print(
            f"[dim]JSON → {escape(json_out)}: {len(infos)} runs[/]", highlight=False
        )
        return
    table = Table(title=f"runs in {escape(str(db))}", title_justify="left", pad_edge=False)
    for col, justify in (
        ("run\n[dim](imported)[/]", "left"),
        ("samples\n(observations)", "right"),
        ("tasks", "right"),
        ("epochs", "right"),
        ("metrics: mean (n)", "left"),
    ):
        table.add_column(col, justify=justify, overflow="fold",  # type: ignore[arg-type]
                         no_wrap=justify == "right",
                         min_width=22 if col.startswith("metrics") else None)  # fmt: skip
    for i in infos:
        imported = (i["last_import"] or "")[:10]  # the date; --json has the time
        table.add_row(
            escape(i["run"]) + (f"\n[dim]{imported}[/]" if imported else ""),
            f"{i['samples']:,} ({i['observations']:,})",
            str(i["tasks"]),
            str(i["epochs"]),
            _metrics_cell(i["metrics"]),
        )
    stdout_console().print(table)


METRICS_LISTED = 4  # per run in the table (the JSON has all)


def _metrics_cell(metrics: dict[str, dict[str, Any]]) -> str:
    """One line per metric, "accuracy 0.594 (320)"; "—" without any; "+ 3 more" past
    METRICS_LISTED."""
    shown = [
        f"{escape(name)} {'—' if m['mean'] is None else format(m['mean'], '.3f')} ({m['n']:,})"
        for name, m in list(metrics.items())[:METRICS_LISTED]
    ]
    more = len(metrics) - METRICS_LISTED
    return "\n".join(shown) + (f"\n+ {more} more" if more > 0 else "") if shown else "—"


@cli.command()
@click.argument("out", type=LocalPath(path_type=Path, allow_dash=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "csv", "jsonl", "eee"]),
    default=None,
    help="Output format (default: from OUT's extension; jsonl for -). eee: the Every Eval Ever "
    "schema, OUT a directory (OUT/data/<task>/<developer>/<model>/<uuid>.json and "
    "<uuid>_samples.jsonl per run and task).",
)
@click.option("--run", "runs_", multiple=True, metavar="NAME", help="Only this run (repeatable).")
@quiet_option
@db_option
def export(out: Path, fmt: str | None, runs_: tuple[str, ...], db: Path) -> None:
    """Write the store's samples to OUT (Parquet, CSV or JSON Lines), atomically; - writes them
    to stdout (JSON Lines unless --format), and nothing else."""
    if fmt == "eee":
        _export_eee(out, list(runs_), db)
        return
    if str(out) == "-":
        _export_to_stdout(db, fmt or "jsonl", list(runs_))
        return
    with Store(db, read_only=True) as store:
        n = store.export(out, format=fmt, runs=list(runs_) or None)
    stdout_console().print(f"Wrote {n:,} samples to {escape(str(out))}")


def _export_eee(out: Path, runs: list[str], db: Path) -> None:
    """`export OUT --format eee`: the Every Eval Ever files of each run and task under OUT."""
    from calipers import __version__
    from calipers.data.eee_export import export_eee, store_rows

    if str(out) == "-":
        raise InputError("--format eee writes a directory of files", hint="Give a directory.")
    with Store(db, read_only=True) as store:
        known = {r.run for r in store.runs()}
        missing = [r for r in runs if r not in known]
        if missing:
            raise InputError(
                f"--run {', '.join(missing)}: no such run in {db}",
                hint=f"Runs there: {', '.join(sorted(known)) or '(none)'}.",
            )
        done = export_eee(store_rows(store.samples(runs or None)), out, __version__)
    left = (
        f"; {done.left_out:,} observations with neither scores nor correct (errors) left out: "
        "EEE holds a score per record"
        if done.left_out
        else ""
    )
    stdout_console().print(
        f"Wrote {done.records:,} Every Eval Ever instance records in {len(done.files)} files "
        f"under {escape(str(out))}{left}",
        highlight=False,
    )


def _export_to_stdout(db: Path, fmt: str, runs: list[str]) -> None:
    """Export into a private temporary file, then copy its bytes to stdout (DuckDB writes
    files, and a pipe may be read while it is written)."""
    import shutil
    import tempfile

    with Store(db, read_only=True) as store, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"samples.{fmt}"
        store.export(path, format=fmt, runs=runs or None)
        sys.stdout.flush()
        with path.open("rb") as fh:
            shutil.copyfileobj(fh, sys.stdout.buffer)
        sys.stdout.buffer.flush()


@cli.command()
@click.option(
    "--report",
    "report",
    default=None,
    metavar="KIND",
    help="Print the schema of a JSON report instead: a scheme (reasonscore, layered, metric, "
    "rubric, objective, robustness), compare, objective-compare, check, plan, rank, "
    "pairwise-rank, cost-rank, run, store or import.",
)
@quiet_option
def schema(report: str | None) -> None:
    """Print the JSON Schema of one sample (or of a scheme's JSON report)."""
    if report is None:
        text = resources.files("calipers.data").joinpath("sample.schema.json").read_text("utf-8")
    else:
        found = resources.files("calipers.render.schemas").joinpath(f"{report}.schema.json")
        if not found.is_file():
            kinds = sorted(
                p.name.removesuffix(".schema.json")
                for p in resources.files("calipers.render.schemas").iterdir()
                if p.name.endswith(".schema.json")
            )
            raise InputError(f"no report schema for '{report}'", hint=f"Kinds: {', '.join(kinds)}.")
        text = found.read_text("utf-8")
    sys.stdout.write(text)


@cli.command()
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Only list the pending migrations (read-only); exit 1 when there are some.",
)
@quiet_option
@db_option
def migrate(check_only: bool, db: Path) -> None:
    """Upgrade a store made by an older calipers to the current schema (read-only commands never
    write, so they ask for this instead)."""
    from calipers.data.store import pending_migrations, upgrade_store

    if not db.exists():
        raise InputError(f"no store at {db}", hint="Give the store with --db PATH.")
    if check_only:
        pending = pending_migrations(db)
        if pending:
            raise InputError(
                f"the store {db} needs {len(pending)} migration(s): {', '.join(pending)}",
                hint=f"Run `calipers migrate --db {db}`.",
            )
        stdout_console().print(f"{escape(str(db))} is up to date")
        return
    applied = upgrade_store(db)
    done = f"applied {', '.join(applied)}" if applied else "already up to date"
    stdout_console().print(f"{escape(str(db))}: {done}", highlight=False)
