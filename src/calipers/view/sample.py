"""The sample page's data: one sample (task, sample_id) of one run, and of another beside it —
the input and expected answer, every epoch's output on both sides with the word diff between
them (`calipers.verdicts.flip_text.word_diff`, the flips' diff), each epoch's values (`correct`,
`scores`, assertions, judges' scores and rationales, human labels), its telemetry, its error, and
the file it was imported from. Read with one parameterised query: the names are data."""

from __future__ import annotations

import json
from typing import Any

from calipers.data.store import Store
from calipers.verdicts.flip_text import word_diff
from calipers.view.reading import NotFound

TEXT_LIMIT = 20_000  # characters of an input, output, error or rationale shown (then a marker)

_OBSERVATION = (
    "run", "epoch", "output", "error", "correct", "scores", "assertions", "judgments", "human",
    "decision", "tools", "tokens_in", "tokens_out", "cost_usd", "latency_s", "tool_calls",
    "steps", "grader_tokens_in", "grader_tokens_out", "grader_cost_usd", "guess_chance",
    "truncated", "tier", "point", "group", "perturbation", "perturbation_of", "source",
    "imported_at", "input", "expected",
)  # fmt: skip
TELEMETRY = (
    "tokens_in", "tokens_out", "cost_usd", "latency_s", "tool_calls", "steps",
    "grader_tokens_in", "grader_tokens_out", "grader_cost_usd",
)  # fmt: skip


def clip(text: Any, limit: int = TEXT_LIMIT) -> str | None:
    if text is None:
        return None
    shown = str(text)
    if len(shown) <= limit:
        return shown
    return shown[:limit] + f"… [{len(shown) - limit:,} more characters]"


def _plain(name: str, value: Any) -> Any:
    """A stored value as JSON-ready data: timestamps as ISO text, JSON columns parsed, long
    texts clipped."""
    if value is None:
        return None
    if name == "imported_at":
        return value.isoformat()
    if name == "decision":
        try:
            return json.loads(value)
        except (TypeError, ValueError):
            return value
    if name in ("output", "error", "input", "expected"):
        return clip(value)
    if name == "judgments":
        return [{**j, "rationale": clip(j.get("rationale"))} for j in value]
    if name == "tools":
        return [{**t, "output": clip(t.get("output"))} for t in value]
    return value


def sample_detail(
    store: Store, run: str, other: str | None, task: str, sample_id: str
) -> dict[str, Any]:
    """The sample `task`/`sample_id` of `run` (and of `other`, when given) as the page shows it."""
    runs = [run] if not other or other == run else [run, other]
    known = {
        str(r[0])
        for r in store.con.execute(
            "SELECT DISTINCT run FROM samples WHERE run IN (SELECT unnest(?))", [runs]
        ).fetchall()
    }
    for name in runs:
        if name not in known:
            raise NotFound(f"no run {name!r} in the store", hint="Pick runs on the runs page.")
    cols = ", ".join(f'"{c}"' for c in _OBSERVATION)
    found = store.con.execute(
        f"SELECT {cols} FROM samples WHERE run IN (SELECT unnest(?)) AND task = ? "
        "AND sample_id = ? ORDER BY epoch, run",
        [runs, task, sample_id],
    ).fetchall()
    rows = [{c: _plain(c, v) for c, v in zip(_OBSERVATION, r, strict=True)} for r in found]
    if not any(r["run"] == run for r in rows):
        raise NotFound(
            f"the run {run!r} has no sample {sample_id!r} in task {task!r}",
            hint="Open samples from a comparison's flips, or check the task and id.",
        )
    first = next((r for r in rows if r["input"] is not None or r["expected"] is not None), None)
    epochs: list[dict[str, Any]] = []
    for epoch in sorted({r["epoch"] for r in rows}):
        sides = {name: _observation(rows, name, epoch) for name in runs}
        a, b = sides[runs[0]], sides[runs[-1]]
        diff = None
        if len(runs) == 2 and a is not None and b is not None and (a["output"] or b["output"]):
            diff = word_diff(clip(a["output"], 5_000), clip(b["output"], 5_000))
        epochs.append({"epoch": epoch, "sides": sides, "diff": diff})
    return {
        "task": task,
        "sample_id": sample_id,
        "runs": runs,
        "input": None if first is None else first["input"],
        "expected": None if first is None else first["expected"],
        "epochs": epochs,
    }


def _observation(rows: list[dict[str, Any]], run: str, epoch: int) -> dict[str, Any] | None:
    for r in rows:
        if r["run"] == run and r["epoch"] == epoch:
            body = {k: v for k, v in r.items() if k not in ("run", "epoch", "input", "expected")}
            body["telemetry"] = {k: body.pop(k) for k in TELEMETRY if body.get(k) is not None}
            for k in TELEMETRY:
                body.pop(k, None)
            return body
    return None
