"""Per-sample scores of the schemes that compare runs (layered, metric), and the summary of one run.

A comparable scheme stages, in one query, one row per sample — integer codes for the run, the
sample and the task, the epoch, and a value per component (the layers, or the one metric), NaN where
missing — as numpy arrays. Everything after that is shared: a run's summary here, the paired
comparison in `calipers.verdicts`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.data.duck import ordered, position_in
from calipers.data.files import sql_literal
from calipers.data.sampleset import SampleSet
from calipers.errors import DataError, InputError
from calipers.stats.agreement_intervals import AgreementInterval, RunAgreement, run_agreement
from calipers.stats.estimate import (
    MIN_T_UNITS,
    Interval,
    NoInterval,
    mean_interval,
    sample_weights,
    weighted_mean,
)
from calipers.stats.saturation import SaturationResult, saturation
from calipers.verdicts.repeats import RunRepeats, run_repeats
from calipers.verdicts.sample_codes import keyed_rows, names_by_key, names_of_codes

FloatArray = npt.NDArray[np.float64]
Combine = Callable[[Mapping[str, FloatArray]], FloatArray]

# seed 000: judges that correlate below this disagree strongly; at or above AGREE they agree.
JUDGE_DISAGREE = 0.4
JUDGE_AGREE = 0.7
HUMAN_ALIGNED = 0.7
CV_LIMIT = 0.15


@dataclass
class RunArrays:
    """One run's per-sample values, ordered by (task, sample_id, epoch); cluster = sample."""

    run: str
    sid: npt.NDArray[np.int64]  # sample code shared by every staged run: pairs match on it
    epoch: npt.NDArray[np.int64]
    cluster: npt.NDArray[np.int64]  # sid renumbered 0..k−1 within the run
    task_code: npt.NDArray[np.int64]  # index into StagedScores.tasks
    tasks: list[str]
    values: dict[str, FloatArray]
    judges: dict[str, FloatArray]
    human: FloatArray | None
    group: npt.NDArray[np.int64] | None = None  # group code per row (shared by the runs), if any
    # Each sample's weight in the mean (`score_weights` of the metric: promptfoo's assertion
    # weights); None: every sample weighs 1.
    weight: FloatArray | None = None
    # per row, over the repeats of each judge: Σ squared deviations and their degrees of freedom
    judge_repeats: tuple[FloatArray, FloatArray] | None = None
    # per row: the sample's `error` is set, a failure of the system under test (None: no row)
    errored: npt.NDArray[np.bool_] | None = None
    # per row: an errored sample without a score scored at the scale's low bound (errors="worst")
    scored_worst: npt.NDArray[np.bool_] | None = None

    def weights(self, rows: npt.NDArray[Any]) -> FloatArray:
        """The weights of `rows` (a mask or indices) in a mean: 1/(the sample's rows among them)
        — each sample weighs the same however many epochs it has — times its weight."""
        w = sample_weights(self.sid[rows])
        return w if self.weight is None else w * self.weight[rows]


@dataclass
class StagedScores:
    """Per-sample components of some runs, as arrays, and how to combine them."""

    runs: dict[str, RunArrays]
    tasks: list[str]  # task code → name, shared by the runs
    components: tuple[str, ...]  # e.g. ("fact", "behavior", "judge") or ("value",)
    combine: Combine  # components → the composite the verdict reads
    raw_combine: Combine  # the same without standardisation (for CV, which needs a ratio scale)
    gated: bool  # whether components have gates (layered) or not (metric)
    notes: list[str] = field(default_factory=list)
    # The width of the composite's scale (4 on 1–5 layers); None: read from the data — 1 when
    # every value lies in [0, 1], else their range. Defaults of min_effect and trivial_diff are
    # fractions of it.
    span: float | None = None
    # The declared bounds of the composite's scale (scheme, importer or user: `--bounds`), never
    # read from the data; None: unbounded (no distribution-free interval, no scale from the range).
    bounds: tuple[float, float] | None = None
    # where `bounds` came from, in the user's words ("the layered scheme: layers on 1–5", …)
    bounds_source: str | None = None
    # sid → "task/sample_id" for the sids asked (names in reports: the flaky samples)
    names: Callable[[list[int]], dict[int, str]] | None = None
    # the staging's rows, kept where the scheme read more columns than its own for a later reader
    # (`stage_metric(extra=...)`: the cost section's), so that it need not read every row again
    rows: StagedRows | None = None
    _composites: dict[tuple[str, bool], FloatArray] = field(default_factory=dict, repr=False)

    def fetch(self, run: str) -> RunArrays:
        return self.runs[run]

    def composite(self, run: str, *, raw: bool = False) -> FloatArray:
        """The run's composite per sample (`raw`: without standardisation), computed once."""
        key = (run, raw or self.combine is self.raw_combine)
        if key not in self._composites:
            combine = self.raw_combine if key[1] else self.combine
            self._composites[key] = combine(self.runs[run].values)
        return self._composites[key]


@dataclass
class StagedRows:
    """The rows of `stage_rows`: one numpy column per name, and where each run's rows are."""

    columns: dict[str, Any]
    spans: dict[str, slice]
    tasks: list[str]
    samples: SampleSet | None = None
    runs: list[str] = field(default_factory=list)
    _names: list[str] | None = field(default=None, repr=False)  # by code, once read
    _asked: int = field(default=0, repr=False)
    # (task, sample_id) by code, once read (`load_keys`)
    _keys: tuple[npt.NDArray[Any], npt.NDArray[Any]] | None = field(default=None, repr=False)
    # each code's store-wide integer key (`calipers.data.sample_keys`), where staged on them
    store_keys: npt.NDArray[np.int64] | None = field(default=None, repr=False)

    def load_keys(self) -> tuple[npt.NDArray[Any], npt.NDArray[Any]] | None:
        """Every sample's task and sample_id by code (at most `NAMES_KEPT`), read once: what a
        comparison's flips and its run summaries each asked the store for, a sort of the runs'
        string keys every time (3 × 0.3 s of CPU on 2 × 1M metric samples, 2026-11-27). None:
        too many, no store, or a key NULL."""
        sid = self.columns["sid"]
        if self._keys is None and self.samples is not None and len(sid):
            if int(sid.max()) + 1 > NAMES_KEPT:
                return None
            if self.store_keys is not None:
                self._keys = self._stored_keys()
                return self._keys
            rel, con = self.samples.relation, self.samples.con
            where = f"run IN ({', '.join(sql_literal(r) for r in self.runs)})"
            # the order `stage_rows` numbers the same distinct keys in (`sample_keys_sql`); each
            # key's task as a rank among the distinct tasks, not a string per key (30 MB less)
            found = con.execute(
                "SELECT (dense_rank() OVER (ORDER BY task) - 1)::BIGINT AS rank, sample_id "
                f"FROM (SELECT DISTINCT task, sample_id FROM {rel} WHERE {where}) "
                "ORDER BY task, sample_id"
            ).fetchnumpy()
            tasks = [r[0] for r in con.execute(f"SELECT DISTINCT task FROM {rel} WHERE {where} "
                                               "ORDER BY 1").fetchall()]  # fmt: skip
            rank, name = found["rank"], found["sample_id"]
            if not (np.ma.isMaskedArray(rank) or np.ma.isMaskedArray(name)):
                task = np.asarray(tasks, dtype=object)[np.asarray(rank, dtype=np.int64)]
                self._keys = (task, np.asarray(name, dtype=object))
        return self._keys

    def _stored_keys(self) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """`load_keys` where the rows were staged on the store's integer keys: each code's
        sample_id read by its key (no string sorted), its task from the staged task codes."""
        assert self.samples is not None and self.store_keys is not None
        names = names_by_key(self.samples.con, self.runs, self.store_keys)
        task_code = np.empty(self.store_keys.size, dtype=np.int64)
        task_code[self.columns["sid"]] = self.columns["task_code"]
        return np.asarray(self.tasks, dtype=object)[task_code], names

    def load_names(self, most: int | None = None) -> bool:
        """Read every sample's name (at most `most`, default `NAMES_KEPT`), so that
        `sample_names` needs the store no more. False: too many to keep, or no store."""
        sid = self.columns["sid"]
        n_keys = int(sid.max()) + 1 if len(sid) else 0
        limit = NAMES_KEPT if most is None else most
        if self._names is None and self.store_keys is not None and n_keys <= limit:
            keys_read = self.load_keys()
            if keys_read is not None:
                self._names = [f"{task}/{name}" for task, name in zip(*keys_read, strict=True)]
        if self._names is None and self.samples is not None and n_keys <= limit:
            keys = sample_keys_sql(self.samples.relation, self.runs)
            found = self.samples.con.execute(
                f"SELECT task, sample_id FROM ({keys}) ORDER BY sid"
            ).fetchall()
            self._names = [f"{task}/{sample}" for task, sample in found]
        return self._names is not None

    def sample_names(self, sids: list[int]) -> dict[int, str]:
        """ "task/sample_id" of each of `sids` (the codes `stage_rows` gave). An ask numbers every
        key of the runs in the store, so after two every name is read and kept (`load_names`):
        the summaries of 100 runs asked 100 times, 12 s of a leaderboard (2026-11-27)."""
        if self.samples is None or not sids:
            return {}
        self._asked += 1
        if self._keys is not None:
            task, name = self._keys
            return {int(i): f"{task[i]}/{name[i]}" for i in set(sids) if 0 <= int(i) < len(task)}
        if self._names is not None or (self._asked > 2 and self.load_names()):
            assert self._names is not None
            return {int(i): self._names[i] for i in set(sids) if 0 <= int(i) < len(self._names)}
        if self.store_keys is not None:  # read by their store keys: no string sorted
            return names_of_codes(self.samples.con, self.store_keys, sids)
        wanted = ", ".join(str(int(i)) for i in sorted(set(sids)))
        keys = sample_keys_sql(self.samples.relation, self.runs)
        rows = self.samples.con.execute(
            f"SELECT sid, task, sample_id FROM ({keys}) WHERE sid IN ({wanted})"
        ).fetchall()
        return {int(sid): f"{task}/{sample}" for sid, task, sample in rows}

    def names(self, sids: list[int]) -> dict[int, str]:
        """`sample_names`, one call at a time: run summaries ask from their threads, and a DuckDB
        connection refuses a second call rather than wait (a cursor would not see the temporary
        tables the samples live in)."""
        with _NAMES_LOCK:
            return self.sample_names(sids)

    def run_arrays(
        self,
        values: Mapping[str, FloatArray],
        judges: Mapping[str, FloatArray] | None = None,
        human: FloatArray | None = None,
        weight: FloatArray | None = None,
        judge_repeats: tuple[FloatArray, FloatArray] | None = None,
        errored: npt.NDArray[np.bool_] | None = None,
    ) -> dict[str, RunArrays]:
        """Split whole-table arrays (in the rows' order) into one RunArrays per run."""
        out = {}
        for run, span in self.spans.items():
            sid = self.columns["sid"][span]
            out[run] = RunArrays(
                run=run,
                sid=sid,
                epoch=self.columns["epoch"][span],
                cluster=dense_sorted(sid),
                task_code=self.columns["task_code"][span],
                tasks=self.tasks,
                values={k: v[span] for k, v in values.items()},
                judges={k: v[span] for k, v in (judges or {}).items()},
                human=human[span] if human is not None else None,
                group=self.columns["group_code"][span] if "group_code" in self.columns else None,
                weight=weight[span] if weight is not None else None,
                judge_repeats=(
                    None
                    if judge_repeats is None
                    else (judge_repeats[0][span], judge_repeats[1][span])
                ),
                errored=None if errored is None else errored[span],
            )
        return out


def staged_rows(staged: StagedScores) -> StagedRows | None:
    """The rows `staged` was made from (None: not from a staging)."""
    rows = getattr(staged.names, "__self__", None)
    return rows if isinstance(rows, StagedRows) else None


def staged_keys(staged: StagedScores) -> tuple[npt.NDArray[Any], npt.NDArray[Any]] | None:
    """`StagedRows.load_keys` of the rows `staged` was made from (None: not from a staging)."""
    rows = getattr(staged.names, "__self__", None)
    return rows.load_keys() if isinstance(rows, StagedRows) else None


def names_kept(staged: StagedScores, *, most: int) -> bool:
    """Whether `staged` names its samples without its store (read now, if at most `most`): then
    it may be used again once that store is closed."""
    if staged.names is None:
        return True
    rows = getattr(staged.names, "__self__", None)
    return isinstance(rows, StagedRows) and rows.load_names(most)


def sample_keys_sql(relation: str, runs: list[str]) -> str:
    """A query of the sample codes `stage_rows` gives: each distinct (task, sample_id) of `runs`
    with its `sid`, numbered in sorted order (columns task, sample_id, sid)."""
    where = f"run IN ({', '.join(sql_literal(r) for r in runs)})"
    return (
        "SELECT task, sample_id, (row_number() OVER (ORDER BY task, sample_id) - 1)::BIGINT "
        f"AS sid FROM (SELECT DISTINCT task, sample_id FROM {relation} WHERE {where})"
    )


def stage_rows(
    samples: SampleSet,
    runs: list[str],
    expressions: Mapping[str, str],
    *,
    lists: Mapping[str, str] | None = None,
) -> StagedRows:
    """One query over the samples of `runs`: each SQL expression per sample (which may read the
    columns named in `lists`, computed once per sample beforehand), with integer codes for
    the run, the sample (`sid`, over (task, sample_id), shared by the runs so that pairs match on
    it) and the task, ordered by (run, sid, epoch). Codes follow sorted names, so results do not
    depend on thread scheduling; numbering the distinct keys and joining beats a window over all
    rows, and integers make pairing and resampling cheap."""
    rel, con = samples.relation, samples.con
    where = f"run IN ({', '.join(sql_literal(r) for r in runs)})"
    exprs = "".join(f', {sql} AS "{name}"' for name, sql in expressions.items())
    derived = "".join(f", {sql} AS {name}" for name, sql in (lists or {}).items())
    # Group codes (−1: no group) when the samples have the field: `--cluster group` reads them.
    # No join when no sample has a group (a join over every row costs more than this look).
    has_group = "group" in [d[0] for d in con.execute(f"SELECT * FROM {rel} LIMIT 0").description]
    any_group = has_group and bool(
        con.execute(f'SELECT 1 FROM {rel} WHERE {where} AND "group" IS NOT NULL LIMIT 1').fetchall()
    )
    group_cte, group_col, group_join = "", "", ""
    if any_group:
        group_cte = f"""
        , groups AS (
            SELECT "group", (row_number() OVER (ORDER BY "group") - 1)::BIGINT AS group_code
            FROM (SELECT DISTINCT "group" FROM {rel} WHERE {where} AND "group" IS NOT NULL)
        )"""
        group_col = ", coalesce(groups.group_code, -1)::BIGINT AS group_code"
        group_join = 'LEFT JOIN groups ON s."group" = groups."group"'
    elif has_group:
        group_col = ", -1::BIGINT AS group_code"
    keyed = None
    if samples.whole_runs:  # the store's rows: staged on their integer keys where they hold
        keyed = keyed_rows(con, where, runs, group_cte, group_col, group_join, exprs, derived)
    if keyed is not None:
        columns, store_keys = keyed
        return _staged(con, rel, where, runs, samples, columns, has_group, store_keys)
    # the task code is numbered with the keys (one join over the rows, not two)
    columns = con.execute(
        f"""
        WITH keys AS (
            SELECT task, sample_id, (row_number() OVER (ORDER BY task, sample_id) - 1)::BIGINT
                AS sid, (dense_rank() OVER (ORDER BY task) - 1)::BIGINT AS task_code
            FROM (SELECT DISTINCT task, sample_id FROM {rel} WHERE {where})
        ){group_cte}
        SELECT {position_in("run", runs)}::INTEGER AS run_code, keys.sid, keys.task_code,
               s.epoch::BIGINT AS epoch {group_col} {exprs}
        FROM (SELECT *{derived} FROM {rel} WHERE {where}) s
        JOIN keys USING (task, sample_id) {group_join}
        """
    ).fetchnumpy()
    return _staged(con, rel, where, runs, samples, columns, has_group, None)


def _staged(
    con: Any,
    rel: str,
    where: str,
    runs: list[str],
    samples: SampleSet,
    columns: dict[str, Any],
    has_group: bool,
    store_keys: npt.NDArray[np.int64] | None,
) -> StagedRows:
    """`stage_rows`' columns sorted by (run, sample, epoch), with each run's span."""
    columns = ordered(columns, ("run_code", "sid", "epoch"))  # cheaper than an ORDER BY
    tasks = [r[0] for r in con.execute(f"SELECT DISTINCT task FROM {rel} WHERE {where} ORDER BY 1")
             .fetchall()]  # fmt: skip
    codes = np.asarray(columns["run_code"])
    bounds = np.searchsorted(codes, np.arange(len(runs) + 1))
    spans = {r: slice(int(bounds[i]), int(bounds[i + 1])) for i, r in enumerate(runs)}
    columns["sid"] = np.asarray(columns["sid"], dtype=np.int64)
    columns["epoch"] = np.asarray(columns["epoch"], dtype=np.int64)
    columns["task_code"] = np.asarray(columns["task_code"], dtype=np.int64)
    if has_group:
        columns["group_code"] = np.asarray(columns["group_code"], dtype=np.int64)
    return StagedRows(columns, spans, tasks, samples, list(runs), store_keys=store_keys)


NAMES_KEPT = 1_000_000  # sample names a staging keeps (`StagedRows.load_names`) at most
UNITS = ("sample_id", "group", "task")  # what a comparison can cluster by
CLUSTERS = ("auto", *UNITS)  # `auto`: by group when every sample names one (resolve_cluster)
_NAMES_LOCK = threading.Lock()


@dataclass(frozen=True)
class ClusterChoice:
    """The independent unit a report used, why (shown beside every interval), and a note when
    the choice may mislead (groups on some samples only, too few groups)."""

    cluster: str  # sample_id, group or task
    reason: str
    note: str | None = None


def resolve_cluster(
    source: StagedScores | RunArrays | Iterable[RunArrays], requested: str = "auto"
) -> ClusterChoice:
    """The unit `requested` means for these runs. `auto` clusters by `group` when every sample
    of the runs names one (and there are at least 2), else by sample_id — with a note when only
    some samples name a group. Items of one group (a passage, a document) that share an effect
    are not independent: clustered by sample, a non-inferiority decision at a true drop of the
    margin was wrong 9% of the time and the interval covered 81% (groups of 20,
    docs/statistics.md)."""
    if requested not in CLUSTERS:
        raise InputError(f"unknown `cluster` '{requested}'",
                         hint="Cluster by " + ", ".join(CLUSTERS) + ".",
                         parameters=["cluster"])  # fmt: skip
    runs = (list(source.runs.values()) if isinstance(source, StagedScores)
            else [source] if isinstance(source, RunArrays) else list(source))  # fmt: skip

    def distinct(codes: list[npt.NDArray[np.int64]]) -> int:  # codes are dense: O(n)
        joined = np.concatenate(codes or [np.zeros(0, np.int64)])
        return int(np.count_nonzero(np.bincount(joined))) if joined.size else 0

    if requested == "task":
        n_tasks = distinct([r.task_code for r in runs])
        return ClusterChoice("task", f"--cluster task: {n_tasks} task(s) are the units")
    groups = [r.group for r in runs if r.group is not None]
    n_groups = distinct([g[g >= 0] for g in groups])
    n_samples = distinct([r.sid for r in runs]) if n_groups else 0
    lacking = [r.sid if r.group is None else r.sid[r.group < 0] for r in runs] if n_groups else []
    ungrouped = distinct(lacking)
    some = f"{n_samples - ungrouped} of {n_samples} samples name a group"
    if requested == "sample_id":
        if n_groups == 0:
            return ClusterChoice("sample_id", "--cluster sample_id")
        return ClusterChoice(
            "sample_id",
            "--cluster sample_id: items of a group treated as independent; intervals are too "
            "narrow if groups share an effect",
        )
    if requested == "group":
        return ClusterChoice("group", f"--cluster group: the samples name {n_groups} groups")
    if n_groups == 0:
        return ClusterChoice("sample_id", "no sample names a group")
    if ungrouped:
        return ClusterChoice(
            "sample_id", f"only {some}",
            f"clustered by sample_id: only {some}, so items of a group are treated as "
            "independent, and intervals are too narrow if groups share an effect; give every "
            "sample a `group` to cluster by group",
        )  # fmt: skip
    if n_groups < 2:
        return ClusterChoice("sample_id", "every sample names the same group: one group")
    note = None
    if n_groups < MIN_T_UNITS:
        note = (
            f"clustered by group: the samples name only {n_groups} groups, and intervals rest "
            f"on them (a t interval needs {MIN_T_UNITS}); if the groups are kinds of item "
            "rather than clusters sharing an effect, --cluster sample_id"
        )
    return ClusterChoice("group", f"the samples name {n_groups} groups", note)


def cluster_labels(
    arrays: RunArrays, rows: npt.NDArray[np.intp], cluster: str
) -> npt.NDArray[np.int64]:
    """The independent unit of each row: its sample (epochs together), group or task."""
    if cluster == "sample_id":
        return arrays.sid[rows]
    if cluster == "task":
        return arrays.task_code[rows]
    if cluster == "group":
        if arrays.group is None or (arrays.group[rows] < 0).any():
            missing = rows.size if arrays.group is None else int((arrays.group[rows] < 0).sum())
            raise InputError(
                f"`cluster` group: {missing} sample(s) of run '{arrays.run}' have no `group`",
                hint="Give every sample a `group` (a string; docs/data-model.md), or cluster by "
                "sample_id or task.",
                parameters=["cluster"],
            )
        return arrays.group[rows]
    raise InputError(
        f"unknown `cluster` '{cluster}'",
        hint="Cluster by " + ", ".join(UNITS) + ".",
        parameters=["cluster"],
    )


def dense_sorted(codes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Sorted integer codes renumbered 0..k−1 in O(n)."""
    if codes.size == 0:
        return codes
    return np.concatenate([[0], np.cumsum(codes[1:] != codes[:-1])]).astype(np.int64)


@dataclass
class ComponentSummary:
    mean: float | None
    n: int  # observations where the component is present
    interval: Interval | None
    gate: bool | None = None  # mean ≥ threshold (None when ungated)
    refusal: str | None = None  # why there is no interval, when one was asked for
    # outcomes missing from the run whose worst/best cases the interval was widened to cover
    missing_widened: int = 0

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"mean": self.mean, "n": self.n}
        if self.interval is not None:
            body.update(
                low=self.interval.low, high=self.interval.high, method=self.interval.formula
            )
        if self.missing_widened:
            body["missing_widened"] = self.missing_widened
        if self.refusal is not None:
            body["refusal"] = self.refusal
        if self.gate is not None:
            body["gate"] = self.gate
        return body


@dataclass
class RunSummary:
    """What one run scored: composite with its interval, each component, and its reliability."""

    run: str
    n_samples: int  # distinct samples (clusters)
    n_observations: int
    missing: int  # observations without a composite
    composite: ComponentSummary
    components: dict[str, ComponentSummary]
    layers_used: dict[str, int]  # "fact+judge" → observations whose composite used those layers
    gate_passed: bool | None  # every present component ≥ threshold (None when ungated)
    judge_pearson: float | None
    judge_alpha: float | None
    human_pearson: float | None
    cv_median: float | None
    saturation: SaturationResult
    tasks: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    repeats: RunRepeats | None = None  # when some sample was scored in several epochs
    agreement: RunAgreement | None = None  # the three figures above with their intervals

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "n_samples": self.n_samples,
            "n_observations": self.n_observations,
            "missing": self.missing,
            "composite": self.composite.to_dict(),
            "components": {k: v.to_dict() for k, v in self.components.items()},
            "layers_used": self.layers_used,
            "gate_passed": self.gate_passed,
            "judge_pearson": self.judge_pearson,
            "judge_krippendorff_alpha": self.judge_alpha,
            "human_pearson": self.human_pearson,
            "cv_median": self.cv_median,
            "saturation": self.saturation.to_dict(),
            "tasks": self.tasks,
            "repeats": None if self.repeats is None else self.repeats.to_dict(),
            "agreement": None if self.agreement is None else self.agreement.to_dict(),
        }


def summarize_run(
    staged: StagedScores,
    arrays: RunArrays,
    *,
    threshold: float,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    z: float,
    component_intervals: bool = True,
    interval: str = "auto",
    cluster: str = "auto",
) -> RunSummary:
    """A run's scores. `component_intervals=False` skips the interval of each component (a
    comparison reads their paired differences instead). `interval` is the method
    (`calipers.stats.estimate`), `cluster` the independent unit: sample_id, group or task, or
    auto (`resolve_cluster` on this run; callers with several runs resolve over all of them)."""
    if cluster == "auto":
        cluster = resolve_cluster(arrays, cluster).cluster
    composite = staged.composite(arrays.run)
    present = np.isfinite(composite)
    if not present.any():
        if staged.gated:  # layered: perhaps a harness's scores, which the metric scheme reads
            raise DataError(
                f"run '{arrays.run}' has no sample with a score",
                hint="Every sample lacks every layer (assertions, judgments); for a harness's "
                "per-sample scores (accuracy, f1, …) use the metric scheme: `scheme` metric with "
                "`metric` NAME (`calipers runs` lists each run's metrics).",
                parameters=["scheme", "metric"],
            )
        raise DataError(
            f"run '{arrays.run}' has no sample with a score",
            hint="Every sample lacks every component; check the assertions, judgments or metric.",
        )
    clusters = cluster_labels(arrays, np.arange(arrays.sid.size), cluster)

    def component(values: FloatArray, units: npt.NDArray[np.int64] | None) -> ComponentSummary:
        return _component(
            values, arrays, units, confidence_level=confidence_level,
            n_resamples=n_resamples, seed=seed, method=interval, bounds=staged.bounds,
        )  # fmt: skip

    comp = component(composite, clusters)
    if staged.bounds is not None and comp.interval is not None and not present.all():
        comp = _widened_for_missing(comp, composite, component, clusters, staged.bounds)
    components = {}
    for name in staged.components:
        summary = component(arrays.values[name], clusters if component_intervals else None)
        if staged.gated and summary.mean is not None:
            summary.gate = summary.mean >= threshold
        components[name] = summary
    gate_passed = None
    if staged.gated:
        gates = [c.gate for c in components.values() if c.gate is not None]
        gate_passed = bool(gates) and all(gates)
    agreement = run_agreement(  # on per-sample means, the intervals over the clusters
        arrays.judges, arrays.cluster, units=clusters, unit=cluster,
        judge_layer=arrays.values.get("judge"), human=arrays.human,
        confidence_level=confidence_level, n_resamples=n_resamples, rng=seed,
    )  # fmt: skip
    return RunSummary(
        run=arrays.run,
        n_samples=int(arrays.cluster[-1]) + 1 if arrays.cluster.size else 0,
        n_observations=int(composite.size),
        missing=int((~present).sum()),
        composite=comp,
        components=components,
        layers_used=_layers_used(arrays.values, staged.components) if staged.gated else {},
        gate_passed=gate_passed,
        judge_pearson=_estimate(agreement.judge_pearson),
        judge_alpha=_estimate(agreement.judge_alpha),
        human_pearson=_estimate(agreement.human_pearson),
        agreement=None if agreement.empty else agreement,
        cv_median=_cv_median(staged.composite(arrays.run, raw=True), arrays.cluster),
        saturation=saturation(composite, arrays.cluster, arrays.epoch, z=z),
        tasks=_task_means(composite, arrays),
        repeats=run_repeats(
            composite,
            arrays.sid,
            arrays.task_code,
            arrays.tasks,
            judge_repeats=arrays.judge_repeats,
            units=None if cluster == "sample_id" else clusters,
            names=staged.names,
            confidence_level=confidence_level,
            z=z,
        ),
    )


def _task_means(
    composite: FloatArray, arrays: RunArrays
) -> dict[str, dict[str, float | int | None]]:
    """Mean composite per task the run has — the mean of its samples' epoch means — (None when
    none of its samples has a composite); n counts observations."""
    keep = np.isfinite(composite)
    k = len(arrays.tasks)
    present = np.bincount(arrays.task_code, minlength=k) > 0
    codes = arrays.task_code[keep]
    w = arrays.weights(keep)
    n = np.bincount(codes, minlength=k)
    weight = np.bincount(codes, weights=w, minlength=k)
    sums = np.bincount(codes, weights=w * composite[keep], minlength=k)
    return {
        arrays.tasks[i]: {"mean": float(sums[i] / weight[i]) if n[i] else None, "n": int(n[i])}
        for i in np.flatnonzero(present)
    }


def _component(
    values: FloatArray,
    arrays: RunArrays,
    clusters: npt.NDArray[np.int64] | None,
    *,
    confidence_level: float,
    n_resamples: int,
    seed: int,
    method: str,
    bounds: tuple[float, float] | None = None,
) -> ComponentSummary:
    """A component's mean over its samples (each sample's epochs averaged first, so a sample
    weighs the same however many epochs were scored), and its interval when `clusters` are
    given (None: no interval). `bounds`: the scale's declared bounds (every component of a
    scheme shares its composite's scale)."""
    keep = np.isfinite(values)
    n = int(keep.sum())
    if n == 0:
        return ComponentSummary(None, 0, None)
    x = values[keep]
    w = arrays.weights(keep)
    mean = weighted_mean(x, w)
    if clusters is None:
        return ComponentSummary(mean, n, None)
    try:
        interval = mean_interval(
            x, clusters=clusters[keep], weights=w, method=method,
            confidence_level=confidence_level, n_resamples=n_resamples, rng=seed, bounds=bounds,
        )  # fmt: skip
    except NoInterval as why:
        return ComponentSummary(mean, n, None, refusal=why.reason)
    return ComponentSummary(mean, n, interval)


def _widened_for_missing(
    comp: ComponentSummary,
    composite: FloatArray,
    component: Callable[[FloatArray, npt.NDArray[np.int64] | None], ComponentSummary],
    clusters: npt.NDArray[np.int64],
    bounds: tuple[float, float],
) -> ComponentSummary:
    """A run whose samples lack some outcomes (errors, failed judges on every layer): the mean
    over the samples scored is what it is, but the interval must hold for the run's mean over all
    its samples whatever the missing outcomes were — it reaches from the low end of the interval
    with them at the scale's worst to the high end with them at its best (Manski). Outcomes lost
    on a run's own bad draws left the interval of the scored samples at 0.52–0.90 coverage
    (docs/calibration.md, the `mnar` cells)."""
    assert comp.interval is not None
    missing = int(np.sum(~np.isfinite(composite)))
    worst = component(np.where(np.isfinite(composite), composite, bounds[0]), clusters).interval
    best = component(np.where(np.isfinite(composite), composite, bounds[1]), clusters).interval
    if worst is None or best is None:
        return comp
    why = (
        f"widened for {missing} missing outcome(s): from their worst ({bounds[0]:g}) to their "
        f"best ({bounds[1]:g})"
    )
    interval = replace(
        comp.interval,
        low=min(comp.interval.low, worst.low),
        high=max(comp.interval.high, best.high),
        reason=f"{comp.interval.reason}; {why}" if comp.interval.reason else why,
    )
    return ComponentSummary(comp.mean, comp.n, interval, comp.gate, comp.refusal, missing)


def _layers_used(values: Mapping[str, FloatArray], names: tuple[str, ...]) -> dict[str, int]:
    present = np.column_stack([np.isfinite(values[n]) for n in names])
    codes = present @ (1 << np.arange(len(names)))
    counts = np.bincount(codes, minlength=1 << len(names))
    used = {}
    for code in np.flatnonzero(counts):
        label = "+".join(n for i, n in enumerate(names) if code >> i & 1) or "none"
        used[label] = int(counts[code])
    return used


def _estimate(found: AgreementInterval | None) -> float | None:
    return None if found is None else found.estimate


def _cv_median(composite: FloatArray, cluster: npt.NDArray[np.int64]) -> float | None:
    """Median over samples with ≥ 2 epochs of sd/mean of the composite across epochs."""
    keep = np.isfinite(composite)
    x, c = composite[keep], cluster[keep]
    if x.size == 0:
        return None
    n = np.bincount(c).astype(float)
    s1 = np.bincount(c, weights=x)
    s2 = np.bincount(c, weights=x * x)
    ok = n >= 2
    if not ok.any():
        return None
    mean = s1[ok] / n[ok]
    var = np.maximum(s2[ok] - n[ok] * mean**2, 0.0) / (n[ok] - 1)
    positive = mean > 0
    if not positive.any():
        return None
    return float(np.median(np.sqrt(var[positive]) / mean[positive]))


def as_floats(column: Any) -> FloatArray:
    """A DuckDB numpy column (maybe masked where NULL) as floats with NaN for missing."""
    if isinstance(column, np.ma.MaskedArray):
        return np.asarray(np.ma.filled(column.astype(float), np.nan), dtype=np.float64)
    return np.asarray(column, dtype=np.float64)
