"""`calipers run --stop DESIGN`: a run that stops as soon as its comparison with a baseline run is
decided, with the false-verdict rate held at α (`calipers.verdicts.sequential`).

The contract the sequential engine needs, and how a run keeps it:

- **An order fixed before the run.** The suite's tasks are run in a permutation drawn from the
  run's seed (recorded), and a task counts in that order, never in the order its calls finish: a
  reorder buffer holds a finished task until every task before it is in, so a slow call cannot
  change which tasks a look sees (if tasks that fail slowly were counted late, a system that fails
  slowly would look better early).
- **Whole units.** A task counts when all its epochs are in (graded, and judged when the run has
  judges): its epochs enter together, as its mean, as in the fixed-n engine.
- **Failures are outcomes.** A task whose pipeline failed counts at the scale's low bound
  (`errors="worst"`): a run that stops early must not drop its failures.
- **One configuration.** The scheme, its options, the baseline's values and the design are read
  once, before the first task runs.

The baseline is a stored run of the same suite (its tasks are matched by id). Each released batch
of tasks is scored by the scheme itself — the candidate's rows and the baseline's rows of those
tasks, staged in a private in-memory store exactly as `calipers compare` stages them — so the
values the sequence sees are the values a comparison would compute.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calipers.data.files import sql_literal
from calipers.data.sampleset import SampleSet
from calipers.errors import InputError
from calipers.schemes.layered import PairedScheme
from calipers.verdicts.sequential import SequentialMonitor, SequentialResult, parse_design
from calipers.verdicts.sequential_units import paired_units, unit_permutation


@dataclass
class StopPlan:
    """What `run --stop` was asked: the design, the baseline, and how values are compared."""

    design: str  # "hybrid", "sequence", "obf[:K]", "pocock[:K]"
    baseline: str
    scheme: str = "layered"  # layered or metric
    options: dict[str, Any] = field(default_factory=dict)  # the scheme's (metric=, bounds=, …)
    margin: str | None = None
    seed: int = 0


class Stopper:
    """The reorder buffer and the monitor of one run. `order(ids)` gives the run's task order;
    `finish(task_id, rows)` hands in a finished task's rows (all its epochs); the return value
    says whether the run is decided and may stop."""

    def __init__(self, plan: StopPlan, *, db: Path, task_ids: Sequence[str], run: str) -> None:
        from calipers.data.store import Store
        from calipers.schemes import get_scheme

        if plan.scheme not in ("layered", "metric"):
            raise InputError(
                f"--stop compares with the layered or metric scheme, not '{plan.scheme}'",
                parameters=["scheme"],
            )
        if plan.options.get("standardize"):
            raise InputError(
                "--stop cannot standardize layers: a standardized value depends on every task, "
                "and a unit's value must be fixed when it arrives",
                parameters=["standardize"],
            )
        self.plan, self.run = plan, run
        scheme = get_scheme(plan.scheme)
        assert isinstance(scheme, PairedScheme)  # layered and metric: checked above
        self.scheme = scheme
        self.options = {"errors": "worst", **plan.options}
        self.compare_options = self.scheme.compare_options(**self.options)
        # the order `calipers watch --order random --seed S` replays: the permutation drawn
        # from the seed, of the tasks sorted by name (the order of the units' codes there)
        ordered = sorted(task_ids)
        self.sequence = [ordered[i] for i in unit_permutation(len(ordered), plan.seed)]
        self.position = {t: i for i, t in enumerate(self.sequence)}
        self.waiting: dict[int, list[dict[str, Any]]] = {}
        self.next = 0
        self.released: list[str] = []
        self.counted = 0
        self.skipped: list[str] = []
        self.notes: list[str] = []
        # the baseline's rows, copied once into a private store (exported and imported:
        # the same validation as any file)
        self._dir = tempfile.TemporaryDirectory(prefix="calipers-stop-")
        copy = Path(self._dir.name) / "baseline.jsonl"
        with Store(db, read_only=True) as stored:
            if plan.baseline not in [r.run for r in stored.runs()]:
                raise InputError(
                    f"--stop: no run '{plan.baseline}' in {db}",
                    hint="Name a stored run of the same suite with --baseline (calipers runs).",
                    parameters=["baseline"],
                )
            stored.export(copy, format="jsonl", runs=[plan.baseline])
        self.store = Store(Path(self._dir.name) / "stop.duckdb")
        self.store.import_files([copy])
        found = self.store.con.execute(
            "SELECT DISTINCT sample_id FROM samples WHERE run = ?", [plan.baseline]
        ).fetchall()
        self.have_baseline = {str(r[0]) for r in found} & set(task_ids)
        if not self.have_baseline:
            raise InputError(
                f"--stop: the baseline run '{plan.baseline}' has none of this suite's tasks",
                hint="Name a stored run of the same suite with --baseline (calipers runs).",
                parameters=["baseline"],
            )
        self.n_planned = len([t for t in self.sequence if t in self.have_baseline])
        try:
            design = parse_design(plan.design, n_planned=self.n_planned)
            staged = self.scheme.stage(
                self.store.samples([plan.baseline]), [plan.baseline], self.compare_options
            )
        except InputError as exc:
            self.close()  # the private copy goes with the refusal
            # said of the baseline in the user's store, not of the private copy
            message = str(exc.message).replace(str(self.store.path), f"run '{plan.baseline}'")
            raise InputError(
                f"--stop: {message}", hint=exc.hint, parameters=exc.parameters
            ) from None
        if staged.bounds is None:
            raise InputError(
                "--stop needs the compared value's bounds",
                hint="Give --bounds LOW,HIGH with --metric.",
                parameters=["bounds"],
            )
        self.bounds = (float(staged.bounds[0]), float(staged.bounds[1]))
        base = staged.composite(plan.baseline)
        epochs = staged.fetch(plan.baseline).epoch
        # pass/fail outcomes on 0–1, one epoch: the exact discordant-pairs test applies
        self.binary = bool(
            self.bounds == (0.0, 1.0)
            and base.size
            and (epochs.max(initial=0) == 0)
            and all(v in self.bounds for v in base.tolist())
        )
        self.monitor = SequentialMonitor(
            [(plan.baseline, run, None)],
            bounds=self.bounds,
            binary=self.binary,
            design=design,
            margin=plan.margin,
            higher_is_better=self.scheme.higher_is_better,
        )

    def close(self) -> None:
        self.store.close()
        self._dir.cleanup()

    def finish(self, finished: Sequence[tuple[str, list[dict[str, Any]]]]) -> bool:
        """Hold each finished task's rows until every task before it is in; then count the
        released tasks in order (one scoring for all of them: a batch costs about what one task
        does). True once the run is decided."""
        for task_id, rows in finished:
            self.waiting[self.position[task_id]] = rows
        batch: list[tuple[str, list[dict[str, Any]]]] = []
        while self.next in self.waiting:
            batch.append((self.sequence[self.next], self.waiting.pop(self.next)))
            self.next += 1
        if batch and not self.monitor.stopped:
            self._count(batch)
        return self.monitor.stopped

    def _count(self, batch: list[tuple[str, list[dict[str, Any]]]]) -> None:
        rows = [row for _, task_rows in batch for row in task_rows]
        if rows:
            self.store.import_rows(rows)
        ids = [t for t, _ in batch]
        self.released += ids
        whole = self.store.samples([self.plan.baseline, self.run])
        whole.con.execute(
            "CREATE OR REPLACE TEMP VIEW stop_batch AS SELECT * FROM store_samples WHERE "
            f"sample_id IN ({', '.join(sql_literal(t) for t in ids)})"
        )
        # not `whole_runs`: the store's per-run layer inputs describe whole runs, not a batch
        samples = SampleSet(whole.con, "stop_batch", whole.origin)
        staged = self.scheme.stage(samples, [self.plan.baseline, self.run], self.compare_options)
        if self.options.get("errors") == "worst":
            from calipers.verdicts.missing_bounds import score_errors_worst

            score_errors_worst(staged)
        units = paired_units(
            staged,
            samples,
            control=self.plan.baseline,
            treatments=[self.run],
            cluster="sample_id",
            order="arrival",
            named=True,
        )[0]
        value = {
            uid: (b, c)
            for uid, b, c in zip(units.unit_ids, units.baseline, units.candidate, strict=True)
        }
        for task in ids:  # in the run's order; a suite sample is "task/sample_id", both the id
            if f"{task}/{task}" not in value:
                self.skipped.append(task)
                continue
            b, c = value[f"{task}/{task}"]
            self.monitor.add(0, float(b), float(c))
            self.counted += 1
            if self.monitor.look().stopped:
                break

    def result(self) -> SequentialResult:
        return self.monitor.result()
