"""MLflow evaluation results: the artifact `eval_results_table.json` that `mlflow.evaluate`
(`mlflow.models.evaluate`) logs for a run (checked with mlflow 3.17.2): pandas' "split" layout,
`{"columns": [...], "data": [[...], ...]}`, one row per row of the evaluation data: its input
columns, the targets column, `outputs` (the model's predictions), `latency` and `token_count`
where those metrics ran, and `<metric>/score` (and `<metric>/justification`) per metric that
scores rows.

One sample per row. `run` is the name before `.eval_results_table.json` when the file was saved
so (`lookup.eval_results_table.json`), else the MLflow run id of an artifact path
(`mlruns/<experiment>/<run id>/artifacts/eval_results_table.json`), else the directory's name
(`--as` names it otherwise); `task` is `mlflow`; `sample_id` is the row's position in the
evaluation data (0, 1, …): MLflow keeps the data's order, so runs evaluated on the same data pair
by it; epoch 0. `scores` are the `<metric>/score` columns' finite numbers (MLflow's per-row values,
whose mean is its `<metric>/mean`); `output` is `outputs`; `expected` is a `targets` or
`ground_truth` column; `input` is the one other column (`inputs`), or the others as a JSON object;
`latency_s` is `latency` (seconds, as MLflow times it); `tokens_out` is `token_count` (MLflow
counts the output's tokens). `correct` only where the file has one metric, all of whose scores
are 0 or 1. Not imported: justifications (text), and the metrics MLflow logs only as aggregates
(`exact_match/v1`, `accuracy_score`, …), which are not in the table.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from calipers.data.adapters import values
from calipers.data.adapters.jsonfile import load_json
from calipers.data.adapters.values import Notes, Rows
from calipers.errors import InputError

TASK = "mlflow"
ARTIFACT = "eval_results_table.json"
_HINT = (
    "Pass the eval_results_table.json artifact of an `mlflow.evaluate` run "
    "(mlflow.artifacts.download_artifacts(run_id=..., artifact_path='eval_results_table.json'))."
)
_HEAD = re.compile(r'^\s*\{\s*"columns"\s*:\s*\[')
_TARGETS = ("targets", "ground_truth")
_OWN = {"outputs", "latency", "token_count", *_TARGETS}


def detect(path: Path) -> bool:
    """A .json in pandas' split layout, named eval_results_table.json or with a `…/score` or
    `outputs` column."""
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
    except OSError:
        return False
    if _HEAD.match(head) is None:
        return False
    return path.name.endswith(ARTIFACT) or bool(re.search(r'"(?:outputs|[^"]*\\?/score)"', head))


def run_name(path: Path) -> str:
    if path.name.endswith("." + ARTIFACT):
        return path.name[: -len(ARTIFACT) - 1]
    parent = path.resolve().parent
    if parent.name == "artifacts" and parent.parent.name:
        return parent.parent.name
    return parent.name or path.stem


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per row of the table."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not MLflow's {ARTIFACT}", hint=_HINT)
    data = load_json(path, cut_short="a partial download")
    if not (isinstance(data, dict) and isinstance(data.get("columns"), list)
            and isinstance(data.get("data"), list)):  # fmt: skip
        raise InputError(
            f"{path}: not MLflow's evaluation table (expected an object with a `columns` list "
            "and a `data` list of rows)",
            hint=_HINT,
        )
    columns = [values.key(c, f"{path}, columns", "columns") for c in data["columns"]]
    if len(set(columns)) < len(columns):
        raise InputError(f"{path}, columns: a column is named twice", hint=_HINT)
    if not data["data"]:
        raise InputError(f"{path}: holds no rows", hint=_HINT)
    metrics = [c for c in columns if c.endswith("/score")]
    inputs = [c for c in columns if c not in _OWN and "/" not in c]
    run = run_name(path)
    notes = Notes()
    rows = []
    for number, cells in enumerate(data["data"]):
        where = f"{path}, row {number}"
        if not isinstance(cells, list) or len(cells) != len(columns):
            raise InputError(
                f"{where}: expected a list of {len(columns)} values (one per column), got "
                f"{len(cells) if isinstance(cells, list) else type(cells).__name__}",
                hint=_HINT,
            )
        record = dict(zip(columns, cells, strict=True))
        row: dict[str, Any] = {"run": run, "task": TASK, "sample_id": str(number), "epoch": 0}
        _texts(row, record, inputs)
        latency = notes.number(path, "latency", record.get("latency"), f"row {number}")
        if latency is not None:
            row["latency_s"] = latency
        tokens = notes.number(path, "token_count", record.get("token_count"), f"row {number}",
                              whole=True)  # fmt: skip
        if tokens is not None:
            row["tokens_out"] = tokens
        scores = {}
        for column in metrics:
            score = notes.score(path, column[: -len("/score")], record[column], f"row {number}")
            if score is not None:
                scores[column[: -len("/score")]] = score
        if scores:
            row["scores"] = scores
        rows.append(row)
    return Rows(_correct(rows, metrics), notes.lines())


def _texts(row: dict[str, Any], record: dict[str, Any], inputs: list[str]) -> None:
    if record.get("outputs") is not None:
        row["output"] = _text(record["outputs"])
    target = next((c for c in _TARGETS if record.get(c) is not None), None)
    if target is not None:
        row["expected"] = _text(record[target])
    if len(inputs) == 1 and record[inputs[0]] is not None:
        row["input"] = _text(record[inputs[0]])
    elif inputs:
        row["input"] = json.dumps({c: record[c] for c in inputs}, ensure_ascii=False)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _correct(rows: list[dict[str, Any]], metrics: list[str]) -> list[dict[str, Any]]:
    scored = [v for row in rows for v in row.get("scores", {}).values()]
    if len(metrics) == 1 and scored and all(v in (0.0, 1.0) for v in scored):
        for row in rows:
            if row.get("scores"):
                row["correct"] = next(iter(row["scores"].values())) == 1.0
    return rows
