"""The text of the flips a comparison lists (`calipers.verdicts.flips`): for each, the epoch that
moved most its way, the input, the expected answer, both outputs and a word diff of them
(difflib), the per-epoch values and both sides' judges with their rationales — fetched in one
query for the listed samples only, each text cut at TEXT_LIMIT characters."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.data.files import sql_literal
from calipers.data.sampleset import SampleSet
from calipers.verdicts.persample import FloatArray

TEXT_LIMIT = 2000  # characters of an input, expected answer, output, error or rationale kept
_TOKENS = re.compile(r"\s+|\S+")
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass
class Flip:
    """One sample that moved, with what a reader needs to see why."""

    task: str
    sample_id: str
    direction: str  # "regression" or "improvement"
    kind: str  # stable, flaky, judge-only or error
    baseline: float | None  # mean over the paired epochs (None: no outcome, it errored)
    candidate: float | None
    difference: float | None
    epochs: list[dict[str, Any]]  # per matched epoch: both values and whether each side errored
    epoch: int | None = None  # the epoch whose text is shown: the largest move that way
    input: str | None = None
    expected: str | None = None
    baseline_output: str | None = None
    candidate_output: str | None = None
    diff: list[dict[str, str]] = field(default_factory=list)  # word diff, baseline → candidate
    baseline_error: str | None = None
    candidate_error: str | None = None
    rationales: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task, "sample_id": self.sample_id, "direction": self.direction,
            "kind": self.kind, "baseline": self.baseline, "candidate": self.candidate,
            "difference": self.difference, "epochs": self.epochs, "epoch": self.epoch,
            "input": self.input, "expected": self.expected,
            "baseline_output": self.baseline_output, "candidate_output": self.candidate_output,
            "diff": self.diff, "baseline_error": self.baseline_error,
            "candidate_error": self.candidate_error, "rationales": self.rationales,
        }  # fmt: skip


@dataclass
class MatchedObservations:
    """The matched observations of a pair in sample order (`codes` sorted): each one's epoch,
    the like-with-like values, the raw ones, whether each side errored, and the change."""

    codes: npt.NDArray[np.intp]
    epoch: IntArray
    cc: FloatArray
    tt: FloatArray
    raw_c: FloatArray
    raw_t: FloatArray
    err_c: BoolArray
    err_t: BoolArray
    d: FloatArray

    def of(self, j: int) -> range:
        """The rows of the `j`-th sample."""
        return range(int(np.searchsorted(self.codes, j)), int(np.searchsorted(self.codes, j + 1)))

    def shown(self, j: int, way: str) -> int | None:
        """The row whose text a flip shows: the largest move its way (the first of equals), else
        an errored one."""
        span = self.of(j)
        sign = 1.0 if way == "improvement" else -1.0
        moves = [(sign * self.d[i], -i) for i in span if np.isfinite(self.d[i])]
        if moves:
            return -max(moves)[1]
        errored = [i for i in span if self.err_c[i] or self.err_t[i]]
        return errored[0] if errored else (span[0] if span else None)

    def epochs(self, j: int) -> list[dict[str, Any]]:
        out = []
        for i in self.of(j):
            paired = bool(np.isfinite(self.cc[i]) and np.isfinite(self.tt[i]))
            out.append({
                "epoch": int(self.epoch[i]),
                "baseline": _value(self.cc[i] if paired else self.raw_c[i]),
                "candidate": _value(self.tt[i] if paired else self.raw_t[i]),
                "baseline_errored": bool(self.err_c[i]),
                "candidate_errored": bool(self.err_t[i]),
            })  # fmt: skip
        return out


def _value(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def columns_of(samples: SampleSet) -> set[str]:
    query = samples.con.execute(f"SELECT * FROM {samples.relation} LIMIT 0")
    return {d[0] for d in query.description}


def column(name: str, present: set[str], kind: str = "VARCHAR") -> str:
    """`name`, or a NULL of its type where the samples lack the column (a plain file)."""
    return name if name in present else f"NULL::{kind} AS {name}"


def fetch_texts(
    samples: SampleSet,
    control: str,
    treatment: str,
    names: dict[str, npt.NDArray[Any]],
    picked: dict[str, list[int]],
    rows: MatchedObservations,
) -> dict[int, dict[str, Any]]:
    """Per listed sample (its index; `names` holds each one's task and sample_id, `picked` the
    indices by direction), the shown epoch and both sides' text, in one query over the listed
    samples."""
    shown = {j: rows.shown(j, way) for way, js in picked.items() for j in js}
    if not shown:
        return {}
    present = columns_of(samples)
    keys = {(str(names["task"][j]), str(names["sample_id"][j])): j for j in shown}
    wanted = ", ".join(f"({sql_literal(t)}, {sql_literal(s)})" for t, s in keys)
    judgments = "judgments" if "judgments" in present else "NULL AS judgments"
    fetched = samples.con.execute(
        f"""
        SELECT task, sample_id, run, epoch, {column("input", present)},
               {column("expected", present)}, {column("output", present)},
               {column("error", present)}, {judgments}
        FROM {samples.relation}
        WHERE run IN ({sql_literal(control)}, {sql_literal(treatment)})
          AND (task, sample_id) IN (SELECT * FROM (VALUES {wanted}))
        """
    ).fetchall()
    by: dict[tuple[int, str, int], tuple[Any, ...]] = {
        (keys[str(r[0]), str(r[1])], str(r[2]), int(r[3])): r[4:] for r in fetched
    }
    out: dict[int, dict[str, Any]] = {}
    for j, i in shown.items():
        if i is None:
            continue
        epoch = int(rows.epoch[i])
        c, t = by.get((j, control, epoch)), by.get((j, treatment, epoch))
        first = c or t
        out[j] = {
            "epoch": epoch,
            "input": clip(first[0]) if first else None,
            "expected": clip(first[1]) if first else None,
            "baseline_output": clip(c[2]) if c else None,
            "candidate_output": clip(t[2]) if t else None,
            "baseline_error": clip(c[3]) if c else None,
            "candidate_error": clip(t[3]) if t else None,
            "rationales": {"baseline": _judgments(c[4] if c else None),
                           "candidate": _judgments(t[4] if t else None)},
        }  # fmt: skip
    return out


def clip(text: Any) -> str | None:
    if text is None:
        return None
    shown = str(text)
    return shown if len(shown) <= TEXT_LIMIT else shown[:TEXT_LIMIT] + "…"


def _judgments(found: Any) -> list[dict[str, Any]]:
    """The judges' scores and rationales of one observation (dimension None: overall)."""
    out = []
    for j in found or []:
        if isinstance(j, dict):
            out.append({
                "judge": j.get("judge"), "dimension": j.get("dimension"),
                "score": j.get("score"), "rationale": clip(j.get("rationale")),
            })  # fmt: skip
    return out


def word_diff(before: str | None, after: str | None) -> list[dict[str, str]]:
    """`before` → `after` word by word (whitespace kept): runs of equal, deleted and inserted
    text, as difflib's SequenceMatcher aligns the words."""
    a, b = _TOKENS.findall(before or ""), _TOKENS.findall(after or "")
    ops: list[dict[str, str]] = []

    def add(op: str, words: list[str]) -> None:
        if not words:
            return
        if ops and ops[-1]["op"] == op:
            ops[-1]["text"] += "".join(words)
        else:
            ops.append({"op": op, "text": "".join(words)})

    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            add("equal", a[i1:i2])
        else:
            add("delete", a[i1:i2])
            add("insert", b[j1:j2])
    return ops


def make_flip(
    j: int,
    *,
    task: str,
    sample_id: str,
    way: str,
    kind: str,
    values: tuple[float, float, float],
    rows: MatchedObservations,
    text: dict[str, Any],
) -> Flip:
    """The `j`-th sample as a Flip: `values` are its baseline, candidate and difference."""
    base, cand, delta = values
    flip = Flip(
        task=task, sample_id=sample_id, direction=way, kind=kind, baseline=_value(base),
        candidate=_value(cand), difference=_value(delta), epochs=rows.epochs(j),
    )  # fmt: skip
    if text:
        flip.epoch, flip.input, flip.expected = text["epoch"], text["input"], text["expected"]
        flip.baseline_output = text["baseline_output"]
        flip.candidate_output = text["candidate_output"]
        flip.baseline_error, flip.candidate_error = text["baseline_error"], text["candidate_error"]
        flip.rationales = text["rationales"]
        if flip.baseline_output is not None or flip.candidate_output is not None:
            flip.diff = word_diff(flip.baseline_output, flip.candidate_output)
    return flip
