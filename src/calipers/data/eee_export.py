"""`calipers export OUT --format eee`: the store's runs in the Every Eval Ever (EEE) schema
0.3.0, laid out as EEE's datastore lays out a converter's output, so they can be validated
(`every_eval_ever validate`) and contributed: per run × task,
`OUT/data/<task>/<developer>/<model>/<uuid>.json` (the aggregate, eval.schema.json) and
`<uuid>_samples.jsonl` beside it (instance_level_eval.schema.json).

The names are data: the run is the `model_id` and the task the `evaluation_name` exactly as in
the store; only the directory names are made from them, every character outside
`[A-Za-z0-9._-]` replaced by `_` (the developer is the run's part before a `/`, else `unknown`).
The uuid is derived from run and task, so exporting again writes the same files.

One instance record per observation and metric: `evaluation_result_id` is the metric (each name
in `scores`; `correct` as 1 or 0 for an observation with no scores), `evaluation.score` its value,
`is_correct` calipers' `correct` (EEE requires one: where calipers has none it is written as
score ≥ 1 and the record's metadata says `calipers.correct: none`, which the import reads back as
no outcome), input, expected (`input.reference`), output, tokens, latency and error as calipers
has them; an epoch other than 0 goes into metadata (`calipers.epoch`). An observation with
neither scores nor `correct` (an error) has no score for EEE to hold and is counted, not written.
The aggregate has one result per metric: its mean over the observations (what `calipers runs`
shows), with their number and standard error.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calipers.data.adapters.eee import CORRECT, EPOCH
from calipers.errors import InputError

SCHEMA_VERSION = "0.3.0"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass
class Exported:
    files: list[Path]
    records: int
    left_out: int  # observations with neither scores nor `correct`


def export_eee(samples: list[dict[str, Any]], out: Path, version: str) -> Exported:
    """Write `samples` (sample dicts of the model) under `out`, one aggregate and one instance
    file per run × task."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a directory", hint="Give a directory.")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for sample in samples:
        groups[(sample["run"], sample["task"])].append(sample)
    if not groups:
        raise InputError("nothing to export: the store holds no samples for the runs asked")
    stamp = f"{time.time():.6f}"
    files: list[Path] = []
    written = left = 0
    for (run, task), rows in sorted(groups.items()):
        records, skipped = _records(run, task, rows)
        left += skipped
        if not records:
            continue
        folder = out / "data" / _safe(task) / _safe(_developer(run)) / _safe(_model(run))
        folder.mkdir(parents=True, exist_ok=True)
        name = _uuid(run, task)
        instances = folder / f"{name}_samples.jsonl"
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        instances.write_text(text, encoding="utf-8")
        aggregate = _aggregate(run, task, records, stamp, version)
        aggregate["detailed_evaluation_results"] = {
            "format": "jsonl",
            "file_path": instances.relative_to(out).as_posix(),
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "total_rows": len(records),
        }
        summary = folder / f"{name}.json"
        summary.write_text(json.dumps(aggregate, indent=2, ensure_ascii=False) + "\n", "utf-8")
        files += [summary, instances]
        written += len(records)
    return Exported(files, written, left)


def _safe(name: str) -> str:
    safe = _UNSAFE.sub("_", name.strip()).strip(".") or "_"
    return safe[:120]


def _split(run: str) -> bool:
    """A run named as a Hugging Face model is (`org/model`, no spaces): EEE's developer/model."""
    head, slash, tail = run.partition("/")
    return bool(slash and head and tail) and not any(c.isspace() for c in run)


def _developer(run: str) -> str:
    return run.split("/", 1)[0] if _split(run) else "unknown"


def _model(run: str) -> str:
    return run.split("/", 1)[1] if _split(run) else run


def _uuid(run: str, task: str) -> str:
    digest = hashlib.sha256(json.dumps([run, task]).encode("utf-8")).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _evaluation_id(run: str, task: str) -> str:
    return f"calipers/{task}/{run}"


def _records(run: str, task: str, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    records: list[dict[str, Any]] = []
    skipped = 0
    for row in sorted(rows, key=lambda r: (r["sample_id"], r["epoch"])):
        scores = {k: v for k, v in (row.get("scores") or {}).items() if _finite(v)}
        if not scores and row.get("correct") is not None:
            scores = {"correct": 1.0 if row["correct"] else 0.0}
        if not scores:
            skipped += 1
            continue
        for metric, score in sorted(scores.items()):
            records.append(_instance(run, task, row, metric, float(score)))
    return records, skipped


def _instance(
    run: str, task: str, row: dict[str, Any], metric: str, score: float
) -> dict[str, Any]:
    correct = row.get("correct")
    metadata = {CORRECT: "none" if correct is None else str(bool(correct)).lower()}
    if row.get("epoch"):
        metadata[EPOCH] = str(row["epoch"])
    expected = row.get("expected")
    record: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": _evaluation_id(run, task),
        "model_id": run,
        "evaluation_name": task,
        "evaluation_result_id": metric,
        "sample_id": row["sample_id"],
        "interaction_type": "single_turn",
        "input": {
            "raw": row.get("input") or "",
            "reference": [] if expected is None else [expected],
        },
        "output": {"raw": [row.get("output") or ""]},
        "messages": None,
        "answer_attribution": [],
        "evaluation": {
            "score": score,
            "is_correct": bool(correct) if correct is not None else score >= 1,
        },
        "metadata": metadata,
    }
    if row.get("tool_calls") is not None:
        record["evaluation"]["tool_calls_count"] = int(row["tool_calls"])
    if row.get("tokens_in") is not None and row.get("tokens_out") is not None:
        tokens_in, tokens_out = int(row["tokens_in"]), int(row["tokens_out"])
        record["token_usage"] = {"input_tokens": tokens_in, "output_tokens": tokens_out,
                                 "total_tokens": tokens_in + tokens_out}  # fmt: skip
    if row.get("latency_s") is not None:
        record["performance"] = {"latency_ms": float(row["latency_s"]) * 1000}
    if row.get("error"):
        record["error"] = str(row["error"])
    return record


def _aggregate(
    run: str, task: str, records: list[dict[str, Any]], stamp: str, version: str
) -> dict[str, Any]:
    by_metric: dict[str, list[float]] = defaultdict(list)
    for record in records:
        by_metric[record["evaluation_result_id"]].append(record["evaluation"]["score"])
    results = []
    for metric, scores in sorted(by_metric.items()):
        n = len(scores)
        mean = math.fsum(scores) / n
        details: dict[str, Any] = {"num_samples": n}
        if n > 1:
            sd = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / (n - 1))
            details["standard_deviation"] = sd
            details["standard_error"] = {"value": sd / math.sqrt(n), "method": "analytic"}
        results.append({
            "evaluation_result_id": metric,
            "evaluation_name": task,
            "source_data": {"dataset_name": task, "source_type": "other"},
            "metric_config": _metric_config(metric, n, scores),
            "score_details": {"score": mean, "uncertainty": details},
        })  # fmt: skip
    details = {"deployment_type": "unknown", "model_availability": "unknown"}
    model: dict[str, Any] = {"name": run, "id": run, "additional_details": details}
    if _split(run):
        model["developer"] = _developer(run)
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": _evaluation_id(run, task),
        "retrieved_timestamp": stamp,
        "source_metadata": {
            "source_name": "calipers",
            "source_type": "evaluation_run",
            "source_organization_name": "calipers",
            "evaluator_relationship": "other",
        },
        "eval_library": {"name": "calipers", "version": version},
        "model_info": model,
        "evaluation_results": results,
    }


def _metric_config(metric: str, n: int, scores: list[float]) -> dict[str, Any]:
    """`binary` (on 0..1) where every score is 0 or 1; otherwise no score type, since calipers
    knows no metric's bounds and EEE's `continuous` requires them (never read from the data)."""
    config: dict[str, Any] = {
        "evaluation_description": f"{metric}: the mean over {n} observations (calipers)",
        "metric_name": metric,
        "lower_is_better": False,
    }
    if all(s in (0.0, 1.0) for s in scores):
        config.update({"score_type": "binary", "min_score": 0.0, "max_score": 1.0})
    return config


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def store_rows(samples: Any) -> list[dict[str, Any]]:
    """A SampleSet's rows as sample dicts (`scores` a dict)."""
    rows: list[dict[str, Any]] = samples.to_arrow().to_pylist()
    for row in rows:
        if isinstance(row.get("scores"), list):  # a DuckDB MAP arrives as key/value pairs
            row["scores"] = {k: v for k, v in row["scores"]}
    return rows
