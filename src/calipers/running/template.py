"""The one template engine for pipeline commands: `calipers run --pipeline` and `run:` in the
config of `calipers check` (kelvin.yaml).

`{input}` and `{output}` are replaced by the shell-quoted paths of calipers' own files; `{{` and
`}}` are a literal brace — kelvin's `str.format` convention, so a template kelvin fills is filled
the same here. Any other brace is refused before anything runs (exit 1), with what is wrong, where
(the column, and the template with a caret under it) and how to fix it: `awk '{print}'` must be
written `awk '{{print}}'`. With `--stdio` the command is not a template: it runs as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from calipers.errors import InputError

PLACEHOLDERS = ("input", "output")
BRACE_HINT = "Write a literal brace as `{{` or `}}`, e.g. awk '{{print}}' {input}."
PLACEHOLDER_HINT = "Example: python my_pipeline.py {input} {output}"


class TemplateError(InputError):
    """A command template that cannot be filled (exit 1). `problem` says what and where (without
    the file or flag, which the caller names) and `hint` how to fix it."""

    def __init__(
        self, problem: str, *, hint: str, where: str, parameters: Sequence[str] = ()
    ) -> None:
        super().__init__(f"{where} {problem}", hint=hint, parameters=list(parameters))
        self.problem = problem


@dataclass(frozen=True)
class CommandTemplate:
    """A parsed template: literal text and placeholder names, in order."""

    text: str
    parts: tuple[tuple[str, str], ...]  # ("text", literal) or ("field", name)

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(value for kind, value in self.parts if kind == "field")

    def fill(self, **values: str) -> str:
        """The command with every placeholder replaced by its value (given already quoted)."""
        return "".join(values[value] if kind == "field" else value for kind, value in self.parts)


def parse_command(
    text: str,
    *,
    required: Sequence[str] = PLACEHOLDERS,
    where: str = "the pipeline command",
    parameters: Sequence[str] = (),
) -> CommandTemplate:
    """The template `text`, checked: every brace is `{input}`, `{output}`, `{{` or `}}`, and each
    name in `required` appears. Raises `TemplateError` naming `where` (the library parameter in
    backticks, with `parameters`, or a config file's line and field)."""
    parts: list[tuple[str, str]] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in "{}" and text[i + 1 : i + 2] == char:  # `{{` or `}}`: one literal brace
            literal.append(char)
            i += 2
            continue
        if char == "}":
            raise _error(text, i, "has a lone `}`", where=where, parameters=parameters)
        if char == "{":
            end = text.find("}", i + 1)
            opened = text.find("{", i + 1)
            if end < 0 or 0 <= opened < end:
                raise _error(
                    text, i, "has a `{` that is never closed", where=where, parameters=parameters
                )
            name = text[i + 1 : end]
            if name not in PLACEHOLDERS:
                what = f"has the unknown placeholder `{{{name}}}`" if name else "has an empty `{}`"
                raise _error(text, i, what, where=where, parameters=parameters)
            if literal:
                parts.append(("text", "".join(literal)))
                literal = []
            parts.append(("field", name))
            i = end + 1
            continue
        literal.append(char)
        i += 1
    if literal:
        parts.append(("text", "".join(literal)))
    template = CommandTemplate(text, tuple(parts))
    missing = [name for name in required if name not in template.placeholders]
    if missing:
        escaped = [name for name in missing if "{{" + name + "}}" in text]
        names = " nor ".join(f"{{{name}}}" for name in missing)
        if escaped:
            problem = (
                f"has {{{escaped[0]}}} escaped as {{{{{escaped[0]}}}}}: it would never be filled in"
            )
            hint = f"Write {{{escaped[0]}}} (one brace each side) where the path goes."
        else:
            problem = f"has {'neither' if len(missing) > 1 else 'no'} {names} placeholder"
            hint = PLACEHOLDER_HINT
        raise TemplateError(problem, hint=hint, where=where, parameters=parameters)
    return template


def fill_command(text: str, **values: str) -> str:
    """`text` parsed (as `parse_command`, nothing required) and filled with `values`."""
    return parse_command(text, required=()).fill(**values)


def _error(
    text: str, index: int, what: str, *, where: str, parameters: Sequence[str]
) -> TemplateError:
    """What is wrong at `index` (0-based), with the column and the template marked under it."""
    start = max(0, index - _CONTEXT)
    before = ("…" if start else "") + text[start:index]
    after = text[index : index + _CONTEXT] + ("…" if index + _CONTEXT < len(text) else "")
    return TemplateError(
        f"{what} at column {index + 1} (only {{input}} and {{output}} are filled in)\n"
        f"    {before}{after}\n    {' ' * len(before)}^",
        hint=BRACE_HINT,
        where=where,
        parameters=parameters,
    )


_CONTEXT = 30  # characters of the template shown each side of the problem
