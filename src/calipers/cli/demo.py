"""`calipers demo`: a seeded synthetic evaluation, imported into a demo store and scored."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import click

from calipers.cli.check import scaffold_project
from calipers.cli.main import cli, stdout_console
from calipers.data.source import open_samples
from calipers.data.store import Store
from calipers.demo.synthetic import DEMO_SEED, generate_samples, write_jsonl
from calipers.report import terminal, terminal_compare, terminal_robustness
from calipers.running.check import CheckOptions, run_check
from calipers.running.kelvin_config import load_kelvin_config
from calipers.schemes import get_scheme
from calipers.schemes.reasonscore import ReasonScoreResult
from calipers.verdicts.compare import compare

# Two variants of one model family: the larger one gains on facts and the judge, but its judge
# layer still misses the 3.5 gate, which the verdict reports instead of hiding in the composite.
DEMO_CONTROL = "atlas-small"
DEMO_TREATMENT = "atlas-large"


@cli.command()
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path(".calipers") / "demo",
    show_default=True,
    help="Where the demo data and store go.",
)
@click.option(
    "--seed", type=int, default=DEMO_SEED, show_default=True, help="Seed of the synthetic data."
)
def demo(directory: Path, seed: int) -> None:
    """Generate a synthetic evaluation, import it, print the ReasonScore leaderboard and a
    layered comparison of two variants with its verdict; then scaffold the example robustness
    project and check it."""
    console = stdout_console()
    started = time.perf_counter()
    data = directory / "samples.jsonl"
    db = directory / "demo.duckdb"
    n = write_jsonl(data, generate_samples(seed=seed))
    console.print(f"Generated {n:,} samples (seed {seed}) → {data}")
    db.unlink(missing_ok=True)  # a fresh store each time, so the demo is reproducible
    with Store(db) as store:
        summary = store.import_files([data])
    console.print(f"Imported {summary.samples:,} samples into {db}")
    result = get_scheme("reasonscore").score(open_samples(None, db=db))
    assert isinstance(result, ReasonScoreResult)
    terminal.reasonscore_leaderboard(result, console)
    console.print()
    console.print(f"[bold]Layered comparison[/]: {DEMO_CONTROL} (control) → {DEMO_TREATMENT}")
    comparison = compare(
        open_samples(None, db=db),
        scheme="layered",
        control=DEMO_CONTROL,
        treatments=[DEMO_TREATMENT],
    )
    terminal_compare.comparison(comparison, console)
    console.print()
    check_dir = directory / "check"
    console.print(
        f"[bold]Robustness check[/] of the example pipeline (`calipers init` → {check_dir})"
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
    console.print(
        f"[dim]{time.perf_counter() - started:.1f} s. Try: calipers score {data} "
        f"--scheme reasonscore --tasks · calipers compare {data} --scheme layered "
        f"--control {DEMO_CONTROL} --treatment {DEMO_TREATMENT} --treatment cirrus-mini · "
        f"cd {check_dir} && calipers check[/]"
    )
