"""Reading another tool's JSON files, with the errors every adapter gives: the file named, where
the JSON breaks, and a hint that fits the tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calipers.data import jsontext
from calipers.errors import InputError

STRICT_HINT = (
    "calipers reads JSON strictly: a key given twice, an integer beyond 64 bits or nesting beyond "
    f"{jsontext.MAX_DEPTH} levels is refused rather than guessed at (docs/importers.md)."
)


def load_json(path: Path, *, cut_short: str, hint: str | None = None) -> Any:
    """The file's JSON. `cut_short` says why a tool's file may end early ("helm-run still
    writing, or a partial copy")."""
    try:
        return jsontext.loads_tool(path.read_text(encoding="utf-8"))
    except jsontext.JSONError as exc:
        if exc.line is not None:  # not JSON at all: where it breaks
            raise InputError(
                f"{path}: not JSON ({exc.where()}: {exc.message.removeprefix('not JSON: ')})",
                hint=f"The file may be cut short ({cut_short}).",
            ) from None
        raise InputError(f"{path}: {exc}", hint=STRICT_HINT) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not readable: {exc}", hint=hint) from None


def first_json_line(path: Path) -> Any:
    """The first line of a JSON Lines file, parsed (for detection: the caller catches
    OSError and ValueError)."""
    with path.open(encoding="utf-8") as f:
        return jsontext.loads_tool(f.readline())


def json_line(path: Path, number: int, line: str, *, cut_short: str) -> Any:
    """One line of another tool's JSON Lines file, strictly (`jsontext.loads_tool`): an error
    names the file, the line and the field."""
    try:
        return jsontext.loads_tool(line)
    except jsontext.JSONError as exc:
        if exc.line is not None:
            raise InputError(
                f"{path}, line {number}: not JSON (column {exc.column}: "
                f"{exc.message.removeprefix('not JSON: ')})",
                hint=f"The file may be cut short ({cut_short}).",
            ) from None
        raise InputError(f"{path}, line {number}, {exc}", hint=STRICT_HINT) from None
