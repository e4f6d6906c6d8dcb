"""Generate N samples with every field of the model, two assertions and two judgments each.

    python benchmarks/gen_samples.py --n 1000000 --out benchmarks/data/samples_1m.jsonl

1,000,000 samples make about 500 MB of JSON Lines. Seeded, so every run writes the same file.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

TASKS = [f"task{i:02d}" for i in range(12)]
TIERS = ["easy", "medium", "hard"]
RUNS = ["model-a", "model-b", "model-c", "model-d"]


def generate(n: int, out: Path, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    block = 100_000
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for start in range(0, n, block):
            m = min(block, n - start)
            correct = rng.random(m) < 0.7
            guess = rng.choice([0.0, 0.25, 0.5], m)
            trunc = rng.random(m) < 0.03
            tok_in = rng.integers(100, 2000, m)
            tok_out = rng.integers(50, 4000, m)
            j1 = rng.integers(1, 6, m)
            j2 = rng.integers(1, 6, m)
            lat = rng.gamma(2.0, 1.5, m)
            lines = []
            for i in range(m):
                k = start + i
                run = RUNS[k % 4]
                sid = k // 4
                tier = TIERS[sid % 3]
                rec = {
                    "run": run,
                    "task": TASKS[(sid // 3) % 12],
                    "sample_id": f"s{sid}",
                    "epoch": 0,
                    "tier": tier,
                    "point": f"length={8 * (1 + sid % 4)}",
                    "correct": bool(correct[i]),
                    "guess_chance": float(guess[i]),
                    "truncated": bool(trunc[i]),
                    "output": "The answer is 42 because the premises imply it.",
                    "decision": {"label": "approve" if correct[i] else "reject"},
                    "perturbation": "baseline",
                    "perturbation_of": None,
                    "tokens_in": int(tok_in[i]),
                    "tokens_out": int(tok_out[i]),
                    "cost_usd": round(float(tok_out[i]) * 2e-6, 6),
                    "latency_s": round(float(lat[i]), 3),
                    "tool_calls": int(k % 3),
                    "steps": 1 + int(k % 2),
                    "error": None,
                    "assertions": [
                        {
                            "name": "mentions 42",
                            "type": "contains",
                            "layer": "fact",
                            "weight": 2.0,
                            "value": "42",
                            "passed": bool(correct[i]),
                        },
                        {
                            "name": "short",
                            "type": "max_length",
                            "layer": "behavior",
                            "weight": 1.0,
                            "value": 4000,
                            "passed": not bool(trunc[i]),
                        },
                    ],
                    "judgments": [
                        {
                            "judge": "judge-a",
                            "dimension": None,
                            "score": float(j1[i]),
                            "scale_min": 1.0,
                            "scale_max": 5.0,
                            "rationale": "clear and correct",
                        },
                        {
                            "judge": "judge-b",
                            "dimension": None,
                            "score": float(j2[i]),
                            "scale_min": 1.0,
                            "scale_max": 5.0,
                            "rationale": "mostly right",
                        },
                    ],
                    "human": [{"dimension": None, "score": float(j1[i])}],
                    "scores": {"accuracy": float(correct[i]), "f1": round(float(lat[i]) % 1, 3)},
                }
                lines.append(json.dumps(rec, separators=(",", ":")))
            fh.write("\n".join(lines) + "\n")
    tmp.replace(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/data/samples_1m.jsonl"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    generate(args.n, args.out, args.seed)
    size = args.out.stat().st_size / 1e6
    print(
        f"{args.n:,} samples, {size:.0f} MB → {args.out} in {time.perf_counter() - started:.1f} s"
    )


if __name__ == "__main__":
    main()
