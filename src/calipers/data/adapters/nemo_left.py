"""What of a NeMo Evaluator run is not imported, and why (`unimported`): results.yml's
statistics of each score other than its mean (stddev, stderr: aggregate-only; the mean, over
every sample and repeat, is reproduced from the imported rows and listed only when it differs),
`eval_factory_metrics.json`'s response and timing totals (the predictions carry no per-sample
tokens or latency: aggregate-only), and the dataset fields a prediction's metadata holds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from calipers.data.adapters.unimported import Unimported, held

TOOL = "nemo-evaluator"
LINE_READ = {"sample_id", "prompt", "response", "target", "scores", "status", "error", "metadata"}


def line_fields(file: Path, record: dict[str, Any], number: int, left: Unimported) -> None:
    left.fields(file, held(record), LINE_READ, {}, f"line {number}")
    metadata: dict[str, Any] = _obj(record.get("metadata"))
    if held({k: v for k, v in metadata.items() if k != "_repeat"}):
        left.field(file, "metadata", "not-in-model", f"line {number}",
                   "the dataset row's fields (its _repeat is the epoch)")  # fmt: skip


def run_left_out(
    config: dict[str, Any], task: str, rows: list[dict[str, Any]], left: Unimported
) -> None:
    directory = config.get("_dir")
    if not isinstance(directory, Path):
        return
    results = directory / "results.yml"
    tasks = _obj(_obj(config.get("results")).get("tasks"))
    per: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        for name, value in (row.get("scores") or {}).items():
            per.setdefault(name, {}).setdefault(row["sample_id"], []).append(value)
    for metric, entry in _obj(_obj(tasks.get(task)).get("metrics")).items():
        for name, score in _obj(_obj(entry).get("scores")).items():
            stats = _obj(_obj(score).get("stats"))
            for stat, value in stats.items():
                if stat not in ("mean", "count") and _number(value):
                    left.metric(results, f"{task} {metric} {name}.{stat}", "aggregate-only",
                                "nemo-evaluator's statistic over every sample and repeat",
                                kind="total", value=value)  # fmt: skip
            value = _obj(score).get("value")
            own = per.get(name)
            mean = None if not own else sum(sum(v) / len(v) for v in own.values()) / len(own)
            # nemo-evaluator rounds to 4 decimals
            if not isinstance(value, int | float) or not _number(value):
                continue
            if mean is not None and abs(mean - value) <= 5e-5:
                continue
            left.metric(
                results, f"{metric} {name}", "aggregate-only",
                "nemo-evaluator's mean, which calipers' mean of the imported scores "
                + ("does not reproduce" if mean is not None else "cannot reproduce (no score)"),
                task=task, value=value,
                reproduced=None if mean is None else {"weighting": "samples", "value": mean,
                                                      "matches": False, "from": [name]},
            )  # fmt: skip
    _factory(directory / "eval_factory_metrics.json", left)


def _factory(path: Path, left: Unimported) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for part in ("response_stats", "evaluation"):
        for name, value in _obj(_obj(data).get(part)).items():
            if _number(value) and name not in ("run_id", "last_request_time"):
                left.metric(path, f"{part}.{name}", "aggregate-only",
                            "nemo-evaluator's totals (the predictions carry no tokens or "
                            "latency of their own)", kind="total", value=value)  # fmt: skip


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
