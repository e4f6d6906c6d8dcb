"""The worked example of docs/rubric.md.

    python docs/examples/rubric_example.py write    # writes rubric.jsonl from the rules below
    python docs/examples/rubric_example.py render   # prints the doc's output, from the code

tests/test_docs_rubric.py checks that the doc shows exactly what `render` prints.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
DATA = HERE / "rubric.jsonl"
RUBRIC = HERE / "rubric.yaml"
DIMENSIONS = (
    "correctness", "completeness", "adherence", "actionability", "efficiency", "safety",
    "consistency",
)  # fmt: skip

# Three outputs for one review task, each judged on the seven dimensions by two judges.
OUTPUTS = {
    "agent-a": {
        "scores": [(9, 9), (8, 9), (9, 9), (8, 8), (7, 8), (9, 10), (9, 9)],
        "red_flags": ["no_error_handling"],
        "bonuses": ["adds_tests", "explains_tradeoff"],
    },
    "agent-b": {
        "scores": [(9, 8), (9, 8), (8, 8), (8, 9), (8, 8), (9, 9), (8, 9)],
        "red_flags": [],
        "bonuses": ["adds_tests"],
    },
    "agent-c": {
        "scores": [(6, 5), (7, 6), (6, 6), (5, 6), (8, 7), (7, 7), (6, 6)],
        "red_flags": ["invented_api", "no_error_handling", "invented_api"],
        "bonuses": [],
    },
}


def samples() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for run, spec in OUTPUTS.items():
        judgments: list[dict[str, object]] = []
        for judge in (0, 1):
            for d, pair in zip(DIMENSIONS, spec["scores"], strict=True):
                judgments.append({"judge": f"judge-{judge}", "dimension": d, "score": pair[judge]})
        judgments[0]["red_flags"] = spec["red_flags"]
        judgments[0]["bonuses"] = spec["bonuses"]
        rows.append({"run": run, "task": "review-pr", "sample_id": "pr-1042",
                     "judgments": judgments})  # fmt: skip
    return rows


def render() -> str:
    from rich.console import Console

    import calipers
    from calipers.schemes.rubric import RubricResult
    from calipers.schemes.rubric.rank import rank
    from calipers.schemes.rubric.terminal import breakdown, ranking

    result = calipers.score(DATA, "rubric", rubric=RUBRIC)
    assert isinstance(result, RubricResult)
    console = Console(width=100, record=True, no_color=True, file=io.StringIO())
    for e in result.evaluations:
        dims = ", ".join(f"{d} {float(v):g}" for d, v in e.dimensions.items())
        console.print(f"{e.run}: {dims}", highlight=False)
    console.print()
    for e in result.evaluations:
        breakdown(e, console)
    console.print()
    ranking(rank(result.evaluations, origin=result.origin, parameters={}), console)
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    return "```text\n" + "\n".join(lines) + "\n```\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["write"]:
        DATA.write_text("".join(json.dumps(r) + "\n" for r in samples()))
    elif sys.argv[1:] == ["render"]:
        print(render(), end="")
    else:
        sys.exit(__doc__)
