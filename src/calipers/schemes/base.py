"""What a scoring scheme is: one declaration that carries everything about it.

A scheme is a `Scheme` subclass. Its class attributes say what it is (name, description, required
fields, direction, the JSON Schema of its report); `Options` is its options as a typed model that
forbids unknown keys; `compute` makes the scores; `terminal` and `html_section` show them; when it
can compare runs, `CompareOptions` is set and `compare` returns a `Comparison` with its own views
and gates. `calipers score`, `compare`, `report` and `leaderboard` are driven by this declaration
and never by a scheme's name, so a scheme from another package (entry-point group
`calipers.schemes`) gets every command the built-in ones get.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from calipers.errors import DataError, InputError
from calipers.render.json_report import REPORT_SCHEMA_VERSION
from calipers.render.notebook import describe_result, result_html
from calipers.stats import DEFAULT_SEED
from calipers.verdicts.base import Comparison

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from calipers.data.sampleset import SampleSet
    from calipers.data.store import Store

SCHEMA_VERSION = REPORT_SCHEMA_VERSION
OptionsT = TypeVar("OptionsT", bound="SchemeOptions")


class SchemeOptions(BaseModel):
    """A scheme's options: typed, frozen, and an unknown key is an error, never ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class BootstrapOptions(SchemeOptions):
    """The interval options every bootstrapping scheme shares."""

    confidence_level: float = Field(default=0.95, gt=0, lt=1)
    n_resamples: int = Field(default=10_000, ge=100)
    seed: int = Field(default=DEFAULT_SEED, ge=0)


def parse_options(
    scheme: str, model: type[OptionsT], given: dict[str, Any], *, what: str = "option"
) -> OptionsT:
    """`given` checked against `model`: an unknown key or a bad value is an `InputError` that names
    the parameter (`error.parameters`), so the command line can name its flag instead."""
    unknown = sorted(set(given) - set(model.model_fields))
    if unknown:
        takes = ", ".join(f"`{name}`" for name in model.model_fields) or "none"
        raise InputError(
            f"the scheme '{scheme}' takes no {what} " + ", ".join(f"`{name}`" for name in unknown),
            hint=f"Its {what}s: {takes}.",
            parameters=unknown,
        )
    try:
        return model.model_validate(given)
    except pydantic.ValidationError as exc:
        names = [str(e["loc"][0]) for e in exc.errors() if e["loc"]]
        problems = "; ".join(
            f"`{'.'.join(str(p) for p in e['loc'])}`: {e['msg']}" for e in exc.errors()
        )
        raise InputError(
            f"the scheme '{scheme}': {problems}", parameters=list(dict.fromkeys(names))
        ) from None


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

    def __repr__(self) -> str:
        return describe_result(self, f"{self.scheme} scores of {self.origin}")

    def _repr_html_(self) -> str:
        return result_html(self, f"{self.scheme} scores")


class Scheme(ABC):
    """A scoring method: the one declaration of everything about it (see the module docstring)."""

    name: ClassVar[str]
    description: ClassVar[str]
    required_fields: ClassVar[tuple[str, ...]]
    higher_is_better: ClassVar[bool] = True
    Options: ClassVar[type[SchemeOptions]] = SchemeOptions
    CompareOptions: ClassVar[type[SchemeOptions] | None] = None  # None: cannot compare runs
    report_schema: ClassVar[str | None] = None  # `calipers schema --report NAME`
    compare_report_schema: ClassVar[str | None] = None
    ranks_runs: ClassVar[bool] = False  # `calipers leaderboard` ranks its runs
    # why `score --tasks` means nothing for this scheme (None: its terminal view shows per-task
    # scores with `detail`, or always does)
    no_tasks: ClassVar[str | None] = None

    # ------------------------------------------------------------------------- scoring

    def options(self, **given: Any) -> SchemeOptions:
        """`given` as this scheme's options (unknown keys and bad values are input errors)."""
        return parse_options(self.name, self.Options, given)

    def score(self, samples: SampleSet, **options: Any) -> SchemeResult:
        """Score every run in `samples`. Options are keyword-only and recorded in the result."""
        return self.compute(samples, self.options(**options))

    def compute(self, samples: SampleSet, options: Any) -> SchemeResult:
        """The scores, from options already checked against `Options`. Every scheme implements
        this (or, as schemes written before `Options` existed, overrides `score`)."""
        raise NotImplementedError(f"the scheme '{self.name}' implements neither compute nor score")

    # ------------------------------------------------------------------------- comparing

    @property
    def comparable(self) -> bool:
        return self.CompareOptions is not None

    def compare(
        self, samples: SampleSet, *, baseline: str, candidates: list[str], **options: Any
    ) -> Comparison:
        """Compare `candidates` with `baseline` (schemes with `CompareOptions` override this)."""
        raise InputError(
            f"the scheme '{self.name}' does not compare runs",
            hint="Schemes that compare: see `calipers schemes`.",
            parameters=["scheme"],
        )

    def compare_options(self, **given: Any) -> SchemeOptions:
        if self.CompareOptions is None:
            raise InputError(
                f"the scheme '{self.name}' does not compare runs",
                hint="Schemes that compare: see `calipers schemes`.",
                parameters=["scheme"],
            )
        return parse_options(self.name, self.CompareOptions, given, what="comparison option")

    # ------------------------------------------------------------------------- views

    def terminal(self, result: Any, console: Console, *, detail: bool = False) -> None:
        """The result in the terminal; by default its run-level frame as a table, and with
        `detail` its task-level frame (a result without one is an error naming --tasks)."""
        from calipers.render.terminal import frame_table, notes

        console.print(frame_table(result.to_frame("run"), title=f"{self.name} scores"))
        if detail:
            try:
                tasks = result.to_frame("task")
            except (InputError, DataError, ValueError) as why:
                raise InputError(
                    f"--tasks: the scheme '{self.name}' has no per-task scores ({why})",
                    parameters=["detail"],
                ) from None
            console.print(frame_table(tasks, title=f"{self.name} scores per task"))
        notes(result.notes, console)

    def leaderboard_terminal(self, result: Any, console: Console) -> None:
        """The result as `calipers leaderboard` shows it (schemes with `ranks_runs`); by default
        its terminal view."""
        self.terminal(result, console)

    def compare_terminal(self, result: Any, console: Console) -> None:
        from calipers.render.terminal import frame_table
        from calipers.render.text import escape

        console.print(f"[bold]{escape(result.verdict_text)}[/]", highlight=False)
        console.print(frame_table(result.to_frame(), title=f"{self.name} comparison"))

    def html_section(self, report: dict[str, Any]) -> dict[str, Any]:
        """The context of this scheme's section on a score page (template `_<kind>.html.j2`);
        by default a table per list or mapping of records in the report."""
        from calipers.render.html import generic_tables

        return {"kind": "generic", "report": report, "plots": {}, "tables": generic_tables(report)}

    def compare_page(self, report: dict[str, Any]) -> str:
        """The HTML page of a comparison's JSON document."""
        from calipers.render.html import generic_page

        return generic_page(report, title=f"{self.name} comparison")

    def report_scorings(self, store: Store, filled: dict[str, dict[str, int]]) -> list[Scoring]:
        """What `calipers report` scores with this scheme: by default one section over the runs
        that fill every required field, with default options."""
        needed = [f for f in self.required_fields if f not in ("run", "task", "sample_id", "epoch")]
        runs = [r for r, fields in filled.items() if all(fields.get(f) for f in needed)]
        why = None if runs else f"no run has {', '.join(needed)}"
        return [Scoring(self.name, runs, {}, why)]

    def report_section(self, result: Any, store: Store) -> dict[str, Any]:
        """A scored section of `calipers report` as its JSON document."""
        return dict(result.to_dict())


@dataclass(frozen=True)
class Scoring:
    """One section of the store report: its key, the runs scored, the options, or why not."""

    key: str
    runs: list[str]
    options: dict[str, Any]
    skipped: str | None = None


class ComparableScheme(Scheme):
    """A scheme whose runs are paired sample by sample: it stages one row per sample with a
    column per component, and the paired engine (`calipers.verdicts`) does the rest."""

    @abstractmethod
    def stage(self, samples: SampleSet, runs: list[str], options: Any) -> Any:
        """Per-sample components of `runs` (a `calipers.verdicts.persample.StagedScores`)."""
