"""The child processes calipers starts (pipelines, command judges).

Each runs in its own session, so that a timeout or an interrupt can stop everything it started,
not just its shell. They are tracked in two places: here, so that Ctrl-C or SIGTERM stops the
running ones at once (`stop_all`) instead of waiting out their timeouts; and in a small reaper
process, started with the first child, which kills every child still registered when calipers'
end of its pipe closes — that is, when calipers exits in any way, kill -9 included, which no
signal handler or `atexit` hook would see.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import signal
import stat
import subprocess
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from calipers.blas import child_environment

# Run by `python -I -S -c`: no site, no calipers import, so it starts in ~15 ms. It ignores the
# terminal's Ctrl-C (calipers handles that) and acts only on EOF.
_REAPER = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
live = set()
for line in sys.stdin:
    sign, pid = line[:1], line[1:].strip()
    if pid.isdigit():
        (live.add if sign == "+" else live.discard)(int(pid))
for sig in (signal.SIGTERM, signal.SIGKILL):
    for pid in live:
        try:
            os.killpg(pid, sig)
        except OSError:
            pass
    if live and sig == signal.SIGTERM:
        time.sleep(1.0)
"""

KILL_GRACE_S = 1.0  # between SIGTERM and SIGKILL when stopping children

_lock = threading.Lock()
_live: dict[int, subprocess.Popen[Any]] = {}
_stopping = threading.Event()
_reaper: subprocess.Popen[bytes] | None = None


class Stopped(Exception):
    """calipers is stopping (Ctrl-C, SIGTERM): no new child is started."""


def stopping() -> bool:
    return _stopping.is_set()


def _tell_reaper(message: str) -> None:
    """Register (+pid) or release (-pid) a child with the reaper, starting it if needed. Called
    with `_lock` held."""
    global _reaper
    if _reaper is None or _reaper.poll() is not None:
        try:
            _reaper = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _REAPER],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C or a group kill must not reach it
                close_fds=True,
            )
        except OSError:
            return  # no reaper: children still stop with Ctrl-C and timeouts
    stdin: IO[bytes] | None = _reaper.stdin
    if stdin is None:
        return
    with contextlib.suppress(OSError):
        stdin.write(f"{message}\n".encode())
        stdin.flush()


def popen(args: str | list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """subprocess.Popen in a new session, tracked until `release`. Raises Stopped when calipers
    is stopping."""
    if _stopping.is_set():
        raise Stopped
    if "env" not in kwargs:  # the user's code gets the BLAS threads it would have had
        kwargs["env"] = child_environment()
    proc: subprocess.Popen[Any] = subprocess.Popen(args, start_new_session=True, **kwargs)
    with _lock:
        _live[proc.pid] = proc
        _tell_reaper(f"+{proc.pid}")
        late = _stopping.is_set()  # stop_all ran while this one was starting
    if late:
        _kill_group(proc.pid, signal.SIGKILL)
    return proc


def release(proc: subprocess.Popen[Any]) -> None:
    """The child has been waited for: forget it (its pid may be reused from now on)."""
    with _lock:
        if _live.pop(proc.pid, None) is not None:
            _tell_reaper(f"-{proc.pid}")


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def run(
    args: str | list[str],
    *,
    input: str | None = None,
    timeout: float | None = None,
    shell: bool = False,
    cwd: Path | None = None,
) -> tuple[int | None, str, str]:
    """Run a child to completion: (exit code, or None when it timed out; stdout; stderr). A
    timeout kills its whole process group. Raises Stopped when calipers is stopping."""
    proc = popen(
        args,
        shell=shell,
        cwd=cwd,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    try:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid, signal.SIGKILL)
            proc.communicate()
            return None, "", ""
    finally:
        if proc.poll() is None:  # an exception (KeyboardInterrupt) left it running
            _kill_group(proc.pid, signal.SIGKILL)
            proc.wait()
        release(proc)
    return proc.returncode, out, err


def stop_all() -> int:
    """Stop every running child (SIGTERM, then SIGKILL after a grace period) and start no more;
    the number of children stopped."""
    _stopping.set()
    with _lock:
        pids = list(_live)
    for pid in pids:
        _kill_group(pid, signal.SIGTERM)
    if pids:

        def kill() -> None:
            for pid in pids:
                _kill_group(pid, signal.SIGKILL)

        timer = threading.Timer(KILL_GRACE_S, kill)
        timer.daemon = True
        timer.start()
    return len(pids)


def resume() -> None:
    """Allow children again (a library caller that handled an interrupt and goes on)."""
    _stopping.clear()


_FILE_HASH_LIMIT = 16 << 20  # larger files (an interpreter binary) count by size and mtime


def files_digest(command: str) -> str:
    """sha256 over the files a command line names (existing regular files among its words), so a
    changed program is a new program to every cache; re-read only when a size or mtime changes."""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    stamps = []
    for word in words:
        try:
            info = Path(word).stat()
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(info.st_mode):
            stamps.append((word, info.st_size, info.st_mtime_ns))
    return _hash_files(tuple(stamps))


@lru_cache(maxsize=64)
def _hash_files(stamps: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for word, size, mtime_ns in stamps:
        digest.update(word.encode() + b"\x00")
        try:
            if size > _FILE_HASH_LIMIT:
                raise OSError
            digest.update(Path(word).read_bytes())
        except OSError:
            digest.update(f"{size}\x00{mtime_ns}".encode())
    return digest.hexdigest()
