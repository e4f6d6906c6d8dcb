"""Rubric files (seed 001): the seven dimensions' weights, red flags and bonuses, optionally per
domain. YAML or JSON; the default rubric ships in the package.

    name: code-review
    weights: {correctness: 0.3, completeness: 0.2, adherence: 0.15, actionability: 0.15,
              efficiency: 0.05, safety: 0.1, consistency: 0.05}
    red_flags: [{id: invented_api, description: Calls an API that does not exist}]
    bonuses: [{id: adds_tests, description: Adds tests for the change}]
    domains:
      python:                       # applies to the tasks listed (or to a task named "python")
        tasks: [review-py, refactor-py]
        weights: {...}              # replaces the rubric's weights for these tasks
        red_flags: [...]            # added to the rubric's own
        bonuses: [...]
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from calipers.data import configfile
from calipers.data.configfile import StrictModel
from calipers.errors import InputError

DIMENSIONS = (
    "correctness",
    "completeness",
    "adherence",
    "actionability",
    "efficiency",
    "safety",
    "consistency",
)
DEFAULT_WEIGHTS = {
    "correctness": Decimal("0.25"),
    "completeness": Decimal("0.20"),
    "adherence": Decimal("0.15"),
    "actionability": Decimal("0.15"),
    "efficiency": Decimal("0.10"),
    "safety": Decimal("0.10"),
    "consistency": Decimal("0.05"),
}
WEIGHT_TOLERANCE = Decimal("1e-9")


class _Item(StrictModel):
    id: str = Field(min_length=1)
    description: str = ""


class _Domain(StrictModel):
    tasks: list[str] = Field(default_factory=list)
    weights: dict[str, float] | None = None
    red_flags: list[_Item] = Field(default_factory=list)
    bonuses: list[_Item] = Field(default_factory=list)


class _RubricModel(StrictModel):
    name: str = "rubric"
    weights: dict[str, float] | None = None
    red_flags: list[_Item] = Field(default_factory=list)
    bonuses: list[_Item] = Field(default_factory=list)
    domains: dict[str, _Domain] = Field(default_factory=dict)

    @field_validator("weights")
    @classmethod
    def _finite(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        for name, w in (value or {}).items():
            if not (w == w and abs(w) != float("inf")) or w < 0:
                raise ValueError(f"weight {name}={w} must be a finite number ≥ 0")
        return value


@dataclass(frozen=True)
class RubricRules:
    """What applies to one task: weights (Decimal, summing to 1) and the listed flags/bonuses."""

    weights: dict[str, Decimal]
    red_flags: dict[str, str]  # id → description; empty: any id counts
    bonuses: dict[str, str]
    domain: str | None


@dataclass(frozen=True)
class Rubric:
    name: str
    origin: str  # the file, or "default"
    sha256: str
    base: RubricRules
    domains: dict[str, tuple[tuple[str, ...], RubricRules]]

    def rules_for(self, task: str) -> RubricRules:
        """The domain whose `tasks` list the task (or that is named after it), else the base."""
        for name, (tasks, rules) in self.domains.items():
            if task in tasks or task == name:
                return rules
        return self.base

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.origin,
            "sha256": self.sha256,
            "weights": {k: float(v) for k, v in self.base.weights.items()},
            "red_flags": self.base.red_flags,
            "bonuses": self.base.bonuses,
            "domains": {
                name: {
                    "tasks": list(tasks),
                    "weights": {k: float(v) for k, v in rules.weights.items()},
                    "red_flags": rules.red_flags,
                    "bonuses": rules.bonuses,
                }
                for name, (tasks, rules) in self.domains.items()
            },
        }


def _weights(raw: dict[str, float] | None, where: str) -> dict[str, Decimal]:
    if raw is None:
        return dict(DEFAULT_WEIGHTS)
    unknown = sorted(set(raw) - set(DIMENSIONS))
    if unknown:
        raise InputError(
            f"{where}: unknown dimension(s) {', '.join(unknown)}",
            hint=f"The dimensions are {', '.join(DIMENSIONS)}.",
        )
    missing = [d for d in DIMENSIONS if d not in raw]
    if missing:
        raise InputError(
            f"{where}: custom weights must give every dimension; missing {', '.join(missing)}",
            hint="List all seven weights so that they sum to 1.",
        )
    # repr() keeps the decimal the user wrote (0.1 stays 0.1, not its binary expansion).
    weights = {d: Decimal(repr(float(raw[d]))) for d in DIMENSIONS}
    total = sum(weights.values(), Decimal(0))
    if abs(total - 1) > WEIGHT_TOLERANCE:
        listed = ", ".join(f"{d}={weights[d]}" for d in DIMENSIONS)
        raise InputError(
            f"{where}: custom weights sum to {total}, not 1 ({listed})",
            hint="Custom weights must sum to 1 (100%) within 1e-9.",
        )
    return weights


def _items(items: list[_Item]) -> dict[str, str]:
    return {item.id: item.description for item in items}


def parse_rubric(
    data: Any, origin: str, digest: str, doc: configfile.Document | None = None
) -> Rubric:
    """The rubric of `data` (read from `origin`; `doc` gives the lines of its keys)."""
    try:
        model = _RubricModel.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise configfile.invalid(
            exc,
            doc or configfile.Document(origin, data),
            hint="See docs/rubric.md for the rubric file format (a weight is a number, not text).",
        ) from None
    base = RubricRules(
        _weights(model.weights, f"{origin}: weights"),
        _items(model.red_flags),
        _items(model.bonuses),
        None,
    )
    domains = {}
    for name, domain in model.domains.items():
        weights = (
            _weights(domain.weights, f"{origin}: domains.{name}.weights")
            if domain.weights is not None
            else base.weights
        )
        rules = RubricRules(
            weights,
            base.red_flags | _items(domain.red_flags),
            base.bonuses | _items(domain.bonuses),
            name,
        )
        domains[name] = (tuple(domain.tasks), rules)
    return Rubric(model.name, origin, digest, base, domains)


def load_rubric(path: str | Path | None = None) -> Rubric:
    """The rubric in `path` (YAML or JSON), or the packaged default when None."""
    if path is None:
        text = (
            resources.files("calipers.schemes.rubric.rubrics").joinpath("default.yaml").read_text()
        )
        origin = "default"
    else:
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f"rubric file not found: {file}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read rubric file {file}: {exc}") from None
        origin = str(file)
    doc = configfile.parse(text, origin, json=origin.endswith(".json"))
    data = doc.data
    if data is not None and not isinstance(data, dict):
        raise InputError(f"{origin}: a rubric file holds a mapping (name, weights, red_flags, …)")
    return parse_rubric(data, origin, hashlib.sha256(text.encode()).hexdigest(), doc)
