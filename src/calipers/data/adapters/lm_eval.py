"""lm-evaluation-harness per-sample output (`lm_eval ... --log_samples --output_path OUT`, lm-eval
0.4.7 and later): `OUT/<model>/samples_<task>_<date>.jsonl`, one line per document and filter,
next to the run's `results_<date>.json` (`<name>_<date>.json` when OUT ends in `.json`).

The path is a samples file, a results JSON (every samples file of its run), or a directory holding
them or holding lm-eval's per-model directories (every run in it).

One sample per document (`sample_id` its doc_id, `task` the task in the file name): a task's
filters are measurements of the same document, not more samples. `scores` holds every finite
numeric per-document metric under the key lm-eval's results JSON uses, without the default filter:
`acc` for filter `none`, `exact_match,strict-match` for another. Lists (the inputs of corpus-level
metrics such as bleu) are left out. `correct` only when a file has one score key and every value of
it is 0 or 1. `output` is the raw generation of a generate_until document with one response;
log-likelihood tasks have none. `expected` is lm-eval's target as written (the gold index for
multiple_choice), `input` the first request's prompt.

`run` is the results JSON's `model_name` when lm-eval took it from model_args (pretrained=,
model=, …); otherwise lm-eval made up a random id, and the run is `config.model` (`hf`, `dummy`).
Without a results JSON, the model directory's name (lm-eval's sanitized model name).

A directory where one task was logged on several dates holds several runs (lm-eval writes a reused
--output_path's runs into the same model directory): refused, since their documents would be the
same samples twice; a results JSON picks one of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calipers.data import jsontext
from calipers.data.adapters import lm_eval_left
from calipers.data.adapters.unimported import Unimported
from calipers.data.adapters.values import Notes, Rows, key
from calipers.errors import InputError

_DATE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"  # datetime.isoformat(), ":" → "-"
_SAMPLES = re.compile(rf"samples_(?P<task>.+)_(?P<date>{_DATE})\.jsonl")
_RESULTS = re.compile(rf".*_(?P<date>{_DATE})\.json")
_DEFAULT_FILTER = "none"
_HINT = (
    "Pass what `lm_eval ... --log_samples --output_path OUT` wrote: OUT, OUT/<model>, a "
    "results_<date>.json or a samples_<task>_<date>.jsonl."
)
_RERUN = "Re-run with `lm_eval ... --log_samples --output_path OUT` (lm-eval 0.4.7 or later)."


def _first_line(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return jsontext.loads_tool(f.readline())


def _looks_like_samples(path: Path) -> bool:
    try:
        first = _first_line(path)
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and "doc_id" in first and "filtered_resps" in first


def _is_results(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("results"), dict) and "configs" in data


def _samples_in(directory: Path) -> list[Path]:
    found = sorted(directory.glob("samples_*.jsonl")) or sorted(directory.glob("*/samples_*.jsonl"))
    return [p for p in found if _looks_like_samples(p)]


def detect(path: Path) -> bool:
    """A samples file (its first line has doc_id and filtered_resps), a results JSON of lm-eval,
    or a directory with samples files in it or one level down."""
    try:
        if path.is_dir():
            return bool(_samples_in(path))
        if path.suffix == ".jsonl":
            return _looks_like_samples(path)
        if path.suffix == ".json" and _RESULTS.fullmatch(path.name):
            return _is_results(jsontext.loads_tool(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass
    return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per document of every samples file the path stands for."""
    if path.is_dir():
        files = _samples_in(path)
        if not files:
            raise InputError(f"{path}: no lm-eval samples_<task>_<date>.jsonl in it", hint=_HINT)
        _one_run_per_directory(files)
    elif path.suffix == ".json":
        match = _RESULTS.fullmatch(path.name)
        if match is None or not _is_results(_load_json(path)):
            raise InputError(f"{path}: not an lm-eval results JSON", hint=_HINT)
        files = sorted(path.parent.glob(f"samples_*_{match['date']}.jsonl"))
        if not files:
            raise InputError(
                f"{path}: no samples files of this run next to it "
                f"(expected samples_<task>_{match['date']}.jsonl)",
                hint="lm-eval writes them only with --log_samples: " + _RERUN,
            )
    else:
        files = [path]
    rows: list[dict[str, Any]] = []
    notes = Notes()
    left = Unimported("lm-eval")
    by_results: dict[Path | None, tuple[Any, list[dict[str, Any]], dict[Any, str]]] = {}
    for file in files:
        corpus: dict[tuple[str, str], str] = {}
        found = _file_rows(file, notes, left, corpus)
        rows += found
        results_file, results = _results_of(file)
        entry = by_results.setdefault(results_file, (results, [], {}))
        entry[1].extend(found)
        entry[2].update(corpus)
    for results_file, (results, found, corpus) in by_results.items():
        lm_eval_left.run_left_out(results_file, results, found, corpus, left)
    return Rows(rows, notes.lines(), left.entries())


def _results_of(samples: Path) -> tuple[Path | None, Any]:
    """The results JSON written with a samples file (the same date), if there is one."""
    match = _SAMPLES.fullmatch(samples.name)
    if match is None:
        return None, None
    for candidate in sorted(samples.parent.glob(f"*_{match['date']}.json")):
        if _RESULTS.fullmatch(candidate.name):
            results = _load_json(candidate)
            if _is_results(results):
                return candidate, results
    return None, None


def _one_run_per_directory(files: list[Path]) -> None:
    """lm-eval writes every run into OUT/<model>/ under its own date: a task logged on several
    dates in one directory is several runs, whose documents would collide as samples."""
    dates: dict[Path, set[str]] = {}
    for directory in sorted({f.parent for f in files}):
        by_task: dict[str, set[str]] = {}
        for file in (f for f in files if f.parent == directory):
            if match := _SAMPLES.fullmatch(file.name):
                by_task.setdefault(match["task"], set()).add(match["date"])
        if any(len(found) > 1 for found in by_task.values()):
            dates[directory] = {date for found in by_task.values() for date in found}
    for directory, found in dates.items():
        listed = sorted(found)
        results = [_results_name(directory, date) for date in listed]
        count = "two" if len(listed) == 2 else str(len(listed))
        raise InputError(
            f"{directory}: {count} runs in one directory ({', '.join(listed)}): pass one results "
            "file (results_<date>.json), or import each with --as NAME",
            hint=f"lm-eval writes each run into OUT/<model>/ with its own date when "
            f"--output_path is reused: `calipers import {directory / results[0]} --as NAME`, "
            f"then {', '.join(results[1:])} with another name.",
        )


def _results_name(directory: Path, date: str) -> str:
    """The results JSON of one date (`results_<date>.json`, `<stem>_<date>.json`)."""
    for candidate in sorted(directory.glob(f"*_{date}.json")):
        if _RESULTS.fullmatch(candidate.name):
            return candidate.name
    return f"results_{date}.json"


def _load_json(path: Path) -> Any:
    try:
        return jsontext.loads_tool(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(
            f"{path}: not readable JSON: {exc}",
            hint="lm-eval writes results_<date>.json when the run ends; the file may be cut "
            "short (lm_eval still running, or a partial copy).",
        ) from None


def run_name(samples: Path, date: str) -> str:
    """The run's model, from the results JSON written with the samples file (same date)."""
    for candidate in sorted(samples.parent.glob(f"*_{date}.json")):
        results = _load_json(candidate)
        if not _is_results(results):
            continue
        config = results.get("config") if isinstance(results.get("config"), dict) else {}
        name, args = results.get("model_name"), config.get("model_args")
        given = [str(v) for v in args.values()] if isinstance(args, dict) else [str(args or "")]
        # lm-eval takes model_name from model_args, else draws a random id (not a name).
        if isinstance(name, str) and name and any(name in value for value in given):
            return name
        if isinstance(config.get("model"), str) and config["model"]:
            return str(config["model"])
    return samples.parent.resolve().name


def _file_rows(
    path: Path, notes: Notes, left: Unimported, corpus: dict[tuple[str, str], str]
) -> list[dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {}
    first_line: dict[tuple[str, str], int] = {}
    task_run: tuple[str, str] | None = None
    try:
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                record = _record(path, number, line)
                # Only once the content is known to be lm-eval's: its file name then matters.
                task_run = task_run or _task_and_run(path)
                where = f"{path}, line {number}"
                doc = key(record["doc_id"], where, "doc_id")
                filter_name = key(record["filter"], where, "filter")
                if (doc, filter_name) in first_line:
                    raise InputError(
                        f"{path}, line {number}: doc_id {doc} with filter '{filter_name}' again "
                        f"(first at line {first_line[(doc, filter_name)]})",
                        hint="lm-eval opens samples_<task>_<date>.jsonl in append mode: keep one "
                        "evaluation's lines per file, or re-run into a new --output_path.",
                    )
                first_line[(doc, filter_name)] = number
                row = docs.get(doc)
                if row is None:
                    row = docs[doc] = _row(task_run[1], task_run[0], doc, record)
                skipped = _add_scores(row["scores"], record, filter_name, notes.bind(path, number))
                corpus.update({(task_run[0], name): str(path) for name in skipped})
                lm_eval_left.line_fields(path, record, number, left)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not readable: {exc}") from None
    if not docs:
        raise InputError(
            f"{path}: holds no documents",
            hint="lm-eval writes the documents of a task when it finishes it: " + _RERUN,
        )
    return _finish(list(docs.values()))


def _task_and_run(path: Path) -> tuple[str, str]:
    match = _SAMPLES.fullmatch(path.name)
    if match is None:
        raise InputError(
            f"{path}: cannot tell the task from the file name",
            hint="`lm_eval --log_samples` names them samples_<task>_<date>.jsonl; keep that name.",
        )
    return match["task"], run_name(path, match["date"])


def _add_scores(
    scores: dict[str, float], record: dict[str, Any], filter_name: str, note: Callable[..., Any]
) -> list[str]:
    """Each per-document metric under the results JSON's key: a finite number (a boolean as 1 or
    0); a list or a string is the input of a corpus-level metric (bleu), not a score, and is left
    out (returned, for the import's list of what it left out); NaN or Infinity is left out and
    noted."""
    corpus = []
    for metric in (m for m in record["metrics"] if isinstance(m, str)):
        value = record.get(metric)
        if isinstance(value, bool):
            value = float(value)
        name = metric if filter_name == _DEFAULT_FILTER else f"{metric},{filter_name}"
        if isinstance(value, list | str):
            corpus.append(name)  # corpus-level inputs (documented)
            continue
        number = note(name, value)
        if number is not None:
            scores[name] = number
    return corpus


def _record(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        record = jsontext.loads_tool(line)
    except ValueError as exc:
        raise InputError(
            f"{path}, line {number}: not JSON ({exc})",
            hint="The file may be cut short (lm_eval still writing samples_<task>_<date>.jsonl, "
            "or a partial copy).",
        ) from None
    if not (isinstance(record, dict) and "doc_id" in record and "filtered_resps" in record):
        raise InputError(
            f"{path}, line {number}: not an lm-eval sample "
            "(expected an object with doc_id, filtered_resps, filter, metrics)",
            hint=_HINT,
        )
    if "filter" not in record or not isinstance(record.get("metrics"), list):
        raise InputError(
            f"{path}, line {number}: no 'filter' and 'metrics' fields: written by lm-eval "
            "before 0.4.7, whose lines do not say which filter or metrics they hold",
            hint=_RERUN,
        )
    return record


def _row(run: str, task: str, doc: str, record: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"run": run, "task": task, "sample_id": doc, "epoch": 0, "scores": {}}
    requests = record.get("arguments")
    first = requests.get("gen_args_0") if isinstance(requests, dict) else None
    if isinstance(first, dict) and isinstance(first.get("arg_0"), str):
        row["input"] = first["arg_0"]
    if isinstance(record.get("target"), str):
        row["expected"] = record["target"]
    # generate_until requests are (prompt, generation kwargs); log-likelihood ones carry the
    # continuation instead, and their responses are numbers written as strings, not output.
    resps = record.get("resps")
    if (
        isinstance(requests, dict)
        and len(requests) == 1
        and isinstance(first, dict)
        and isinstance(first.get("arg_1"), dict)
        and isinstance(resps, list)
        and len(resps) == 1
        and isinstance(resps[0], list)
        and len(resps[0]) == 1
        and isinstance(resps[0][0], str)
    ):
        row["output"] = resps[0][0]
    return row


def _finish(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = {key for row in rows for key in row["scores"]}
    values = [row["scores"][key] for row in rows for key in row["scores"]]
    binary = len(keys) == 1 and all(v in (0.0, 1.0) for v in values)
    for row in rows:
        if binary and row["scores"]:
            row["correct"] = next(iter(row["scores"].values())) == 1.0
        if not row["scores"]:
            del row["scores"]
    return rows
