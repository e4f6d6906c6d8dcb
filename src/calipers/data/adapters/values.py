"""Another tool's values, read without guessing: every adapter turns them into sample fields here.

Each reading is exact (and documented in docs/importers.md), refused, or noted:

- a key (a sample id, an epoch, a run or task name): a string as it is, an integer as its digits
  (`doc_id: 3` → "3", as the tool wrote it); an object, a list, a float, a boolean or null is
  refused with the file, the record and the field (`str({"x": 1})` would make "{'x': 1}");
- a flag (promptfoo's `success`): true or false only; "yes", 1 or null are refused;
- a count (an epoch): a whole number ≥ 0 only (`"one"`, 1.5 and true are refused);
- a score: a finite number (an integer too; a boolean is 1 or 0 where the tool writes its
  outcomes as booleans). NaN, ±Infinity, a string or an object is left out of `scores`, and
  `Notes` says so per field at import: "… metric 'acc' is NaN in 3 records (first: line 7): left
  out of scores".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from calipers.errors import InputError


class Rows(list[dict[str, Any]]):
    """An adapter's sample rows and its warnings (the import summary's notes), for the caller to
    show with the import; `not_imported`: what of the tool's output it left out, and why
    (`unimported.Unimported.entries`)."""

    def __init__(
        self,
        rows: Iterable[dict[str, Any]],
        warnings: list[str],
        not_imported: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(rows)
        self.warnings = warnings
        self.not_imported = not_imported or []


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(value, dict):
        return f"an object ({_shown(value)})"
    if isinstance(value, list):
        return f"a list ({_shown(value)})"
    if isinstance(value, str):
        return f"a string ({_shown(value)})"
    return f"a {type(value).__name__} ({_shown(value)})"


def refuse(
    where: str, field: str, expected: str, value: Any, hint: str | None = None
) -> InputError:
    """The error for a value an adapter cannot read as `field`: file and record (`where`), the
    field, what was expected and what was found."""
    return InputError(
        f"{where}, field '{field}': expected {expected}, got {_kind(value)}",
        hint=hint
        or "calipers reads another tool's values without converting them; fix the file or "
        "report the tool's output if it wrote this.",
    )


def key(value: Any, where: str, field: str) -> str:
    """A sample id or name: a string, or an integer as its digits; anything else is refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise refuse(where, field, "a string or an integer", value)


def flag(value: Any, where: str, field: str) -> bool:
    """true or false, and nothing else."""
    if isinstance(value, bool):
        return value
    raise refuse(where, field, "true or false", value)


def count(value: Any, where: str, field: str) -> int:
    """A whole number ≥ 0 (not a boolean, not 1.0, not "1")."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise refuse(where, field, "a whole number ≥ 0", value)


def is_number(value: Any) -> bool:
    """A finite number, not a boolean."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _category(value: Any) -> str:
    """What kind of value, without the value (notes are grouped by it)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    return {bool: "a boolean", str: "a string", dict: "an object", list: "a list"}.get(
        type(value), f"a {type(value).__name__}"
    )


class Notes:
    """What an adapter left out, per file, field and kind of value: counted, with the first
    record, one line each (the import's warnings)."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str, str], list[Any]] = {}

    def add(self, file: Path | str, field: str, what: str, record: str) -> None:
        entry = self._found.setdefault((str(file), field, what), [0, record])
        entry[0] += 1

    def score(self, file: Path | str, name: str, value: Any, record: str) -> float | None:
        """`value` as a score (a finite number), or None, noted: NaN, Infinity, a string, an
        object. None (the tool recorded no value) is not noted."""
        if is_number(value):
            return float(value)
        if value is not None:
            self.add(file, f"scores.{name}", f"is {_category(value)}", f"{record}: {_shown(value)}")
        return None

    def number(
        self, file: Path | str, field: str, value: Any, record: str, *, whole: bool = False
    ) -> float | int | None:
        """`value` as a count (`whole`: an integer) or an amount, ≥ 0, or None, noted when the
        tool wrote something else there (NaN, a string, a negative number). None is not noted."""
        ok = is_number(value) and value >= 0 and (not whole or isinstance(value, int))
        if ok:
            return int(value) if whole else float(value)
        if value is not None:
            kind = "a negative number" if is_number(value) else _category(value)
            self.add(file, field, f"is {kind}", f"{record}: {_shown(value)}")
        return None

    def bind(self, file: Path | str, line: int) -> Callable[[str, Any], float | None]:
        """`score` for one record of a JSON Lines file."""
        return lambda name, value: self.score(file, name, value, f"line {line}")

    def lines(self) -> list[str]:
        return [
            f"{file}: {field} {what} in {n} record{'s' if n != 1 else ''} (first: {first}); "
            "left out, not converted"
            for (file, field, what), (n, first) in self._found.items()
        ]
