"""How the viewer reads the store without getting in the way of the commands that write it.

DuckDB lets one process write a file and no other process read it meanwhile. So each request
that needs the store opens it read-only for itself (`Store(db, read_only=True)`) and closes it
before answering: between requests the file is free, and `calipers run` or `import` in another
process can write. When the open finds the file locked by such a writer, it is tried again a few
times after a short pause (`PAUSES`), and then the request gives up with `StoreBusy`, which the
app answers with 503 and a page that reloads itself.

What a page computed is kept with the store's state it was computed from, named by the file's
identity, size and modification time and those of its write-ahead log (`fingerprint`):
reloading a page, or paging through the flips of one comparison, does not open the store again
until a writer has changed it — which also keeps the viewer's reads out of a writer's way. A
write changes the fingerprint, so new runs appear on the next reload. While a writer still holds
the store after changing it, a page computed before is shown as it was (`served_stale()` tells
the app, which says so on the page and reloads it shortly) rather than 503: only a page never
computed has nothing to show.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from calipers.data.store import Store, is_locked
from calipers.errors import CalipersError, InputError

T = TypeVar("T")

# Seconds slept between the tries of an open that found the store locked by a writer: about
# 0.75 s in all, then 503 (the page reloads itself a second later).
PAUSES = (0.05, 0.1, 0.2, 0.4)
BUSY_RETRY_S = 1  # the busy page's refresh, and its Retry-After header


class NotFound(InputError):
    """A run, task or sample the query names is not in the store (answered 404)."""


class StoreBusy(Exception):
    """Another process held the store for writing through every try."""

    def __init__(self, db: Path) -> None:
        super().__init__(f"the store {db} is being written by another process")
        self.db = db


Fingerprint = tuple[tuple[int, int, int] | None, ...]


def fingerprint(db: Path) -> Fingerprint:
    """The store file's and its write-ahead log's (inode, size, mtime in ns), None for one that
    does not exist: any write changes one of them. Read from the file system, without opening
    the store (no lock taken)."""
    parts: list[tuple[int, int, int] | None] = []
    for path in (db, db.with_name(db.name + ".wal")):
        try:
            st = path.stat()
        except OSError:
            parts.append(None)
            continue
        parts.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(parts)


_REQUEST = threading.local()  # per request (a worker thread at a time): was an answer stale?


def begin_request() -> None:
    _REQUEST.stale = False
    _REQUEST.deferred = []  # threads `Reader.later` starts once the answer is made (end_request)


def end_request() -> None:
    """Start the threads this thread's request deferred (`Reader.later`): its answer is made, so
    they no longer take the CPU and the GIL it needs — a 2 × 1M comparison started beside the
    flips page it was asked from slowed that page's rendering on two cores."""
    deferred, _REQUEST.deferred = getattr(_REQUEST, "deferred", None) or [], None
    for start in deferred:
        start()


def served_stale() -> bool:
    """Whether this thread's request was answered from before a write still in progress."""
    return bool(getattr(_REQUEST, "stale", False))


@dataclass
class Later:
    """What `Reader.later` has: the answer (`value`), or none yet (`pending`: being computed),
    or the error its computation met."""

    value: Any
    pending: bool = False
    error: Exception | None = None


class _Cache:
    """The answers of the latest `size` keys, each with the fingerprint it was computed at."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[Hashable, Any] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[bool, Any]:
        with self.lock:
            if key not in self.items:
                return False, None
            self.items.move_to_end(key)
            return True, self.items[key]

    def put(self, key: Hashable, value: Any) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)


class Reader:
    """The store at `db`, read as above. `read(fn)` calls `fn(store)` on a fresh read-only open;
    `cached(key, fn)` also keeps the answer for the store's current state. Comparisons (which
    hold every paired sample's arrays) go to a smaller cache than the rest (`big=True`)."""

    def __init__(self, db: Path, *, pauses: tuple[float, ...] | None = None) -> None:
        self.db = db
        self.pauses = pauses
        self.locked = 0  # opens that found the store locked by a writer (each retried or busy)
        self._small = _Cache(64)
        self._big = _Cache(8)  # a pair may keep its flips, its comparison and its twin
        self._staged = _Cache(3)  # runs staged for leaderboards (tens of MB each)
        self._locks: dict[Hashable, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._later: set[Hashable] = set()  # keys being computed on a thread (`later`)
        self._failed: dict[Hashable, tuple[Fingerprint, Exception]] = {}

    def read(self, fn: Callable[[Store], T]) -> T:
        for pause in (*(PAUSES if self.pauses is None else self.pauses), None):
            try:
                # lock_wait=0: the pauses here decide how long to wait, not CALIPERS_LOCK_WAIT
                store = Store(self.db, read_only=True, lock_wait=0)
            except InputError as exc:
                if not is_locked(exc):
                    raise
                self.locked += 1
                if pause is None:
                    raise StoreBusy(self.db) from None
                time.sleep(pause)
                continue
            with store:
                return fn(store)
        raise AssertionError("unreachable")  # pragma: no cover

    def cached(self, key: Hashable, fn: Callable[[Store], T], *, big: bool = False) -> T:
        cache = self._big if big else self._small
        # One computation per key at a time: a second request for it (another tab, the warm-up)
        # waits for the first and takes its answer instead of computing it again beside it.
        with self._computing(key):
            stamp = fingerprint(self.db)
            found, kept = cache.get(key)
            if found and kept[0] == stamp:
                return kept[1]  # type: ignore[no-any-return]
            try:
                value = self.read(fn)
            except StoreBusy:
                if not found:
                    raise
                _REQUEST.stale = True  # the state before the write that holds the store now
                return kept[1]  # type: ignore[no-any-return]
            cache.put(key, (stamp, value))
            return value

    def staged(self, key: Hashable, store: Store, fn: Callable[[Store], T],
               keep: Callable[[T], bool]) -> T:  # fmt: skip
        """Inside a read (`store`, open: the store's state cannot change meanwhile): `fn(store)`
        — runs' arrays staged for a leaderboard — kept for that state, three at most, when
        `keep(answer)` says it needs the store no more (`persample.names_kept`)."""
        with self._computing(key):
            stamp = fingerprint(self.db)
            found, kept = self._staged.get(key)
            if found and kept[0] == stamp:
                return kept[1]  # type: ignore[no-any-return]
            value = fn(store)
            if keep(value):
                self._staged.put(key, (stamp, value))
            return value

    def peek(self, key: Hashable, *, big: bool = False) -> tuple[bool, Any]:
        """(True, the answer) when `cached(key, ...)` keeps one for the store's state as it is
        now; else (False, None). Computes nothing."""
        found, kept = (self._big if big else self._small).get(key)
        if found and kept[0] == fingerprint(self.db):
            return True, kept[1]
        return False, None

    def later(self, key: Hashable, fn: Callable[[Store], T], *, big: bool = False) -> Later:
        """`cached(key, fn)` without waiting for it: its answer when kept for the store's state,
        else computed on a thread (one per key at a time) for a request after this one — a page
        shows what it has meanwhile and reloads. An error it met is the answer's `error`. Inside
        a request, the thread starts once the request's answer is made (`end_request`)."""
        found, value = self.peek(key, big=big)
        if found:
            return Later(value)
        stamp = fingerprint(self.db)
        with self._locks_lock:
            failed = self._failed.get(key)
            if failed is not None and failed[0] == stamp:
                return Later(None, error=failed[1])
            if key in self._later:
                return Later(None, pending=True)
            self._later.add(key)

        def compute() -> None:
            try:
                self.cached(key, fn, big=big)
            except StoreBusy:  # a writer holds the store: the next request asks again
                pass
            except Exception as exc:  # said on the page that waits for it, not retried
                if not isinstance(exc, CalipersError):  # a bug: its traceback to the terminal
                    logging.getLogger("calipers.view").error("%s failed", key, exc_info=exc)
                with self._locks_lock:
                    if len(self._failed) > 256:  # failures of older states need not stay
                        self._failed.clear()
                    self._failed[key] = (stamp, exc)
            finally:
                with self._locks_lock:
                    self._later.discard(key)

        thread = threading.Thread(target=compute, name="calipers-view-later", daemon=True)
        deferred = getattr(_REQUEST, "deferred", None)
        if deferred is None:  # not inside a request (`begin_request`): now
            thread.start()
        else:
            deferred.append(thread.start)
        return Later(None, pending=True)

    def _computing(self, key: Hashable) -> threading.Lock:
        with self._locks_lock:
            if len(self._locks) > 1_000:  # keys come and go; their locks need not stay
                self._locks = {k: v for k, v in self._locks.items() if v.locked()}
            return self._locks.setdefault(key, threading.Lock())
