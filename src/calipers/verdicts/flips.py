"""What changed, sample by sample, between the two runs of a paired comparison: the flips.

A pair of runs is read as the comparison reads it (`calipers.verdicts.paired.match_rows`:
observations matched by (task, sample_id, epoch), each pair's value made from the components
both sides have). A sample's value on each side is the mean over its paired epochs, and its
change the candidate's mean minus the baseline's: the comparison's estimand, sample by sample.

- Pass/fail outcomes (every value 0 or 1): the 2×2 table of samples — both pass, only the
  baseline, only the candidate, neither — where a sample passes when the mean of its outcomes
  over its paired epochs is at least 0.5 (`PASS_RULE`). Any outcome: how many samples went up,
  down or stayed, and the quantiles of their changes.
- Regressions (the mean fell; higher is better in every scheme that pairs) and improvements (it
  rose) — and where the outcomes both sides have did not move or there are none, the side that
  lost more outcomes to errors (`error` set, no score) fell — each of one class, the first that
  applies: error (either side's sample errored in a matched epoch), judge-only (the output
  text is the same on both sides in every paired epoch: only the grade moved), stable (every
  paired epoch moved the same way) or flaky (mixed epochs). They are ordered by the size of the
  change; the largest `LISTED` of each direction carry their text (`calipers.verdicts.flip_text`).
- Where the flips concentrate: per task, and per band of the input's length (its quartiles),
  Fisher's exact test of more flips there than elsewhere, the p-values adjusted over the tasks
  (and over the bands) as the per-task differences are (Holm by default). A group is reported
  as concentrated only when its adjusted p is ≤ the pair's α.

Everything is computed on arrays, one pass per count (O(n) in the observations), and one query
for what the arrays lack (sample names, whether the outputs are equal, the inputs' lengths).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from calipers.data.files import sql_literal
from calipers.data.sampleset import SampleSet
from calipers.verdicts.by_task import adjust_p, adjustment_label
from calipers.verdicts.flip_text import (
    Flip,
    MatchedObservations,
    column,
    columns_of,
    fetch_texts,
    make_flip,
    word_diff,
)
from calipers.verdicts.paired import match_rows
from calipers.verdicts.persample import (
    _NAMES_LOCK,
    FloatArray,
    StagedRows,
    StagedScores,
    sample_keys_sql,
    staged_keys,
    staged_rows,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LISTED", "PASS_RULE", "Flip", "PairFlips", "fisher_greater", "pair_flips", "word_diff"]

PASS_RULE = (
    "a sample passes when the mean of its outcomes over its paired epochs is at least 0.5 (with "
    "one epoch: its outcome)"
)
CHANGE_RULE = (
    "a sample's value is the mean over its paired epochs, its change the candidate's minus the "
    "baseline's"
)
LISTED = 50  # regressions, and improvements, of a pair that carry their text
KINDS = ("stable", "flaky", "judge-only", "error")
QUANTILES = {"min": 0.0, "p10": 0.1, "p25": 0.25, "median": 0.5, "p75": 0.75, "p90": 0.9,
             "max": 1.0}  # fmt: skip
REGRESSION, UNCHANGED, IMPROVEMENT, NO_WAY = -1, 0, 1, 2  # a sample's direction, as a code
_WAY_NAMES = np.array(["regression", "unchanged", "improvement", None], dtype=object)  # code + 1
_KIND_NAMES = np.array([*KINDS, None], dtype=object)  # kind code; len(KINDS): none
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass
class PairFlips:
    """The flips of one (baseline, candidate) pair: counts overall and per task, the listed
    regressions and improvements, where they concentrate, and one row per sample."""

    control: str
    treatment: str
    binary: bool  # every paired value is 0 or 1: the 2×2 table applies
    overall: dict[str, Any]
    tasks: dict[str, dict[str, Any]]
    kinds: dict[str, dict[str, int]]  # direction → kind → samples
    regressions: list[Flip]  # the largest `listed`, largest first
    improvements: list[Flip]
    concentration: dict[str, Any]
    samples: dict[str, npt.NDArray[Any]]  # one entry per paired sample (`sample_frame`)
    listed: int = LISTED

    @property
    def n_regressions(self) -> int:
        return int(self.overall["n_regressions"])

    @property
    def n_improvements(self) -> int:
        return int(self.overall["n_improvements"])

    def sample_frame(self) -> pd.DataFrame:
        """One row per sample: both values (means over the paired epochs), the change, its
        direction and class, whether it errored and whether the outputs are the same."""
        import pandas as pd

        n = len(self.samples["task"])
        return pd.DataFrame(
            {"control": [self.control] * n, "treatment": [self.treatment] * n, **self.samples}
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "control": self.control,
            "treatment": self.treatment,
            "outcome": "pass/fail" if self.binary else "score",
            "rule": CHANGE_RULE + ("; " + PASS_RULE if self.binary else ""),
            **self.overall,
            "kinds": self.kinds,
            "listed": self.listed,
            "regressions": [f.to_dict() for f in self.regressions],
            "improvements": [f.to_dict() for f in self.improvements],
            "tasks": self.tasks,
            "concentration": self.concentration,
        }


def pair_flips(
    staged: StagedScores,
    samples: SampleSet,
    *,
    runs: list[str],
    control: str,
    treatment: str,
    alpha: float,
    adjust: str = "holm",
    listed: int = LISTED,
    locked: bool = False,
) -> PairFlips:
    """The flips of `treatment` against `control`. `staged` holds the components of `runs`, as
    staged from `samples` (the sample codes are those runs' keys); `alpha` and `adjust` are the
    pair's, for the concentration tests; `listed` regressions and improvements carry text.
    `locked`: each query takes the connection's lock (`persample._NAMES_LOCK`), for flips made
    beside a comparison whose run summaries ask for sample names (a DuckDB connection refuses a
    second call rather than wait)."""
    lock = _NAMES_LOCK if locked else contextlib.nullcontext()
    with lock:
        # whether the names can be read without the facts' join, and then (first, as the run
        # summaries beside a comparison ask for names from the same keys) the names
        textless = _textless(samples, runs, control, treatment)
        keys = staged_keys(staged) if textless else None
    matched = match_rows(staged, control, treatment)
    c_run, t_run = staged.fetch(control), staged.fetch(treatment)
    cc, tt = matched.control, matched.treatment
    raw_c = staged.composite(control)[matched.ic]
    raw_t = staged.composite(treatment)[matched.it]
    none = np.zeros(cc.size, dtype=bool)
    err_c = none if c_run.errored is None else c_run.errored[matched.ic]
    err_t = none if t_run.errored is None else t_run.errored[matched.it]
    uniq, codes = _sample_codes(c_run.sid[matched.ic])
    k = uniq.size
    both = np.isfinite(cc) & np.isfinite(tt)
    d = np.where(both, tt - cc, np.nan)

    # Counted and summed over every row, the others weighing 0, rather than over the rows picked
    # by a mask: no copy of the picked codes (a count in a quarter of the time over 1M rows). The
    # sums are the same to the bit (each bin starts at +0.0, and s + 0.0 is s).
    def count(mask: BoolArray) -> IntArray:
        return np.bincount(codes, weights=mask, minlength=k).astype(np.int64)

    def mean(values: FloatArray, rows: BoolArray, n: IntArray | None = None) -> FloatArray:
        """Per sample, the mean of `values` over `rows` (`n`: their count, when known)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            sums = np.bincount(codes, weights=np.where(rows, values, 0.0), minlength=k)
            return sums / (count(rows) if n is None else n)

    n_both = count(both)
    has = n_both > 0
    # delta: cand − base
    base, cand, delta = mean(cc, both, n_both), mean(tt, both, n_both), mean(d, both, n_both)
    # means of the same values summed in another order may differ in the last bit: not a change
    scale = float(np.max(np.abs(np.r_[cc[both], tt[both], 1.0])))
    delta[np.abs(delta) <= 1e-12 * scale] = 0.0
    up, down, same = count(both & (d > 0)), count(both & (d < 0)), count(both & (d == 0))
    any_error = c_run.errored is not None or t_run.errored is not None
    # without an errored row on either side, no sample errored nor lost an outcome (no counts)
    errored = count(err_c | err_t) > 0 if any_error else np.zeros(k, dtype=bool)
    # one side errored with no outcome where the other has one: that side lost an outcome
    t_lost = err_t & ~np.isfinite(raw_t) & np.isfinite(raw_c)
    c_lost = err_c & ~np.isfinite(raw_c) & np.isfinite(raw_t)
    no_counts = np.zeros(k, dtype=np.int64)
    t_fell, c_fell = (count(t_lost), count(c_lost)) if any_error else (no_counts, no_counts)
    way = np.full(k, NO_WAY, dtype=np.int8)
    way[has] = np.sign(delta[has]).astype(np.int8)
    # where the outcomes both sides have did not move, or there are none, the lost ones decide
    lone = (t_fell != c_fell) & ~(has & (delta != 0))
    way[lone] = np.where(t_fell[lone] > c_fell[lone], REGRESSION, IMPROVEMENT)
    alone = lone & ~has  # no epoch with both: each side's own mean (the errored side: none)
    if alone.any():
        base[alone] = mean(raw_c, np.isfinite(raw_c))[alone]
        cand[alone] = mean(raw_t, np.isfinite(raw_t))[alone]
    first = np.searchsorted(codes, np.arange(k))
    task_code = c_run.task_code[matched.ic][first] if k else np.zeros(0, np.int64)
    task_names = np.asarray(staged.tasks, dtype=object)[task_code]
    with lock:
        keyed = staged_rows(staged)
        facts = _sample_facts(
            samples, runs, control, treatment, uniq, task_names, textless=textless, keys=keys,
            keyed=keyed if keyed is not None and keyed.store_keys is not None else None,
        )  # fmt: skip
    moved = (way == REGRESSION) | (way == IMPROVEMENT)
    stable = (((way == REGRESSION) & (up == 0)) | ((way == IMPROVEMENT) & (down == 0))) & (
        same == 0
    )
    kind = np.full(k, len(KINDS), dtype=np.int8)
    kind[moved] = np.where(stable[moved], 0, 1)
    kind[moved & facts["same_output"]] = KINDS.index("judge-only")
    kind[moved & errored] = KINDS.index("error")
    size = np.abs(delta)
    # outcomes lost to errors: from the other side's value down to the scale's bottom (no bounds
    # declared: unknown, listed after the others)
    size[lone] = np.nan
    if staged.bounds is not None and lone.any():
        kept = np.where(way == REGRESSION, mean(raw_c, t_lost), mean(raw_t, c_lost))
        size[lone] = kept[lone] - staged.bounds[0]
    binary = bool(both.any()) and bool(
        np.all((cc[both] == 0) | (cc[both] == 1)) and np.all((tt[both] == 0) | (tt[both] == 1))
    )
    sides = (has, base, cand, delta, way, errored, binary)
    overall = _counts(np.zeros(k, np.int64), 1, *sides)[0]
    by_task = _counts(task_code, len(staged.tasks), *sides)
    tasks = {staged.tasks[int(t)]: by_task[int(t)] for t in np.unique(task_code)}
    kinds = {
        name: {KINDS[i]: int(n) for i, n in enumerate(np.bincount(
            kind[way == code], minlength=len(KINDS) + 1)[: len(KINDS)])}
        for name, code in (("regression", REGRESSION), ("improvement", IMPROVEMENT))
    }  # fmt: skip
    # largest first; ties in (task, sample_id) order, which is the samples' order; no size last
    order = np.argsort(-np.round(np.nan_to_num(size, nan=-1.0), 12), kind="stable")
    picked = {
        name: [int(j) for j in order[way[order] == code][:listed]]
        for name, code in (("regression", REGRESSION), ("improvement", IMPROVEMENT))
    }
    rows = MatchedObservations(
        codes, c_run.epoch[matched.ic], cc, tt, raw_c, raw_t, err_c, err_t, d
    )
    with lock:
        texts = fetch_texts(samples, control, treatment, facts, picked, rows)

    def flip(j: int, name: str) -> Flip:
        return make_flip(
            j, task=str(facts["task"][j]), sample_id=str(facts["sample_id"][j]), way=name,
            kind=str(_KIND_NAMES[kind[j]]), values=(base[j], cand[j], delta[j]), rows=rows,
            text=texts.get(j, {}),
        )  # fmt: skip

    flips = {name: [flip(j, name) for j in js] for name, js in picked.items()}
    per_sample: dict[str, npt.NDArray[Any]] = {
        "task": facts["task"], "sample_id": facts["sample_id"], "epochs": n_both,
        "baseline": base, "candidate": cand, "difference": delta,
        "direction": _WAY_NAMES[way + 1], "kind": _KIND_NAMES[kind], "errored": errored,
        "same_output": facts["same_output"],
    }  # fmt: skip
    if binary:
        for name, side in (("baseline_pass", base), ("candidate_pass", cand)):
            passes = np.full(k, None, dtype=object)  # None: no outcome on both sides
            passes[has] = side[has] >= 0.5
            per_sample[name] = passes
    concentration = _concentration(
        has, delta, task_code, staged.tasks, facts["input_chars"], alpha=alpha, adjust=adjust
    )
    return PairFlips(
        control, treatment, binary, overall, tasks, kinds, flips["regression"],
        flips["improvement"], concentration, per_sample, max(listed, 0),
    )  # fmt: skip


def _sample_codes(sids: IntArray) -> tuple[IntArray, IntArray]:
    """`np.unique(sids, return_inverse=True)`, in one pass where the matched rows come sorted
    by sample, as they do (no sort of a million codes for what one pass gives)."""
    if sids.size and bool(np.all(sids[1:] >= sids[:-1])):
        starts = np.r_[True, sids[1:] != sids[:-1]]
        return sids[starts], np.cumsum(starts) - 1
    uniq, codes = np.unique(sids, return_inverse=True)
    return uniq, codes.astype(np.int64)


def _counts(
    group: IntArray,
    n_groups: int,
    has: BoolArray,
    base: FloatArray,
    cand: FloatArray,
    delta: FloatArray,
    way: npt.NDArray[np.int8],
    errored: BoolArray,
    binary: bool,
) -> list[dict[str, Any]]:
    """Per group: the samples' changes (up, down, unchanged), how many errored, regressed and
    improved, the 2×2 table (pass/fail) and the quantiles of the changes."""

    def per(mask: BoolArray) -> list[int]:  # counted as `pair_flips.count` counts
        return [int(n) for n in np.bincount(group, weights=mask, minlength=n_groups)]

    n = per(has)
    counts = {
        "n_samples": n, "up": per(has & (delta > 0)), "down": per(has & (delta < 0)),
        "unchanged": per(has & (delta == 0)), "errored": per(errored),
        "n_regressions": per(way == REGRESSION), "n_improvements": per(way == IMPROVEMENT),
    }  # fmt: skip
    tables: dict[str, list[int]] = {}
    if binary:
        c_pass, t_pass = has & (base >= 0.5), has & (cand >= 0.5)
        tables = {
            "both_pass": per(c_pass & t_pass), "only_baseline": per(c_pass & ~t_pass),
            "only_candidate": per(has & ~c_pass & t_pass), "neither": per(has & ~c_pass & ~t_pass),
        }  # fmt: skip
    idx = np.flatnonzero(has)
    order = np.lexsort((delta[idx], group[idx]))  # by group, then by change
    ordered, grouped = delta[idx][order], group[idx][order]
    starts = np.searchsorted(grouped, np.arange(n_groups))
    ends = np.searchsorted(grouped, np.arange(n_groups), side="right")
    out = []
    for g in range(n_groups):
        body: dict[str, Any] = {name: values[g] for name, values in counts.items()}
        body["table"] = {name: values[g] for name, values in tables.items()} if n[g] and binary \
            else None  # fmt: skip
        body["distribution"] = None
        if n[g]:
            chunk = ordered[starts[g] : ends[g]]
            q = np.quantile(chunk, list(QUANTILES.values()))
            quantiles = {k: float(v) for k, v in zip(QUANTILES, q, strict=True)}
            body["distribution"] = {"mean": float(chunk.mean()), **quantiles}
        out.append(body)
    return out


def _sample_facts(
    samples: SampleSet,
    runs: list[str],
    control: str,
    treatment: str,
    sids: IntArray,
    tasks: npt.NDArray[Any],
    *,
    textless: bool,
    keys: tuple[npt.NDArray[Any], npt.NDArray[Any]] | None,
    keyed: StagedRows | None = None,
) -> dict[str, npt.NDArray[Any]]:
    """Per sample (in `sids` order): task, sample_id, whether the output is the same text on both
    sides in every matched epoch, and the input's length in characters (−1: none). The matched
    samples in (task, sample_id) order are the `sids` in order (the codes number those keys), and
    `tasks` their tasks (from the staged task codes: not fetched again, 500,000 strings in a 2 ×
    1M comparison); were they ever not one to one, the codes are joined by name. A pair staged
    alone without any output or input text (scores imported from another harness) has nothing to
    join (`_names_alone`; `textless`: what `_textless` found; `keys`: the staging's (task,
    sample_id) by code, read once, where it is)."""
    present = columns_of(samples)
    rel = samples.relation
    alone = _names_alone(samples, control, treatment, sids, textless, keys)
    if alone is not None:
        return {
            "task": np.asarray(tasks, dtype=object), "sample_id": alone,
            "same_output": np.zeros(sids.size, dtype=bool),
            "input_chars": np.full(sids.size, -1, dtype=np.int64),
        }  # fmt: skip
    if keyed is not None:
        found_keyed = _keyed_facts(samples, control, treatment, sids, keyed)
        if found_keyed is not None:
            return found_keyed
    cols = f"task, sample_id, epoch, {column('output', present)}, {column('input', present)}"
    facts = """bool_and(c.output IS NOT NULL AND c.output = t.output) AS same_output,
               coalesce(max(length(coalesce(c.input, t.input))), -1)::BIGINT AS input_chars"""
    pairs = f"""
        FROM (SELECT {cols} FROM {rel} WHERE run = {sql_literal(control)}) c
        JOIN (SELECT {cols} FROM {rel} WHERE run = {sql_literal(treatment)}) t
          USING (task, sample_id, epoch)
        GROUP BY c.task, c.sample_id
    """
    found = samples.con.execute(
        f"SELECT c.sample_id, {facts} {pairs} ORDER BY c.task, c.sample_id"
    ).fetchnumpy()
    at = np.arange(sids.size)
    ok = np.ones(sids.size, dtype=bool)
    if len(found["sample_id"]) == sids.size:
        found["task"] = tasks
    else:
        query = f"SELECT c.task, c.sample_id, {facts} {pairs}"
        found = samples.con.execute(
            f"SELECT k.sid, f.* FROM ({query}) f JOIN ({sample_keys_sql(rel, runs)}) k "
            "USING (task, sample_id) ORDER BY k.sid"
        ).fetchnumpy()
        found_sid = np.asarray(found["sid"], dtype=np.int64)
        at = np.minimum(np.searchsorted(found_sid, sids), max(found_sid.size - 1, 0))
        ok = found_sid[at] == sids if found_sid.size else np.zeros(sids.size, dtype=bool)

    def pick(name: str, empty: Any, dtype: Any) -> npt.NDArray[Any]:
        out = np.full(sids.size, empty, dtype=dtype)
        column = found[name]
        values = np.ma.filled(column, empty) if np.ma.isMaskedArray(column) else column
        out[ok] = np.asarray(values, dtype=dtype)[at[ok]]
        return out

    return {
        "task": pick("task", "", object),
        "sample_id": pick("sample_id", "", object),
        "same_output": pick("same_output", False, bool),
        "input_chars": pick("input_chars", -1, np.int64),
    }


def _keyed_facts(
    samples: SampleSet, control: str, treatment: str, sids: IntArray, keyed: StagedRows
) -> dict[str, npt.NDArray[Any]] | None:
    """`_sample_facts` joined on the store's integer keys (`keyed.store_keys`: each sample
    code's), not on the strings, and named from the staging's keys (`StagedRows.load_keys`,
    read by key): the same facts (a key is one (task, sample_id)), a sample not found named "" as
    the join by name leaves it. 2 × 1M rows: ≈ 0.3 s of CPU against 0.55 s (2026-11-27). None
    where the keys' names are not kept (more than `NAMES_KEPT`)."""
    assert keyed.store_keys is not None
    names = keyed.load_keys()
    if names is None:
        return None
    facts = """bool_and(c.output IS NOT NULL AND c.output = t.output) AS same_output,
               coalesce(max(length(coalesce(c.input, t.input))), -1)::BIGINT AS input_chars"""
    cols = "sample_key, epoch, output, input"
    found = samples.con.execute(
        f"""
        SELECT c.sample_key, {facts}
        FROM (SELECT {cols} FROM samples WHERE run = {sql_literal(control)}) c
        JOIN (SELECT {cols} FROM samples WHERE run = {sql_literal(treatment)}) t
          USING (sample_key, epoch)
        GROUP BY c.sample_key
        """
    ).fetchnumpy()
    store_keys = keyed.store_keys
    code_of = np.full(int(store_keys.max()) + 1 if store_keys.size else 0, -1, dtype=np.int64)
    code_of[store_keys] = np.arange(store_keys.size)
    found_key = np.asarray(found["sample_key"], dtype=np.int64)
    if found_key.size and int(found_key.max()) >= code_of.size:
        return None  # a key the staging did not see: the store changed between the reads
    found_code = code_of[found_key]
    if found_code.size and int(found_code.min()) < 0:
        return None
    row_of = np.full(store_keys.size, -1, dtype=np.int64)
    row_of[found_code] = np.arange(found_key.size)
    at = row_of[sids] if sids.size else np.zeros(0, dtype=np.int64)
    ok = at >= 0

    def pick(values: Any, empty: Any, dtype: Any) -> npt.NDArray[Any]:
        out = np.full(sids.size, empty, dtype=dtype)
        filled = np.ma.filled(values, empty) if np.ma.isMaskedArray(values) else values
        out[ok] = np.asarray(filled, dtype=dtype)[at[ok]]
        return out

    task, name = names
    return {
        "task": np.where(ok, np.asarray(task, dtype=object)[sids], ""),
        "sample_id": np.where(ok, np.asarray(name, dtype=object)[sids], ""),
        "same_output": pick(found["same_output"], False, bool),
        "input_chars": pick(found["input_chars"], -1, np.int64),
    }


def _textless(samples: SampleSet, runs: list[str], control: str, treatment: str) -> bool:
    """Whether the two runs are all that was staged (`runs`: the sample codes number their keys)
    and none of their rows has an output or an input, nor lacks its task, sample_id or epoch."""
    if sorted(set(runs)) != sorted({control, treatment}):
        return False
    present = columns_of(samples)
    where = f"run IN ({sql_literal(control)}, {sql_literal(treatment)})"
    output, text = column("output", present), column("input", present)
    found = samples.con.execute(
        f"""
        SELECT count(output) + count(input) + count(*) FILTER (
                   WHERE task IS NULL OR sample_id IS NULL OR epoch IS NULL)
        FROM (SELECT task, sample_id, epoch, {output}, {text} FROM {samples.relation}
              WHERE {where})
        """
    ).fetchall()
    return not found[0][0]


def _names_alone(
    samples: SampleSet,
    control: str,
    treatment: str,
    sids: IntArray,
    textless: bool,
    keys: tuple[npt.NDArray[Any], npt.NDArray[Any]] | None,
) -> npt.NDArray[Any] | None:
    """The sample_id of each of `sids`, when the pair is `textless` (from `keys` where the
    staging kept them, else read); else None. Then every sample has no same output and no input
    (what the join of `_sample_facts` finds for it), the samples the join pairs are the codes'
    (both match (task, sample_id, epoch), none NULL), and the names are read in the codes' order
    without that join: 0.33–0.37 s against 0.52–0.6 s of CPU on 2 × 1M rows (load 4)."""
    names: npt.NDArray[Any]
    if not textless:
        return None
    if keys is not None:
        names = keys[1]  # the keys in the order the sample codes number them
    else:
        # as `StagedRows.load_keys` reads them (`stage_rows`: row_number over the same ORDER BY
        # of the same distinct keys)
        where = f"run IN ({sql_literal(control)}, {sql_literal(treatment)})"
        names = np.asarray(samples.con.execute(
            f"SELECT sample_id FROM (SELECT DISTINCT task, sample_id FROM {samples.relation} "
            f"WHERE {where}) ORDER BY task, sample_id"
        ).fetchnumpy()["sample_id"], dtype=object)  # fmt: skip
    if sids.size and int(sids.max()) >= len(names):
        return None
    return np.asarray(names, dtype=object)[sids]


def _concentration(
    has: BoolArray,
    delta: FloatArray,
    task_code: IntArray,
    task_names: list[str],
    input_chars: IntArray,
    *,
    alpha: float,
    adjust: str,
) -> dict[str, Any]:
    """Per task and per input-length band (quartiles): Fisher's exact test of more flips (samples
    whose mean changed) there than in the other samples, adjusted over the groups of each kind."""
    flipped = (delta != 0) & has
    in_task = {int(t): task_names[int(t)] for t in np.unique(task_code[has])}
    groups = _fisher("task", task_code, in_task, flipped, has, alpha, adjust)
    known = has & (input_chars >= 0)
    if known.sum() >= 4:
        edges = np.unique(np.quantile(input_chars[known], [0.25, 0.5, 0.75]))
        band = np.searchsorted(edges, input_chars, side="left").astype(np.int64)
        names = {}
        for b in np.unique(band[known]):
            members = input_chars[known & (band == b)]
            names[int(b)] = f"{int(members.min())}–{int(members.max())} characters"
        groups += _fisher("input length", band, names, flipped, known, alpha, adjust)
    return {
        "test": "Fisher's exact test, one-sided (more flips in the group than in the other "
        f"samples); p adjusted by {adjustment_label(adjust)} over the tasks, and over the "
        "input-length bands (quartiles of the input's characters)",
        "alpha": alpha,
        "adjust": adjust,
        "base_rate": float(flipped.sum() / has.sum()) if has.any() else None,
        "groups": groups,
    }


def _fisher(
    where: str,
    group: IntArray,
    names: dict[int, str],
    flipped: BoolArray,
    kept: BoolArray,
    alpha: float,
    adjust: str,
) -> list[dict[str, Any]]:
    if len(names) < 2:
        return []
    size = max(names) + 1
    n_in = np.bincount(group[kept], minlength=size)
    flips_in = np.bincount(group[kept & flipped], minlength=size)
    total, flips = int(kept.sum()), int((flipped & kept).sum())
    out: list[dict[str, Any]] = []
    for code, name in names.items():
        n, a = int(n_in[code]), int(flips_in[code])
        out.append({
            "where": where, "name": name, "n": n, "flips": a, "rate": a / n if n else None,
            "rate_elsewhere": (flips - a) / (total - n) if total > n else None,
            "p_value": fisher_greater(a, n, flips, total),
        })  # fmt: skip
    for entry, p_adj in zip(out, adjust_p([e["p_value"] for e in out], adjust), strict=True):
        entry["p_adjusted"] = p_adj
        entry["concentrated"] = bool(p_adj <= alpha)
    return out


def _lchoose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_greater(a: int, n: int, flips: int, total: int) -> float:
    """Fisher's exact test, one-sided: the chance that a group of `n` of `total` samples, of
    which `flips` flipped, holds `a` or more flips (the hypergeometric upper tail; scipy's
    `fisher_exact(..., alternative="greater")`). Summed from the side of the mode that is the
    tail, term by term until the terms no longer count."""
    low, high = max(0, n - (total - flips)), min(n, flips)
    if a <= low:
        return 1.0
    if a > high:
        return 0.0
    base = _lchoose(total, n)

    def pmf(x: int) -> float:
        return math.exp(_lchoose(flips, x) + _lchoose(total - flips, n - x) - base)

    mode = (n + 1) * (flips + 1) // (total + 2)
    upper = a > mode  # the terms fall from a upwards; else from a − 1 downwards
    tail = 0.0
    for x in range(a, high + 1) if upper else range(a - 1, low - 1, -1):
        term = pmf(x)
        tail += term
        if term < tail * 1e-17:
            break
    return min(1.0, tail) if upper else min(1.0, max(0.0, 1.0 - tail))
