"""What of an inspect_ai log is not imported, and why (`unimported`): the scorers' metrics that
are no mean of a per-sample value (stderr, std, var, custom metrics), the run's totals, the
sample fields with no place in the sample model, and score values inspect itself does not read
as numbers.

A scorer's `accuracy` or `mean` in `results.scores` is inspect's mean over samples of each
sample's reduced value: calipers' mean of the score it imported under the scorer's name (the
headline reducer) or `NAME@REDUCER`. It is reproduced from the imported rows and listed only when
it differs (a custom metric under that name) or has no score to be reproduced from.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from calipers.data.adapters.inspect_reducers import MEAN
from calipers.data.adapters.unimported import Unimported, held

TOOL = "inspect"
# results.scores metrics that are the mean over samples of the score's reduced values
MEANS = {"accuracy", "mean"}
HEADER_READ = {"version", "status", "eval", "results", "reductions", "samples", "stats"}
HEADER_SKIPPED = {
    "plan": "the solver plan and generation config (configuration, not results)",
    "tags": "the run's tags",
    "metadata": "the run's metadata",
    "invalidated": "inspect's flag for a log edited after the run",
    "error": "the run's error (the samples' errors are imported)",
    "location": "where inspect read the log from",
    "etag": "the log's storage tag",
}
SAMPLE_READ = {
    "id", "epoch", "input", "target", "output", "scores", "score", "model_usage", "total_time",
    "working_time", "error", "attachments",
}  # fmt: skip
SAMPLE_SKIPPED = {
    "messages": "the conversation (output is the final completion, input the first message)",
    "events": "the sample's transcript (model and tool calls, spans); read only to tell the "
    "graders' usage from the model's",
    "events_data": "the transcript's shared messages and calls",
    "message_refs": "references into the transcript",
    "metadata": "the dataset sample's metadata",
    "store": "the solver's store",
    "role_usage": "usage per model role (the same calls as model_usage, keyed by role)",
    "uuid": "inspect's id of this sample run",
    "started_at": "timestamps (latency_s is total_time)",
    "completed_at": "timestamps (latency_s is total_time)",
    "error_retries": "errors of retried attempts (the last attempt's error is imported)",
    "turn_count": "the number of turns",
    "limit": "the limit the sample hit",
    "sandbox": "the sandbox configuration",
    "setup": "the setup script",
    "files": "files copied into the sandbox",
    "choices": "the multiple-choice options",
}
SCORE_SKIPPED = {
    "answer": "the answer the scorer extracted",
    "explanation": "the scorer's explanation",
    "metadata": "the scorer's metadata",
    "history": "the score's edit history",
}


def left_out(
    path: Path,
    header: dict[str, Any],
    samples: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    headline: str,
    left: Unimported,
    to_float: Any,
) -> None:
    left.fields(path, held(header), HEADER_READ, HEADER_SKIPPED, "the log's header")
    _results(path, _obj(header.get("results")), rows, headline, left)
    _stats(path, _obj(header.get("stats")), left)
    for sample in samples:
        where = f"sample {sample['id']!r}, epoch {sample['epoch']}"
        left.fields(path, held(sample), SAMPLE_READ, SAMPLE_SKIPPED, where, "samples[].")
        scores = sample.get("scores")
        for name, score in _obj(scores).items():
            left.fields(path, held(_obj(score)), {"value"}, SCORE_SKIPPED, where,
                        "samples[].scores[].")  # fmt: skip
            value = _obj(score).get("value")
            for part, raw in value.items() if isinstance(value, dict) else [(None, value)]:
                if raw is None or to_float(raw) is not None or isinstance(raw, float):
                    continue  # read, absent, or NaN/Infinity (an unscored sample: noted)
                label = name if part is None else f"{name}/{part}"
                left.field(path, f"samples[].scores.{label}", "not-in-model", where, _UNREAD)


_UNREAD = (
    "a value inspect's value_to_float does not read as a number (inspect counts it as 0, "
    "with a warning); left out of scores"
)


def _results(
    path: Path, results: dict[str, Any], rows: list[dict[str, Any]], headline: str,
    left: Unimported,
) -> None:  # fmt: skip
    for name in ("total_samples", "completed_samples"):
        if _number(results.get(name)):
            left.metric(path, f"results.{name}", "aggregate-only", "inspect's count of samples",
                        kind="total", value=results[name])  # fmt: skip
    means = _means(rows)
    for entry in results.get("scores") or []:
        entry = _obj(entry)
        given, parent, reducer = (
            entry.get("name"),
            entry.get("scorer"),
            entry.get("reducer") or MEAN,
        )
        if not isinstance(given, str) or not isinstance(reducer, str):
            continue
        # a dict-valued scorer's key is an entry of its own (name `terse`, scorer `shape`)
        scorer = f"{parent}/{given}" if isinstance(parent, str) and parent != given else given
        score = scorer if reducer == headline else f"{scorer}@{reducer}"
        for metric, found in _obj(entry.get("metrics")).items():
            value = _obj(found).get("value")
            if not isinstance(value, int | float) or not _number(value):
                continue
            if metric not in MEANS:
                detail = f"inspect's {metric} over samples"
                left.metric(path, f"{score} {metric}", "aggregate-only", detail, kind="total",
                            value=value)  # fmt: skip
                continue
            own = means.get(score)
            if own is not None and math.isclose(own, value, rel_tol=1e-9, abs_tol=1e-12):
                continue  # calipers' mean of `score` is inspect's number: imported
            detail = (
                f"inspect's {metric} of scorer {scorer} ({reducer} reducer); no imported score "
                f"{score} to reproduce it from"
                if own is None
                else f"inspect's {metric} of scorer {scorer} ({reducer} reducer) differs from "
                f"calipers' mean of {score}, {own:.6g} (a metric of its own under that name)"
            )
            reproduced = None if own is None else {
                "weighting": "samples", "value": own, "matches": False, "from": [score],
            }  # fmt: skip
            left.metric(path, f"{score} {metric}", "aggregate-only", detail, value=value,
                        reproduced=reproduced)  # fmt: skip


def _stats(path: Path, stats: dict[str, Any], left: Unimported) -> None:
    for key in ("model_usage", "role_usage"):
        for model, usage in _obj(stats.get(key)).items():
            for name, value in _obj(usage).items():
                if _number(value):
                    left.metric(path, f"stats.{key}[{model}].{name}", "aggregate-only",
                                "inspect's usage totals", kind="total", value=value)  # fmt: skip


def _means(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Each score's mean over samples of its per-sample mean over epochs (calipers' mean)."""
    per: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        for name, value in (row.get("scores") or {}).items():
            per.setdefault(name, {}).setdefault(row["sample_id"], []).append(value)
    return {
        name: sum(sum(v) / len(v) for v in samples.values()) / len(samples)
        for name, samples in per.items()
    }


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
