"""Reading another tool's JSON files, with the errors every adapter gives: the file named, where
the JSON breaks, and a hint that fits the tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from calipers.errors import InputError


def load_json(path: Path, *, cut_short: str, hint: str | None = None) -> Any:
    """The file's JSON. `cut_short` says why a tool's file may end early ("helm-run still
    writing, or a partial copy")."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            hint=f"The file may be cut short ({cut_short}).",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not readable: {exc}", hint=hint) from None


def first_json_line(path: Path) -> Any:
    """The first line of a JSON Lines file, parsed (for detection: the caller catches
    OSError and ValueError)."""
    with path.open(encoding="utf-8") as f:
        return json.loads(f.readline())
