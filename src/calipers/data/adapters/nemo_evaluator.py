"""NeMo Evaluator (nemo-evaluator 0.2.x, `nemo-evaluator run_eval --output_dir OUT`) per-sample
output of a BYOB ("bring your own benchmark") evaluation: `byob_predictions.jsonl`, one JSON
object per sample and repeat (sample_id, prompt, response, target, scores, status, error,
metadata), written by the BYOB runner with `--save-predictions` (run_eval passes it by default
from 0.2.6; 0.2.5 and earlier never do). 0.2.6 and later put it in `OUT/<task>/`, earlier
releases in `OUT/`; `OUT/results.yml` and `OUT/run_config.yml` are nemo-evaluator's, with the
task's aggregates and the configuration. results.yml alone (every framework writes it) has no
samples: refused.

The path is a predictions file, OUT (or OUT/<task>/), or a directory with such output
directories one level down (every run in it).

`run` is the endpoint's `target.api_endpoint.model_id` from results.yml or run_config.yml (else
the output directory's name); `task` the config's `config.params.task` (else the predictions
directory's name). With `n_repeats` R > 1 the runner numbers the samples of repeat r from r × N
on (N the dataset's size) and adds `_repeat` to each sample's metadata: `epoch` is `_repeat` and
`sample_id` the dataset index, `sample_id - _repeat × N`, so repeats and runs pair. `scores` are
the scorer's numeric values (booleans 0/1, as nemo-evaluator aggregates them); `correct` the
scorer's `correct` when it is a boolean (the BYOB convention of its built-in scorers). A skipped
sample (status `skipped_*`: model, scorer or missing-field errors) has `error` and no scores.
`output` is the response, `input` the rendered prompt, `expected` the target (JSON text when it
is not a string).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calipers.data import jsontext
from calipers.data.adapters import nemo_left
from calipers.data.adapters.jsonfile import first_json_line
from calipers.data.adapters.unimported import Unimported
from calipers.data.adapters.values import Notes, Rows
from calipers.errors import InputError

PREDICTIONS = "byob_predictions.jsonl"
_KEYS = ("sample_id", "prompt", "response", "target", "scores", "status")
_HINT = (
    "Pass the --output_dir of `nemo-evaluator run_eval` (a BYOB benchmark, which writes "
    f"{PREDICTIONS}), that directory's <task>/ folder, or the file."
)


def _looks_like_predictions(path: Path) -> bool:
    try:
        first = first_json_line(path)
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and all(k in first for k in _KEYS)


def _files(directory: Path) -> list[Path]:
    for pattern in (PREDICTIONS, f"*/{PREDICTIONS}", f"*/*/{PREDICTIONS}"):
        found = sorted(p for p in directory.glob(pattern) if _looks_like_predictions(p))
        if found:
            return found
    return []


def detect(path: Path) -> bool:
    """A .jsonl whose first line has the BYOB prediction keys (sample_id, prompt, response,
    target, scores, status), or a directory with one in it or up to two levels down."""
    try:
        if path.is_dir():
            return bool(_files(path))
        return path.suffix == ".jsonl" and path.is_file() and _looks_like_predictions(path)
    except OSError:
        return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per prediction line of every predictions file the path stands for."""
    if path.is_dir():
        files = _files(path)
        if not files:
            if (path / "results.yml").is_file():
                raise InputError(
                    f"{path}: nemo-evaluator output without per-sample predictions "
                    "(results.yml holds aggregates only)",
                    hint=f"BYOB benchmarks write {PREDICTIONS} with --save-predictions "
                    "(the default of run_eval from nemo-evaluator 0.2.6).",
                )
            raise InputError(f"{path}: no NeMo Evaluator {PREDICTIONS} in it", hint=_HINT)
    else:
        files = [path]
    rows: list[dict[str, Any]] = []
    notes = Notes()
    left = Unimported(nemo_left.TOOL)
    for file in files:
        found = _file_rows(file, notes, left)
        rows += found
        nemo_left.run_left_out(_config(file), _names(file)[1], found, left)
    return Rows(rows, notes.lines(), left.entries())


def _config(predictions: Path) -> dict[str, Any]:
    """results.yml (else run_config.yml) next to the predictions or one directory up."""
    from calipers.data import yamltext  # YAML: only once a file is known to be NeMo's

    for directory in (predictions.parent, predictions.parent.parent):
        for name in ("results.yml", "run_config.yml"):
            candidate = directory / name
            if candidate.is_file():
                try:  # strictly: a key given twice is refused, naming both lines
                    text = candidate.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as exc:
                    raise InputError(f"{candidate}: not readable YAML: {exc}") from None
                data = yamltext.parse(text, str(candidate)).data
                if isinstance(data, dict):
                    return {**data, "_dir": directory}
    return {}


def _names(predictions: Path) -> tuple[str, str]:
    config = _config(predictions)
    target = _dict(_dict(config, "target"), "api_endpoint")
    params = _dict(_dict(config, "config"), "params")
    out_dir = config.get("_dir", predictions.parent)
    run = target.get("model_id") or Path(out_dir).resolve().name
    task = params.get("task") or predictions.parent.resolve().name
    return str(run), str(task)


def _file_rows(path: Path, notes: Notes, left: Unimported) -> list[dict[str, Any]]:
    records: list[tuple[int, dict[str, Any]]] = []
    try:
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if line.strip():
                    records.append((number, _record(path, number, line)))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not readable: {exc}") from None
    if not records:
        raise InputError(f"{path}: holds no predictions", hint=_HINT)
    run, task = _names(path)
    # The runner offsets repeat r's ids by r × N and writes every sample of every repeat.
    size = sum(1 for _, r in records if _repeat(r) == 0)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[int, int], int] = {}
    for number, record in records:
        repeat = _repeat(record)
        index = record["sample_id"] - repeat * size
        if not 0 <= index < size:
            raise InputError(
                f"{path}, line {number}: sample_id {record['sample_id']} of repeat {repeat} "
                f"is outside repeat {repeat}'s ids ({repeat * size}–{(repeat + 1) * size - 1} "
                f"for a dataset of {size} samples)",
                hint="Keep the predictions file as nemo-evaluator wrote it (all repeats).",
            )
        if (index, repeat) in seen:
            raise InputError(
                f"{path}, line {number}: sample {index} of repeat {repeat} again "
                f"(first at line {seen[(index, repeat)]})",
                hint=_HINT,
            )
        seen[(index, repeat)] = number
        nemo_left.line_fields(path, record, number, left)
        rows.append(_row(record, run, task, str(index), repeat, notes.bind(path, number)))
    return rows


def _record(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        record = jsontext.loads_tool(line)
    except ValueError as exc:
        raise InputError(
            f"{path}, line {number}: not JSON ({exc})",
            hint="The file may be cut short (the run still writing, or a partial copy).",
        ) from None
    if not (isinstance(record, dict) and all(k in record for k in _KEYS)):
        raise InputError(
            f"{path}, line {number}: not a NeMo Evaluator BYOB prediction "
            f"(expected an object with {', '.join(_KEYS)})",
            hint=_HINT,
        )
    sample = record["sample_id"]
    if not isinstance(sample, int) or isinstance(sample, bool) or sample < 0:
        raise InputError(f"{path}, line {number}: sample_id {sample!r} is not an index")
    return dict(record)


def _repeat(record: dict[str, Any]) -> int:
    repeat = _dict(record, "metadata").get("_repeat", 0)
    return repeat if isinstance(repeat, int) and not isinstance(repeat, bool) else 0


def _row(
    record: dict[str, Any], run: str, task: str, sample: str, epoch: int,
    note: Callable[[str, Any], float | None],
) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {"run": run, "task": task, "sample_id": sample, "epoch": epoch}
    if isinstance(record["prompt"], str) and record["prompt"]:
        row["input"] = record["prompt"]
    if isinstance(record["response"], str):
        row["output"] = record["response"]
    target = record["target"]
    if target is not None:
        row["expected"] = target if isinstance(target, str) else json.dumps(target)
    if record["status"] != "scored":
        row["error"] = str(record.get("error") or record["status"])
        return row
    scores = record["scores"] if isinstance(record["scores"], dict) else {}
    # a boolean is 0 or 1, as nemo-evaluator's own aggregation reads it
    numeric = {
        str(k): n for k, v in scores.items()
        if (n := note(str(k), float(v) if isinstance(v, bool) else v)) is not None
    }  # fmt: skip
    if numeric:
        row["scores"] = numeric
    if isinstance(scores.get("correct"), bool):
        row["correct"] = scores["correct"]
    return row


def _dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    # booleans count, as 0/1: nemo-evaluator's aggregation converts them so
    return isinstance(value, int | float) and math.isfinite(value)
