"""ReasonScore: Wilson intervals on guessing-corrected counts per difficulty point, re-aggregated
per task, a geometric mean over tasks per tier, and score/token. `scoring` makes the numbers,
`terminal` and `html` show them, `scheme` declares it."""

from __future__ import annotations

from calipers.schemes.reasonscore.scheme import ReasonScore, ReasonScoreOptions
from calipers.schemes.reasonscore.scoring import ReasonScoreResult

__all__ = ["ReasonScore", "ReasonScoreOptions", "ReasonScoreResult"]
