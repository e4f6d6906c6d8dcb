"""The decision a pipeline output carries, and the distance between two decisions.

Decision field. kelvin reads one top-level key of the output JSON object. calipers reads the same
key when the output has it, and otherwise reads the field as a path into nested output:
`result.label`, `scores[0]`, `a.b[2].c`, `meta["key.with.dots"]`. So every kelvin config means what
it meant (a top-level key literally named `a.b` still wins), and nested outputs need no wrapper.

Distance, as kelvin 0.3.0 computes it (bit for bit):

- two numbers (int or float, never bool): `min(1, |a − b| / max(|a|, |b|, 1))`, computed in
  floating point as kelvin does (so ints above 2**53 lose precision as in kelvin). Any NaN or
  infinity gives 1, as in kelvin, including `inf` against `inf`. Integers too large for a float,
  where kelvin crashes, are computed exactly.
- anything else: 0 when `a == b` under Python equality, else 1. A bool is not a number, so `true`
  against `1` is compared by equality, and Python says `True == 1`: distance 0, as in kelvin.
  Strings compare exactly (case and whitespace count); `null` equals only `null`.
- lists and objects (beyond kelvin, which refuses them): equality of the whole value, with the
  same Python equality inside (`[1, true]` equals `[1.0, 1]`). No partial credit.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from calipers.errors import InputError

PathStep = str | int


class DecisionFieldMissing(LookupError):
    """The output has no value at the decision field. `args[0]` is the message for the report."""

    def __init__(self, message: str, *, field: str, available: list[str]) -> None:
        super().__init__(message)
        self.field = field
        self.available = available


# One step of a path: `.name`, `[3]` or `["any key"]` (a JSON string).
_STEP = re.compile(r'\.([^.\[\]]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')
_FIRST = re.compile(r'([^.\[\]]+)|\[("(?:[^"\\]|\\.)*")\]')


def parse_decision_path(text: str) -> tuple[PathStep, ...]:
    """`a.b[0]["c.d"]` → ("a", "b", 0, "c.d"). Raises `InputError` when `text` is not a path.

    Names are any characters but `.`, `[` and `]`, taken as written (no trimming); indices are
    non-negative integers; a key with those characters is written as a JSON string in brackets.
    """
    first = _FIRST.match(text)
    if first is None:
        raise _bad_path(text, 0)
    steps: list[PathStep] = [first.group(1) or json.loads(first.group(2))]
    at = first.end()
    while at < len(text):
        step = _STEP.match(text, at)
        if step is None:
            raise _bad_path(text, at)
        name, index, quoted = step.groups()
        if name is not None:
            steps.append(name)
        elif index is not None:
            steps.append(int(index))
        else:
            steps.append(json.loads(quoted))
        at = step.end()
    return tuple(steps)


def _bad_path(text: str, at: int) -> InputError:
    return InputError(
        f"field 'decision_field': {text!r} is neither a plain key nor a valid path "
        f"(problem at character {at + 1})",
        hint='Write a path as name.name[0], quoting odd keys as ["key.with.dots"].',
    )


@dataclass(frozen=True)
class DecisionField:
    """A configured decision field: the text as written, and its path when it parses as one.

    Calling it on a parsed output returns the decision or raises `DecisionFieldMissing`, so an
    instance is the `extract` callable the runner expects.
    """

    text: str
    path: tuple[PathStep, ...] | None  # None: only the literal top-level key can match

    @classmethod
    def parse(cls, text: str) -> DecisionField:
        try:
            path: tuple[PathStep, ...] | None = parse_decision_path(text)
        except InputError:
            path = None
        return cls(text, path)

    @property
    def is_top_level_key(self) -> bool:
        """True when this is kelvin's kind of field: one key, no nesting."""
        return self.path is None or self.path == (self.text,)

    def __call__(self, output: Mapping[str, Any]) -> Any:
        return self.lookup(output)

    def lookup(self, output: Mapping[str, Any]) -> Any:
        if self.text in output:
            return output[self.text]  # kelvin's meaning first, whatever the text looks like
        keys = sorted(str(k) for k in output)
        if self.path is None or len(self.path) == 1:
            # kelvin's message, word for word, so reports read the same.
            raise DecisionFieldMissing(
                f"Decision field {self.text!r} missing from pipeline output. Actual keys: {keys}.",
                field=self.text,
                available=keys,
            )
        value: Any = output
        for depth, step in enumerate(self.path):
            found, value = _step_into(value, step)
            if not found:
                where = _render_path(self.path[:depth]) or "the output"
                raise DecisionFieldMissing(
                    f"Decision field {self.text!r} missing from pipeline output: "
                    f"{where} {_has_no(value, step)}. Actual keys: {keys}.",
                    field=self.text,
                    available=keys,
                )
        return value


def lookup_decision(output: Mapping[str, Any], field: str) -> Any:
    """The value at `field` in `output` (see `DecisionField`); `DecisionFieldMissing` if absent."""
    return DecisionField.parse(field).lookup(output)


def _step_into(value: Any, step: PathStep) -> tuple[bool, Any]:
    """(True, child) when `value` has `step`, else (False, value) to describe what it is."""
    if isinstance(step, int):
        if isinstance(value, list) and step < len(value):
            return True, value[step]
        return False, value
    if isinstance(value, dict) and step in value:
        return True, value[step]
    return False, value


def _has_no(value: Any, step: PathStep) -> str:
    if isinstance(step, int):
        if isinstance(value, list):
            return f"is a list of {len(value)} item(s), so has no index {step}"
        return f"is {_json_kind(value)}, not a list, so has no index {step}"
    if isinstance(value, dict):
        return f"has no key {step!r}"
    return f"is {_json_kind(value)}, not an object, so has no key {step!r}"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _render_path(steps: tuple[PathStep, ...]) -> str:
    parts = []
    for position, step in enumerate(steps):
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif re.fullmatch(r"[^.\[\]]+", step):
            parts.append(step if position == 0 else f".{step}")
        else:
            parts.append(f"[{json.dumps(step)}]")
    return "".join(parts)


# ── distance ──────────────────────────────────────────────────────────────────────────────────


def is_number(value: Any) -> bool:
    """An int or float that is not a bool (JSON `true` is not the number 1)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def distance(baseline: Any, perturbed: Any) -> float:
    """kelvin's distance between two decisions, in [0, 1]; see the module docstring."""
    if is_number(baseline) and is_number(perturbed):
        return _numeric_distance(baseline, perturbed)
    return 0.0 if baseline == perturbed else 1.0


def _numeric_distance(a: int | float, b: int | float) -> float:
    try:
        x, y = float(a), float(b)
    except OverflowError:
        # An int too large for a float (kelvin crashes here): compute exactly with fractions,
        # unless the other side is NaN or infinite, which gives 1 as everywhere else.
        if any(isinstance(v, float) and not math.isfinite(v) for v in (a, b)):
            return 1.0
        fa, fb = Fraction(a), Fraction(b)
        exact = abs(fa - fb) / max(abs(fa), abs(fb), Fraction(1))
        return float(min(Fraction(1), exact))
    # kelvin's expression and operation order, so the float is the same to the last bit.
    ratio = abs(x - y) / max(abs(x), abs(y), 1.0)
    # Python's min(1.0, nan) is 1.0 (nan compares false); kelvin relies on that for NaN and inf.
    return ratio if ratio < 1.0 else 1.0


def is_structured(value: Any) -> bool:
    """A list or object: compared by equality only (kelvin refuses these; calipers notes them)."""
    return isinstance(value, list | dict)
