"""`calipers demo`: a seeded synthetic evaluation, imported into a demo store and scored."""

from __future__ import annotations

import shlex
import shutil
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from calipers import api
from calipers.cli.check import scaffold_project
from calipers.cli.main import cli, stdout_console
from calipers.cli.options import LocalPath, quiet_option
from calipers.data.store import Store
from calipers.demo.explain import agree, cost_lines, why_they_differ
from calipers.demo.synthetic import DEMO_SEED, generate_samples, write_jsonl
from calipers.grading.judges import CommandJudge
from calipers.render.changes import flips_terminal
from calipers.render.html import write_html
from calipers.render.text import escape
from calipers.report.check_page import write_check_page
from calipers.report.score_pages import store_page
from calipers.report.store_report import store_report
from calipers.running.check import CheckOptions, run_check
from calipers.running.judging import JudgeOptions
from calipers.running.kelvin_config import load_kelvin_config
from calipers.running.run_suite import RunOptions, run_suite
from calipers.running.suite import load_suite
from calipers.schemes import get_scheme
from calipers.schemes.objective.verdict import ObjectiveComparison
from calipers.schemes.robustness import terminal as terminal_robustness
from calipers.verdicts.compare import CompareResult
from calipers.workspace import DEFAULT_DB, DEMO_DIR

# Two variants of one model family: the larger one gains on facts and the judge, but its judge
# layer still misses the 3.5 gate, which the verdict reports instead of hiding in the composite.
DEMO_CONTROL = "atlas-small"
DEMO_TREATMENT = "atlas-large"
DEMO_FLIPS = 3  # the largest regressions and improvements shown after each comparison


@cli.command()
@click.option(
    "--dir",
    "directory",
    type=LocalPath(path_type=Path, file_okay=False),
    default=DEMO_DIR,
    show_default=True,
    help="Where the demo data and store go.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=DEMO_SEED,
    show_default=True,
    help="Seed of the synthetic data and of the robustness check.",
)
@click.option(
    "--db",
    type=LocalPath(path_type=Path, dir_okay=False),
    default=None,
    envvar="CALIPERS_DB",
    help=f"Also add the demo's runs to this store (replacing earlier samples of those runs' "
    f"tasks; other runs are kept). Default: {DEFAULT_DB}, the store the other commands read, "
    "when --dir is the default (so `calipers runs`, `leaderboard` and `report` show them); "
    "with another --dir, only when given. The demo's own numbers come from its store in --dir.",
)
@quiet_option
def demo(directory: Path, seed: int, db: Path | None) -> None:
    """Generate a synthetic evaluation, import it, print the ReasonScore leaderboard and a
    layered comparison of two variants with its verdict and the samples that flipped (the largest
    few each way); scaffold the example robustness project and check it; run the example support
    assistant's suite in two versions, judge them and compare them on quality (layered, with its
    flips) and on quality and cost (objective), and write HTML reports.
    Its runs also go into the default store (--db), and it ends with commands that reproduce its
    numbers without writing over its pages."""
    console = stdout_console()
    started = time.perf_counter()
    data = directory / "samples.jsonl"
    demo_db = directory / "demo.duckdb"  # the demo's own store: its numbers never depend on --db
    n = write_jsonl(data, generate_samples(seed=seed))
    console.print(f"Generated {n:,} observations (seed {seed}) → {escape(str(data))}")
    demo_db.unlink(missing_ok=True)  # a fresh store each time, so the demo is reproducible
    with Store(demo_db) as store:
        summary = store.import_files([data])
    console.print(f"Imported {summary.samples:,} observations into {escape(str(demo_db))}")
    layered_scheme = get_scheme("layered")
    with api.open(db=demo_db) as samples:
        get_scheme("reasonscore").terminal(api.score(samples, "reasonscore"), console)
        console.print()
        console.print(f"[bold]Layered comparison[/]: {DEMO_CONTROL} (control) → {DEMO_TREATMENT}")
        comparison = api.compare(
            samples, "layered", baseline=DEMO_CONTROL, candidates=[DEMO_TREATMENT]
        )
    assert isinstance(comparison, CompareResult)
    layered_scheme.compare_terminal(comparison, console)
    flips_terminal(comparison.to_dict(), console, top=DEMO_FLIPS)  # the samples that changed
    console.print()
    check_dir = directory / "check"
    console.print(
        "[bold]Robustness check[/] of the example pipeline (`calipers init` → "
        f"{escape(str(check_dir))})"
    )
    shutil.rmtree(check_dir, ignore_errors=True)
    scaffold_project(check_dir)
    checked = run_check(
        load_kelvin_config(check_dir / "kelvin.yaml"), CheckOptions(progress=False, seed=seed)
    )
    terminal_robustness.run_summary(
        checked.result, console, decision_field=checked.config.decision_field,
        governing_types=list(checked.config.governing_types),
    )  # fmt: skip
    console.print()
    layered, objective, rows = demo_suite_run(directory, demo_db, console)
    html = directory / "compare.html"
    write_html(layered_scheme.compare_page(layered.to_dict()), html)
    check_html = directory / "check.html"
    write_check_page(checked.out, check_html, diagnostic=terminal_robustness.diagnostic(
        checked.result, checked.config.decision_field, list(checked.config.governing_types)
    ))  # fmt: skip
    store_html = directory / "report.html"
    write_html(store_page(store_report(demo_db)), store_html)
    console.print(
        f"\n[bold]HTML reports[/]: the assistant comparison → {escape(str(html))} · the "
        f"robustness check → {escape(str(check_html))} · the whole store (leaderboard, every "
        f"scheme) → {escape(str(store_html))}",
        highlight=False,
    )
    if db is None and directory == DEMO_DIR:
        db = DEFAULT_DB
    stored = [] if db is None else copy_to_store(data, rows, demo_db, db)
    if stored:
        console.print(
            f"The demo's {len(stored)} runs are also in {escape(str(db))}, the store every "
            "command reads by default: `calipers runs` lists them, and the tour in README.md "
            "starts from there.",
            highlight=False,
        )
    q = shlex.quote
    hints = [
        f"calipers score {q(str(data))} --scheme reasonscore --tasks",
        f"calipers compare {q(str(data))} --scheme layered --control {DEMO_CONTROL} "
        f"--treatment {DEMO_TREATMENT} --seed {comparison.seed} --flips {DEMO_FLIPS}",
        f"calipers check --config {q(str(check_dir / 'kelvin.yaml'))} --seed {checked.seed} "
        f"--out {q(str(directory / 'check-rerun'))}",
        f"calipers compare --db {q(str(demo_db))} --scheme layered --control assistant-v1 "
        f"--treatment assistant-v2 --seed {layered.seed} --flips {DEMO_FLIPS}",
        f"calipers compare --db {q(str(demo_db))} --scheme objective --baseline assistant-v1 "
        f"--candidate assistant-v2"
        + ("" if objective.interval is None else f" --seed {objective.interval.seed}")
        + f" --gate ship{'' if objective.promote else '   # exits 3: the gate refuses it'}",
    ]
    console.print(
        f"\n{time.perf_counter() - started:.1f} s. The same numbers again, from this directory "
        "(each command names the demo's data and seed, and none writes over the pages above):",
        highlight=False,
    )
    for hint in hints:
        console.print(f"  {escape(hint)}", highlight=False, soft_wrap=True)
    # not one of the hints above (each reproduces a part of this output): the store, browsable
    console.print(
        f"\nBrowse the demo's store (runs, comparisons, flips, judges, repeats): "
        f"{escape(f'calipers view --db {q(str(demo_db))} --open')}",
        highlight=False,
        soft_wrap=True,
    )


def copy_to_store(data: Path, rows: list[dict[str, Any]], demo_db: Path, db: Path) -> list[str]:
    """Add the demo's samples (the synthetic file and the assistant runs) to the store the other
    commands read, replacing earlier samples of the same runs' tasks and keeping every other run;
    the run names it wrote. Nothing when that store is the demo's own."""
    if db.resolve() == demo_db.resolve():
        return []
    with Store(db) as store:
        runs = store.import_files([data], replace_tasks=True).runs
        runs += store.import_rows(rows, replace_tasks=True).runs
    return sorted(set(runs))


def demo_suite_run(
    directory: Path, db: Path, console: Console
) -> tuple[CompareResult, ObjectiveComparison, list[dict[str, Any]]]:
    """The bundled support assistant, v1 then v2, through `calipers run` with a deterministic
    command judge (no network); then both comparisons: the layered verdict on quality, and the
    objective gate, whose cost adjustment can still refuse the promotion, with the cost figures
    behind it and why the two disagree. Returns both and the runs' rows."""
    assets = Path(str(resources.files("calipers.demo.assistant")))
    suite = load_suite(assets / "suite.yaml")
    python = shlex.quote(sys.executable)
    judge = CommandJudge("demo-judge", f"{python} {shlex.quote(str(assets / 'judge.py'))}")
    console.print(
        f"[bold]Suite run[/]: {escape(suite.name)} ({len(suite.tasks)} tasks) through the example "
        "assistant v1 and v2, judged by a deterministic command judge"
    )
    shutil.rmtree(directory / "runs", ignore_errors=True)
    rows: list[dict[str, Any]] = []
    for version in ("v1", "v2"):
        name = f"assistant-{version}"
        command = (
            f"{python} {shlex.quote(str(assets / 'assistant.py'))} --version {version} "
            "{input} {output}"
        )
        result = run_suite(suite, command, RunOptions(
            run_name=name, out=directory / "runs" / name, use_cache=False, progress=False,
            judging=JudgeOptions(judges=[judge]),
        ))  # fmt: skip
        with Store(db) as store:
            store.import_rows(result.rows)
        rows += result.rows
        passed = sum(1 for r in result.rows for a in r["assertions"] if a["passed"])
        total = sum(len(r["assertions"]) for r in result.rows)
        console.print(
            f"  {escape(name)}: {len(result.rows)} samples, assertions {passed}/{total} passed, "
            f"{result.judged} judged → {escape(str(db))}",
            highlight=False,
        )
    console.print("[bold]Layered comparison[/]: assistant-v1 (control) → assistant-v2")
    with api.open(db=db) as samples:
        layered = api.compare(
            samples, "layered", baseline="assistant-v1", candidates=["assistant-v2"]
        )
        objective = api.compare(
            samples, "objective", baseline="assistant-v1", candidates=["assistant-v2"]
        )
    get_scheme("layered").compare_terminal(layered, console)
    flips_terminal(layered.to_dict(), console, top=DEMO_FLIPS)
    console.print("[bold]Objective gate[/]: assistant-v2 against assistant-v1, cost included")
    get_scheme("objective").compare_terminal(objective, console)
    assert isinstance(layered, CompareResult)
    assert isinstance(objective, ObjectiveComparison)
    for line in cost_lines(objective):
        console.print(escape(line), highlight=False)
    heading = "The two verdicts agree" if agree(layered, objective) else "Why they differ"
    console.print(f"[bold]{heading}[/] — {escape(why_they_differ(layered, objective))}")
    return layered, objective, rows
