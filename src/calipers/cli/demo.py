"""`calipers demo`: a seeded synthetic evaluation, imported into a demo store and scored."""

from __future__ import annotations

import shlex
import shutil
import sys
import time
from importlib import resources
from pathlib import Path

import click
from rich.console import Console

from calipers import api
from calipers.cli.check import scaffold_project
from calipers.cli.main import cli, stdout_console
from calipers.cli.options import quiet_option
from calipers.data.store import Store
from calipers.demo.synthetic import DEMO_SEED, generate_samples, write_jsonl
from calipers.grading.judges import CommandJudge
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
from calipers.schemes.robustness import terminal as terminal_robustness
from calipers.verdicts.compare import CompareResult
from calipers.workspace import DEMO_DIR

# Two variants of one model family: the larger one gains on facts and the judge, but its judge
# layer still misses the 3.5 gate, which the verdict reports instead of hiding in the composite.
DEMO_CONTROL = "atlas-small"
DEMO_TREATMENT = "atlas-large"


@cli.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEMO_DIR,
    show_default=True,
    help="Where the demo data and store go.",
)
@click.option(
    "--seed", type=int, default=DEMO_SEED, show_default=True, help="Seed of the synthetic data."
)
@quiet_option
def demo(directory: Path, seed: int) -> None:
    """Generate a synthetic evaluation, import it, print the ReasonScore leaderboard and a
    layered comparison of two variants with its verdict; scaffold the example robustness project
    and check it; run the example support assistant's suite in two versions, judge them and
    compare them, and write that comparison's HTML report."""
    console = stdout_console()
    started = time.perf_counter()
    data = directory / "samples.jsonl"
    db = directory / "demo.duckdb"
    n = write_jsonl(data, generate_samples(seed=seed))
    console.print(f"Generated {n:,} samples (seed {seed}) → {escape(str(data))}")
    db.unlink(missing_ok=True)  # a fresh store each time, so the demo is reproducible
    with Store(db) as store:
        summary = store.import_files([data])
    console.print(f"Imported {summary.samples:,} samples into {escape(str(db))}")
    layered_scheme = get_scheme("layered")
    with api.open(db=db) as samples:
        get_scheme("reasonscore").terminal(api.score(samples, "reasonscore"), console)
        console.print()
        console.print(f"[bold]Layered comparison[/]: {DEMO_CONTROL} (control) → {DEMO_TREATMENT}")
        comparison = api.compare(
            samples, "layered", baseline=DEMO_CONTROL, candidates=[DEMO_TREATMENT]
        )
    layered_scheme.compare_terminal(comparison, console)
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
    layered = demo_suite_run(directory, db, console)
    html = directory / "compare.html"
    write_html(layered_scheme.compare_page(layered.to_dict()), html)
    check_html = directory / "check.html"
    write_check_page(checked.out, check_html, diagnostic=terminal_robustness.diagnostic(
        checked.result, checked.config.decision_field, list(checked.config.governing_types)
    ))  # fmt: skip
    store_html = directory / "report.html"
    write_html(store_page(store_report(db)), store_html)
    console.print(
        f"\n[bold]HTML reports[/]: the assistant comparison → {escape(str(html))} · the "
        f"robustness check → {escape(str(check_html))} · the whole store (leaderboard, every "
        f"scheme) → {escape(str(store_html))}",
        highlight=False,
    )
    console.print(
        f"[dim]{time.perf_counter() - started:.1f} s. Try: calipers score {escape(str(data))} "
        f"--scheme reasonscore --tasks · calipers compare {escape(str(data))} --scheme layered "
        f"--control {DEMO_CONTROL} --treatment {DEMO_TREATMENT} --treatment cirrus-mini · "
        f"cd {escape(str(check_dir))} && calipers check · calipers compare "
        f"--db {escape(str(db))} --scheme objective "
        "--baseline assistant-v1 --candidate assistant-v2 --gate ship[/]"
    )


def demo_suite_run(directory: Path, db: Path, console: Console) -> CompareResult:
    """The bundled support assistant, v1 then v2, through `calipers run` with a deterministic
    command judge (no network); then both comparisons: the layered verdict on quality, and the
    objective gate, whose cost adjustment can still refuse the promotion."""
    assets = Path(str(resources.files("calipers.demo.assistant")))
    suite = load_suite(assets / "suite.yaml")
    python = shlex.quote(sys.executable)
    judge = CommandJudge("demo-judge", f"{python} {shlex.quote(str(assets / 'judge.py'))}")
    console.print(
        f"[bold]Suite run[/]: {escape(suite.name)} ({len(suite.tasks)} tasks) through the example "
        "assistant v1 and v2, judged by a deterministic command judge"
    )
    shutil.rmtree(directory / "runs", ignore_errors=True)
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
    console.print("[bold]Objective gate[/]: assistant-v2 against assistant-v1, cost included")
    get_scheme("objective").compare_terminal(objective, console)
    assert isinstance(layered, CompareResult)
    return layered
