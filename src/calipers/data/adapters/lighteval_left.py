"""What of a lighteval run is not imported, and why (`unimported`): corpus-level metrics (their
per-document values are the metric's inputs, `{golds, preds}`), the results JSON's standard
errors and metrics no document carries, its `all` entry (the unweighted mean over tasks,
reproduced from the imported documents), and the details' fields with no place in the sample
model.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from calipers.data import jsontext
from calipers.data.adapters.unimported import Unimported, held

TOOL = "lighteval"
DOC_READ = {"query", "choices", "gold_index", "id", "task_name"}
RESPONSE_READ = {"input", "text", "input_tokens", "output_tokens"}
SKIPPED = {
    "doc.instruction": "the task's instruction",
    "doc.specific": "task-specific fields of the document",
    "doc.fewshot_samples": "the few-shot examples",
    "doc.original_query": "the query before formatting",
    "doc.unconditioned_query": "the query for unconditioned log-likelihoods",
    "doc.sampling_methods": "lighteval's configuration of the task",
    "doc.generation_size": "lighteval's configuration of the task",
    "doc.stop_sequences": "lighteval's configuration of the task",
    "doc.use_logits": "lighteval's configuration of the task",
    "doc.num_samples": "lighteval's configuration of the task",
    "doc.fewshot_sorting_class": "lighteval's configuration of the task",
    "doc.generation_grammar": "lighteval's configuration of the task",
    "doc.images": "the document's images",
    "model_response.text_post_processed": "the generation after post-processing (output is "
    "the raw text the metric saw)",
    "model_response.reasonings": "the reasoning removed from the generation",
    "model_response.logprobs": "log-probabilities",
    "model_response.logits": "logits",
    "model_response.unconditioned_logprobs": "log-probabilities",
    "model_response.argmax_logits_eq_gold": "per-token greedy match",
    "model_response.truncated_tokens_count": "prompt truncation (not calipers' truncated: the "
    "output hitting its limit)",
    "model_response.padded_tokens_count": "padding",
}


def record_fields(file: Path, record: dict[str, Any], where: str, left: Unimported) -> None:
    for part, read in (("doc", DOC_READ), ("model_response", RESPONSE_READ)):
        value = record.get(part)
        found = {
            f"{part}.{k}": v for k, v in held(value if isinstance(value, dict) else {}).items()
        }
        left.fields(file, found, {f"{part}.{k}" for k in read}, SKIPPED, where)
    left.fields(file, held(record), {"doc", "model_response", "metric"}, {}, where)


def results_of(details: Path, model: str) -> Path | None:
    """The results JSON of a details file: OUT/results/<model>/results_<date>.json."""
    date_dir = details.parent if "details" in details.parent.parts else details.resolve().parent
    parts = date_dir.parts
    if "details" not in parts[:-1]:
        return None
    out = Path(*parts[: len(parts) - 1 - parts[::-1].index("details")])
    found = out / "results" / model / f"results_{date_dir.name}.json"
    return found if found.is_file() else None


def run_left_out(
    results_file: Path | None,
    rows: list[dict[str, Any]],
    corpus: dict[tuple[str, str], str],
    left: Unimported,
) -> None:
    """`corpus`: (task, metric) → the details file whose documents hold its inputs."""
    results: dict[str, Any] = {}
    if results_file is not None:
        try:
            data = jsontext.loads_tool(results_file.read_text(encoding="utf-8"))
            found = data.get("results") if isinstance(data, dict) else None
        except (OSError, ValueError):
            found = None
        results = found if isinstance(found, dict) else {}
    for (task, name), file in corpus.items():
        value = _obj(results.get(task)).get(name)
        left.metric(
            file, name, "corpus-level",
            "lighteval computes it over the whole task (its corpus_level_fn) from each "
            "document's inputs ({golds, preds}); no document has a value of its own",
            task=task, value=value if _number(value) else None,
        )  # fmt: skip
    if results_file is None:
        return
    by_task: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        for name, value in (row.get("scores") or {}).items():
            by_task.setdefault(row["task"], {}).setdefault(name, []).append(value)
    for task, entry in results.items():
        if task == "all" or task not in by_task:
            continue
        for name, value in _obj(entry).items():
            if not _number(value) or name in by_task[task] or (task, name) in corpus:
                continue
            if name.endswith("_stderr"):
                left.metric(results_file, f"{task} {name}", "aggregate-only",
                            "lighteval's standard error", kind="total", value=value)  # fmt: skip
            else:
                left.metric(
                    results_file, name, "aggregate-only",
                    "lighteval reports it for the task, but no document has a numeric value",
                    task=task, value=value,
                )  # fmt: skip
    tasks = [t for t in results if t != "all" and t in by_task]
    for name, value in _obj(results.get("all")).items():
        if not _number(value) or name.endswith("_stderr"):
            if _number(value):
                left.metric(results_file, f"all {name}", "aggregate-only",
                            "lighteval's standard error", kind="total", value=value)  # fmt: skip
            continue
        corpus_level = any(metric == name for _, metric in corpus)
        _all(results_file, name, value, tasks, by_task, left, corpus_level)


def _all(
    file: Path, name: str, value: float, tasks: list[str],
    by_task: dict[str, dict[str, list[float]]], left: Unimported, corpus_level: bool,
) -> None:  # fmt: skip
    """lighteval's `all`: the unweighted mean over tasks of each task's value of the metric."""
    with_metric = [t for t in tasks if name in by_task[t]]
    if not with_metric:
        detail = "lighteval's mean over tasks of " + (
            "a corpus-level metric" if corpus_level else "a metric no imported document carries"
        )
        left.metric(file, name, "aggregate-only", detail, kind="group", task="all", value=value)
        return
    means = [sum(by_task[t][name]) / len(by_task[t][name]) for t in with_metric]
    own = sum(means) / len(means)
    matches = math.isclose(own, value, rel_tol=1e-9, abs_tol=1e-12)
    detail = (
        f"lighteval's unweighted mean over tasks ({', '.join(with_metric)}); calipers reproduces "
        f"it as the mean of their means: {own:.6g}"
        if matches
        else f"lighteval's mean over tasks ({', '.join(with_metric)}); the mean of their means, "
        f"{own:.6g}, differs"
    )
    reproduced = {"weighting": "unweighted", "value": own, "matches": matches,
                  "from": with_metric}  # fmt: skip
    left.metric(file, name, "aggregate-only", detail, kind="group", task="all", value=value,
                reproduced=reproduced)  # fmt: skip


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
