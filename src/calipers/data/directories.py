"""A harness's output directory where files are read (`import DIR`, `compare DIR`, `score DIR`,
`compare BASE --vs DIR`, `calipers.open(DIR)`).

A directory that an adapter reads as a whole (an lm-eval output directory, a kelvin, lighteval,
HELM or NeMo Evaluator output) stays one input. Any other directory stands for the files in it
(not below it) that a reader takes: another tool's output recognised by its content (inspect_ai
`.eval` and `.json` logs — an `inspect eval --log-dir` or `inspect eval-set` directory —, promptfoo
`-o` files, OpenAI evals logs, deepeval runs, Phoenix downloads), and calipers' own sample files
by extension (`.jsonl`, `.ndjson`, `.csv`, `.parquet`, `.pq`, each also `.gz`). Hidden files are
left out, and so is any other file (an eval set's `logs.json` index, a README). A directory with
none of these stays as given, and the reader says what it holds.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

from calipers.data.adapters import ADAPTERS

SAMPLE_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet",
                   ".pq": "parquet"}  # fmt: skip
_SNIFF_ERRORS = (RecursionError, EOFError, OSError, UnicodeDecodeError, zlib.error, ValueError)


def expand(path: Path, fmt: str = "auto") -> list[Path]:
    """The inputs `path` stands for: itself, or the readable files of a directory (sorted)."""
    if not path.is_dir() or _an_adapter_reads(path, fmt):
        return [path]
    try:
        entries = sorted(path.iterdir())
    except OSError:
        return [path]
    found = [p for p in entries if not p.name.startswith(".") and _readable(p, fmt)]
    return found or [path]


def expand_all(paths: Sequence[str | Path], fmt: str = "auto") -> list[Path]:
    """Every path expanded, in order (a file given twice is read twice: its samples collide)."""
    return [path for given in paths for path in expand(Path(given), fmt)]


def expand_named(
    paths: Sequence[str | Path], fmt: str, name_by: str
) -> tuple[list[Path], list[str | None]]:
    """Every path expanded, with the run name each one's samples get: `tool` (None: the name
    the tool gives), `directory` (the directory given, or the file's directory) or `file` (the
    file's name without its suffixes; for a directory, its name)."""
    files: list[Path] = []
    names: list[str | None] = []
    for given in map(Path, paths):
        for path in expand(given, fmt):
            files.append(path)
            names.append(None if name_by == "tool" else label(given, path, name_by))
    return files, names


def label(given: Path, path: Path, name_by: str) -> str:
    """The name a path gives its run: the directory (`directory`) or file stem (`file`)."""
    if name_by == "directory" or given.is_dir():
        folder = given if given.is_dir() else path.parent
        return folder.resolve().name or str(folder.resolve())
    return stem(path)


def stem(path: Path) -> str:
    """The file's name without its suffixes (`results.json.gz` → `results`)."""
    name = path.name
    while True:
        head, dot, tail = name.rpartition(".")
        if not dot or not head or not tail.isalnum() or len(tail) > 8:
            return name
        name = head


def _an_adapter_reads(path: Path, fmt: str) -> bool:
    for name, (detect, _) in ADAPTERS.items():
        if fmt not in ("auto", name):
            continue
        try:
            if detect(path):
                return True
        except _SNIFF_ERRORS:
            continue
    return False


def _readable(path: Path, fmt: str) -> bool:
    try:
        if not path.is_file():
            return False
    except OSError:
        return False
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    kind = SAMPLE_SUFFIXES.get(suffixes[-1]) if suffixes else None
    if fmt in ("jsonl", "csv", "parquet"):
        return kind == fmt
    # a tool's file is recognised the way a tool's directory is: by its adapter's detector
    return _an_adapter_reads(path, fmt) or (fmt == "auto" and kind is not None)
