"""The precise check of one sample record, with every problem named by file, line and field.

Readers run DuckDB and SQL checks first (fast); only when those find something wrong do they run
this pass over the file to locate and describe every problem. Both enforce the same rules, derived
from `model.FIELDS`; tests feed every malformed fixture through both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

from calipers.data.guards import NESTED as _NESTED
from calipers.data.model import ASSERTION_LAYERS, FIELD_BY_NAME, FIELDS, INT32_MAX, INT64_MAX, KEY
from calipers.errors import Problem

NONNEGATIVE = ("epoch", "tokens_in", "tokens_out", "cost_usd", "latency_s", "tool_calls", "steps",
               "grader_tokens_in", "grader_tokens_out", "grader_cost_usd")  # fmt: skip
_INT_TYPES = ("INTEGER", "BIGINT")


def describe(value: Any) -> str:
    """A short rendering of a bad value for a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "…"
        return f'"{text}"'
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int) and not _in_int64(value):
        return "an integer beyond 64 bits"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return repr(value)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _in_int64(v: Any) -> bool:
    """Not an integer beyond 64 bits (which JSON allows, and no field holds: refused, never
    rounded to a float)."""
    return not isinstance(v, int) or -INT64_MAX - 1 <= v <= INT64_MAX


def _type_ok(kind: str, v: Any) -> bool:
    if v is None or kind == "JSON":
        return True
    if kind == "VARCHAR":
        return isinstance(v, str) or _is_number(v)
    if kind in _INT_TYPES:
        return (
            _is_number(v)
            and _in_int64(v)
            and math.isfinite(v)
            and float(v).is_integer()
            and (abs(v) <= (INT32_MAX if kind == "INTEGER" else INT64_MAX))
        )
    if kind == "DOUBLE":
        return _is_number(v) and _in_int64(v)
    if kind == "BOOLEAN":  # JSON true/false (a CSV cell's words are read as booleans first)
        return isinstance(v, bool)
    if kind == "VARCHAR[]":
        return isinstance(v, list) and all(isinstance(x, str) for x in v)
    return True


_EXPECTED = {
    "VARCHAR": "a string",
    "INTEGER": "an integer",
    "BIGINT": "an integer",
    "DOUBLE": "a number",
    "BOOLEAN": "true or false",
    "VARCHAR[]": "a list of strings",
}


class RecordChecker:
    """Checks records of one file, remembering keys to report duplicates (naming both lines)."""

    def __init__(self, file: str, *, run_override: str | None = None) -> None:
        self.file = file
        self.run_override = run_override
        self.seen: dict[tuple[Any, ...], int] = {}
        self.unknown: dict[str, int] = {}  # unknown top-level field → first line seen

    def problem(
        self,
        line: int,
        field: str | None,
        message: str,
        *,
        expected: str | None = None,
        got: str | None = None,
    ) -> Problem:
        return Problem(message, file=self.file, line=line, field=field, expected=expected, got=got)

    def check(self, rec: Any, line: int) -> list[Problem]:
        if not isinstance(rec, dict):
            return [
                self.problem(
                    line,
                    None,
                    "a sample must be a JSON object",
                    expected="an object",
                    got=describe(rec),
                )
            ]
        out: list[Problem] = []
        for name, value in rec.items():
            spec = FIELD_BY_NAME.get(name)
            if spec is None:
                if not name.startswith("scores."):
                    self.unknown.setdefault(name, line)
                continue
            if spec.strict and value is not None and not isinstance(value, str):
                out.append(
                    self.problem(line, name, "wrong type", expected="a string", got=describe(value))
                )
                continue
            out.extend(self._check_field(name, spec.duckdb_type, value, line))
        out.extend(self._check_keys(rec, line))
        return out

    def _check_field(self, name: str, kind: str, value: Any, line: int) -> Iterator[Problem]:
        if name in _NESTED:
            yield from self._check_list(name, _NESTED[name], value, line)
            return
        if name in ("scores", "score_weights"):
            yield from self._check_scores(value, line, name)
            return
        if not _type_ok(kind, value):
            yield self.problem(
                line, name, "wrong type", expected=_EXPECTED[kind], got=describe(value)
            )
            return
        if _is_number(value) and _in_int64(value):
            yield from self._check_number(name, value, line)

    def _check_number(self, name: str, value: float, line: int) -> Iterator[Problem]:
        if not math.isfinite(value):
            yield self.problem(
                line,
                name,
                "numbers must be finite",
                expected="a finite number",
                got=describe(value),
            )
        elif name in NONNEGATIVE and value < 0:
            yield self.problem(
                line, name, "must not be negative", expected="≥ 0", got=describe(value)
            )
        elif name == "guess_chance" and not 0 <= value <= 1:
            yield self.problem(
                line,
                name,
                "a probability must lie in [0, 1]",
                expected="0 ≤ guess_chance ≤ 1",
                got=describe(value),
            )

    def _check_scores(self, value: Any, line: int, name: str = "scores") -> Iterator[Problem]:
        """`scores` (name → number or null) and `score_weights` (name → number > 0)."""
        if value is None:
            return
        if not isinstance(value, dict):
            yield self.problem(
                line,
                name,
                "wrong type",
                expected="an object of name → number",
                got=describe(value),
            )
            return
        weights = name == "score_weights"
        for key, v in value.items():
            where = f"{name}.{key}"
            if v is None and not weights:
                continue
            if weights and _is_number(v) and math.isfinite(v) and v <= 0:
                yield self.problem(
                    line,
                    where,
                    "a weight must be > 0",
                    expected="a number > 0 (leave a sample out of a mean by leaving out its score)",
                    got=describe(v),
                )
            elif not _is_number(v) or not _in_int64(v):
                yield self.problem(line, where, "wrong type", expected="a number", got=describe(v))
            elif not math.isfinite(v):
                yield self.problem(
                    line,
                    where,
                    "numbers must be finite",
                    expected="a finite number",
                    got=describe(v),
                )

    def _check_list(
        self, name: str, struct: dict[str, str], value: Any, line: int
    ) -> Iterator[Problem]:
        if value is None:
            return
        if not isinstance(value, list):
            yield self.problem(
                line, name, "wrong type", expected="an array of objects", got=describe(value)
            )
            return
        for i, item in enumerate(value):
            where = f"{name}[{i}]"
            if not isinstance(item, dict):
                yield self.problem(
                    line, where, "wrong type", expected="an object", got=describe(item)
                )
                continue
            bad_type = False
            for key, kind in struct.items():
                v = item.get(key)
                if not _type_ok(kind, v):
                    bad_type = True
                    yield self.problem(
                        line,
                        f"{where}.{key}",
                        "wrong type",
                        expected=_EXPECTED[kind],
                        got=describe(v),
                    )
                elif isinstance(v, int | float) and not math.isfinite(v):
                    bad_type = True
                    yield self.problem(
                        line,
                        f"{where}.{key}",
                        "numbers must be finite",
                        expected="a finite number",
                        got=describe(v),
                    )
            if not bad_type:
                yield from _nested_rules(self, name, where, item, line)

    def _check_keys(self, rec: dict[str, Any], line: int) -> Iterator[Problem]:
        key_values = []
        for name in KEY:
            value = rec.get(name)
            if name == "run" and self.run_override is not None:
                value = self.run_override
            if name == "epoch" and value is None:
                value = 0
            if value is None or (isinstance(value, str) and value == ""):
                hint = " (or give --as NAME)" if name == "run" else ""
                yield self.problem(
                    line,
                    name,
                    f"missing key field{hint}",
                    expected=FIELD_BY_NAME[name].description.split(";")[0],
                    got="nothing",
                )
                return
            if isinstance(value, dict | list):
                return  # a key of the wrong type is reported as such; it cannot repeat
            key_values.append(str(value) if name != "epoch" else value)
        key = tuple(key_values)
        first = self.seen.get(key)
        if first is not None:
            yield self.problem(
                line,
                "sample_id",
                f"duplicate sample key (run, task, sample_id, epoch) = {key}, "
                f"first seen on line {first}",
                expected="each key once per file",
                got="a repeat",
            )
        else:
            self.seen[key] = line

    def unknown_fields_warning(self) -> str | None:
        if not self.unknown:
            return None
        listed = ", ".join(f"'{k}' (line {v})" for k, v in sorted(self.unknown.items()))
        return f"{self.file}: unknown field(s) ignored: {listed}; see `calipers schema`"


def _nested_rules(
    checker: RecordChecker, name: str, where: str, item: dict[str, Any], line: int
) -> Iterator[Problem]:
    if name == "assertions":
        if not item.get("type"):
            yield checker.problem(
                line,
                f"{where}.type",
                "an assertion needs a type",
                expected="an assertion type",
                got=describe(item.get("type")),
            )
        kind, layer = item.get("type"), item.get("layer")
        if kind and kind not in ASSERTION_LAYERS:
            yield checker.problem(
                line,
                f"{where}.type",
                f"unknown assertion type '{kind}'",
                expected="a type listed by `calipers schema` (assertions.type)",
                got=describe(kind),
            )
        elif kind and layer in ("fact", "behavior") and ASSERTION_LAYERS[kind] != layer:
            yield checker.problem(
                line,
                f"{where}.layer",
                f"'{kind}' is a {ASSERTION_LAYERS[kind]} assertion",
                expected=f"{ASSERTION_LAYERS[kind]} or nothing",
                got=describe(layer),
            )
        weight = item.get("weight")
        if weight is not None and weight <= 0:
            yield checker.problem(
                line,
                f"{where}.weight",
                "weights must be positive",
                expected="> 0",
                got=describe(weight),
            )
        layer = item.get("layer")
        if layer is not None and layer not in ("fact", "behavior"):
            yield checker.problem(
                line,
                f"{where}.layer",
                "unknown layer",
                expected="fact or behavior",
                got=describe(layer),
            )
    elif name == "judgments":
        lo, hi, score = item.get("scale_min"), item.get("scale_max"), item.get("score")
        if lo is not None and hi is not None and lo >= hi:
            yield checker.problem(
                line,
                f"{where}.scale_min",
                "scale_min must be below scale_max",
                expected=f"< {hi}",
                got=describe(lo),
            )
        elif score is not None and (
            (lo is not None and score < lo) or (hi is not None and score > hi)
        ):
            yield checker.problem(
                line,
                f"{where}.score",
                "judgment score outside its scale",
                expected=f"[{lo}, {hi}]",
                got=describe(score),
            )
        if item.get("repeat") is not None and item["repeat"] < 0:
            yield checker.problem(
                line,
                f"{where}.repeat",
                "must not be negative",
                expected="≥ 0",
                got=describe(item["repeat"]),
            )
    elif name == "tools" and not item.get("name"):
        yield checker.problem(
            line, f"{where}.name", "a tool call needs a name", expected="a string", got="nothing"
        )
    elif name == "human" and item.get("score") is None:
        yield checker.problem(
            line, f"{where}.score", "a human label needs a score", expected="a number", got="null"
        )


def check_records(
    records: Iterable[tuple[int, Any]], file: str, *, run_override: str | None = None
) -> tuple[list[Problem], RecordChecker]:
    checker = RecordChecker(file, run_override=run_override)
    problems: list[Problem] = []
    for line, rec in records:
        problems.extend(checker.check(rec, line))
    return problems, checker


FLAT_FIELDS = tuple(f for f in FIELDS if f.flat)
