"""The `calipers` command: a thin layer over the library with one error boundary.

Each command module registers its commands on `cli`, and is imported only when one of its commands
runs (or help lists them all), so `calipers check` does not pay for the statistics stack; every
command parses its options, makes one library call and renders the result. Errors raised on
purpose (`CalipersError`) become one message with a hint and a documented exit code, and so do
storage failures (a damaged store, a full disk, no permission: `failures.storage_failure`); nothing
else is caught here, so real bugs keep their traceback.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

import click
from rich.console import Console

from calipers.errors import EXIT_INPUT, EXIT_INTERRUPTED, CalipersError

# command → the module under calipers.cli that defines it
COMMANDS = {
    "import": "data", "runs": "data", "export": "data", "schema": "data", "migrate": "data",
    "score": "score", "leaderboard": "score", "schemes": "score",
    "compare": "compare", "plan": "plan", "grade": "grade", "rank": "rank",
    "check": "check", "init": "check", "run": "run", "demo": "demo", "report": "report",
    "watch": "watch", "sql": "sql",
    "view": "view",
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

    def invoke(self, ctx: click.Context) -> object:
        """The command; a storage failure under it (a damaged store, a full disk, no
        permission) becomes a `StorageError` naming the path, for the boundary in `main`."""
        try:
            return super().invoke(ctx)
        except Exception as exc:
            from calipers.cli.failures import STORE_KEY, storage_failure

            failure = storage_failure(exc, ctx.meta.get(STORE_KEY))
            if failure is None:
                raise
            raise failure from exc


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="calipers", prog_name="calipers")
def cli() -> None:
    """The measurement layer for LLM and agent evaluations.

    Exit codes: 0 ok, 1 configuration or input problem, 2 data problem (nothing to score or
    compare), 3 the verdict failed the requested gate, 130 interrupted.
    """


def stdout_console() -> Console:
    """The console for results. NO_COLOR drops colour (styles such as bold stay), and it is
    silent when the command was given --quiet through `quiet_option`."""
    from calipers.cli.options import is_quiet

    quiet = is_quiet()
    # emoji=False: a name such as `openai:m:` or `run:smile:` is text, not an emoji code
    return Console(
        no_color="NO_COLOR" in os.environ or None, highlight=False, quiet=quiet, emoji=False
    )


def stderr_console() -> Console:
    # soft_wrap: a message is never broken inside a file path; the terminal wraps it.
    return Console(
        stderr=True,
        no_color="NO_COLOR" in os.environ or None,
        highlight=False,
        soft_wrap=True,
        emoji=False,
    )


def _register_commands() -> None:
    """Import every command module (for callers that need all commands registered at once)."""
    for module in COMMAND_MODULES:
        importlib.import_module(f"calipers.cli.{module}")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit code. Ctrl-C or SIGTERM at any moment is
    exit 130 with a line that says whether the command's store writes committed
    (`calipers.writes`); whatever an interrupt makes a library raise on its way out (DuckDB's
    "Query interrupted") is the interrupt, not a bug, and shows no traceback."""
    from calipers import writes
    from calipers.blas import use_one_blas_thread

    use_one_blas_thread()  # the same digits on any machine, and no BLAS threads waiting for a core
    err = stderr_console()
    writes.reset()
    signals = _Signals()
    try:
        with _interrupts(signals):
            return _command(argv, err, signals)
    except KeyboardInterrupt:  # a second Ctrl-C while the first was being reported
        return _interrupted(err)


class _Signals:
    received = False  # Ctrl-C or SIGTERM arrived while the command ran


def _command(argv: list[str] | None, err: Console, signals: _Signals) -> int:
    try:
        cli.main(args=argv, prog_name="calipers", standalone_mode=False)
    except CalipersError as exc:
        if signals.received and exc.exit_code != EXIT_INTERRUPTED:
            return _interrupted(err)  # an error the interrupt caused (a half-read file)
        message, hint = _in_flags(exc)
        label = "interrupted" if exc.exit_code == EXIT_INTERRUPTED else "error"
        err.print(f"[bold red]{label}:[/] {_escape(message)}")
        if hint:
            err.print(f"[dim]hint:[/] {_escape(hint)}")
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return _interrupted(err) if signals.received else int(exc.exit_code or 0)
    except click.ClickException as exc:
        # Usage errors are input problems: exit 1, not click's 2 (2 means a data problem here).
        # The message quotes the bad value: control characters in it are shown, not sent.
        from calipers.data.files import visible_controls
        from calipers.redact import scrub

        text = io.StringIO()
        exc.show(file=text)
        sys.stderr.write(visible_controls(scrub(text.getvalue())))
        return EXIT_INPUT
    except click.exceptions.Abort:  # click's KeyboardInterrupt
        return _interrupted(err)
    except BaseException:
        if signals.received:  # e.g. DuckDB's RuntimeError("Query interrupted")
            return _interrupted(err)
        raise  # a real bug keeps its traceback
    return _interrupted(err) if signals.received else 0


def _interrupted(err: Console) -> int:
    """The "interrupted" line: what the command's store writes came to, truthfully."""
    from calipers import writes

    err.print(f"[bold red]interrupted:[/] {_escape(writes.summary())}")
    return EXIT_INTERRUPTED


def _inside_import(frame: FrameType | None) -> bool:
    """Whether the main thread is importing a module. A KeyboardInterrupt raised inside a native
    extension's initialisation is not an exception there: DuckDB's (nanobind) printed "Critical
    nanobind error" and a traceback when Ctrl-C came 1.2 s into a command on a slow machine."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def _interrupts(signals: _Signals) -> Iterator[None]:
    """Ctrl-C and SIGTERM stop the children at once (pipelines, command judges) and then unwind
    as KeyboardInterrupt, so each command keeps what had finished — except in the middle of a
    store's COMMIT or ROLLBACK (`calipers.writes.shielded`), where the interrupt is raised when it
    ends, so that every write is either committed or not. Only the main thread can set
    handlers; elsewhere (a test runner's thread) nothing changes."""
    from calipers import processes, writes

    def stop(signum: int, frame: FrameType | None) -> None:
        signals.received = True
        processes.stop_all()
        if writes.defer_interrupt():
            return
        if _inside_import(frame):
            # raised once the import is done: the signal is sent again in 20 ms, until then
            threading.Timer(0.02, os.kill, (os.getpid(), signum)).start()
            return
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        processes.resume()


def _in_flags(exc: CalipersError) -> tuple[str, str | None]:
    """The library names its parameters (`confidence_level`); the command line shows the flags
    that set them (--confidence)."""
    import re

    from calipers.cli.options import flag_for

    message, hint = exc.message, exc.hint
    for name in exc.parameters:
        message = message.replace(f"`{name}`", flag_for(name))
    if exc.parameters and hint:  # the hint lists the options that would do: as flags too
        hint = re.sub(r"`([a-z_]+)`", lambda m: flag_for(m.group(1)), hint)
    return message, hint


def _escape(text: str) -> str:
    """For the terminal: markup escaped, and any secret an error quotes (a judge's or a
    pipeline's message) masked."""
    from calipers.redact import scrub
    from calipers.render.text import escape

    return escape(scrub(text))


def run() -> None:
    """Console-script wrapper: exit with `main`'s code. After an interrupt, exit at once: a judge
    call still in flight on a worker thread must not hold the process (its reply is not needed)."""
    try:
        code = main()
    except KeyboardInterrupt:  # after main restored the handlers, before it returned
        code = _interrupted(stderr_console())
    if code == EXIT_INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    # The interpreter's last collection would traverse every object the imports made (~100,000
    # with the judges' client): 0.1-0.25 s of every command's exit on a busy 2-core machine. Frozen,
    # they are skipped; atexit hooks, module teardown and every object freed by its count still
    # run. What calipers writes is committed, flushed and closed before this point.
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
