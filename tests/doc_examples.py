"""The worked examples of docs/: each docs/NAME.md holds, between `<!-- example:begin -->` and
`<!-- example:end -->`, exactly what docs/examples/NAME_example.py's `render()` prints.

    python tests/doc_examples.py --write layered robustness   # regenerate those blocks
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parent.parent
BEGIN, END = "<!-- example:begin -->\n", "<!-- example:end -->"


def load_example(name: str) -> ModuleType:
    path = ROOT / "docs" / "examples" / f"{name}_example.py"
    spec = importlib.util.spec_from_file_location(f"{name}_example", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def doc_path(name: str) -> Path:
    return ROOT / "docs" / f"{name}.md"


def example_block(name: str) -> str:
    """The text between the markers of docs/NAME.md."""
    return doc_path(name).read_text().split(BEGIN, 1)[1].split(END, 1)[0]


def write_block(name: str) -> None:
    text = doc_path(name).read_text()
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    doc_path(name).write_text(head + BEGIN + load_example(name).render() + END + tail)


if __name__ == "__main__":
    if sys.argv[1:2] != ["--write"]:
        sys.exit(__doc__)
    for name in sys.argv[2:]:
        write_block(name)
