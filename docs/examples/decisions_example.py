"""The worked examples of docs/decisions.md: a margin on the public reference case, the paired
tests beside the interval, per-task corrections and the planner, printed by the code.

    python docs/examples/decisions_example.py   # prints the doc's output, from the code

tests/test_docs_decisions.py checks that the doc shows exactly what this prints.
"""

from __future__ import annotations

import io
import json
from typing import Any


def reference_rows() -> list[dict[str, Any]]:
    """1,000 paired pass/fail items: 55 regress (A right, B wrong), 45 improve, 900 agree."""
    rows, i = [], 0
    for a, b, count in ((True, False, 55), (False, True, 45), (True, True, 800), (False, False, 100)):
        for _ in range(count):
            rows += [{"run": "A", "task": "qa", "sample_id": f"s{i}", "correct": a},
                     {"run": "B", "task": "qa", "sample_id": f"s{i}", "correct": b}]  # fmt: skip
            i += 1
    return rows


def task_rows() -> list[dict[str, Any]]:
    """Six tasks of 80 items; B is better on `math`, worse on `code`, alike elsewhere."""
    import numpy as np

    rng = np.random.default_rng(11)
    rows = []
    shifts = {"math": 0.3, "code": -0.3, "qa": 0.0, "summary": 0.0, "chat": 0.05, "safety": 0.0}
    for task, shift in shifts.items():
        for i in range(80):
            p = rng.uniform(0.3, 0.7)
            a, b = rng.random() < p, rng.random() < min(max(p + shift, 0.0), 1.0)
            rows += [{"run": "A", "task": task, "sample_id": f"{task}-{i}", "correct": bool(a)},
                     {"run": "B", "task": task, "sample_id": f"{task}-{i}", "correct": bool(b)}]  # fmt: skip
    return rows


def render() -> str:
    import pandas as pd
    from rich.console import Console

    import calipers
    from calipers.schemes.layered import terminal

    out = io.StringIO()
    console = Console(width=100, record=True, no_color=True, file=out)
    console.print("$ calipers compare ref.jsonl --scheme metric --metric correct "
                  "--baseline A --candidate B --margin 0.05 --gate non-inferior")  # fmt: skip
    with calipers.open(pd.DataFrame(reference_rows())) as samples:
        result = calipers.compare(
            samples, "metric", metric="correct", baseline="A", candidates=["B"], margin=0.05
        )
    terminal.comparison(result, console)
    pair = result.to_dict()["pairs"][0]
    console.print("\n$ … --json - | jq '.pairs[0] | {decision, margin: .margin.margin, tests}'")
    tests = {k: v for k, v in pair["tests"].items() if k in ("decided_by", "mcnemar")}
    excerpt = {"decision": pair["decision"], "margin": pair["margin"]["margin"], "tests": tests}
    console.print(json.dumps(excerpt, indent=2), markup=False, highlight=False)
    console.print("\n$ calipers compare tasks.jsonl --scheme metric --metric correct "
                  "--baseline A --candidate B --gate none")  # fmt: skip
    with calipers.open(pd.DataFrame(task_rows())) as samples:
        result = calipers.compare(samples, "metric", metric="correct", baseline="A",
                                  candidates=["B"])  # fmt: skip
    terminal.comparison(result, console)

    from calipers.cli.plan import show_plan

    console.print("\n$ calipers plan ref.jsonl --metric correct --baseline A --candidate B "
                  "--margin 0.02")  # fmt: skip
    with calipers.open(pd.DataFrame(reference_rows())) as samples:
        planned = calipers.plan(samples, "metric", metric="correct", baseline="A",
                                candidate="B", margin=0.02)  # fmt: skip
    show_plan(planned, console)
    console.print("\n$ calipers plan --sd 0.8 --correlation 0.6 --effect 0.2 "
                  "--treatments 2")  # fmt: skip
    show_plan(calipers.plan(sd=0.8, correlation=0.6, effect=0.2, treatments=2), console)
    return "```text\n" + console.export_text() + "```\n"


if __name__ == "__main__":
    print(render(), end="")
