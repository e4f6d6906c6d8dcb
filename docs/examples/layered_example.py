"""The worked example of docs/layered.md.

    python docs/examples/layered_example.py write    # writes layered.jsonl from the rules below
    python docs/examples/layered_example.py render   # prints the doc's output, from the code

tests/test_docs_layered.py checks that the doc shows exactly what `render` prints.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
DATA = HERE / "layered.jsonl"
N = 30  # samples per run, one epoch


def samples() -> list[dict[str, object]]:
    """`prompt-v1` passes 3 of 4 fact checks and gets a 3 or 4 from each judge; `prompt-v2`
    passes all 4 on two samples in three and the judges like it a little more."""
    rows: list[dict[str, object]] = []
    for i in range(N):
        for run in ("prompt-v1", "prompt-v2"):
            better = run == "prompt-v2"
            fact_passed = 4 if better and i % 3 else 3
            judge = 3 + (i % 2) + (1 if better and i % 5 == 0 else 0)
            rows.append(
                {
                    "run": run,
                    "task": "qa" if i < N // 2 else "summarize",
                    "sample_id": f"q{i:02d}",
                    "assertions": [
                        {"type": "contains", "name": f"fact{k}", "passed": k < fact_passed}
                        for k in range(4)
                    ]
                    + [{"type": "max_length", "name": "short", "passed": True}],
                    "judgments": [
                        {"judge": "judge-a", "score": judge},
                        {"judge": "judge-b", "score": min(5, judge + (i % 3 == 0))},
                    ],
                }
            )
    return rows


def render() -> str:
    from rich.console import Console

    import calipers
    from calipers.schemes import get_scheme

    with calipers.open(DATA) as samples:
        result = calipers.compare(
            samples, "layered", baseline="prompt-v1", candidates=["prompt-v2"]
        )
    console = Console(width=100, record=True, no_color=True, file=io.StringIO())
    get_scheme("layered").compare_terminal(result, console)
    text = console.export_text()
    lines = [line.rstrip() for line in text.splitlines()]
    return "```text\n" + "\n".join(lines) + "\n```\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["write"]:
        DATA.write_text("".join(json.dumps(r) + "\n" for r in samples()))
    elif sys.argv[1:] == ["render"]:
        print(render(), end="")
    else:
        sys.exit(__doc__)
