"""The width cost of the distribution-free (betting) interval against t where both hold: median
width ratio over simulated runs, for one run and for paired differences (docs/statistics.md).

    .venv/bin/python benchmarks/interval_width.py [--reps 200]
"""

from __future__ import annotations

import argparse

import numpy as np

from calipers.stats.estimate import mean_interval, paired_interval


def continuous(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.clip(rng.beta(2, 5, n) + rng.normal(0, 0.1, n), 0, 1)


def judge(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.clip(np.round(rng.normal(3.6, 0.8, n) + rng.normal(0, 0.5, n)), 1, 5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    print("| data | n | betting / t (one run) | betting / t (paired) |")
    print("|---|---|---|---|")
    for name, make, bounds in (("continuous 0–1", continuous, (0.0, 1.0)),
                               ("judge 1–5", judge, (1.0, 5.0))):  # fmt: skip
        for n in (10, 30, 100, 300, 1000):
            rng = np.random.default_rng(n)
            single, paired = [], []
            for _ in range(args.reps):
                x = make(rng, n)
                t = mean_interval(x, method="t")
                b = mean_interval(x, method="betting", bounds=bounds)
                single.append((b.high - b.low) / (t.high - t.low))
                # paired: the same items, each arm with its own noise
                base = make(rng, n)
                c = np.clip(base + rng.normal(0, 0.05 * (bounds[1] - bounds[0]), n), *bounds)
                d = np.clip(base + rng.normal(0, 0.05 * (bounds[1] - bounds[0]), n), *bounds)
                tp = paired_interval(c, d, method="t")
                bp = paired_interval(c, d, method="betting", bounds=bounds)
                paired.append((bp.high - bp.low) / (tp.high - tp.low))
            print(f"| {name} | {n} | {np.median(single):.2f} | {np.median(paired):.2f} |")


if __name__ == "__main__":
    main()
