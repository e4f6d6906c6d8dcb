"""A harness's output directory where files are read (`import DIR`, `compare DIR`, `score DIR`,
`compare BASE --vs DIR`, `calipers.open(DIR)`).

A directory that an adapter reads as a whole (an lm-eval output directory, a kelvin, lighteval,
HELM or NeMo Evaluator output) stays one input. Any other directory stands for the files in it
(not below it) that a reader takes: another tool's output recognised by its content (inspect_ai
`.eval` and `.json` logs — an `inspect eval --log-dir` or `inspect eval-set` directory —, promptfoo
`-o` files, OpenAI evals logs, deepeval runs, Phoenix downloads), and calipers' own sample files
by extension (`.jsonl`, `.ndjson`, `.csv`, `.parquet`, `.pq`, each also `.gz`). Hidden files are
left out, and so is any other file (a README); a harness's manifest (an eval set's `logs.json`
index, `eval-set.json`: `adapters.manifests`) is left out with a note naming it. A directory with
none of these stays as given, and the reader says what it holds.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

from calipers.data.adapters import ADAPTERS, manifests

SAMPLE_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet",
                   ".pq": "parquet"}  # fmt: skip
_SNIFF_ERRORS = (RecursionError, EOFError, OSError, UnicodeDecodeError, zlib.error, ValueError)


def expand(path: Path, fmt: str = "auto", notes: list[str] | None = None) -> list[Path]:
    """The inputs `path` stands for: itself, or the readable files of a directory (sorted).
    `notes` gets a line for each manifest left out of a directory that has files to read."""
    if not path.is_dir() or _an_adapter_reads(path, fmt):
        return [path]
    try:
        entries = sorted(path.iterdir())
    except OSError:
        return [path]
    visible = [p for p in entries if not p.name.startswith(".")]
    found = [p for p in visible if _readable(p, fmt)]
    if found and notes is not None:
        for p in visible:
            manifest = None if p in found else manifests.identify(p)
            if manifest is not None:
                notes.append(f"{p}: skipped: {manifest.what}; the logs beside it are read")
    return found or [path]


def expand_all(
    paths: Sequence[str | Path], fmt: str = "auto", notes: list[str] | None = None
) -> list[Path]:
    """Every path expanded, in order (a file given twice is read twice: its samples collide)."""
    return [path for given in paths for path in expand(Path(given), fmt, notes)]


def expand_named(
    paths: Sequence[str | Path], fmt: str, name_by: str, notes: list[str] | None = None
) -> tuple[list[Path], list[str | None]]:
    """Every path expanded, with the run name each one's samples get: `tool` (None: the name
    the tool gives), `directory` (the directory given, or the file's directory) or `file` (the
    file's name without its suffixes; for a directory, its name)."""
    files: list[Path] = []
    names: list[str | None] = []
    for given in map(Path, paths):
        for path in expand(given, fmt, notes):
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


_HINT_SCAN = 200  # entries looked at per directory by `hint`
_HINT_DEPTH = 2  # levels below the directory given
# what else to pass, per tool whose output lies below a directory given
_WHOLE = {
    "lighteval": "or the directory lighteval wrote (--output-dir OUT, holding details/ and "
    "results/)",
    "lm-eval": "or lm-eval's --output_path OUT",
    "helm": "or HELM's benchmark_output/runs/<suite>",
}
_DEEPEVAL = (
    "deepeval keeps its cache and latest run in .deepeval/; calipers reads the test runs it saves "
    "to a results folder (DisplayConfig(results_folder=...) or DEEPEVAL_RESULTS_FOLDER): pass "
    "that folder, or its test_run_<timestamp>.json files."
)


def hint(path: Path) -> str:
    """What to pass instead of a directory none of whose files is read: another tool's output
    found below it (or hidden in it), named with its tool; else calipers' own files."""
    from calipers.data.adapters import inspect_log

    found = inspect_log.directory_hint(path) or _found_below(path)
    if found:
        return found
    if path.name == ".deepeval" or (path / ".deepeval").is_dir():
        return _DEEPEVAL
    return "Pass the files inside it (calipers' own .jsonl, .csv, .parquet), e.g. DIR/*.jsonl."


def _found_below(path: Path) -> str | None:
    level = [path]
    for depth in range(_HINT_DEPTH + 1):
        below: list[Path] = []
        for folder in level:
            try:
                entries = sorted(
                    p for _, p in zip(range(_HINT_SCAN), folder.iterdir(), strict=False)
                )
            except OSError:
                continue
            for entry in entries:
                tool = _tool_of(entry) if depth or entry.name.startswith(".") else None
                if tool is not None:
                    where = "hidden in it" if depth == 0 else "below it"
                    more = _WHOLE.get(tool, "")
                    return (
                        f"It holds {tool} output {where}, which a directory does not stand for: "
                        f"pass {entry}" + (f", {more}" if more else "") + "."
                    )
                if entry.is_dir() and not entry.is_symlink():
                    below.append(entry)
        level = below
    return None


def _tool_of(path: Path) -> str | None:
    for name, (detect, _) in ADAPTERS.items():
        try:
            if detect(path):
                return name
        except _SNIFF_ERRORS:
            continue
    return None
