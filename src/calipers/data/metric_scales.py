"""The declared scales of metrics: where a metric's bounds come from, never from its values.

A metric's bounds decide its distribution-free interval (`calipers.stats.betting`), the trivial
difference and the smallest effect worth detecting (fractions of the scale's width), and margins
given in %. They are declared, in this order of precedence: by the user (`--bounds LOW,HIGH`;
`bounds=` in Python), by the harness that wrote the metric (the names below: proportions in every
harness calipers imports), or by the data's kind (every value 0 or 1: a pass/fail outcome).
Otherwise the metric is unbounded: no betting interval, and no scale read from the observed range —
one outlier would set it (a lognormal metric's range of 33.8 made the "trivial" difference 0.85
and turned 86% of real gains into CAUTIOUS, issue 33).
"""

from __future__ import annotations

import math

from calipers.errors import InputError

# Per-sample metrics that are proportions in [0, 1] wherever they come from: inspect_ai scorers
# (C/I/P values mapped to 1/0/0.5: `match`, `includes`, `choice`, `model_graded_*`, `accuracy`),
# lm-evaluation-harness (`acc`, `acc_norm`, `exact_match`, `f1`, `mcc`…), promptfoo (assertion
# scores are 0–1), lighteval, HELM, NeMo Evaluator, OpenAI evals, DeepEval and Phoenix (scores 0–1).
PROPORTIONS = frozenset(
    {
        "accuracy", "acc", "acc_norm", "acc_mutual_info", "exact_match", "em", "exact",
        "quasi_exact_match", "prefix_exact_match", "f1", "f1_score", "precision", "recall",
        "correct", "pass", "passed", "pass@1", "match", "includes", "choice", "contains",
        "model_graded_qa", "model_graded_fact", "success", "resolved",
    }
)  # fmt: skip


def parse_bounds(
    value: str | tuple[float, float] | list[float] | None,
) -> tuple[float, float] | None:
    """`"0,20"`, (0, 20) or [0, 20] → (0.0, 20.0); None → None. An error names the fix."""
    if value is None:
        return None
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        try:
            numbers = [float(p) for p in parts]
        except ValueError:
            numbers = []
    else:
        numbers = [float(v) for v in value]
    if len(numbers) != 2 or not all(math.isfinite(v) for v in numbers) or numbers[0] >= numbers[1]:
        raise InputError(
            f"bounds must be two finite numbers LOW,HIGH with LOW < HIGH, got {value!r}",
            hint="For example --bounds 0,1 for a proportion, --bounds 1,10 for a 1–10 scale.",
            parameters=["bounds"],
        )
    return numbers[0], numbers[1]


def declared_bounds(
    metric: str, given: tuple[float, float] | None, *, all_binary: bool
) -> tuple[tuple[float, float] | None, str]:
    """The metric's bounds and where they came from, in the user's words."""
    if given is not None:
        return given, f"declared: --bounds {given[0]:g},{given[1]:g}"
    if metric in PROPORTIONS or metric.lower() in PROPORTIONS:
        return (0.0, 1.0), f"'{metric}' is a proportion (0–1) in the harnesses that report it"
    if all_binary:
        return (0.0, 1.0), f"every value of '{metric}' is 0 or 1: a pass/fail outcome"
    return None, (
        f"no bounds are declared for '{metric}': it is treated as unbounded and no scale is read "
        "from its values (declare them with --bounds LOW,HIGH)"
    )
