"""Configuration files (suites, rubrics, objective settings, kelvin.yaml): read strictly, and every
problem named by file, line and field.

- YAML and JSON through `yamltext.parse`: a key given twice is an error naming both lines, and
  every key keeps its line; JSON is strict JSON (`jsontext`).
- pydantic models derive from `StrictModel`: no coercion (`"2"` is not 2, `true` is not 1, `2.5`
  is not an integer), unknown keys refused, numbers finite. A validation error names the file,
  the line of the offending key and its field path (`tasks[0].epochs`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticError

from calipers.data.yamltext import Document, parse
from calipers.errors import InputError

__all__ = ["Document", "StrictModel", "field_path", "invalid", "parse"]


class StrictModel(BaseModel):
    """A model read from a configuration file: strict types, unknown keys refused, finite
    numbers (an int is still a float: `timeout_s: 60`)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


def field_path(loc: tuple[int | str, ...] | list[int | str]) -> str:
    """`tasks[0].epochs` for ("tasks", 0, "epochs")."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif "[" in str(part) and "]" in str(part) and "-" in str(part):
            continue  # `function-after[_known_type(), AssertionSpec]`
        else:
            text += f".{part}" if text else str(part)
    return text


def describe_input(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def invalid(
    exc: PydanticError, doc: Document, *, hint: str | None = None, prefix: tuple[Any, ...] = ()
) -> InputError:
    """An `InputError` for a pydantic validation error of `doc` (the model validated the data
    under `prefix`): the first problem by file, line and field, and how many more."""
    errors = exc.errors()
    first = errors[0]
    loc = (*prefix, *first["loc"])
    line = doc.line_of(loc)
    where = doc.origin + (f", line {line}" if line is not None else "")
    path = field_path(loc)
    message = first["msg"].removeprefix("Value error, ")
    got = (
        ""
        if first["type"] in ("missing", "value_error")
        else f" (got {describe_input(first['input'])})"
    )
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    text = f"{where}, field '{path}': {message}{got}{more}" if path else f"{where}: {message}{more}"
    return InputError(text, hint=hint)
