"""Strict JSON: what every reader of JSON text in calipers accepts (RFC 8259, plus two bounds).

Refused, each with the field's path (`judgments[0].score`) and, from `loads`, the line:

- a key twice in one object, at any depth (`{"score": 4, "score": 5}`; Python keeps the last);
- `NaN`, `Infinity`, `-Infinity` (not JSON), and numbers too large for a 64-bit float (`1e400`);
- integers beyond 64 bits (outside -2⁶³ … 2⁶³ − 1);
- nesting deeper than `MAX_DEPTH` (500) levels;
- anything else that is not JSON: trailing commas, comments, single quotes (Python's parser).

`parse` reads leniently and marks what is refused (`problems` then finds the marks with their
paths), so a caller can check only the fields it reads; `loads` does both and raises `JSONError`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 500
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class JSONError(ValueError):
    """Text that is not strict JSON: `message`, and where (`field` path, `line`, `column`; the
    line and column are 1-based within the text)."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.line = line
        self.column = column

    def where(self) -> str:
        """`line 3, column 7, field 'a.b'` (the parts known)."""
        parts = []
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.column is not None:
            parts.append(f"column {self.column}")
        if self.field:
            parts.append(f"field '{self.field}'")
        return ", ".join(parts)

    def __str__(self) -> str:
        where = self.where()
        return f"{where}: {self.message}" if where else self.message


class _Repeated(dict[str, Any]):
    """An object that held a key twice: its first value kept, the key remembered."""

    repeated: str


class _Constant(float):
    """NaN or ±Infinity as the text spelled it."""

    token: str


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            marked = _Repeated(out)
            marked.repeated = key
            for k, v in pairs:
                marked.setdefault(k, v)
            return marked
        out[key] = value
    return out


def _constant(token: str) -> float:
    value = _Constant(float(token.replace("Infinity", "inf")))
    value.token = token
    return value


def parse(text: str | bytes) -> Any:
    """The JSON value of `text`, with refused values marked for `problems`. Raises `JSONError`
    for text that is not JSON at all (with its line and column) and for nesting too deep for
    Python's parser."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise JSONError(_why(exc), line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise JSONError(f"nested deeper than {MAX_DEPTH} levels", field=deep_field(text)) from None
    except UnicodeDecodeError as exc:
        raise JSONError(f"not UTF-8 text (byte offset {exc.start})") from None
    except ValueError:  # an integer of more than 4,300 digits (Python's own limit)
        raise JSONError("an integer beyond 64 bits (more than 4,300 digits)") from None


def _why(exc: json.JSONDecodeError) -> str:
    """Python's reason, or "a trailing comma" where that is what it stopped at."""
    text = exc.doc if isinstance(exc.doc, str) else ""
    before = text[: exc.pos].rstrip()
    if before.endswith(",") and text[exc.pos : exc.pos + 1] in ("]", "}"):
        return "not JSON: a trailing comma before the closing bracket"
    return f"not JSON: {exc.msg}"


def _short(path: str) -> str:
    return path if len(path) <= 60 else path[:57] + "…"


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


@dataclass(frozen=True)
class Found:
    """One refused value: its path, what is wrong (`got`: the value as written), and its kind:
    "repeated" (a key twice), "constant" (NaN, ±Infinity, an overflow), "integer" (beyond 64
    bits) or "depth"."""

    field: str
    message: str
    got: str
    kind: str


def problems(value: Any, path: str = "", *, limit: int = MAX_DEPTH) -> Iterator[Found]:
    """Every refused value in a `parse` result, with its path under `path`; iterative, so any
    depth Python's parser reached is walked."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            if depth > limit:
                yield Found(
                    _short(where) or "(top level)",
                    f"nested deeper than {limit} levels",
                    "deeper",
                    "depth",
                )
                continue
            if isinstance(item, _Repeated):
                field = _join(where, item.repeated)
                yield Found(
                    field, "the key appears twice in one object", "a repeated key", "repeated"
                )
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in children:
                if isinstance(child, dict | list | float | int) and not isinstance(child, bool):
                    stack.append((child, _join(where, key), depth))
        elif isinstance(item, float) and not math.isfinite(item):
            token = getattr(item, "token", None)
            message = (
                f"{token} is not JSON (numbers must be finite)"
                if token
                else "a number too large for a 64-bit float"
            )
            yield Found(where or "(top level)", message, token or "an overflow", "constant")
        elif (
            isinstance(item, int)
            and not isinstance(item, bool)
            and not INT64_MIN <= item <= INT64_MAX
        ):
            digits = len(str(abs(item)))  # at most 4,300: Python refuses longer ones
            yield Found(
                where or "(top level)", "an integer beyond 64 bits", f"{digits} digits", "integer"
            )


def loads(text: str | bytes) -> Any:
    """Strict JSON (the module's rules): the value, or `JSONError` for the first problem."""
    value = parse(text)
    for found in problems(value):
        raise JSONError(found.message, field=found.field)
    return value


def loads_tool(text: str | bytes) -> Any:
    """Another tool's JSON, strictly but for NaN and ±Infinity: Python's json module writes them
    (inspect_ai's unscored samples, an lm-eval metric), so they are that tool's format; each
    adapter then notes the fields it leaves out for them. A repeated key, an integer beyond 64
    bits and nesting beyond `MAX_DEPTH` are refused (`JSONError`)."""
    value = parse(text)
    for found in problems(value):
        if found.kind != "constant" or found.got == "an overflow":
            raise JSONError(found.message, field=found.field)
    return value


def repeated_key(value: Any) -> str | None:
    """The key an object of a `parse` result held twice (None: none, or not an object)."""
    return value.repeated if isinstance(value, _Repeated) else None


def deep_field(text: str | bytes, limit: int = MAX_DEPTH) -> str | None:
    """The top-level key under which `text` nests deeper than `limit` (None: not an object's
    key, or not found). A character scan, for text too deep for Python's parser."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    depth, in_string, escaped, key, last = 0, False, False, None, None
    start = 0
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                if depth == 1:
                    last = text[start : i + 1]
        elif ch == '"':
            in_string, start = True, i
        elif ch == ":" and depth == 1 and last is not None:
            try:
                key = json.loads(last)
            except ValueError:
                key = None
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return key
        elif ch in "]}":
            depth -= 1
    return None
