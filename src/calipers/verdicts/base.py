"""What every comparison returns, whichever scheme made it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from calipers.render.notebook import describe_result, result_html

if TYPE_CHECKING:
    import pandas as pd


class Comparison(ABC):
    """What a scheme's `compare` returns: a verdict, its reason, the JSON document, a frame, and
    whether it passes a gate."""

    scheme: str
    reason: str
    gates: ClassVar[tuple[str, ...]] = ("no-regress", "ship", "none")

    @abstractmethod
    def to_dict(self) -> dict[str, Any]: ...

    @abstractmethod
    def to_frame(self, level: str = "pair") -> pd.DataFrame: ...

    @abstractmethod
    def gate_failure(self, gate: str) -> str | None:
        """Why the result fails `gate` (one of `gates`), or None when it passes."""

    @property
    @abstractmethod
    def verdict_text(self) -> str: ...

    def __repr__(self) -> str:
        return describe_result(self, f"{self.scheme} comparison: {self.verdict_text}")

    def _repr_html_(self) -> str:
        return result_html(self, f"{self.scheme} comparison: {self.verdict_text}")
