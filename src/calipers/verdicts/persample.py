"""Per-sample scores of the schemes that compare runs (layered, metric), and the unit they are
clustered by.

A comparable scheme stages, in one query, one row per sample — integer codes for the run, the
sample and the task, the epoch, and a value per component (the layers, or the one metric), NaN where
missing — as numpy arrays. Everything after that is shared: a run's summary
(`calipers.verdicts.run_summary`), the paired comparison (`calipers.verdicts.paired`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.data.duck import ordered, position_in
from calipers.data.files import sql_literal
from calipers.data.model import CLUSTER_UNITS, CLUSTERS
from calipers.data.sampleset import SampleSet
from calipers.errors import DataError, InputError
from calipers.stats.estimate import MIN_T_UNITS
from calipers.stats.interval_parts import sample_weights
from calipers.verdicts.sample_codes import keyed_rows, names_by_key, names_of_codes

FloatArray = npt.NDArray[np.float64]
Combine = Callable[[Mapping[str, FloatArray]], FloatArray]


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
    rows = StagedRows(columns, spans, tasks, samples, list(runs), store_keys=store_keys)
    _one_row_per_key(rows, codes)
    return rows


def _one_row_per_key(rows: StagedRows, run_code: npt.NDArray[Any]) -> None:
    """A run holds one row per (task, sample_id, epoch): the store's key, which an import keeps.
    Rows written around calipers (SQL of its own) can break it, and a pairing of such rows would
    match one row to the wrong one; said, with the sample, instead (sorted: neighbours)."""
    sid, epoch = rows.columns["sid"], rows.columns["epoch"]
    same = (run_code[1:] == run_code[:-1]) & (sid[1:] == sid[:-1]) & (epoch[1:] == epoch[:-1])
    if not same.any():
        return
    i = int(np.argmax(same)) + 1
    run = rows.runs[int(run_code[i])]
    name = rows.sample_names([int(sid[i])]).get(int(sid[i]), f"sample code {int(sid[i])}")
    more = int(same.sum()) - 1
    raise DataError(
        f"run '{run}' has more than one row for sample '{name}', epoch {int(epoch[i])}"
        + (f" (and {more} more such row{'s' if more > 1 else ''})" if more else "")
        + ": a run holds one row per (task, sample_id, epoch)",
        hint="Rows written into the store by SQL of its own? Delete the extra rows, or import "
        "the run again from its file (an import replaces the run).",
    )


NAMES_KEPT = 1_000_000  # sample names a staging keeps (`StagedRows.load_names`) at most
UNITS = CLUSTER_UNITS  # what a comparison can cluster by (the sample model's, data/model.py)
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


def as_floats(column: Any) -> FloatArray:
    """A DuckDB numpy column (maybe masked where NULL) as floats with NaN for missing."""
    if isinstance(column, np.ma.MaskedArray):
        return np.asarray(np.ma.filled(column.astype(float), np.nan), dtype=np.float64)
    return np.asarray(column, dtype=np.float64)
