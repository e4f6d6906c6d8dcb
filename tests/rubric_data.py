"""Builders for rubric samples: seven dimension judgments, optional flags and bonuses."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from calipers.schemes.rubric.definition import DIMENSIONS, load_rubric
from calipers.schemes.rubric.scoring import Evaluation, evaluate


def judgments(
    scores: dict[str, float] | float,
    *,
    judge: str = "j",
    red_flags: list[str] | None = None,
    bonuses: list[str] | None = None,
) -> list[dict[str, Any]]:
    values = scores if isinstance(scores, dict) else dict.fromkeys(DIMENSIONS, scores)
    out: list[dict[str, Any]] = [
        {"judge": judge, "dimension": d, "score": values[d]} for d in DIMENSIONS
    ]
    out[0]["red_flags"] = red_flags
    out[0]["bonuses"] = bonuses
    return out


def rubric_row(
    run: str,
    sample_id: str,
    scores: dict[str, float] | float,
    *,
    task: str = "skill",
    epoch: int = 0,
    red_flags: list[str] | None = None,
    bonuses: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "run": run,
        "task": task,
        "sample_id": sample_id,
        "epoch": epoch,
        "judgments": judgments(scores, red_flags=red_flags, bonuses=bonuses),
    }


def evaluation(
    dims: dict[str, str] | str,
    *,
    red_flags: int = 0,
    bonuses: int = 0,
    key: tuple[str, str, str, int] = ("r", "t", "s", 0),
) -> Evaluation:
    """An evaluation straight through the scoring pipeline with the default rubric."""
    values = dims if isinstance(dims, dict) else dict.fromkeys(DIMENSIONS, dims)
    return evaluate(
        key,
        {d: Decimal(values[d]) for d in DIMENSIONS},
        [f"flag{i}" for i in range(red_flags)],
        [f"bonus{i}" for i in range(bonuses)],
        load_rubric().base,
    )
