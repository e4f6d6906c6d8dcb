"""`calipers view`: serve the store's runs, comparisons, flips and samples on 127.0.0.1 until
Ctrl-C (the pages: `calipers.view`; docs/view.md)."""

from __future__ import annotations

import errno
import socket
import threading
import time
import webbrowser
from pathlib import Path

import click

from calipers.cli.main import cli, stderr_console, stdout_console
from calipers.cli.options import db_option
from calipers.errors import InputError
from calipers.render.text import escape

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@cli.command("view")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on. Anything but this machine's loopback shows the store to "
    "the network (a warning says so): there is no login.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="The port (0: any free one, printed).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the runs page in a browser.")
@db_option
def view(db: Path, host: str, port: int, open_browser: bool) -> None:
    """Browse the store in a web browser: every run, a comparison of two with its verdict first,
    the samples that flipped and each sample side by side. Read-only: `calipers run` and
    `import` can write the store meanwhile (a page shows "store busy" for a moment), and a
    reload shows what they wrote. Every page has a JSON twin (the address plus .json).
    Ctrl-C stops it."""
    _check_store(db)
    if host not in LOOPBACK:
        stderr_console().print(
            f"[yellow]warning:[/] listening on {escape(host)}: anyone who can reach this "
            "machine on that address can read the store (there is no login). Use the default "
            "--host 127.0.0.1 unless you mean it.",
            highlight=False,
        )
    sock = _bind(host, port)
    import uvicorn

    from calipers.view import create_app

    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/"
    config = uvicorn.Config(
        create_app(db, host=host, warm=True), log_level="warning", access_log=False,
        timeout_graceful_shutdown=2,
    )  # fmt: skip
    server = uvicorn.Server(config)
    stdout_console().print(
        f"calipers view: {escape(url)} · store {escape(str(db))} · Ctrl-C stops it",
        highlight=False,
        soft_wrap=True,
    )
    if open_browser:
        threading.Thread(target=_open_when_up, args=(server, url), daemon=True).start()
    server.run(sockets=[sock])


def _check_store(db: Path) -> None:
    """The store must exist and be one this calipers reads: said now, not on the first page."""
    from calipers.data.store import Store

    if not db.exists():
        raise InputError(
            f"no store at {db}",
            hint="Import results first (`calipers import FILE`), or give the store with --db PATH.",
        )
    with Store(db, read_only=True):
        pass


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use is one clear error (uvicorn would
    log it and exit)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError(f"--host {host}: {exc.strerror}", hint="Give an address such as "
                         "127.0.0.1.") from None  # fmt: skip
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(
                f"port {port} on {host} is in use (another calipers view?)",
                hint="Give another with --port N, or --port 0 for any free one.",
            ) from None
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _open_when_up(server: object, url: str) -> None:
    deadline = time.monotonic() + 10
    while not getattr(server, "started", False) and time.monotonic() < deadline:
        time.sleep(0.05)
    webbrowser.open(url)
