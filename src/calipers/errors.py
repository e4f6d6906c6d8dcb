"""Typed errors. Library code raises these; the CLI turns them into one message and an exit code.

Exit codes (documented in docs/cli.md):
    0  ok
    1  configuration or input problem (bad file, bad option, unknown scheme), or a file that
       failed underneath a command (a damaged store, a full disk, no permission: `StorageError`)
    2  data problem (nothing to score or compare, a required field absent from every sample)
    3  the verdict failed the requested gate
  130  interrupted (Ctrl-C, SIGTERM) at any moment; what had finished is kept, and the message
       says whether the command's store writes committed (calipers.writes)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EXIT_OK = 0
EXIT_INPUT = 1
EXIT_DATA = 2
EXIT_GATE = 3
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one place in one input: what, where, and how to fix it."""

    message: str
    file: str | None = None
    line: int | None = None  # 1-based line of a text file, or row of a Parquet file
    field: str | None = None
    expected: str | None = None
    got: str | None = None
    unit: str = "line"  # "line" for text files, "row" for Parquet

    def location(self) -> str:
        parts = []
        if self.file is not None:
            parts.append(self.file)
        if self.line is not None:
            parts.append(f"{self.unit} {self.line}")
        if self.field is not None:
            parts.append(f"field '{self.field}'")
        return ", ".join(parts)

    def render(self) -> str:
        text = self.message
        if self.expected is not None or self.got is not None:
            text += f" (expected {self.expected or '?'}, got {self.got or '?'})"
        where = self.location()
        return f"{where}: {text}" if where else text

    def to_dict(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "field": self.field,
            "expected": self.expected,
            "got": self.got,
            "unit": self.unit,
        }


class CalipersError(Exception):
    """Base of every error calipers raises on purpose."""

    exit_code = EXIT_INPUT

    def __init__(
        self, message: str, *, hint: str | None = None, parameters: list[str] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        # The library's parameters the error is about, written `name` (in backticks) in the
        # message and hint; the command line shows its flag for each instead (`--name`).
        self.parameters = list(parameters or [])

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message} ({self.hint})"


class InputError(CalipersError, ValueError):
    """A file, option or configuration cannot be used as given (exit 1)."""

    exit_code = EXIT_INPUT


class ValidationError(InputError):
    """One or more problems found while reading samples (exit 1). Carries every problem found."""

    def __init__(
        self, problems: list[Problem], *, hint: str | None = None, limit: int = 50
    ) -> None:
        self.problems = list(problems)
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in the input"
        shown = "\n".join("  " + p.render() for p in self.problems[:limit])
        more = f"\n  … and {n - limit} more" if n > limit else ""
        super().__init__(
            f"{head}:\n{shown}{more}",
            hint=hint or "Fix the listed fields (see `calipers schema`) and run the command again.",
        )


class StorageError(InputError):
    """A file calipers reads or writes failed underneath it: a damaged or cut-short store, a full
    disk, no permission, a read-only file system (exit 1). The message names the path and the
    cause; nothing was half-written (the store's writes are transactions, other files are written
    to a temporary name and renamed)."""


class DataError(CalipersError):
    """The input is well-formed but there is nothing to compute on (exit 2)."""

    exit_code = EXIT_DATA


class GateFailed(CalipersError):
    """The verdict failed the gate the user asked for (exit 3)."""

    exit_code = EXIT_GATE


class Interrupted(CalipersError):
    """Ctrl-C or SIGTERM stopped the work; the message says what was kept (exit 130)."""

    exit_code = EXIT_INTERRUPTED
