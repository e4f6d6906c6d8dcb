"""The worked examples of docs/cost.md, printed by the code: first the demo's assistant pair
(`calipers demo` runs the bundled support assistant v1 and v2 on its 12 cases: the same suite,
command and judge, here into a temporary store) — what v2's gain costs, which 12 cases cannot
bound; then the demo's synthetic evaluation (`calipers demo` writes the same rows to
.calipers/demo/samples.jsonl) compared on `correct` with its cost: each run's cost, tokens and
seconds per solved item, what atlas-large's gain over atlas-small costs, its net benefit at 0.50
per solved item and the worth-it gate; then two pairs whose data cannot bound the answer, said
as such.

    python docs/examples/cost_example.py   # prints the doc's output, from the code
    python tests/doc_examples.py --write cost cost:assistant cost:rank-example cost:selection \
        cost:coverage   # into the doc

tests/test_cost.py checks that the doc shows exactly what this prints.
"""

from __future__ import annotations

import io


def render() -> str:
    import pandas as pd
    from rich.console import Console

    import calipers
    from calipers.demo.synthetic import DEMO_SEED, generate_samples
    from calipers.render.cost import cost_terminal

    rows = pd.DataFrame(list(generate_samples(seed=DEMO_SEED)))
    out = io.StringIO()
    console = Console(width=100, record=True, no_color=True, file=out)

    def show(command: str, frame: pd.DataFrame, baseline: str, candidate: str,
             value: float | None, gate: str | None = None) -> None:  # fmt: skip
        console.print(f"$ {command}", highlight=False)
        with calipers.open(frame) as samples:
            extra = {} if value is None else {"value_per_solved": value}
            result = calipers.compare(samples, "metric", metric="correct", baseline=baseline,
                                      candidates=[candidate], by_task=False, **extra)  # fmt: skip
        report = result.to_dict()
        cost_terminal(report, console)
        if gate is not None:
            failure = result.gate_failure(gate)
            console.print(f"gate {gate}: " + ("passed (exit 0)" if failure is None
                                               else f"failed, exit 3: {failure}"),
                          highlight=False)  # fmt: skip
        console.print()

    show("calipers compare .calipers/demo/samples.jsonl --scheme metric --metric correct "
         "--baseline atlas-small --candidate atlas-large --value-per-solved 0.50 --gate worth-it",
         rows, "atlas-small", "atlas-large", 0.5, "worth-it")  # fmt: skip
    show("… --baseline borealis-think --candidate atlas-large --value-per-solved 0.50 "
         "--gate worth-it", rows, "borealis-think", "atlas-large", 0.5, "worth-it")  # fmt: skip
    first = rows["point"].unique()[:1]
    small = rows[rows["task"].isin(["dates"]) & rows["point"].isin(first)]
    show("… one task and point only (16 samples): --baseline atlas-small --candidate "
         "atlas-large --value-per-solved 0.50",
         small, "atlas-small", "atlas-large", 0.5)  # fmt: skip
    return f"```text\n{out.getvalue().rstrip()}\n```\n"


def assistant() -> str:
    """What v2's gain costs on the demo's assistant pair: `calipers demo`'s suite run (its
    `demo_suite_run`: the bundled assistant v1 and v2 through `calipers run`, judged by the
    deterministic command judge) compared as the demo compares it, with a value per point."""
    import tempfile
    from pathlib import Path

    from rich.console import Console

    import calipers
    from calipers.cli.demo import demo_suite_run
    from calipers.render.cost import cost_terminal

    out = io.StringIO()
    console = Console(width=100, record=True, no_color=True, file=out)
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "demo.duckdb"
        demo_suite_run(Path(scratch), db, Console(file=io.StringIO()))  # the demo's own run
        console.print("$ calipers compare --db .calipers/demo/demo.duckdb --scheme layered "
                      "--control assistant-v1 --treatment assistant-v2 --value-per-solved 0.50",
                      highlight=False)  # fmt: skip
        with calipers.open(db=db) as samples:
            result = calipers.compare(
                samples, "layered", baseline="assistant-v1", candidates=["assistant-v2"],
                value_per_solved=0.5,
            )  # fmt: skip
        cost_terminal(result.to_dict(), console)
    return f"```text\n{out.getvalue().rstrip()}\n```\n"


def rank_example() -> str:
    """The demo leaderboard's cheapest acceptable run (docs/cost.md, "The cheapest run that is
    good enough"): `calipers rank --cost --margin 0.03` on the demo's four runs."""
    import pandas as pd
    from rich.console import Console

    import calipers
    from calipers.cli.rank_cost import cost_ranking
    from calipers.demo.synthetic import DEMO_SEED, generate_samples
    from calipers.render.cost_ranking import terminal

    rows = pd.DataFrame(list(generate_samples(seed=DEMO_SEED)))
    out = io.StringIO()
    console = Console(width=140, record=True, no_color=True, file=out)
    console.print("$ calipers rank .calipers/demo/samples.jsonl --cost --margin 0.03 "
                  "--n-resamples 2000 --seed 7", highlight=False)  # fmt: skip
    console.print()
    with calipers.open(rows) as samples:
        made = cost_ranking(samples, margin=0.03, n_resamples=2000, seed=7)
    terminal(made.to_dict(), console)
    return f"```text\n{out.getvalue().rstrip()}\n```\n"


def selection() -> str:
    """The measured wrong-choice rates (docs/cost.md), from
    benchmarks/results/cost_selection.json."""
    import json
    from pathlib import Path

    from calipers.calibration.cost_selection import SELECTION_JSON, selection_table

    root = Path(__file__).resolve().parent.parent.parent
    body = json.loads((root / SELECTION_JSON).read_text(encoding="utf-8"))
    return selection_table(body)


def coverage() -> str:
    """The measured coverage table (docs/cost.md), from benchmarks/results/cost_calibration.json."""
    import json
    from pathlib import Path

    from calipers.calibration.cost import DEFAULT_JSON, coverage_table

    root = Path(__file__).resolve().parent.parent.parent
    body = json.loads((root / DEFAULT_JSON).read_text(encoding="utf-8"))
    return coverage_table(body)


if __name__ == "__main__":
    print(assistant() + "\n" + render(), end="")
