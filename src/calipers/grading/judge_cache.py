"""Judge replies on disk: an append-only log per writing process, read whole on first lookup.

A file per reply (an atomic temp-file-and-rename each) cost 80–500 µs of kernel time per reply on
the 2-core machine — growing with the directory — and sat on the path of every judge call: at a
few hundred calls a second it took more CPU than the HTTP client. Here each process appends one
JSON line per reply to its own segment, `replies-<time>-<pid>-<random>.jsonl`, with one `write`
on an `O_APPEND` descriptor (about 10 µs). The line is in the file before the call that made it
completes, so a run killed while judging loses only the calls in flight, as before.

Reading loads every segment once (the last line for a key wins) and the single-file entries
(`<key>.json`) of caches written before this layout, by name, when a key asks for one. A line
that does not parse — the tail of a segment whose writer died mid-line, or one being written by
another process right now — is not a reply: its call is asked again. Two processes judging at once
each write their own segment and never see each other's half-lines as hits.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Protocol


class _Judge(Protocol):
    def identity(self) -> str: ...


class JudgeCache:
    """Successful replies on disk, keyed by judge identity, prompt version, prompt, repeat and
    the draw judged. Safe to share between threads."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._replies: dict[str, str] | None = None  # loaded on first lookup
        self._legacy: set[str] = set()  # keys with a `<key>.json` file of the older layout
        self._fd: int | None = None  # this process's segment, opened on first put
        self._segment: Path | None = None
        self._lock = threading.Lock()  # thread-backend workers put from several threads

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.directory)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JudgeCache) and other.directory == self.directory

    def __hash__(self) -> int:
        return hash(self.directory)

    def key(
        self, judge: _Judge, prompt_sha256: str, prompt: str, repeat: int, *, draw: str = ""
    ) -> str:
        parts = (judge.identity(), prompt_sha256, prompt, str(repeat), draw)
        return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()

    def get(self, key: str) -> str | None:
        with self._lock:
            replies = self._load()
            reply = replies.get(key)
            if reply is None and key in self._legacy:
                reply = _read_single(self.directory / f"{key}.json")
                if reply is not None:
                    replies[key] = reply
            return reply

    def put(self, key: str, reply: str) -> None:
        """Append the reply to this process's segment: on disk (in the OS) when this returns."""
        line = (json.dumps({"key": key, "reply": reply}) + "\n").encode("utf-8")
        with self._lock:
            fd = self._fd if self._fd is not None else self._open_segment()
            view = memoryview(line)
            while view:  # a regular file takes the whole line in one write, short of a full disk
                view = view[os.write(fd, view) :]
            if self._replies is not None:
                self._replies[key] = reply

    def keys(self) -> set[str]:
        """Every key with a readable reply (segments and older single files)."""
        with self._lock:
            return set(self._load()) | self._legacy

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __del__(self) -> None:  # a cache dropped without close() does not leak its descriptor
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)

    def _open_segment(self) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        self._segment = (
            self.directory / f"replies-{stamp}-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
        )
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        self._fd = os.open(self._segment, flags, 0o600)
        return self._fd

    def _load(self) -> dict[str, str]:
        if self._replies is not None:
            return self._replies
        replies: dict[str, str] = {}
        segments: list[Path] = []
        try:
            entries = list(os.scandir(self.directory))
        except FileNotFoundError:
            entries = []
        for entry in entries:
            name = entry.name
            if name.startswith("replies-") and name.endswith(".jsonl"):
                segments.append(Path(entry.path))
            elif name.endswith(".json") and not name.startswith("."):
                self._legacy.add(name[: -len(".json")])
        for segment in sorted(segments):  # by time: a later reply for a key replaces an earlier
            replies.update(_read_segment(segment))
        self._replies = replies
        return replies


def _read_segment(path: Path) -> dict[str, str]:
    try:
        data = path.read_bytes()
    except OSError:  # gone (removed by hand) or unreadable: its calls are asked again
        return {}
    out: dict[str, str] = {}
    for line in data.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:  # a torn or half-written line is not a reply
            continue
        if isinstance(entry, dict):
            key, reply = entry.get("key"), entry.get("reply")
            if isinstance(key, str) and isinstance(reply, str):
                out[key] = reply
    return out


def _read_single(path: Path) -> str | None:
    try:
        entry = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    reply = entry.get("reply") if isinstance(entry, dict) else None
    return reply if isinstance(reply, str) else None
