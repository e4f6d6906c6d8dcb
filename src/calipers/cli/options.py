"""Options shared by several commands: judges (`run`, `grade`), executors (`run`, `check`) and
the HTML report (`score`, `leaderboard`, `compare`, `check`, `report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from calipers.grading.judges import judges_from_specs
from calipers.running.judging import JudgeOptions


def judge_options(func: click.decorators.FC) -> click.decorators.FC:
    """Judge flags shared by `run` and `grade`."""
    options = [
        click.option("--judge", "judges", multiple=True, metavar="SPEC",
                     help="openai:MODEL or 'command:PROGRAM ARGS' (repeat for an ensemble)."),
        click.option("--judge-base-url", default=None, help="OpenAI-compatible endpoint URL."),
        click.option("--judge-key-env", default="OPENAI_API_KEY", show_default=True,
                     help="Environment variable holding the endpoint's key."),
        click.option("--judge-kind", type=click.Choice(["overall", "objective"]),
                     default="overall", show_default=True,
                     help="overall 1–5 (layered) or objective 0–1; tasks with a rubric use it."),
        click.option("--judge-repeat", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Calls per judge and sample (the report gives mean and SD)."),
        click.option("--no-debias-length", is_flag=True,
                     help="Leave out the prompt paragraph against rewarding length."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


def executor_options(func: click.decorators.FC) -> click.decorators.FC:
    """Where invocations and judge calls run: threads here, or Ray tasks."""
    options = [
        click.option("--executor", type=click.Choice(["local", "ray"]), default="local",
                     show_default=True,
                     help="local thread pool, or Ray tasks (pip install 'calipers[ray]')."),
        click.option("--ray-address", default=None, metavar="ADDRESS",
                     help="Ray cluster to use (default: RAY_ADDRESS, else a private local one)."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


def judging_from(
    judges: tuple[str, ...], base_url: str | None, key_env: str, kind: str, repeat: int,
    no_debias: bool,
) -> JudgeOptions:  # fmt: skip
    return JudgeOptions(
        judges=judges_from_specs(judges, base_url=base_url, api_key_env=key_env),
        kind=kind, repeats=repeat, debias_length=not no_debias,
        cache_dir=Path(".calipers") / "judge-cache",
    )  # fmt: skip


def html_option(func: Any) -> Any:
    """`--html PATH` (parameter `html_out`): the result as one self-contained HTML page."""
    return click.option(
        "--html",
        "html_out",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        metavar="PATH",
        help="Write the report as one self-contained HTML page.",
    )(func)
