"""The worked example of docs/repeats.md: an inspect_ai log (mockllm, 6 samples × 3 epochs, one
errored epoch) scored by calipers, with its repeats.

    python docs/examples/repeats_example.py   # prints the doc's output, from the code

tests/test_docs_repeats.py checks that the doc shows exactly what this prints.
"""

from __future__ import annotations

import io
from pathlib import Path

LOG = (
    Path(__file__).parent.parent.parent
    / "tests" / "fixtures" / "importers" / "inspect" / "errors.eval"
)  # fmt: skip


def render() -> str:
    from rich.console import Console

    import calipers
    from calipers.schemes.layered.terminal import repeats_table

    result = calipers.score(LOG, "metric", metric="match", seed=7)
    console = Console(width=100, record=True, no_color=True, file=io.StringIO())
    repeats_table(result.runs, console)  # type: ignore[attr-defined]
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    return "```text\n" + "\n".join(lines) + "\n```\n"


if __name__ == "__main__":
    print(render(), end="")
