"""docs/python.md shows exactly what its code prints, and it and the README's "From Python" use
only the top-level names of `import calipers`.

Every ```python block of the doc runs, in order, in one namespace, from the repository root; the
```text block right after a python block is what that block prints. After a change to the code
or the doc, `python tests/test_docs_python.py --write` rewrites those text blocks from a run.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import io
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import calipers

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "python.md"
README = ROOT / "README.md"

FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.DOTALL | re.MULTILINE)


@dataclass
class Block:
    code: str
    line: int  # of the python block in the doc
    end: int  # offset just after the python block
    output: re.Match[str] | None  # the ```text block right after it, if any


def python_blocks(text: str) -> list[Block]:
    fences = list(FENCE.finditer(text))
    blocks = []
    for i, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        after = fences[i + 1] if i + 1 < len(fences) else None
        output = (
            after
            if after and after.group(1) == "text" and not text[fence.end() : after.start()].strip()
            else None
        )
        line = text[: fence.start()].count("\n") + 1
        blocks.append(Block(fence.group(2), line, fence.end(), output))
    return blocks


@contextlib.contextmanager
def in_root() -> Iterator[None]:
    before = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def run_blocks(blocks: list[Block], name: str) -> list[str]:
    """What each block prints, run in order in one namespace from the repository root."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    printed = []
    with in_root():
        for block in blocks:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block.code, f"{name}:{block.line}", "exec"), namespace)
            printed.append(out.getvalue())
    return printed


def test_doc_output_is_what_the_code_prints() -> None:
    text = DOC.read_text()
    blocks = python_blocks(text)
    assert len(blocks) >= 10
    problems = []
    for block, printed in zip(blocks, run_blocks(blocks, str(DOC)), strict=True):
        shown = block.output.group(2) if block.output else ""
        if printed != shown:
            diff = "".join(
                difflib.unified_diff(
                    shown.splitlines(keepends=True),
                    printed.splitlines(keepends=True),
                    "doc",
                    "printed",
                )
            )
            problems.append(f"docs/python.md line {block.line}:\n{diff}")
    assert not problems, "\n".join(problems)


def calipers_names(code: str) -> tuple[list[str], set[str]]:
    """How `code` imports calipers (each import as written) and the names it takes from it."""
    imports, names = [], set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            imports += [
                f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                for a in node.names
                if a.name.split(".")[0] == "calipers"
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "calipers":
            imports.append(f"from {node.module} import ...")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "calipers"
        ):
            names.add(node.attr)
    return imports, names


def top_level_only(code: str, where: str) -> set[str]:
    imports, names = calipers_names(code)
    assert imports and set(imports) == {"import calipers"}, f"{where} imports {imports}"
    deep = sorted(names - set(calipers.__all__))
    assert not deep, f"{where} uses names that are not top-level: calipers.{deep}"
    return names


def test_doc_uses_only_top_level_names() -> None:
    code = "\n".join(b.code for b in python_blocks(DOC.read_text()))
    names = top_level_only(code, "docs/python.md")
    assert {"open", "score", "compare", "load", "InputError"} <= names


def readme_from_python() -> str:
    text = README.read_text()
    section = text.split("From Python", 1)[1]
    return FENCE.search(section).group(2)  # type: ignore[union-attr]


def test_readme_from_python_uses_only_top_level_names() -> None:
    code = readme_from_python()
    names = top_level_only(code, "README.md, From Python")
    assert {"open", "score", "compare"} <= names
    assert ".to_frame(" in code
    tail = README.read_text().split("From Python", 1)[1]
    assert "docs/python.md" in tail.split("\n## ", 1)[0]
    assert "(docs/python.md)" in README.read_text().split("## Documentation", 1)[1]


def test_readme_from_python_runs() -> None:
    code = readme_from_python()
    with in_root(), contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})


def test_readme_quotes_what_the_code_prints() -> None:
    """Every value a README or doc comment quotes (doc_examples.QUOTES) is what the code gives
    now: the README's `result.reason` comment ran as written (`--write-quotes` rewrites them)."""
    import doc_examples

    assert doc_examples.QUOTES
    for quote in doc_examples.QUOTES:
        found = quote.found().groupdict()
        now = quote.now()
        assert found == now, (
            f"{quote.file} quotes {found}, the code gives {now}: "
            "python tests/doc_examples.py --write-quotes"
        )


def write() -> None:
    """Rewrite the doc's text blocks with what the code prints now (a block that prints nothing
    gets none)."""
    text = DOC.read_text()
    blocks = python_blocks(text)
    printed = run_blocks(blocks, str(DOC))
    for block, out in reversed(list(zip(blocks, printed, strict=True))):
        if out and not out.endswith("\n"):
            out += "\n"  # a text block ends with a newline: the test will show the difference
        new = f"\n```text\n{out}```\n" if out else ""
        stop = block.output.end() if block.output else block.end
        text = text[: block.end] + new + text[stop:]
    DOC.write_text(text)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        sys.exit("usage: python tests/test_docs_python.py --write")
