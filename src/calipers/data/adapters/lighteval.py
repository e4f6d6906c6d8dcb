"""lighteval details (`lighteval <backend> … --save-details --output-dir OUT`, the layout of
lighteval 0.11 and later: one `Detail(doc, model_response, metric)` per document):
`OUT/details/<model>/<date>/details_<task>|<fewshot>_<date>.parquet`, next to
`OUT/results/<model>/results_<date>.json` (aggregates, `config_general.model_name`).

The path is a details parquet file, a results JSON (every details file of its run), or a directory
holding details files up to four levels down (OUT, OUT/details, …): every run in it.

One sample per document: `sample_id` is `doc.id`, `task` the `doc.task_name` (`tiny_mc|0`, the
key of lighteval's results), `epoch` 0 (lighteval scores a document once; `num_samples`
generations of one document are inputs of one metric). `scores` holds each finite numeric value
of `metric` under lighteval's metric name (`acc`, `em`); structured values (the per-document
inputs of corpus-level metrics such as chrf, bleu, mcc) are left out. `correct` only when a file
has one score key and every value is 0 or 1. `output` is `model_response.text` when it holds one
generation; `input` the prompt the model recorded (`model_response.input`; chat messages as JSON),
else `doc.query`;
`expected` the gold choice(s) `doc.choices[doc.gold_index]`, newline-joined. `run` is the model
name as lighteval lays it out: the directories between `details/` and `<date>/`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from calipers.data import jsontext
from calipers.data.adapters import lighteval_left
from calipers.data.adapters.unimported import Unimported
from calipers.data.adapters.values import Notes, Rows, key
from calipers.errors import InputError

_DATE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"  # datetime.isoformat(), ":" → "-"
_DETAILS = re.compile(rf"details_(?P<task>.+)_(?P<date>{_DATE})\.parquet")
_RESULTS = re.compile(rf"results_(?P<date>{_DATE})\.json")
_COLUMNS = {"doc", "metric", "model_response"}
_HINT = "Pass what `lighteval … --save-details --output-dir OUT` wrote: OUT, a details file, …"


def _is_details(path: Path) -> bool:
    # pyarrow here, not at the top: every `calipers import` loads this module, and pyarrow's
    # import took 0.3–0.6 s of a JSON Lines import that never needs it
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return set(pq.read_schema(path).names) >= _COLUMNS
    except (OSError, ValueError, pa.ArrowException):
        return False


def _details_in(directory: Path) -> list[Path]:
    found: list[Path] = []
    for depth in range(5):  # OUT/details/<org>/<model>/<date>/ at most
        found += sorted(directory.glob("*/" * depth + "details_*.parquet"))
    return [p for p in found if _is_details(p)]


def _is_results(path: Path) -> bool:
    try:
        data = jsontext.loads_tool(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and {"config_general", "results", "config_tasks"} <= set(data)


def detect(path: Path) -> bool:
    """A details parquet (columns doc, metric, model_response), a results JSON of lighteval
    (config_general, results, config_tasks), or a directory with details files in it."""
    try:
        if path.is_dir():
            return bool(_details_in(path))
        if path.suffix == ".parquet":
            return _is_details(path)
        if _RESULTS.fullmatch(path.name):
            return _is_results(path)
    except OSError:
        pass
    return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per document of every details file the path stands for."""
    if path.is_dir():
        files = _details_in(path)
        if not files:
            raise InputError(
                f"{path}: no lighteval details_<task>_<date>.parquet in it", hint=_HINT
            )
    elif path.suffix == ".json":
        files = _details_of_results(path)
    else:
        files = [path]
    rows: list[dict[str, Any]] = []
    notes = Notes()
    left = Unimported(lighteval_left.TOOL)
    runs: dict[Path | None, tuple[list[dict[str, Any]], dict[tuple[str, str], str]]] = {}
    for file in files:
        corpus: dict[tuple[str, str], str] = {}
        found = _file_rows(file, notes, left, corpus)
        rows += found
        entry = runs.setdefault(lighteval_left.results_of(file, run_name(file)), ([], {}))
        entry[0].extend(found)
        entry[1].update(corpus)
    for results_file, (found, corpus) in runs.items():
        lighteval_left.run_left_out(results_file, found, corpus, left)
    return Rows(rows, notes.lines(), left.entries())


def _details_of_results(path: Path) -> list[Path]:
    match = _RESULTS.fullmatch(path.name)
    if match is None or not _is_results(path):
        raise InputError(f"{path}: not a lighteval results JSON", hint=_HINT)
    data = jsontext.loads_tool(path.read_text(encoding="utf-8"))
    model = str(data["config_general"].get("model_name") or "").strip("/")
    out = path.parent
    for _ in model.split("/"):  # results/<model>/ → OUT
        out = out.parent
    date_dir = out.parent / "details" / model / match["date"]
    files = sorted(date_dir.glob(f"details_*_{match['date']}.parquet"))
    if not files:
        raise InputError(
            f"{path}: no details files of this run (expected {date_dir}/details_<task>_"
            f"{match['date']}.parquet)",
            hint="lighteval writes them only with --save-details.",
        )
    return files


def run_name(details: Path) -> str:
    """The model directory lighteval wrote the file under: details/<model>/<date>/."""
    date_dir = details.resolve().parent
    parts = date_dir.parts
    if "details" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index("details")
        return "/".join(parts[at + 1 : -1]) or date_dir.parent.name
    return date_dir.parent.name


def _file_rows(
    path: Path, notes: Notes, left: Unimported, corpus: dict[tuple[str, str], str]
) -> list[dict[str, Any]]:
    import pyarrow as pa  # see _is_details
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise InputError(
            f"{path}: not a readable Parquet file ({exc})",
            hint="The file may be cut short (lighteval still writing, or a partial copy).",
        ) from None
    if not set(table.column_names) >= _COLUMNS:
        old = {"predictions", "metrics"} <= set(table.column_names)
        raise InputError(
            f"{path}: not lighteval details (expected the columns doc, metric, model_response)"
            + (
                ": the layout of lighteval 0.10 and earlier (full_prompt, predictions, metrics…)"
                if old
                else ""
            ),
            hint="Re-run the evaluation with lighteval 0.11 or later." if old else _HINT,
        )
    match = _DETAILS.fullmatch(path.name)
    run = run_name(path)
    rows = []
    for number, record in enumerate(table.to_pylist()):
        doc = record.get("doc") or {}
        task = doc.get("task_name") or (match["task"] if match else None)
        if doc.get("id") in (None, "") or not task:
            raise InputError(
                f"{path}, row {number}: a document without doc.id or a task name",
                hint="Keep lighteval's file name details_<task>_<date>.parquet.",
            )
        where = f"{path}, row {number}"
        row = _row(run, key(task, where, "doc.task_name"), record, where, notes)
        rows.append(row)
        lighteval_left.record_fields(path, record, f"row {number}", left)
        for name, value in (record.get("metric") or {}).items():
            if isinstance(value, list | dict):  # the inputs of a corpus-level metric
                corpus[(row["task"], str(name))] = str(path)
    if not rows:
        raise InputError(f"{path}: holds no documents", hint=_HINT)
    return _finish(rows)


def _row(run: str, task: str, record: dict[str, Any], where: str, notes: Notes) -> dict[str, Any]:
    doc, response = record["doc"], record.get("model_response") or {}
    sample = key(doc["id"], where, "doc.id")
    row: dict[str, Any] = {"run": run, "task": task, "sample_id": sample, "epoch": 0}
    prompt = response.get("input")
    if isinstance(prompt, str):
        row["input"] = prompt
    elif isinstance(prompt, list) and prompt:
        row["input"] = json.dumps(prompt, ensure_ascii=False)
    elif isinstance(doc.get("query"), str):
        row["input"] = doc["query"]
    golds, choices = doc.get("gold_index"), doc.get("choices") or []
    golds = [golds] if isinstance(golds, int) else golds or []
    if golds and all(isinstance(g, int) and 0 <= g < len(choices) for g in golds):
        row["expected"] = "\n".join(str(choices[g]) for g in golds)
    texts = response.get("text") or []
    if len(texts) == 1 and isinstance(texts[0], str):
        row["output"] = texts[0]
    # Token ids as the backend recorded them (empty when it did not): their count.
    tokens_in, tokens_out = response.get("input_tokens") or [], response.get("output_tokens") or []
    if tokens_in and all(isinstance(t, int) for t in tokens_in):
        row["tokens_in"] = len(tokens_in)
    if len(tokens_out) == 1 and isinstance(tokens_out[0], list) and tokens_out[0]:
        row["tokens_out"] = len(tokens_out[0])
    metric = record.get("metric") or {}
    file, _, place = where.rpartition(", ")
    row["scores"] = {
        str(k): number
        for k, v in metric.items()
        if not isinstance(v, list | dict)  # corpus-level inputs: listed (lighteval_left)
        and (number := notes.score(file, str(k), float(v) if isinstance(v, bool) else v, place))
        is not None
    }  # fmt: skip  (a boolean metric is 1 or 0: lighteval's own reading of it)
    return row


def _finish(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = {key for row in rows for key in row["scores"]}
    values = [v for row in rows for v in row["scores"].values()]
    binary = len(keys) == 1 and all(v in (0.0, 1.0) for v in values)
    for row in rows:
        if binary and row["scores"]:
            row["correct"] = next(iter(row["scores"].values())) == 1.0
        if not row["scores"]:
            del row["scores"]
    return rows


def _number(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    return isinstance(value, int | float) and math.isfinite(value)
