"""`calipers check` (kelvin's robustness run) and `calipers init` (a working example to start
from)."""

from __future__ import annotations

import json
import shlex
import sys
from importlib import resources
from pathlib import Path

import click

from calipers.cli.main import cli, stderr_console, stdout_console
from calipers.cli.options import (
    LocalPath,
    db_option,
    executor_options,
    html_option,
    is_quiet,
    json_option,
    markdown_option,
    one_stdout,
    quiet_option,
)
from calipers.errors import InputError
from calipers.render.text import escape
from calipers.running.check import CheckOptions, CheckRun, run_check
from calipers.running.executor import default_workers
from calipers.running.kelvin_config import load_kelvin_config

# The scheme's terminal output and the JSON and Markdown writers are imported where used: the
# scheme layer (pydantic) loads while the pipelines run (running.check), not before them.

CONFIG_NAMES = ("kelvin.yaml", "calipers.yaml")


def find_config(config: Path | None) -> Path:
    if config is not None:
        return config
    for name in CONFIG_NAMES:
        if Path(name).is_file():
            return Path(name)
    raise InputError(
        "no kelvin.yaml or calipers.yaml in this directory",
        hint="Run `calipers init` to scaffold a working example, or pass --config PATH.",
    )


def store_rows(run: CheckRun, db: Path) -> int:
    """Import the check's samples into the store (validated, one transaction)."""
    from calipers.data.store import Store  # DuckDB is imported only when the store is written

    with Store(db) as store:
        return store.import_rows(run.rows).samples


@cli.command()
@click.option(
    "--config",
    type=LocalPath(path_type=Path, dir_okay=False),
    default=None,
    help="kelvin.yaml or calipers.yaml (default: the one in this directory).",
)
@click.option("--only", default=None, metavar="CASE", help="Run one case (peers: all cases).")
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Seed of the perturbations (default: the config's seed; recorded in the report).",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help=f"Pipeline invocations at once (default min(8, 2 × cores) = {default_workers()}).",
)
@click.option("--no-cache", is_flag=True, help="Invoke the pipeline even for cached inputs.")
@click.option(
    "--out",
    type=LocalPath(path_type=Path, file_okay=False),
    default=None,
    help="Output directory (default: kelvin/ beside the config, as kelvin).",
)
@click.option(
    "--pipeline-version",
    default=None,
    metavar="V",
    help="The pipeline's version, part of every cached output's key (as `calipers run`): a new "
    "version is invoked again, never served the old outputs.",
)
@click.option(
    "--pipeline-env",
    multiple=True,
    metavar="NAME",
    help="An environment variable the pipeline reads (repeatable): its value is part of every "
    "cached output's key.",
)
@click.option("--run", "run_name", default=None, help="Run name in the store (default: check).")
@click.option(
    "--no-store",
    is_flag=True,
    help="Do not record the check's samples in the store (--db). By default they are stored, as "
    "`calipers run` stores its run: check runs the pipeline, and its run is kept to be scored and "
    "compared later; the last line says where.",
)
@json_option
@html_option
@markdown_option
@executor_options
@quiet_option
@db_option
def check(
    config: Path | None,
    only: str | None,
    seed: int | None,
    jobs: int | None,
    no_cache: bool,
    out: Path | None,
    pipeline_version: str | None,
    pipeline_env: tuple[str, ...],
    run_name: str | None,
    no_store: bool,
    json_out: str | None,
    html_out: Path | None,
    markdown_out: str | None,
    executor: str,
    ray_address: str | None,
    db: Path,
) -> None:
    """Perturb each case (reorder, pad, swap, as kelvin) and measure whether the pipeline's
    decision follows the evidence: invariance, sensitivity and K, with intervals over cases.

    Like `calipers run`, check runs the pipeline and stores its samples in the store (--db) as
    run `check` (or --run), to score and compare later; --no-store leaves the store untouched.
    Cached outputs are reused only for the same run, command, files under the pipeline script's
    directory, --pipeline-version and --pipeline-env values (docs/running.md).

    --markdown PATH|- writes a compact summary (the signals with their intervals and bands, the
    diagnostic, the cases that moved, seed and counts) for a pull request comment or
    $GITHUB_STEP_SUMMARY.

    Exit codes: 0 ok, 1 config or cases problem, 2 decision field missing or every baseline
    failed.
    """
    one_stdout(json=json_out, markdown=markdown_out)
    cfg = load_kelvin_config(find_config(config))
    for warning in cfg.warnings:
        stderr_console().print(f"[yellow]warning:[/] {escape(warning)}")
    options = CheckOptions(
        only=only, seed=seed, workers=jobs, use_cache=not no_cache, out=out,
        run_name=run_name or "check", progress=None if not is_quiet() else False,
        pipeline_version=pipeline_version, pipeline_env=pipeline_env,
        executor="ray" if executor == "ray" else "local", ray_address=ray_address,
    )  # fmt: skip
    try:
        result = run_check(cfg, options)
    except KeyboardInterrupt:
        from calipers.errors import Interrupted

        cached = "are cached" if options.use_cache else "were not cached (--no-cache)"
        raise Interrupted(
            "check stopped before its report: nothing stored; the pipeline invocations that had "
            f"finished {cached}",
            hint="Run the same command again: cached invocations are not repeated.",
        ) from None
    stored = 0 if no_store else store_rows(result, db)
    from calipers.schemes.robustness import terminal as terminal_robustness

    if json_out or markdown_out:
        report = json.loads((result.out / "report.json").read_text())
    if json_out:
        from calipers.render.json_report import write_json

        write_json(report, json_out)
    if markdown_out:
        from calipers.render.markdown import check_markdown, write_markdown

        finding = terminal_robustness.diagnostic(
            result.result, cfg.decision_field, list(cfg.governing_types)
        )
        cases = [{"case": c.case, **c.scores()} for c in result.result.cases]
        write_markdown(
            check_markdown(
                report, cases=cases, reading=terminal_robustness.band, diagnostic=finding
            ),
            markdown_out,
        )
    if html_out is not None:
        from calipers.report.check_page import write_check_page

        write_check_page(result.out, html_out, diagnostic=terminal_robustness.diagnostic(
            result.result, cfg.decision_field, list(cfg.governing_types)
        ))  # fmt: skip
    if is_quiet() or "-" in (json_out, markdown_out):
        return
    console = stdout_console()
    terminal_robustness.run_summary(
        result.result, console, decision_field=cfg.decision_field,
        governing_types=list(cfg.governing_types),
    )  # fmt: skip
    terminal_robustness.case_table(result.result, console)
    for line in [*result.warnings, *result.notes]:
        console.print(f"[yellow]note:[/] {escape(line)}", highlight=False)
    where = (
        "; not stored (--no-store)"
        if no_store
        else f"; {stored} samples stored in {escape(str(db))} as run "
        f"'{escape(result.result.run)}' (--no-store skips this)"
    )
    console.print(
        f"[dim]seed {result.seed} · {result.invocations} pipeline invocations, "
        f"{result.cached} from the cache · reports in {escape(str(result.out))}{where}[/]",
        highlight=False,
    )
    for kind, path in (("HTML", html_out), ("Markdown", markdown_out)):
        if path:
            console.print(f"[dim]{kind} report → {escape(str(path))}[/]", highlight=False)


def scaffold_project(directory: Path) -> list[Path]:
    """Copy the example project (kelvin.yaml, cases, pipeline.py) into `directory`; never
    overwrites. The config runs the pipeline with this Python."""
    scaffold = resources.files("calipers.running.scaffold")
    targets = {
        "kelvin.yaml": directory / "kelvin.yaml",
        "pipeline.py": directory / "pipeline.py",
        **{
            f"cases/{p.name}": directory / "cases" / p.name
            for p in scaffold.joinpath("cases").iterdir()
            if p.name.endswith(".md")
        },
    }
    existing = [str(t) for t in targets.values() if t.exists()]
    if existing:
        raise InputError(
            f"not overwriting {', '.join(existing)}", hint="Choose an empty directory."
        )
    for source, target in sorted(targets.items()):
        text = scaffold.joinpath(source).read_text(encoding="utf-8")
        if source == "kelvin.yaml":
            text = text.replace("{python}", shlex.quote(sys.executable).replace("{", "{{"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return list(targets.values())


@cli.command()
@click.argument(
    "directory", type=LocalPath(path_type=Path, file_okay=False), default=Path("."), required=False
)
@quiet_option
def init(directory: Path) -> None:
    """Scaffold a working robustness check in DIRECTORY: kelvin.yaml, three cases and a small
    deterministic example pipeline. Existing files are never overwritten."""
    written = scaffold_project(directory)
    console = stdout_console()
    console.print(f"Wrote {len(written)} files to {escape(str(directory))}. Next:", highlight=False)
    console.print(f"  cd {escape(shlex.quote(str(directory)))} && calipers check", highlight=False)
