"""The worked example of docs/objective.md.

    python docs/examples/objective_example.py write    # writes objective.jsonl from the rules below
    python docs/examples/objective_example.py render   # prints the doc's output, from the code
    python docs/examples/objective_example.py cost     # prints the doc's cost example

tests/test_docs_objective.py checks that the doc shows exactly what `render` prints.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
DATA = HERE / "objective.jsonl"

# An agent's prompt change, run twice (epochs 0 and 1) on three tasks. Per task and run:
# (checks passed out of 4 in each epoch, judge score 0–1 in each epoch, cost_usd, tool_calls).
RUNS = {
    "prompt-v1": {
        "fix-login-bug": ((3, 4), (0.70, 0.80), 0.040, 6),
        "add-pagination": ((4, 4), (0.90, 0.90), 0.050, 8),
        "write-migration": ((2, 2), (0.50, 0.60), 0.030, 5),
    },
    "prompt-v2": {
        "fix-login-bug": ((4, 4), (0.90, 0.80), 0.030, 4),
        "add-pagination": ((4, 4), (0.90, 1.00), 0.060, 8),
        "write-migration": ((2, 3), (0.60, 0.60), 0.030, 5),
    },
    # Better judged and cheaper everywhere, but one pagination check now fails in one epoch.
    "prompt-v3": {
        "fix-login-bug": ((4, 4), (1.00, 1.00), 0.020, 3),
        "add-pagination": ((4, 3), (1.00, 1.00), 0.040, 6),
        "write-migration": ((3, 3), (0.80, 0.80), 0.030, 5),
    },
}
CHECKS = 4


def samples() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for run, tasks in RUNS.items():
        for task, (passed, judged, cost, tools) in tasks.items():
            for epoch in (0, 1):
                assertions = [
                    {"name": f"check-{i + 1}", "type": "custom", "passed": i < passed[epoch]}
                    for i in range(CHECKS)
                ]
                rows.append({
                    "run": run, "task": task, "sample_id": task, "epoch": epoch,
                    "assertions": assertions,
                    "judgments": [{"judge": "reviewer", "score": judged[epoch]}],
                    "cost_usd": cost, "tool_calls": tools,
                })  # fmt: skip
    return rows


def render() -> str:
    from rich.console import Console

    import calipers
    from calipers.schemes.objective.terminal import comparison

    data = calipers.open(DATA)
    result = calipers.compare(
        data, "objective", baseline="prompt-v1", candidates=["prompt-v2"], n_resamples=2000, seed=7
    )
    console = Console(width=100, record=True, no_color=True, file=io.StringIO())
    for run in ("prompt-v1", "prompt-v2"):
        for t in result.scores[run].values():
            console.print(
                f"{run} {t.task}: obj01 {t.objective:.4g}, judge01 {t.judge:.4g}, "
                f"base {t.base:.4g}, cost adj {t.cost_adjustment:+.4g}, "
                f"composite {t.composite:.4g}",
                highlight=False,
            )
    console.print()
    comparison(result, console)
    console.print()
    comparison(
        calipers.compare(
            data, "objective", baseline="prompt-v1", candidates=["prompt-v3"], n_resamples=2000,
            seed=7,
        ),
        console,
    )  # fmt: skip
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    return "```text\n" + "\n".join(lines) + "\n```\n"


def cost() -> str:
    """docs/objective.md, "Cost beside the composite": the demo's `boolean` and `dates` tasks
    scored with a baseline and --margin 0.03, as the terminal shows them (120 columns)."""
    import pandas as pd
    from rich.console import Console

    import calipers
    from calipers.demo.synthetic import DEMO_SEED, generate_samples
    from calipers.schemes import get_scheme

    rows = pd.DataFrame(list(generate_samples(seed=DEMO_SEED)))
    rows = rows[rows["task"].isin(["boolean", "dates"])]
    out = io.StringIO()
    console = Console(file=out, width=120, color_system=None, force_terminal=False)
    console.print("$ calipers score demo-boolean-dates.jsonl --scheme objective --baseline "
                  "atlas-small --margin 0.03", highlight=False)  # fmt: skip
    result = calipers.score(rows, "objective", baseline="atlas-small", margin=0.03)
    get_scheme("objective").terminal(result, console)
    text = "\n".join(line.rstrip() for line in out.getvalue().splitlines())
    return f"```text\n{text}\n```\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["write"]:
        DATA.write_text("".join(json.dumps(r) + "\n" for r in samples()))
    elif sys.argv[1:] == ["cost"]:
        sys.stdout.write(cost())
    elif sys.argv[1:] == ["render"]:
        print(render(), end="")
    else:
        sys.exit(__doc__)
