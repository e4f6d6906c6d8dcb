"""Does the planned n deliver the promised power when the effect is concentrated on a share of the
items? (issue 33, point 6; `calipers plan --effect-share`, docs/decisions.md).

Each case measures the design on a simulated A/A pilot (as `calipers plan FILE --baseline A
--candidate B` does), plans n for 80% power at an effect δ — spread over items (the default) and
with `effect_share=S` — then runs experiments at each planned n with the effect realised on a
random share S of the items, each moved by δ/S, and counts how often the engine's paired interval
(`paired_interval`, method auto) lies above 0.

    .venv/bin/python benchmarks/plan_effect_share.py [--reps 2000]
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np

from calipers.stats.estimate import paired_interval
from calipers.stats.interval_parts import NoInterval
from calipers.verdicts.planning import Design, Goal, plan

PILOT = 4000


@dataclass(frozen=True)
class Case:
    name: str
    binary: bool
    sd: float  # scores: the SD of one item's difference; 0/1: unused
    pass_rate: float  # 0/1: the baseline's mean pass rate (items' p spread logit-normally)
    effect: float
    share: float
    groups: int = 1  # items per group (1: none)
    group_sd: float = 0.0  # scores: SD of a group's shared difference


CASES = [
    Case("scores, sd 0.1, +0.03 on 10%", False, 0.1, 0.0, 0.03, 0.1),
    Case("scores, sd 0.02, +0.02 on 5%", False, 0.02, 0.0, 0.02, 0.05),
    Case("scores, sd 0.1, +0.05 on 25%", False, 0.1, 0.0, 0.05, 0.25),
    Case("scores in groups of 5, +0.03 on 10%", False, 0.1, 0.0, 0.03, 0.1, 5, 0.05),
    Case("pass/fail at 0.7, +0.05 on 10%", True, 0.0, 0.7, 0.05, 0.1),
    Case("pass/fail at 0.5, +0.1 on 20%", True, 0.0, 0.5, 0.1, 0.2),
]


def pilot_design(case: Case, rng: np.random.Generator) -> Design:
    """The variance of an item's difference (and its groups') on an A/A pilot, as
    `Design.from_runs` measures it, with the discordance for 0/1 outcomes."""
    c, t = draw(case, PILOT, 0.0, rng)
    d = t - c
    if case.binary:
        return Design("binary", item_var=float(np.var(d, ddof=1)), pass_rate=float(c.mean()),
                      discordance=float(np.mean(d != 0)), observed_units=PILOT)  # fmt: skip
    if case.groups == 1:
        return Design("scores", item_var=float(np.var(d, ddof=1)), observed_units=PILOT)
    g = d.reshape(-1, case.groups)
    within = float(np.mean(np.var(g, axis=1, ddof=1)))
    between = max(0.0, float(np.var(g.mean(axis=1), ddof=1)) - within / case.groups)
    return Design("scores", item_var=within, group_var=between, cluster_size=case.groups,
                  observed_units=PILOT // case.groups)  # fmt: skip


def draw(case: Case, items: int, delta: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Control and treatment values of `items` items; the effect δ on a random share S of them
    (of the groups, when grouped), each moved by δ/S."""
    units = items // case.groups
    hit = np.repeat(rng.random(units) < case.share, case.groups) if delta else np.zeros(items, bool)
    h = delta / case.share
    if case.binary:
        logit = math.log(case.pass_rate / (1 - case.pass_rate)) + rng.normal(0, 1.0, items)
        p = 1 / (1 + np.exp(-logit))
        # a gain lands on the items the baseline does worst on (the planner's assumption): the
        # share S of items with the lowest p, each moved by h (capped at 1)
        q = p.copy()
        if delta:
            worst = np.argsort(p)[: round(case.share * items)]
            q[worst] = np.minimum(1.0, p[worst] + h)
        c = (rng.random(items) < p).astype(float)
        t = (rng.random(items) < q).astype(float)
        return c, t
    base = rng.normal(0.5, 0.1, items)
    shared = np.repeat(rng.normal(0, case.group_sd, units), case.groups)
    noise = rng.normal(0, case.sd / math.sqrt(2), (2, items))
    return base + noise[0], base + noise[1] + shared + np.where(hit, h, 0.0)


def achieved(
    case: Case, items: int, reps: int, rng: np.random.Generator, method: str = "auto"
) -> float:
    hits = 0
    clusters = np.repeat(np.arange(items // case.groups), case.groups)
    for _ in range(reps):
        c, t = draw(case, items, case.effect, rng)
        try:
            i = paired_interval(c, t, clusters=clusters if case.groups > 1 else None,
                                method=method, rng=0)  # fmt: skip
        except NoInterval:
            continue
        hits += i.low > 0
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--method", default="auto", help="the engine's interval (auto, t, …)")
    args = parser.parse_args()
    rng = np.random.default_rng(20240917)
    print("case | plan | items | promised | achieved")
    for case in CASES:
        design = pilot_design(case, rng)
        goal = Goal(effect=case.effect)
        for label, share in (("spread", None), (f"share {case.share:g}", case.share)):
            planned = plan(design, goal, effect_share=share)
            assert planned.items is not None and planned.power is not None
            power = achieved(case, planned.items, args.reps, rng, args.method)
            print(f"{case.name} | {label} | {planned.items} | {planned.power:.3f} | {power:.3f}")


if __name__ == "__main__":
    main()
