"""YAML and JSON configuration text, read strictly, with the line of every key (no pydantic here:
`calipers check` reads kelvin.yaml without loading it; `configfile` adds the models).

- YAML through `StrictLoader`: a key given twice in one mapping is an error naming both lines
  (PyYAML keeps the last silently); every mapping key and list item keeps its line.
- JSON through `jsontext` (strict JSON: no repeated key, NaN, trailing comma, …).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from calipers.data import jsontext
from calipers.errors import InputError

_MERGE = "tag:yaml.org,2002:merge"


class RepeatedKey(yaml.YAMLError):
    def __init__(self, key: Any, line: int, first: int) -> None:
        super().__init__(f"the key '{key}' appears twice in one mapping (lines {first} and {line})")
        self.key, self.line, self.first = key, line, first


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping and remembers lines: of each
    mapping's keys (`key_lines`), of each list's items (`item_lines`), by the object's id."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.key_lines: dict[int, dict[Any, int]] = {}
        self.item_lines: dict[int, list[int]] = {}

    def _key_lines(self, node: yaml.MappingNode) -> dict[Any, int]:
        lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = lines.get(key)
            except TypeError:  # an unhashable key: SafeLoader says so itself
                continue
            if first is not None:
                raise RepeatedKey(key, line, first)
            lines[key] = line
        return lines

    def construct_yaml_map(self, node: yaml.MappingNode) -> Any:
        data: dict[Any, Any] = {}
        yield data
        lines = self._key_lines(node)
        data.update(self.construct_mapping(node))
        self.key_lines[id(data)] = lines

    def construct_yaml_seq(self, node: yaml.SequenceNode) -> Any:
        data: list[Any] = []
        yield data
        data.extend(self.construct_sequence(node))
        self.item_lines[id(data)] = [item.start_mark.line + 1 for item in node.value]


StrictLoader.add_constructor("tag:yaml.org,2002:map", StrictLoader.construct_yaml_map)
StrictLoader.add_constructor("tag:yaml.org,2002:seq", StrictLoader.construct_yaml_seq)


@dataclass
class Document:
    """A configuration file's data, and the lines its keys and items came from."""

    origin: str
    data: Any
    key_lines: dict[int, dict[Any, int]] = field(default_factory=dict)
    item_lines: dict[int, list[int]] = field(default_factory=dict)

    def line_of(self, loc: tuple[int | str, ...] | list[int | str]) -> int | None:
        """The line of the deepest part of `loc` (a pydantic error's location) found in the
        data; None for JSON, or a location outside the file (an override)."""
        node, line = self.data, None
        for part in loc:
            if isinstance(node, dict) and part in node:
                line = self.key_lines.get(id(node), {}).get(part, line)
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
                lines = self.item_lines.get(id(node), [])
                line = lines[part] if part < len(lines) else line
                node = node[part]
            elif not isinstance(part, int):
                continue  # a validator's tag in the location (`function-after[…]`)
            else:
                break
        return line


def parse(text: str, origin: str, *, json: bool = False) -> Document:
    """The file's data: strict JSON when `json`, else YAML through `StrictLoader`. Raises
    `InputError` naming the file and line."""
    if json:
        try:
            return Document(origin, jsontext.loads(text))
        except jsontext.JSONError as exc:
            raise InputError(
                f"{origin}, {exc.where()}: {exc.message}" if exc.where() else f"{origin}: {exc}",
                hint="Fix the JSON there (strict JSON: no repeated key, NaN or trailing comma).",
            ) from None
    loader = StrictLoader(text)
    try:
        data = loader.get_single_data()
    except RepeatedKey as exc:
        raise InputError(
            f"{origin}, line {exc.line}: {exc}",
            hint="Keep one of them: YAML would silently keep the last, so calipers refuses both.",
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        context, opened = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and opened is not None:  # where the unclosed thing began
            problem += f" ({context} at line {opened.line + 1})"
        raise InputError(
            f"{origin}{where}: not valid YAML: {problem}",
            hint="Fix the YAML syntax there. Common causes: an unquoted colon, tabs for "
            "indentation, mixed indentation.",
        ) from None
    finally:
        loader.dispose()
    return Document(origin, data, loader.key_lines, loader.item_lines)
