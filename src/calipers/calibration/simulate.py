"""One simulated experiment: items, their latents, and each arm's rows as the engine stages them
(`StagedScores`, the fast path without DuckDB), or as samples of the data model (`records`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.calibration.models import Arm, BetaClip, FloatArray, Logit, Metric, Model
from calipers.verdicts.persample import RunArrays, StagedScores, dense_sorted

GROUP_SIZE = 5
GROUP_CORRELATION = 0.3
# Named groups (`Cell.groups`): larger groups with a strong shared effect, and no cluster option
NAMED_GROUP_CORRELATION = 0.5
# Outcome-dependent missingness (`Cell.mnar`): an arm's outcome is lost with this probability on
# its own bad draws (a failure; a score below the item's median) and on the others
MNAR_BAD, MNAR_GOOD = 0.30, 0.03


def latents(
    rng: np.random.Generator,
    dims: int,
    n: int,
    grouped: bool,
    group_size: int = GROUP_SIZE,
    correlation: float = GROUP_CORRELATION,
) -> FloatArray:
    """Standard-normal item latents, dims × n; with groups of `group_size` items sharing a share
    `correlation` of the variance."""
    u = rng.standard_normal((dims, n))
    if not grouped:
        return u
    g = rng.standard_normal((dims, -(-n // group_size)))
    share = np.sqrt(correlation)
    z = share * g[:, np.arange(n) // group_size] + np.sqrt(1.0 - correlation) * u
    return np.asarray(z, dtype=np.float64)


def bad_draws(model: Model, z: FloatArray, shift: float, values: FloatArray) -> FloatArray:
    """Per row (item-major), whether the draw is bad for its item: a failure (pass/fail), or a
    score below the item's median (a [0, 1] metric: its level before the noise)."""
    if isinstance(model, Metric) and isinstance(model.latent, Logit):
        return np.asarray(values < 0.5)
    if isinstance(model, Metric) and isinstance(model.latent, BetaClip):
        epochs = values.size // z.shape[1]
        median = np.repeat(model.latent.item_mean(z[0] + shift), epochs)
        return np.asarray(values < median)
    raise ValueError(f"no bad draws defined for {model.description or type(model).__name__}")


def lose_outcomes(
    rng: np.random.Generator, model: Model, z: FloatArray, shift: float, arm: Arm
) -> Arm:
    """The arm with outcomes lost (NaN) with probability MNAR_BAD on its bad draws and MNAR_GOOD
    on the others: missing not at random, as when a system errors on the items it does worst."""
    values = arm.values["value"]
    p = np.where(bad_draws(model, z, shift, values), MNAR_BAD, MNAR_GOOD)
    lost = rng.random(values.size) < p
    return Arm({"value": np.where(lost, np.nan, values)}, arm.judges)


def kept_epochs(
    rng: np.random.Generator, z: FloatArray, epochs: int, dropped: float
) -> npt.NDArray[np.bool_]:
    """Which rows (item-major) an arm scored: every item's first epoch, and each later one lost
    with probability 2·`dropped` for the items below the median latent (none above) — errored
    epochs that fall on the harder or weaker items, so samples end with unequal epochs and the
    mean over rows drifts from the mean over items, which stays the truth."""
    keep = np.ones((z.shape[1], epochs), dtype=bool)
    if dropped and epochs > 1:
        lose = np.where(z[0] < 0.0, min(1.0, 2.0 * dropped), 0.0)
        keep[:, 1:] = rng.random((z.shape[1], epochs - 1)) >= lose[:, None]
    return keep.ravel()


def failed_rows(failure: float, rows: int) -> int:
    """How many of an arm's rows lose their judges: round(failure · rows)."""
    return round(failure * rows)


@dataclass(frozen=True)
class Experiment:
    """Every arm of one simulated experiment, rows item-major (sid, then epoch)."""

    model: Model
    n: int
    epochs: int
    grouped: bool
    arms: dict[str, Arm]
    kept: dict[str, npt.NDArray[np.bool_]] | None = None  # rows each arm scored (None: all)
    group_size: int = GROUP_SIZE

    def staged(self, bounds: tuple[float, float] | None = None) -> StagedScores:
        """The arms as the engine stages them; `bounds`: the scale's declared bounds (by the
        scheme, or by the user's --bounds), None for none declared."""
        sid = np.repeat(np.arange(self.n, dtype=np.int64), self.epochs)
        epoch = np.tile(np.arange(self.epochs, dtype=np.int64), self.n)
        group = sid // self.group_size if self.grouped else None
        runs = {}
        for run, arm in self.arms.items():
            k = slice(None) if self.kept is None else self.kept[run]
            runs[run] = RunArrays(
                run=run,
                sid=sid[k],
                epoch=epoch[k],
                cluster=dense_sorted(sid[k]),
                task_code=np.zeros(sid[k].size, dtype=np.int64),
                tasks=["t"],
                values={name: v[k] for name, v in arm.values.items()},
                judges={name: v[k] for name, v in arm.judges.items()},
                human=None,
                group=group[k] if group is not None else None,
            )
        combine = self.model.combine
        extra: dict[str, Any] = {}
        if bounds is not None and _HAS_BOUNDS:
            extra = {"bounds": bounds, "bounds_source": "declared by the calibration cell"}
        return StagedScores(
            runs=runs,
            tasks=["t"],
            components=self.model.components,
            combine=combine,
            raw_combine=combine,
            gated=self.model.gated,
            span=4.0 if self.model.gated else None,  # as the layered scheme declares
            **extra,
        )

    def records(self) -> list[dict[str, Any]]:
        """The same experiment as samples of the data model: layered rows carry their graded
        assertions and judgments (a failed judge: score null and an error), a pass/fail metric
        `correct`, any other metric `scores{value}`."""
        out = []
        binary = isinstance(getattr(self.model, "latent", None), Logit)
        for run, arm in self.arms.items():
            for row in range(self.n * self.epochs):
                if self.kept is not None and not self.kept[run][row]:
                    continue
                sample: dict[str, Any] = {
                    "run": run,
                    "task": "t",
                    "sample_id": f"s{row // self.epochs:05d}",
                    "epoch": row % self.epochs,
                }
                if self.grouped:
                    sample["group"] = f"g{row // self.epochs // self.group_size:04d}"
                value = arm.values["value"][row] if "value" in arm.values else 0.0
                if self.model.gated:
                    sample["assertions"] = _assertions(arm, row)
                    sample["judgments"] = [
                        {"judge": name, "score": float(s[row])}
                        if np.isfinite(s[row])
                        else {"judge": name, "score": None, "error": "judge timed out"}
                        for name, s in arm.judges.items()
                    ]
                elif not np.isfinite(value):  # a lost outcome: the system errored, no score
                    sample["error"] = "the system failed on this sample"
                elif binary:
                    sample["correct"] = bool(value == 1.0)
                else:
                    sample["scores"] = {"value": float(value)}
                out.append(sample)
        return out


_HAS_BOUNDS = "bounds" in {f.name for f in fields(StagedScores)}


def _assertions(arm: Arm, row: int) -> list[dict[str, Any]]:
    fact = round(float(arm.values["fact"][row]) - 1.0)  # 1 + 4·k/4
    behavior = round((float(arm.values["behavior"][row]) - 1.0) * 3.0 / 4.0)  # 1 + 4·k/3
    return [{"name": f"fact{i}", "type": "contains", "passed": i < fact} for i in range(4)] + [
        {"name": f"behavior{i}", "type": "max_length", "passed": i < behavior} for i in range(3)
    ]


def experiment(
    model: Model,
    *,
    n: int,
    epochs: int,
    grouped: bool,
    shifts: Mapping[str, float],
    failure: Mapping[str, float],
    rng: np.random.Generator,
    dropped: float = 0.0,
    group_size: int = GROUP_SIZE,
    correlation: float = GROUP_CORRELATION,
    lose: str | None = None,
) -> Experiment:
    """Draw the items once, then each arm in the order of `shifts` (the first is the control);
    with `dropped`, each arm then loses epochs (`kept_epochs`); with `lose`, that arm loses
    outcomes on its bad draws (`lose_outcomes`)."""
    z = latents(rng, model.dims, n, grouped, group_size, correlation)
    arms = {
        run: model.draw(z, shift, epochs, rng, failed_rows(failure.get(run, 0.0), n * epochs))
        for run, shift in shifts.items()
    }
    if lose is not None:
        arms[lose] = lose_outcomes(rng, model, z, shifts[lose], arms[lose])
    kept = None
    if dropped:
        kept = {run: kept_epochs(rng, z, epochs, dropped) for run in arms}
    return Experiment(model, n, epochs, grouped, arms, kept, group_size)
