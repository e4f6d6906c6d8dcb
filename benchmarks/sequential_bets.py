"""Which bets should the sequential engine's betting e-process place? (issue 36; docs/sequential.md)

On the sequential grid's models (`calipers.calibration.sequential`), paired runs at twice the
fixed-N MDE and under the null, the e-process of the gains at 0 for each bet schedule, and the
discordant-pairs mixture on pass/fail: the mean unit at which "gain > 0" is shown (N when it is
not shown by N) and the false rejections under the null, at α = 0.05 (a pure sequence) and
α = 0.01 (the hybrid's share).

    .venv/bin/python benchmarks/sequential_bets.py [--reps 2000]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from _machine import RESULTS, machine
from calipers.calibration import sequential as grid
from calipers.stats.sequential import (
    HORIZON_MIXTURE,
    discordant_log_evalues,
    log_capital_paths,
)

CELLS = [
    grid.SeqCell("pass-0.50/N1300", "pass-0.50", 1300),
    grid.SeqCell("rare/N3000", "rare", 3000),
    grid.SeqCell("continuous/N1000", "continuous", 1000),
    grid.SeqCell("continuous/N1000/e5", "continuous", 1000, epochs=5),
]


def schedules(n: int) -> dict[str, tuple[object, float]]:
    """name → (horizon, truncation)."""
    return {
        "Theorem 3": (None, 0.9),
        "tuned at N/2, c 0.75": (n // 2, 0.75),
        "tuned at N/2": (n // 2, 0.9),
        "mixture (no N)": (HORIZON_MIXTURE, 0.9),
    }


def stops(log_k: np.ndarray, threshold: float, n: int) -> np.ndarray:
    hit = log_k >= threshold
    return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, n).astype(float)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=36)
    args = parser.parse_args()
    rows = []
    for cell in CELLS:
        effect = grid.mde(cell, args.seed)
        shift = grid._shift(cell.model, 2 * effect)
        assert shift is not None
        _, bounds, binary = grid._model(cell.model)
        span = bounds[1] - bounds[0]
        for phase, s in (("twice", shift), ("null", 0.0)):
            rng = np.random.default_rng([args.seed, cell.key, int(phase == "null")])
            draw = grid.simulate(cell, [0.0, s], args.reps, rng)
            gains = draw.arms[1] - draw.arms[0]
            z = (gains + span) / (2 * span)
            for alpha in (0.05, 0.01):
                threshold = math.log(2 / alpha)
                found: dict[str, np.ndarray] = {}
                for name, (horizon, c) in schedules(cell.n).items():
                    up, _ = log_capital_paths(z, 0.5, alpha=alpha, truncation=c, horizon=horizon)  # type: ignore[arg-type]
                    found[name] = stops(up, threshold, cell.n)
                if binary and cell.epochs == 1:
                    b = np.cumsum(gains > 0, axis=1)
                    c_ = np.cumsum(gains < 0, axis=1)
                    up, _ = discordant_log_evalues(b, c_)
                    found["discordant pairs (KT)"] = stops(up, threshold, cell.n)
                for name, n_stop in found.items():
                    row = {
                        "cell": cell.id, "phase": phase, "alpha": alpha, "bets": name,
                        "shown": float(np.mean(n_stop < cell.n)),
                        "mean_n": float(np.mean(n_stop) / cell.n),
                    }  # fmt: skip
                    rows.append(row)
                    print(
                        f"{cell.id:22s} {phase:5s} α={alpha:<5g} {name:24s} "
                        f"shown {row['shown']:.3f}  mean n/N {row['mean_n']:.3f}"
                    )
    out = RESULTS / "sequential_bets.json"
    body = {"machine": machine(), "reps": args.reps, "seed": args.seed, "rows": rows}
    out.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
