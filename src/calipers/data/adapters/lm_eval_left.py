"""What of an lm-eval run is not imported, and why: corpus-level metrics, metrics with no
per-document value, group aggregates (reproduced where lm-eval's weighting can be told), and the
fields of a samples line that have no place in the sample model.

A group's number (lm-eval 0.4.13 `Group.aggregate`) is the mean over its **leaf** tasks' values of
one metric, each weighted by its `sample_len` when the group's `aggregate_metric_list` says
`weight_by_size: true` (the default), else by 1. The results JSON records the group's number and
its subtasks (`group_subtasks`) but not its config, so `weight_by_size` is read from the numbers:
the size-weighted mean of the leaf tasks' means is the pooled mean of their documents; when that
equals lm-eval's number the weighting is `size`, when the unweighted mean of the leaf tasks' means
does it is `unweighted` (subtasks of equal size make both equal: `size`). The means are calipers'
own, of the imported documents' scores.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from calipers.data.adapters.unimported import Unimported

DEFAULT_FILTER = "none"
LINE_READ = {"doc_id", "filter", "metrics", "arguments", "target", "resps"}
LINE_SKIPPED = {
    "doc": "the dataset's document (its fields are the task's, not the sample model's)",
    "filtered_resps": "the answer each filter extracted (the raw generation is output)",
    "doc_hash": "lm-eval's hash of the document",
    "prompt_hash": "lm-eval's hash of the prompt",
    "target_hash": "lm-eval's hash of the target",
}
# Keys of results[task] that are not metrics.
_NOT_METRICS = {"name", "alias", "sample_len", "sample_count", " ", ""}


def line_fields(
    file: Path, record: dict[str, Any], number: int, left: Unimported
) -> None:  # fmt: skip
    """A samples line's keys outside the sample model (the metrics' own keys are read)."""
    read = LINE_READ | {m for m in record.get("metrics") or [] if isinstance(m, str)}
    left.fields(file, record, read, LINE_SKIPPED, f"line {number}")


def score_key(metric: str, filter_name: str) -> str:
    return metric if filter_name == DEFAULT_FILTER else f"{metric},{filter_name}"


def _metric_keys(entry: dict[str, Any]) -> dict[str, Any]:
    """results[task]'s `metric,filter` values (not their stderr), under calipers' score keys."""
    out = {}
    for name, value in entry.items():
        if name in _NOT_METRICS or "," not in name:
            continue
        metric, _, filter_name = name.partition(",")
        if metric.endswith("_stderr"):
            continue
        out[score_key(metric, filter_name)] = value
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def run_left_out(
    results_file: Path | None,
    results: dict[str, Any] | None,
    rows: list[dict[str, Any]],
    corpus: dict[tuple[str, str], str],
    left: Unimported,
) -> None:
    """The run's metrics that no document carries, and its groups. `corpus` maps (task, score
    key) to the samples file that logged that metric's corpus-level inputs."""
    by_task: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        scores = by_task.setdefault(row["task"], {})
        for name, value in (row.get("scores") or {}).items():
            scores.setdefault(name, []).append(value)
    task_results = results.get("results") if isinstance(results, dict) else None
    task_results = task_results if isinstance(task_results, dict) else {}
    for (task, name), file in corpus.items():
        value = _metric_keys(task_results.get(task) or {}).get(name)
        left.metric(
            file, name, "corpus-level",
            "lm-eval computes it over the whole task from each document's logged inputs "
            "(a reference and a prediction, or a gold index and probabilities); no document has "
            "a value of its own",
            task=task, value=value if _is_number(value) else None,
        )  # fmt: skip
    if results_file is None or results is None:
        return
    subtasks = results.get("group_subtasks")
    subtasks = subtasks if isinstance(subtasks, dict) else {}
    for task, entry in task_results.items():
        if task in subtasks or task not in by_task or not isinstance(entry, dict):
            continue
        for name, value in _metric_keys(entry).items():
            if name in by_task[task] or (task, name) in corpus:
                continue
            left.metric(
                results_file, name, "aggregate-only",
                "lm-eval reports it for the task, but no document of the samples file has a "
                "numeric value of it",
                task=task, value=value if _is_number(value) else None,
            )  # fmt: skip
    for group in subtasks:
        entry = task_results.get(group)
        if not isinstance(entry, dict):
            entry = (results.get("groups") or {}).get(group)
        if isinstance(entry, dict):
            _group(results_file, group, entry, subtasks, by_task, task_results, left)


def _leaves(group: str, subtasks: dict[str, Any], seen: frozenset[str] = frozenset()) -> list[str]:
    out: list[str] = []
    for child in subtasks.get(group) or []:
        if not isinstance(child, str) or child in seen:
            continue
        out += _leaves(child, subtasks, seen | {group}) if child in subtasks else [child]
    return out


def _group(
    file: Path,
    group: str,
    entry: dict[str, Any],
    subtasks: dict[str, Any],
    by_task: dict[str, dict[str, list[float]]],
    task_results: dict[str, Any],
    left: Unimported,
) -> None:
    leaves = _leaves(group, subtasks)
    metrics = _metric_keys(entry)
    if not metrics:
        left.metric(
            file, group, "aggregate-only",
            f"a group of {', '.join(leaves)} with no aggregate metric (its subtasks are imported)",
            kind="group",
        )  # fmt: skip
    for name, value in metrics.items():
        with_metric = [t for t in leaves if name in _metric_keys(task_results.get(t) or {})]
        reproduced = _reproduce(name, value, with_metric, by_task)
        if reproduced is None:
            detail = (
                f"lm-eval's aggregate of its tasks ({', '.join(with_metric) or 'none'}), "
                "whose documents are not all imported, so it is not reproduced"
            )
        elif reproduced["matches"]:
            how = (
                "the pooled mean of their documents (weight_by_size: true)"
                if reproduced["weighting"] == "size"
                else "the unweighted mean of their means (weight_by_size: false)"
            )
            detail = (
                f"lm-eval's aggregate of {', '.join(with_metric)}; calipers reproduces it from "
                f"the imported documents as {how}: {reproduced['value']:.6g}"
            )
        else:
            detail = (
                f"lm-eval's aggregate of {', '.join(with_metric)}; neither the pooled mean of "
                f"their documents nor the mean of their means equals it (another aggregation)"
            )
        left.metric(
            file, name, "aggregate-only", detail, kind="group", task=group,
            value=value if _is_number(value) else None, reproduced=reproduced,
        )  # fmt: skip


def _reproduce(
    name: str, value: Any, tasks: list[str], by_task: dict[str, dict[str, list[float]]]
) -> dict[str, Any] | None:
    """The group's number again from the documents: pooled (size), else unweighted; None when
    a task's documents were not imported."""
    if not tasks or not _is_number(value) or any(name not in by_task.get(t, {}) for t in tasks):
        return None
    pooled = _mean([v for t in tasks for v in by_task[t][name]])
    means = [m for t in tasks if (m := _mean(by_task[t][name])) is not None]
    flat = _mean(means)
    base = {"from": tasks, "known_from": "lm-eval's number (its results JSON does not record "
            "the group's weight_by_size)"}  # fmt: skip
    if pooled is not None and math.isclose(pooled, value, rel_tol=1e-9, abs_tol=1e-9):
        return {"weighting": "size", "value": pooled, "matches": True, **base}
    if flat is not None and math.isclose(flat, value, rel_tol=1e-9, abs_tol=1e-9):
        return {"weighting": "unweighted", "value": flat, "matches": True, **base}
    return {"weighting": "size", "value": pooled, "matches": False, **base}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
