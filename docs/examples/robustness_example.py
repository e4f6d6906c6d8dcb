"""The worked example of docs/robustness.md: kelvin's published experiment, scored by calipers.

    python docs/examples/robustness_example.py   # prints the doc's output, from the code

tests/test_docs_robustness.py checks that the doc shows exactly what this prints.
"""

from __future__ import annotations

import io
from pathlib import Path

EXPERIMENT = (
    Path(__file__).parent.parent.parent
    / "tests" / "fixtures" / "kelvin" / "experiments" / "pillar2_decomposition_demo"
)  # fmt: skip


def render() -> str:
    from rich.console import Console

    import calipers
    from calipers.schemes.robustness import RobustnessResult
    from calipers.schemes.robustness.terminal import case_table, run_summary

    result = calipers.score(EXPERIMENT, "robustness", n_resamples=10_000, seed=7)
    assert isinstance(result, RobustnessResult)
    run = result.runs["pillar2_decomposition_demo"]
    console = Console(width=100, record=True, no_color=True, file=io.StringIO())
    run_summary(run, console, decision_field="stage_assessment", governing_types=["gate_rule"])
    case_table(run, console)
    for c in run.cases[:1]:
        console.print(f"{c.case}: baseline {c.baseline_decision!r}", highlight=False)
        for v in c.variants:
            console.print(
                f"  {v.variant_id:<28} {v.decision!r:<12} distance {v.distance}", highlight=False
            )
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    return "```text\n" + "\n".join(lines) + "\n```\n"


if __name__ == "__main__":
    print(render(), end="")
