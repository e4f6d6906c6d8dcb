"""The `calipers` command: a thin layer over the library with one error boundary.

Each command module registers its commands on `cli`, and is imported only when one of its commands
runs (or help lists them all), so `calipers check` does not pay for the statistics stack; every
command parses its options, makes one library call and renders the result. Errors raised on
purpose (`CalipersError`) become one message with a hint and a documented exit code; nothing else
is caught here, so real bugs keep their traceback.
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
# command → the module under calipers.cli that defines it
COMMANDS = {
    "import": "data", "runs": "data", "export": "data", "schema": "data",
    "score": "score", "leaderboard": "score", "schemes": "score",
    "compare": "compare", "grade": "grade", "rank": "rank",
    "check": "check", "init": "check", "run": "run", "demo": "demo", "report": "report",
}  # fmt: skip
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))


class LazyGroup(click.Group):
    """Imports a command's module the first time the command is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            importlib.import_module(f"calipers.cli.{module}")
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
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


def quiet_option(func: Any) -> Any:
    """`-q/--quiet` for commands whose only stdout is a summary: it silences `stdout_console()`
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
        callback=silence,
        help="Print nothing on stdout (errors and warnings still go to stderr).",
    )(func)


_QUIET = "calipers.quiet"


def stdout_console() -> Console:
    """The console for results. NO_COLOR drops colour (styles such as bold stay), and it is
    silent when the command was given --quiet through `quiet_option`."""
    context = click.get_current_context(silent=True)
    quiet = bool(context and context.meta.get(_QUIET))
    return Console(no_color="NO_COLOR" in os.environ or None, highlight=False, quiet=quiet)


def stderr_console() -> Console:
    # soft_wrap: a message is never broken inside a file path; the terminal wraps it.
    return Console(
        stderr=True, no_color="NO_COLOR" in os.environ or None, highlight=False, soft_wrap=True
    )


def _register_commands() -> None:
    """Import every command module (for callers that need all commands registered at once)."""
    for module in COMMAND_MODULES:
        importlib.import_module(f"calipers.cli.{module}")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
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
