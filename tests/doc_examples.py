"""The worked examples of docs/ and the numbers the README quotes: what the code prints, checked.

- Blocks: docs/NAME.md holds, between `<!-- example:begin -->` and `<!-- example:end -->`,
  exactly what docs/examples/NAME_example.py's `render()` prints; a doc may hold more blocks,
  each between `<!-- BLOCK:begin -->` and `<!-- BLOCK:end -->`, made by that script's function
  named BLOCK (`-` as `_`).
- Quotes: a printed value quoted inside a code block's comment (the README's Python example says
  what `result.reason` prints) is listed in QUOTES with the function that computes it now.

    python tests/doc_examples.py --write layered flips flips:one-model   # regenerate blocks
    python tests/doc_examples.py --write-quotes                          # regenerate quotes
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).parent.parent
BEGIN, END = "<!-- example:begin -->\n", "<!-- example:end -->"


def markers(block: str = "example") -> tuple[str, str]:
    return f"<!-- {block}:begin -->\n", f"<!-- {block}:end -->"


def load_example(name: str) -> ModuleType:
    path = ROOT / "docs" / "examples" / f"{name}_example.py"
    spec = importlib.util.spec_from_file_location(f"{name}_example", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def doc_path(name: str) -> Path:
    return ROOT / "docs" / f"{name}.md"


def example_block(name: str, block: str = "example") -> str:
    """The text between the markers of `block` in docs/NAME.md."""
    begin, end = markers(block)
    return doc_path(name).read_text().split(begin, 1)[1].split(end, 1)[0]


def rendered(name: str, block: str = "example") -> str:
    """What the block should hold: docs/examples/NAME_example.py's render() or BLOCK()."""
    module = load_example(name)
    made: str = getattr(module, "render" if block == "example" else block.replace("-", "_"))()
    return made


def write_block(name: str, block: str = "example") -> None:
    begin, end = markers(block)
    text = doc_path(name).read_text()
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    doc_path(name).write_text(head + begin + rendered(name, block) + end + tail)


# ------------------------------------------------------------------------------- quotes


@contextlib.contextmanager
def _in_root() -> Iterator[None]:
    before = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def _readme_python() -> str:
    section = (ROOT / "README.md").read_text().split("From Python", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README has no Python example after 'From Python'"
    return found.group(1)


def readme_reason() -> dict[str, str]:
    """The README's Python example run as written: its result's verdict and the reason's
    estimate with its interval (what the comment quotes, "composite +0.283 [+0.207, +0.364]")."""
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    with _in_root(), contextlib.redirect_stdout(io.StringIO()):
        exec(compile(_readme_python(), "README.md", "exec"), namespace)
    result = namespace["result"]
    reason: str = result.reason
    return {"verdict": result.verdict.value, "text": reason[: reason.index("]") + 1]}


@dataclass(frozen=True)
class Quote:
    """A value quoted in a file: `pattern` finds it (its named groups are the quoted parts),
    `now` computes those parts from the code."""

    file: str
    pattern: str
    now: Callable[[], dict[str, str]]

    def found(self) -> re.Match[str]:
        match = re.search(self.pattern, (ROOT / self.file).read_text(), re.M)
        assert match, f"{self.file}: the quote {self.pattern!r} is gone"
        return match


def rubric_history_note() -> dict[str, str]:
    """The line `calipers score --scheme rubric` prints when it records no history (default
    store), wrapped at 100 columns as the doc shows it."""
    import textwrap

    from calipers.cli.score import history_note
    from calipers.workspace import DEFAULT_DB

    return {"note": "\n".join(textwrap.wrap(f"note: {history_note(DEFAULT_DB)}", 100))}


README_REASON = r'result\.reason +# (?P<verdict>[A-Z]+), and why: "(?P<text>[^"…]*?) …"'
QUOTES = [
    Quote("README.md", README_REASON, readme_reason),
    Quote(
        "docs/rubric.md",
        r"(?s)```\n(?P<note>note: history: not recorded.*?)\n```",
        rubric_history_note,
    ),
]


def write_quotes() -> None:
    for quote in QUOTES:
        path = ROOT / quote.file
        text = path.read_text()
        match = quote.found()
        now = quote.now()
        line = match.group(0)
        for name, value in now.items():
            line = line.replace(match.group(name), value, 1)
        path.write_text(text[: match.start()] + line + text[match.end() :])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write-quotes"]:
        write_quotes()
    elif sys.argv[1:2] == ["--write"]:
        for spec in sys.argv[2:]:
            name, _, block = spec.partition(":")
            write_block(name, block or "example")
    else:
        sys.exit(__doc__)
