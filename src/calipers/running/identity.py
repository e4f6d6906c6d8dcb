"""What a cached pipeline output belongs to: the run, and the version of the pipeline that made it.

`calipers run` and `calipers check` cache each invocation under sha256(command, input, decision
field, salt), and the salt is made here, for both. It holds

- the run's name: a run reuses only the outputs it made itself (resuming, re-running), never
  another run's, unless asked to (`--reuse-from RUN`, which looks up the other run's entries);
- the epoch;
- the program: the content of every regular file the command line names (its script, a config
  file), and of every file under each such file's directory, recursively (the application's
  modules, prompts and data next to its script) — see `hashed_directory` for what is left out;
- the declared version (`pipeline: {version: …}` in the suite, or `--pipeline-version`);
- the values of the environment variables the suite names (`pipeline: {env: [NAME, …]}`).

A change to any of them is a new pipeline to the cache: it is run again, never served the old
outputs.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FILE_HASH_LIMIT = 16 << 20  # a larger file counts by its size and modification time
TREE_FILE_LIMIT = 5_000  # a directory holding more files is not hashed (a note says so)
_SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages"}
_SKIPPED_SUFFIXES = (".pyc", ".pyo", ".duckdb", ".duckdb.wal", ".wal", ".tmp")


@dataclass(frozen=True)
class PipelineIdentity:
    """The parts of a run's cache salt, and what was hashed (for the run report)."""

    run: str
    digest: str  # of the named files, their directories, the version and the environment
    version: str | None = None
    env: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # named on the command line, hashed
    directories: tuple[str, ...] = ()  # their directories, hashed with every file under them
    notes: tuple[str, ...] = ()

    def salt(self, epoch: int, run: str | None = None) -> str:
        """The salt of epoch `epoch`'s entry of this run (or of `run`, another run's)."""
        return f"epoch={epoch}\x00program={self.digest}\x00run={self.run if run is None else run}"

    def to_dict(self) -> dict[str, object]:
        return {
            "version": self.version,
            "env": list(self.env),
            "files": list(self.files),
            "directories": list(self.directories),
        }


def identify(
    command: str,
    run: str,
    *,
    version: str | None = None,
    env: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> PipelineIdentity:
    """The identity of `command` as it is now, for run `run`. `cwd`: the directory the command
    runs in (`calipers check`: the config's), where its relative paths are found; default the
    working directory."""
    environ = os.environ if environ is None else environ
    files = named_files(command, cwd)
    cwd = (cwd or Path.cwd()).resolve()
    trees: dict[Path, tuple[tuple[str, int, int], ...]] = {}
    notes: list[str] = []
    digest = hashlib.sha256()
    for file in files:
        try:
            info = file.stat()
        except OSError:
            continue
        digest.update(_hash_files("", ((str(file), info.st_size, info.st_mtime_ns),)).encode())
        folder = file.resolve().parent
        if folder in trees or not hashed_directory(folder, cwd):
            continue
        stamps = _tree_stamps(folder)
        if stamps is None:
            notes.append(
                f"{folder} holds more than {TREE_FILE_LIMIT:,} files: only the files named on "
                "the command line are hashed for the cache; declare pipeline.version"
            )
            continue
        trees[folder] = stamps
        digest.update(b"\x00tree\x00" + _hash_files(str(folder), stamps).encode())
    digest.update(f"\x00version={version}".encode() if version is not None else b"")
    for name in env:
        value = environ.get(name)
        digest.update(f"\x00env={name}".encode())
        digest.update(b"\x01unset" if value is None else b"\x02" + value.encode())
    return PipelineIdentity(
        run=run, digest=digest.hexdigest(), version=version, env=tuple(env),
        files=tuple(str(f) for f in files), directories=tuple(str(d) for d in trees),
        notes=tuple(notes),
    )  # fmt: skip


def named_files(command: str, cwd: Path | None = None) -> list[Path]:
    """The existing regular files among the command line's words, once each, in order; a
    relative word is a path from `cwd` (default: the working directory)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    found: list[Path] = []
    for word in words:
        path = Path(word) if cwd is None else cwd / word
        try:
            regular = stat.S_ISREG(path.stat().st_mode)
        except (OSError, ValueError):
            continue
        if regular and path not in found:
            found.append(path)
    return found


def hashed_directory(folder: Path, cwd: Path) -> bool:
    """Whether the directory of a named file is hashed with every file under it: not when it is
    the working directory or above it (it holds the store, the reports and everything else), the
    home directory, a directory on PATH (`/usr/bin/python3`) or one of Python's installation."""
    if folder == cwd or folder in cwd.parents or folder == Path.home().resolve():
        return False
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    if any(folder == p or p in folder.parents for p in prefixes):
        return False
    on_path = set()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry:
            try:
                on_path.add(Path(entry).resolve())
            except (OSError, RuntimeError):
                continue
    return folder not in on_path


def _skipped(name: str) -> bool:
    return name.startswith(".") or name.endswith(_SKIPPED_SUFFIXES)


def _tree_stamps(folder: Path) -> tuple[tuple[str, int, int], ...] | None:
    """(path relative to `folder`, size, mtime) of every file under it, sorted; hidden entries,
    caches and stores left out. None when there are more than TREE_FILE_LIMIT."""
    stamps: list[tuple[str, int, int]] = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not _skipped(d) and d not in _SKIPPED_DIRS)
        for name in sorted(names):
            if _skipped(name):
                continue
            path = os.path.join(root, name)
            try:
                info = os.stat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                relative = os.path.relpath(path, folder)
                stamps.append((relative, info.st_size, info.st_mtime_ns))
                if len(stamps) > TREE_FILE_LIMIT:
                    return None
    return tuple(stamps)


@lru_cache(maxsize=64)
def _hash_files(base: str, stamps: tuple[tuple[str, int, int], ...]) -> str:
    """sha256 over the paths (relative to `base`) and contents; re-read only when a size or
    mtime changes."""
    digest = hashlib.sha256()
    for path, size, mtime_ns in stamps:
        digest.update(path.encode() + b"\x00")
        try:
            if size > FILE_HASH_LIMIT:
                raise OSError
            digest.update(Path(base, path).read_bytes())
        except OSError:
            digest.update(f"{size}\x00{mtime_ns}".encode())
        digest.update(b"\x00")
    return digest.hexdigest()
