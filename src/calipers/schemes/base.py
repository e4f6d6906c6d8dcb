"""What every scoring scheme is: a name, the fields it needs, a direction, and a result that
records how it was made."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from calipers.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from calipers.data.source import SampleSet
    from calipers.schemes.persample import StagedScores

SCHEMA_VERSION = "1"


@dataclass
class SchemeResult(ABC):
    """Scores at sample, task and run level, with the parameters and notes that made them."""

    scheme: str
    parameters: dict[str, Any]
    origin: str
    notes: list[str] = field(default_factory=list)

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The JSON report body (plain types only; NaN is never emitted, missing is null)."""

    @abstractmethod
    def to_frame(self, level: str = "task") -> pd.DataFrame:
        """One row per entity at `level` (each scheme documents its levels)."""

    def header(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "scheme": self.scheme,
            "parameters": self.parameters,
            "source": self.origin,
            "notes": list(self.notes),
        }


class Scheme(ABC):
    """A scoring method. Subclasses set the class attributes and implement `score`."""

    name: ClassVar[str]
    description: ClassVar[str]
    required_fields: ClassVar[tuple[str, ...]]
    higher_is_better: ClassVar[bool] = True

    @abstractmethod
    def score(self, samples: SampleSet, **options: Any) -> SchemeResult:
        """Score every run in `samples`. Options are keyword-only and recorded in the result."""


def reject_options(scheme: str, options: dict[str, Any]) -> None:
    """Unknown options are typos, never silently ignored."""
    if options:
        raise InputError(f"scheme '{scheme}' takes no option(s) {', '.join(sorted(options))}")


class ComparableScheme(Scheme):
    """A scheme whose runs can be paired sample by sample (`calipers compare`): it stages one row
    per sample with a column per component, and the shared engine does the rest."""

    @abstractmethod
    def stage(self, samples: SampleSet, runs: list[str], **options: Any) -> StagedScores:
        """Per-sample components of `runs` (options are the scheme's own, e.g. weights)."""
