"""Evaluate assertion specs (type, value, weight, no `passed` yet) against each sample's output and
telemetry, and record the results: into a new JSON Lines file, or in place in the store."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calipers.data.files import open_bytes
from calipers.data.store import Store
from calipers.errors import InputError
from calipers.grading.assertions import evaluate

_SAMPLE_FIELDS = (
    "output",
    "decision",
    "cost_usd",
    "latency_s",
    "steps",
    "tool_calls",
    "tools",
    "error",
)


@dataclass(frozen=True)
class GradeSummary:
    samples: int  # samples with at least one assertion evaluated
    assertions: int  # assertions evaluated
    passed: int


def _json_or_text(value: Any) -> Any:
    """JSON columns come back from DuckDB as text; assertion values and tool inputs are JSON."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def grade_record(
    record: dict[str, Any], where: str, *, missing_fails: bool = False
) -> tuple[int, int]:
    """Evaluate the record's ungraded assertions in place; return (evaluated, passed)."""
    items = record.get("assertions") or []
    sample = {k: record.get(k) for k in _SAMPLE_FIELDS}
    if sample["tools"]:
        sample["tools"] = [{**t, "input": _json_or_text(t.get("input"))} for t in sample["tools"]]
    sample["decision"] = _json_or_text(sample["decision"])
    evaluated = passed = 0
    for i, item in enumerate(items):
        if item.get("passed") is not None:
            continue
        spec = {**item, "value": _json_or_text(item.get("value"))}
        outcome = evaluate(
            spec, sample, where=f"{where}, assertions[{i}]", missing_fails=missing_fails
        )
        item["passed"] = outcome.passed
        item["detail"] = outcome.detail
        evaluated += 1
        passed += outcome.passed
    return evaluated, passed


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open_bytes(path) as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                yield number, json.loads(raw)


def grade_file(source: Path, out: Path) -> GradeSummary:
    """Write `source` to `out` with every assertion spec evaluated. The file is validated first,
    so a bad line is reported with its location before anything is written."""
    from calipers.data.source import open_samples

    if source.suffix not in (".jsonl", ".gz") and not source.name.endswith(".jsonl.gz"):
        raise InputError(
            f"{source}: grade reads JSON Lines (assertions are nested lists)",
            hint="Export the samples as .jsonl first (`calipers export --format jsonl`).",
        )
    open_samples(source)  # validation: raises with file, line and field
    samples = assertions = passed = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for number, record in _lines(source):
                n, p = grade_record(record, f"{source} line {number}")
                samples += n > 0
                assertions += n
                passed += p
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return GradeSummary(samples, assertions, passed)


def grade_store(db: Path, *, runs: Sequence[str] | None = None) -> GradeSummary:
    """Evaluate the ungraded assertions of the store's samples and store the results in one
    transaction: either every sample is updated or none is."""
    with Store(db) as store:
        con = store.con
        cols = ", ".join(("run", "task", "sample_id", "epoch", "assertions", *_SAMPLE_FIELDS))
        where = "list_bool_or(list_transform(assertions, lambda a: a.passed IS NULL))"
        params: list[object] = []
        if runs:
            where += " AND list_contains(?, run)"
            params.append(list(runs))
        rel = con.execute(f"SELECT {cols} FROM samples WHERE {where}", params)
        names = [d[0] for d in rel.description]
        rows = [dict(zip(names, r, strict=True)) for r in rel.fetchall()]
        assertions = passed = 0
        updates = []
        for record in rows:
            key = (record["run"], record["task"], record["sample_id"], record["epoch"])
            where_text = f"{db} sample (run={key[0]}, task={key[1]}, sample_id={key[2]})"
            n, p = grade_record(record, where_text)
            assertions += n
            passed += p
            for item in record["assertions"]:
                if item.get("value") is not None and not isinstance(item["value"], str):
                    item["value"] = json.dumps(item["value"])
            updates.append([*key, record["assertions"]])
        store.update_column("assertions", updates)
        return GradeSummary(len(updates), assertions, passed)
