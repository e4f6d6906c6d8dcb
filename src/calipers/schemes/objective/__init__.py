"""The objective method: an objective / judge / cost composite in [0, 1] per task (`scoring`),
the improved / neutral / regressed comparator with hard regressions and the fail-closed promotion
gate (`verdict`), and its views (`terminal`, `html`)."""

from __future__ import annotations

from calipers.schemes.objective.scheme import (
    ObjectiveCompareOptions,
    ObjectiveOptions,
    ObjectiveScheme,
)
from calipers.schemes.objective.scoring import ObjectiveResult

__all__ = ["ObjectiveCompareOptions", "ObjectiveOptions", "ObjectiveResult", "ObjectiveScheme"]
