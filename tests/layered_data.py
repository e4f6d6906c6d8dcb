"""Builders of layered samples for the tests: assertions with a given pass count, judgments."""

from __future__ import annotations

from typing import Any


def assertions(layer: str, passed: int, total: int, weight: float = 1.0) -> list[dict[str, Any]]:
    kind = "contains" if layer == "fact" else "max_length"
    return [
        {"type": kind, "weight": weight, "passed": i < passed, "name": f"{layer}{i}"}
        for i in range(total)
    ]


def judgments(scores: dict[str, float] | float | None, **extra: Any) -> list[dict[str, Any]]:
    if scores is None:
        return []
    if not isinstance(scores, dict):
        scores = {"j1": scores}
    return [{"judge": name, "score": s, **extra} for name, s in scores.items()]


def row(
    run: str,
    i: int,
    *,
    fact: tuple[int, int] | None = None,
    behavior: tuple[int, int] | None = None,
    judge: dict[str, float] | float | None = None,
    epoch: int = 0,
    task: str = "t",
    **fields: Any,
) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    if fact:
        items += assertions("fact", *fact)
    if behavior:
        items += assertions("behavior", *behavior)
    return {
        "run": run,
        "task": task,
        "sample_id": f"s{i:03d}",
        "epoch": epoch,
        "assertions": items or None,
        "judgments": judgments(judge) or None,
        **fields,
    }
