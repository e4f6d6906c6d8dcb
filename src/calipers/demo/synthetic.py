"""A seeded synthetic evaluation with every field of the sample model, for the demo and benchmarks.

Each run is a simulated model with an ability and a verbosity. A sample is answered right when the
model knows the answer (probability falling with difficulty) or guesses right; verbose models on
hard points hit the context limit more often, and a truncated answer is wrong. Every sample also
carries telemetry, two assertions and two judges' 1–5 scores, so the other schemes have data too.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

DEMO_SEED = 20261122

TASKS: dict[str, float] = {  # task → chance of a right guess (0 for free-form answers)
    "arithmetic": 0.0,
    "boolean": 0.5,
    "brackets": 0.5,
    "cars": 0.25,
    "dates": 0.25,
    "letters": 0.0,
    "movies": 0.25,
    "objects": 0.0,
    "sequence": 0.0,
    "shapes": 0.25,
    "shuffle": 0.2,
    "sort": 0.0,
}
TIERS: dict[str, tuple[str, ...]] = {  # tier → difficulty points
    "easy": ("length=8,depth=1", "length=16,depth=1"),
    "medium": ("length=16,depth=2", "length=24,depth=2", "length=32,depth=2"),
    "hard": ("length=32,depth=3", "length=48,depth=3", "length=64,depth=4"),
}
CONTEXT_LIMIT = 8192


@dataclass(frozen=True)
class SimulatedModel:
    name: str
    ability: float  # logit of knowing the answer at difficulty 0
    verbosity: float  # mean output tokens at difficulty 0
    cost_per_1k_tokens: float


DEMO_MODELS = (
    SimulatedModel("atlas-large", ability=3.2, verbosity=1400.0, cost_per_1k_tokens=0.015),
    SimulatedModel("atlas-small", ability=2.1, verbosity=700.0, cost_per_1k_tokens=0.002),
    SimulatedModel("borealis-think", ability=3.6, verbosity=1900.0, cost_per_1k_tokens=0.010),
    SimulatedModel("cirrus-mini", ability=1.2, verbosity=500.0, cost_per_1k_tokens=0.0005),
)


def _difficulty(tier: str, point: str, task: str) -> float:
    params = dict(kv.split("=") for kv in point.split(","))
    base = {"easy": 0.0, "medium": 1.0, "hard": 2.2}[tier]
    task_offset = (sum(map(ord, task)) % 7) / 10.0
    return base + int(params["length"]) / 64.0 + 0.3 * int(params["depth"]) + task_offset


def generate_samples(
    *,
    seed: int = DEMO_SEED,
    models: tuple[SimulatedModel, ...] = DEMO_MODELS,
    samples_per_point: int = 16,
    epochs: int = 2,
) -> Iterator[dict[str, Any]]:
    """Yield sample dicts (one JSON Lines object each) in a deterministic order."""
    rng = np.random.default_rng(seed)
    for model in models:
        for tier, points in TIERS.items():
            for task, guess in TASKS.items():
                for point in points:
                    d = _difficulty(tier, point, task)
                    p_know = 1.0 / (1.0 + math.exp(-(model.ability - d)))
                    for i in range(samples_per_point):
                        sample_id = f"{tier}/{task}/{point}/{i}"
                        for epoch in range(epochs):
                            yield _sample(
                                rng, model, tier, task, point, sample_id, epoch, guess, p_know, d
                            )


def _sample(
    rng: np.random.Generator,
    model: SimulatedModel,
    tier: str,
    task: str,
    point: str,
    sample_id: str,
    epoch: int,
    guess: float,
    p_know: float,
    difficulty: float,
) -> dict[str, Any]:
    tokens_out = int(rng.lognormal(math.log(model.verbosity * (1 + difficulty / 2)), 0.35))
    truncated = tokens_out >= CONTEXT_LIMIT
    tokens_out = min(tokens_out, CONTEXT_LIMIT)
    knows = rng.random() < p_know
    correct = bool(not truncated and (knows or rng.random() < guess))
    tokens_in = int(300 + 40 * difficulty + rng.integers(0, 60))
    answer = "42" if correct else "41"
    judge_mean = 1.5 + 3.0 * p_know + (0.4 if correct else -0.6)
    judgments = [
        {
            "judge": judge,
            "dimension": None,
            "score": float(np.clip(round(judge_mean + rng.normal(0, sd)), 1, 5)),
            "scale_min": 1.0,
            "scale_max": 5.0,
            "rationale": "synthetic judgment",
        }
        for judge, sd in (("judge-a", 0.5), ("judge-b", 0.8))
    ]
    return {
        "run": model.name,
        "task": task,
        "sample_id": sample_id,
        "epoch": epoch,
        "tier": tier,
        "point": point,
        "correct": correct,
        "guess_chance": guess,
        "truncated": truncated,
        "output": f"… the answer is {answer}",
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost_usd": round((tokens_in + tokens_out) / 1000 * model.cost_per_1k_tokens, 6),
        "latency_s": round(0.2 + tokens_out / 90.0 * float(rng.uniform(0.8, 1.2)), 3),
        "tool_calls": int(rng.poisson(0.5)),
        "steps": 1 + int(rng.poisson(0.3)),
        "assertions": [
            {
                "name": "has answer",
                "type": "contains",
                "layer": "fact",
                "weight": 2.0,
                "value": "42",
                "passed": correct,
            },
            {
                "name": "within budget",
                "type": "max_length",
                "layer": "behavior",
                "weight": 1.0,
                "value": 4 * 4096,
                "passed": not truncated,
            },
        ],
        "judgments": judgments,
        "scores": {"accuracy": float(correct)},
    }


def write_jsonl(path: Path, samples: Iterator[dict[str, Any]]) -> int:
    """Write samples as JSON Lines atomically (temp file, then rename); return the count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    n = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for sample in samples:
                fh.write(json.dumps(sample, separators=(",", ":")))
                fh.write("\n")
                n += 1
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n
