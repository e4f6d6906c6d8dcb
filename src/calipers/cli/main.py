"""The `calipers` command: a thin layer over the library with one error boundary.

Each command module registers its commands on `cli`; every command parses its options, makes one
library call and renders the result. Errors raised on purpose (`CalipersError`) become one message
with a hint and a documented exit code; nothing else is caught here, so real bugs keep their
traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from calipers import __version__
from calipers.errors import EXIT_INPUT, CalipersError

DEFAULT_DB = Path(".calipers") / "calipers.duckdb"
COMMAND_MODULES = ("data", "score", "compare", "grade", "rank", "check", "demo")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="calipers")
def cli() -> None:
    """The measurement layer for LLM and agent evaluations.

    Exit codes: 0 ok, 1 configuration or input problem, 2 data problem (nothing to score or
    compare), 3 the verdict failed the requested gate.
    """


def db_option(func: Any) -> Any:
    """The `--db PATH` option shared by every command that touches the store."""
    return click.option(
        "--db",
        type=click.Path(path_type=Path, dir_okay=False),
        default=DEFAULT_DB,
        envvar="CALIPERS_DB",
        show_default=True,
        help="The store: an embedded DuckDB file.",
    )(func)


def stdout_console() -> Console:
    return Console(no_color="NO_COLOR" in os.environ or None, highlight=False)


def stderr_console() -> Console:
    # soft_wrap: a message is never broken inside a file path; the terminal wraps it.
    return Console(
        stderr=True, no_color="NO_COLOR" in os.environ or None, highlight=False, soft_wrap=True
    )


def _register_commands() -> None:
    for module in COMMAND_MODULES:
        importlib.import_module(f"calipers.cli.{module}")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    _register_commands()
    err = stderr_console()
    try:
        cli.main(args=argv, prog_name="calipers", standalone_mode=False)
    except CalipersError as exc:
        err.print(f"[bold red]error:[/] {_escape(exc.message)}")
        if exc.hint:
            err.print(f"[dim]hint:[/] {_escape(exc.hint)}")
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except click.ClickException as exc:
        # Usage errors are input problems: exit 1, not click's 2 (2 means a data problem here).
        exc.show(file=sys.stderr)
        return EXIT_INPUT
    except click.exceptions.Abort:
        err.print("aborted")
        return 130
    return 0


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def run() -> None:
    """Console-script wrapper: exit with `main`'s code."""
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
