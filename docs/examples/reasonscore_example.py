"""The worked example of docs/reasonscore.md.

    python docs/examples/reasonscore_example.py write    # writes reasonscore.jsonl from SPEC and
                                                         # reasonscore_groups.jsonl from GROUPS
    python docs/examples/reasonscore_example.py render   # prints the doc's tables, from the code
    python docs/examples/reasonscore_example.py groups   # prints the doc's grouped leaderboard
    python docs/examples/reasonscore_example.py cost     # prints the doc's cost example

tests/test_docs_reasonscore.py checks that the doc shows exactly what `render` prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
DATA = HERE / "reasonscore.jsonl"
GROUPS_DATA = HERE / "reasonscore_groups.jsonl"
GUESS = {"boolean": 0.5, "dates": 0.25, "sort": 0.0}
# (run, tier, task, point) → (samples, correct, truncated, output tokens per sample)
SPEC: dict[tuple[str, str, str, str], tuple[int, int, int, int]] = {
    ("alpha", "easy", "boolean", "len=8"): (20, 18, 0, 310),
    ("alpha", "easy", "boolean", "len=16"): (20, 15, 1, 420),
    ("alpha", "easy", "dates", "len=8"): (16, 13, 0, 380),
    ("alpha", "easy", "dates", "len=16"): (16, 10, 0, 460),
    ("alpha", "easy", "sort", "len=8"): (12, 12, 0, 250),
    ("alpha", "easy", "sort", "len=16"): (12, 9, 1, 390),
    ("alpha", "hard", "boolean", "len=32"): (20, 12, 2, 900),
    ("alpha", "hard", "boolean", "len=64"): (20, 9, 4, 1300),
    ("alpha", "hard", "dates", "len=32"): (16, 5, 1, 1000),
    ("alpha", "hard", "dates", "len=64"): (16, 3, 3, 1400),
    ("alpha", "hard", "sort", "len=32"): (12, 6, 1, 800),
    ("alpha", "hard", "sort", "len=64"): (12, 2, 2, 1200),
    ("beta", "easy", "boolean", "len=8"): (20, 19, 0, 150),
    ("beta", "easy", "boolean", "len=16"): (20, 17, 0, 190),
    ("beta", "easy", "dates", "len=8"): (16, 12, 0, 170),
    ("beta", "easy", "dates", "len=16"): (16, 9, 0, 210),
    ("beta", "easy", "sort", "len=8"): (12, 11, 0, 120),
    ("beta", "easy", "sort", "len=16"): (12, 8, 0, 160),
    ("beta", "hard", "boolean", "len=32"): (20, 11, 0, 400),
    ("beta", "hard", "boolean", "len=64"): (20, 8, 1, 520),
    ("beta", "hard", "dates", "len=32"): (16, 4, 0, 450),
    ("beta", "hard", "dates", "len=64"): (16, 2, 1, 600),
    ("beta", "hard", "sort", "len=32"): (12, 1, 0, 380),
    ("beta", "hard", "sort", "len=64"): (12, 0, 2, 540),
}


# Runs that do not all cover the same (tier, task) pairs: `large` and `small` have three tiers of
# the three tasks, `fast` has no medium tier, `fixture` is a 4-sample smoke test answering in 2
# tokens. Per (run, tier), every task: (samples, correct, truncated, output tokens per sample).
GROUP_RUNS: dict[tuple[str, str, str], tuple[int, int, int, int]] = {
    ("large", "easy", "len=8"): (16, 15, 0, 900),
    ("large", "medium", "len=16"): (16, 12, 0, 1400),
    ("large", "hard", "len=32"): (16, 7, 0, 2200),
    ("small", "easy", "len=8"): (16, 13, 0, 300),
    ("small", "medium", "len=16"): (16, 8, 0, 500),
    ("small", "hard", "len=32"): (16, 3, 0, 700),
    ("fast", "easy", "len=8"): (16, 14, 0, 150),
    ("fast", "hard", "len=32"): (16, 6, 0, 150),
}
GROUPS = {
    (run, tier, task, point): counts
    for (run, tier, point), counts in GROUP_RUNS.items()
    for task in GUESS
}
GROUPS[("fixture", "easy", "sort", "len=8")] = (4, 4, 0, 2)


def samples(
    spec: dict[tuple[str, str, str, str], tuple[int, int, int, int]] | None = None,
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for (run, tier, task, point), (n, correct, truncated, tokens) in (spec or SPEC).items():
        for i in range(n):
            # the last `truncated` samples hit the context limit and are wrong
            is_truncated = i >= n - truncated
            rows.append(
                {
                    "run": run,
                    "task": task,
                    "sample_id": f"{tier}/{task}/{point}/{i}",
                    "tier": tier,
                    "point": point,
                    "correct": i < correct and not is_truncated,
                    "guess_chance": GUESS[task],
                    "truncated": is_truncated,
                    "tokens_out": tokens,
                }
            )
    return rows


def write() -> None:
    for path, spec in ((DATA, SPEC), (GROUPS_DATA, GROUPS)):
        with path.open("w", encoding="utf-8") as fh:
            for row in samples(spec):
                fh.write(json.dumps(row) + "\n")


def groups() -> str:
    """`calipers leaderboard docs/examples/reasonscore_groups.jsonl` as the terminal shows it."""
    import io

    from rich.console import Console

    import calipers
    from calipers.schemes import get_scheme

    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None, force_terminal=False)
    get_scheme("reasonscore").terminal(calipers.score(GROUPS_DATA, "reasonscore"), console)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def render() -> str:
    import calipers
    from calipers.schemes.reasonscore import ReasonScoreResult

    result = calipers.score(DATA, "reasonscore")
    assert isinstance(result, ReasonScoreResult)
    out = [
        "| run | tier | task | point | n | correct | Σguess | adj_s | adj_n | center | margin "
        "| trunc | point score |",
        "|" + "---|" * 13,
    ]
    for run in result.runs.values():
        for tier in run.tiers.values():
            for task in tier.tasks.values():
                for p in task.points:
                    out.append(
                        f"| {run.run} | {tier.tier} | {task.task} | {p.point} | {p.total} "
                        f"| {p.correct} | {p.guess_sum:g} | {p.adjusted_successes:g} "
                        f"| {p.adjusted_trials:g} | {p.center:.4f} | {p.margin:.4f} "
                        f"| {p.truncated_ratio:.4f} | {p.score:.4f} |"
                    )
    out += [
        "",
        "| run | tier | task | adj_s | adj_n | center | margin | trunc | task score |",
        "|" + "---|" * 9,
    ]
    for run in result.runs.values():
        for tier in run.tiers.values():
            for task in tier.tasks.values():
                out.append(
                    f"| {run.run} | {tier.tier} | {task.task} | {task.adjusted_successes:g} "
                    f"| {task.adjusted_trials:g} | {task.center:.4f} | {task.margin:.4f} "
                    f"| {task.truncated_ratio:.4f} | {task.score:.4f} |"
                )
    out += ["", "| run | tier | ReasonScore | avg tokens |", "|---|---|---|---|"]
    for run in result.runs.values():
        for tier in run.tiers.values():
            out.append(f"| {run.run} | {tier.tier} | {tier.score:.1f} | {tier.avg_tokens:.2f} |")
    out += [
        "",
        "| rank | run | mean ReasonScore | mean tokens | score/token |",
        "|---|---|---|---|---|",
    ]
    for rank, run in enumerate(result.ranked(), start=1):
        out.append(
            f"| {rank} | {run.run} | {run.avg_score:.2f} | {run.avg_tokens:.2f} "
            f"| {run.score_per_token:.4f} |"
        )
    return "\n".join(out) + "\n"


def cost() -> str:
    """docs/reasonscore.md, "Cost beside the leaderboard": `calipers leaderboard` on the demo's
    samples with --margin 0.03, as the terminal shows it (120 columns)."""
    import io

    import pandas as pd
    from rich.console import Console

    import calipers
    from calipers.demo.synthetic import DEMO_SEED, generate_samples
    from calipers.schemes import get_scheme

    rows = pd.DataFrame(list(generate_samples(seed=DEMO_SEED)))
    out = io.StringIO()
    console = Console(file=out, width=120, color_system=None, force_terminal=False)
    console.print("$ calipers leaderboard .calipers/demo/samples.jsonl --margin 0.03",
                  highlight=False)  # fmt: skip
    get_scheme("reasonscore").terminal(calipers.score(rows, "reasonscore", margin=0.03), console)
    text = "\n".join(line.rstrip() for line in out.getvalue().splitlines())
    return f"```text\n{text}\n```\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["write"]:
        write()
    elif sys.argv[1:] == ["render"]:
        sys.stdout.write(render())
    elif sys.argv[1:] == ["cost"]:
        sys.stdout.write(cost())
    elif sys.argv[1:] == ["groups"]:
        sys.stdout.write(groups())
    else:
        sys.exit(__doc__)
