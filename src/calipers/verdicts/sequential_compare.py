"""What `calipers watch` (and `compare --sequential`) return: the sequential decision of each pair
with what was compared, how the units were ordered, and whether it passes a gate.

The decisions are `calipers.verdicts.sequential`'s; this module adds the comparison's context
(scheme, metric, source, order and its seed, the unit) so that one JSON document says how the
verdict was made, and a result object with the same surface as a fixed-n comparison
(`verdict_text`, `reason`, `to_dict`, `to_frame`, `gate_failure`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from calipers.errors import InputError
from calipers.verdicts.base import Comparison
from calipers.verdicts.sequential import SequentialResult

if TYPE_CHECKING:
    import pandas as pd

    from calipers.verdicts.persample import ClusterChoice

WATCH_SCHEMA_VERSION = "1"
PASSING_MARGINS = ("superior", "equivalent", "non-inferior")


@dataclass
class SequentialComparison(Comparison):
    scheme: str
    origin: str
    parameters: dict[str, Any]  # the scheme's options, the design, the order and its seed, …
    result: SequentialResult
    notes: list[str] = field(default_factory=list)
    gates: ClassVar[tuple[str, ...]] = ("no-regress", "ship", "non-inferior", "none")

    @property
    def verdict_text(self) -> str:
        return self.result.verdict

    @property
    def decided(self) -> bool:
        """Every pair reached a decisive look (the run could stop)."""
        return all(p.stopped_at is not None for p in self.result.pairs)

    @property
    def reason(self) -> str:  # type: ignore[override]
        pairs = self.result.pairs
        if not pairs:
            return "nothing to compare"
        worst = next((p for p in pairs if p.decision.verdict == self.result.verdict), pairs[0])
        reason = worst.decision.reason
        if len(pairs) > 1:
            where = worst.treatment + ("" if worst.task is None else f", task {worst.task}")
            reason = f"{where}: {reason} (of {len(pairs)} pairs)"
        return reason

    def gate_failure(self, gate: str) -> str | None:
        """As `compare`'s gates: no-regress fails on REGRESS; ship fails unless every pair has
        stopped on PROGRESS; non-inferior fails unless every pair's margin decision is
        non-inferior, equivalent or superior; none never. A pair still undecided passes
        no-regress (nothing is shown yet) and fails the others (nothing is shown yet either)."""
        pairs = self.result.pairs
        if gate == "none":
            return None
        if gate == "worth-it":
            raise InputError(
                "--gate worth-it is calipers compare's: the sequential decision weighs no cost",
                hint="Gate the finished runs with `calipers compare --value-per-solved V --gate "
                "worth-it`.",
                parameters=["gate"],
            )
        if gate == "no-regress":
            if self.result.verdict == "REGRESS":
                return "the verdict is REGRESS (gate no-regress)"
            return None
        if gate == "ship":
            if self.result.verdict != "PROGRESS":
                return f"the verdict is {self.result.verdict}, not PROGRESS (gate ship)"
            return None
        if gate == "non-inferior":
            if self.result.margin is None:
                raise InputError(
                    "--gate non-inferior needs a margin",
                    hint="Add --margin M (on the compared quantity's scale) or --margin 2%.",
                    parameters=["margin"],
                )
            failing = [p for p in pairs if p.decision.margin not in PASSING_MARGINS]
            if failing:
                names = ", ".join(f"{p.treatment} {p.decision.margin}" for p in failing)
                return f"not every treatment is non-inferior at the margin: {names}"
            return None
        raise InputError(f"unknown gate '{gate}'", hint="Gates: " + ", ".join(self.gates) + ".")

    def to_dict(self) -> dict[str, Any]:
        body = self.result.to_dict()
        body.pop("kind", None)
        return {
            "schema_version": WATCH_SCHEMA_VERSION,
            "kind": "watch",
            "scheme": self.scheme,
            "source": self.origin,
            "parameters": self.parameters,
            **body,
            "decided": self.decided,
            "reason": self.reason,
            "notes": [*self.notes, *body.get("notes", [])],
            "seed": self.parameters.get("seed"),
        }

    def to_frame(self, level: str = "pair") -> pd.DataFrame:
        """level "pair": one row per pair (verdict, stop, units seen and saved, the interval at
        the stop); "path": the anytime-valid interval after each look (n, low, high), to the
        stop of a decided pair when the comparison was made with full_path=False."""
        import pandas as pd

        if level == "pair":
            return pd.DataFrame(
                [
                    {
                        "control": p.control,
                        "treatment": p.treatment,
                        "task": p.task,
                        "verdict": p.decision.verdict,
                        "margin": p.decision.margin,
                        "stopped_at": p.stopped_at,
                        "n_seen": p.n_seen,
                        "n_planned": p.n_planned,
                        "units_saved": p.units_saved,
                        "estimate": p.decision.estimate,
                        "low": p.decision.low,
                        "high": p.decision.high,
                    }
                    for p in self.result.pairs
                ]
            )
        if level == "path":
            return pd.DataFrame(
                [
                    {"treatment": p.treatment, "task": p.task, "n": n, "low": lo, "high": hi}
                    for p in self.result.pairs
                    for n, lo, hi in p.path
                ]
            )
        raise InputError(
            f"unknown level '{level}' of a sequential comparison", hint="Levels: pair, path."
        )


def watch_parameters(
    stage_parameters: dict[str, Any],
    *,
    design: str,
    n_planned: int | None,
    order: str,
    seed: int,
    every: int,
    cluster: ClusterChoice,
    bounds: tuple[float, float] | None,
    bounds_source: str | None,
    by_task: bool,
    margin: str | float | None,
) -> dict[str, Any]:
    """The `parameters` of a sequential comparison's report: the scheme's staging options, then
    the design, the unit and why, the bounds and the margin as given and on the scale — one
    place for every staging that makes the units (`PairedScheme.watch`,
    `calipers.verdicts.sequential_staging`)."""
    from calipers.verdicts.margin import parse_margin

    return {
        **stage_parameters,
        "design": design,
        "n_planned": n_planned,
        "order": order,
        "seed": seed,
        "every": every,
        "cluster": cluster.cluster,
        "cluster_reason": cluster.reason,
        "bounds": None if bounds is None else [float(bounds[0]), float(bounds[1])],
        "bounds_source": bounds_source,
        "by_task": by_task,
        "margin": None if margin is None else str(margin),
        "margin_on_scale": None
        if margin is None or bounds is None
        else parse_margin(margin).on_scale(float(bounds[1]) - float(bounds[0])),
    }
