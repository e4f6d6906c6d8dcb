"""The worked example of docs/rankings.md: rank intervals for a leaderboard of means, and a
position-biased pairwise judge ranked by Bradley–Terry from one order and from both.

    python docs/examples/rankings_example.py   # prints the doc's output, from the code

tests/test_docs_rankings.py checks that the doc shows exactly what this prints.
"""

from __future__ import annotations

import hashlib
import io

import numpy as np

RUNS = {"alpha": 0.30, "bravo": 0.45, "charlie": 0.60, "delta": 0.75}  # true quality
BIAS = 0.7  # the judge picks the output shown first this often, regardless


def leaderboard() -> dict[str, np.ndarray]:
    """Six runs answering the same 400 items right or wrong, two pairs of them nearly equal."""
    rng = np.random.default_rng(3)
    difficulty = rng.normal(0, 1.2, 400)
    effects = {"m1": 1.5, "m2": 0.75, "m3": 0.7, "m4": 0.0, "m5": -0.75, "m6": -0.8}
    return {
        run: (rng.random(400) < 1 / (1 + np.exp(-(difficulty + b)))).astype(float)
        for run, b in effects.items()
    }


def _uniform(*parts: object) -> float:
    text = "\x00".join(map(str, parts))
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16**12


def biased_pairs(n: int = 100) -> list:  # type: ignore[type-arg]
    """What `calipers grade --pairwise` stores for four runs judged on n shared samples by a
    judge that answers "1" (the output shown first) 70% of the time and otherwise names the
    better output."""
    from calipers.grading.pairwise import PairVerdict, verdict

    rng = np.random.default_rng(5)
    quality = {run: q + rng.normal(0, 0.15, n) for run, q in RUNS.items()}
    names = sorted(RUNS)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for s in range(n):
                said = {}
                for order, first, second in (("ab", a, b), ("ba", b, a)):
                    if _uniform(order, a, b, s) < BIAS:
                        preference = 1.0
                    else:
                        preference = float(quality[first][s] > quality[second][s])
                    said[order] = verdict(preference, order)
                rows.append(PairVerdict("biased", a, b, "write", f"s{s:02d}", 0, 0,
                                        said["ab"], said["ba"]))  # fmt: skip
    return rows


def render() -> str:
    from rich.console import Console

    from calipers.grading.pairwise import ranking_report
    from calipers.report.pairwise import judges_table, strengths_table
    from calipers.stats.rankings import paired_mean_draws, rank_intervals

    console = Console(width=100, record=True, no_color=True, file=io.StringIO())
    console.print("Leaderboard: six runs, 400 shared items, accuracy (10,000 resamples, seed 7)")
    estimates, draws, _ = paired_mean_draws(leaderboard(), n_resamples=10_000, rng=7)
    marginal = rank_intervals(estimates, draws)
    joint = rank_intervals(estimates, draws, method="simultaneous").by_run()
    console.print("run  accuracy  rank  marginal  simultaneous  group")
    for r in marginal.runs:
        j = joint[r.run]
        console.print(
            f"{r.run:<4} {r.estimate:>8.3f} {r.rank:>5}  {r.low}–{r.high:<6}  "
            f"{j.low}–{j.high:<10}  {r.group:>5}",
            highlight=False,
        )
    console.print("tie groups: " + " | ".join(", ".join(g) for g in marginal.groups))
    console.print()

    rows = biased_pairs()
    both = ranking_report(rows, source="example", n_resamples=10_000, seed=7)
    single = ranking_report(rows, source="example", orders="ab", n_resamples=10_000, seed=7)
    console.print("Pairwise: four runs, 100 shared samples, a judge that prefers the first shown")
    judges_table(both["judges"], console)
    console.print()
    console.print("Bradley–Terry over both orders (a flip counts as a tie):")
    strengths_table(both["bradley_terry"], console)
    console.print()
    truth = sorted(RUNS, key=RUNS.__getitem__, reverse=True)
    console.print("truth:                 " + " > ".join(truth))
    for label, report in (("both orders:", both), ("one order (a first):", single)):
        order = [r["run"] for r in report["bradley_terry"]["runs"]]
        console.print(f"{label:<22} " + " > ".join(order))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    return "```text\n" + "\n".join(lines) + "\n```\n"


if __name__ == "__main__":
    print(render(), end="")
