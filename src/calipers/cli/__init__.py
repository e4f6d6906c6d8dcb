"""The `calipers` command line (calipers.cli.main).

When this process is the command itself (the `calipers` script, `python -m calipers`), Ctrl-C and
SIGTERM are exit 130 from here on, while the command's modules are still being imported: the
line says what the command's store writes came to (nothing yet, at that point), and there is no
traceback. `calipers.cli.main.main` takes over while the command runs, and this handler is back
once it has returned. The last exit hook then ignores both signals: CPython turns its handlers
off before it tears its modules down, and a signal there would kill the finished command without
a word. Imported any other way (a test, a program using the library), nothing changes.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading


def _is_the_command() -> bool:
    main = sys.modules.get("__main__")
    path = str(getattr(main, "__file__", "") or "")
    name = os.path.basename(path)
    return name == "calipers" or path.endswith(os.path.join("calipers", "__main__.py"))


def _early_stop(signum: int, frame: object) -> None:
    summary = getattr(sys.modules.get("calipers.writes"), "summary", None)  # once it is loaded
    done = summary() if summary is not None else "nothing had been written to a store"
    try:
        sys.stdout.flush()
    finally:
        os.write(2, f"interrupted: {done}\n".encode())
        os._exit(130)


def _ignore_late_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


if threading.current_thread() is threading.main_thread() and _is_the_command():
    for _sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_sig, _early_stop)
    atexit.register(_ignore_late_signals)  # registered first: run last
