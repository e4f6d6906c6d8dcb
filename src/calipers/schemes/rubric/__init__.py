"""The rubric method, all of it: the rubric file (`definition`), scoring in decimal arithmetic with
grades, red flags and bonuses (`scoring`), the history kept in the store with its 2 SD flags
(`history`), ranking with tie-breaks (`rank`), and its views (`terminal`, `html`)."""

from __future__ import annotations

from calipers.schemes.rubric.scheme import RubricOptions, RubricScheme
from calipers.schemes.rubric.scoring import RubricResult

__all__ = ["RubricOptions", "RubricResult", "RubricScheme"]
