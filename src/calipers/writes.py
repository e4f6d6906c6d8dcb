"""The store writes of one command, so that Ctrl-C at any moment leaves a message that says
truthfully whether they committed.

Every write to a store is one transaction made by `transaction(con, what)`: it begins, runs the
caller's statements, then commits inside a *shielded* section — the CLI's signal handler defers
an interrupt that arrives there (`defer_interrupt`) and it is raised when the section ends — so
DuckDB never sees Ctrl-C in the middle of COMMIT (or of the ROLLBACK of a failed write), and each
write ends either committed or rolled back, never unknown. `summary()` says which, for the
"interrupted" line of the command line's error boundary (calipers.cli.main).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

OPEN, COMMITTED, ROLLED_BACK = "open", "committed", "rolled back"


@dataclass
class Write:
    what: str  # e.g. "the import of 1,000 samples into s.duckdb"; the caller may refine it
    state: str = OPEN


_lock = threading.Lock()
_writes: list[Write] = []
_shield = threading.local()  # depth of shielded sections on this thread
_deferred = threading.Event()  # an interrupt arrived in a shielded section


def reset() -> None:
    """Forget earlier writes (a new command in this process)."""
    with _lock:
        _writes.clear()
    _deferred.clear()


def writes() -> list[Write]:
    with _lock:
        return list(_writes)


def defer_interrupt() -> bool:
    """Called by the signal handler (on the main thread): True when a shielded section is running
    there, which then raises KeyboardInterrupt as it ends; False when the handler should raise
    now."""
    if getattr(_shield, "depth", 0) > 0:
        _deferred.set()
        return True
    return False


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """A section Ctrl-C does not cut: an interrupt in it is raised when it ends."""
    _shield.depth = getattr(_shield, "depth", 0) + 1
    try:
        yield
    finally:
        _shield.depth -= 1
        if _shield.depth == 0 and _deferred.is_set():
            _deferred.clear()
            raise KeyboardInterrupt


@contextlib.contextmanager
def transaction(con: Any, what: str) -> Iterator[Write]:
    """BEGIN, the caller's statements, COMMIT (shielded); on any exception, ROLLBACK (shielded)
    and re-raise. The yielded Write records which it was."""
    write = Write(what)
    with _lock:
        _writes.append(write)
    try:
        con.execute("BEGIN TRANSACTION")
        yield write
        with shielded():
            con.execute("COMMIT")
            write.state = COMMITTED
    except BaseException:
        if write.state != COMMITTED:
            with shielded():
                # an interrupted statement may have ended the transaction already; either way
                # nothing of it is in the store (an uncommitted transaction never is)
                with contextlib.suppress(Exception):
                    con.execute("ROLLBACK")
                write.state = ROLLED_BACK
        raise


def summary() -> str:
    """What the writes of this command came to, in words: committed ones first."""
    done = writes()
    committed = [w.what for w in done if w.state == COMMITTED]
    undone = [w.what for w in done if w.state != COMMITTED]
    if not done:
        return "nothing had been written to a store"
    parts = []
    if committed:
        parts.append(f"committed before the interrupt (kept): {'; '.join(committed)}")
    if undone:
        parts.append(
            f"not committed (rolled back, the store is as it was before it): {'; '.join(undone)}"
        )
    return "; ".join(parts)
