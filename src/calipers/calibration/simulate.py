"""One simulated experiment: items, their latents, and each arm's rows as the engine stages them
(`StagedScores`, the fast path without DuckDB), or as samples of the data model (`records`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.calibration.models import Arm, FloatArray, Logit, Metric, Model
from calipers.verdicts.persample import RunArrays, StagedScores, dense_sorted

GROUP_SIZE = 5
GROUP_CORRELATION = 0.3


def latents(rng: np.random.Generator, dims: int, n: int, grouped: bool) -> FloatArray:
    """Standard-normal item latents, dims × n; with groups of GROUP_SIZE items sharing a share
    GROUP_CORRELATION of the variance."""
    u = rng.standard_normal((dims, n))
    if not grouped:
        return u
    g = rng.standard_normal((dims, -(-n // GROUP_SIZE)))
    share = np.sqrt(GROUP_CORRELATION)
    z = share * g[:, np.arange(n) // GROUP_SIZE] + np.sqrt(1.0 - GROUP_CORRELATION) * u
    return np.asarray(z, dtype=np.float64)


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

    def staged(self) -> StagedScores:
        sid = np.repeat(np.arange(self.n, dtype=np.int64), self.epochs)
        epoch = np.tile(np.arange(self.epochs, dtype=np.int64), self.n)
        group = sid // GROUP_SIZE if self.grouped else None
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
        return StagedScores(
            runs=runs,
            tasks=["t"],
            components=self.model.components,
            combine=combine,
            raw_combine=combine,
            gated=self.model.gated,
        )

    def records(self) -> list[dict[str, Any]]:
        """The same experiment as samples of the data model: layered rows carry their graded
        assertions and judgments (a failed judge: score null and an error), a pass/fail metric
        `correct`, any other metric `scores{value}`."""
        out = []
        binary = isinstance(self.model, Metric) and isinstance(self.model.latent, Logit)
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
                if self.model.gated:
                    sample["assertions"] = _assertions(arm, row)
                    sample["judgments"] = [
                        {"judge": name, "score": float(s[row])}
                        if np.isfinite(s[row])
                        else {"judge": name, "score": None, "error": "judge timed out"}
                        for name, s in arm.judges.items()
                    ]
                elif binary:
                    sample["correct"] = bool(arm.values["value"][row] == 1.0)
                else:
                    sample["scores"] = {"value": float(arm.values["value"][row])}
                out.append(sample)
        return out


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
) -> Experiment:
    """Draw the items once, then each arm in the order of `shifts` (the first is the control);
    with `dropped`, each arm then loses epochs (`kept_epochs`)."""
    z = latents(rng, model.dims, n, grouped)
    arms = {
        run: model.draw(z, shift, epochs, rng, failed_rows(failure.get(run, 0.0), n * epochs))
        for run, shift in shifts.items()
    }
    kept = None
    if dropped:
        kept = {run: kept_epochs(rng, z, epochs, dropped) for run in arms}
    return Experiment(model, n, epochs, grouped, arms, kept)
