"""deepeval test runs: the JSON deepeval saves for every `evaluate(...)` or `deepeval test run`
when a results folder is set (`DisplayConfig(results_folder=...)` or DEEPEVAL_RESULTS_FOLDER):
`test_run_<YYYYMMDD_HHMMSS>.json` (older releases: no `.json`), the TestRun that is also
`.deepeval/.temp_test_run_data.json`: pydantic's dump with camelCase keys, `None`s left out
(tested with deepeval 4.3.1).

One sample per test case in `testCases` (and `conversationalTestCases`). `sample_id` is the test
case's `name` (deepeval's default is `test_case_<order>`, so unnamed cases pair by position);
deepeval has no repeats, so `epoch` is 0. `run` is the run's `identifier`, else its
`hyperparameters["model"]`, else the file's stem. `task` is `datasetAlias`, else `testFile`, else
`deepeval`.

`scores` holds each metric's `score` under its name. `correct` is the case's `success` (every
non-flaky metric with a verdict passed) unless a non-flaky metric errored: deepeval then records
the metric as failed with no score, which is an evaluation that did not happen, so the sample gets
`error` and no `correct`. Each non-flaky metric with a verdict is also a `custom` assertion (its
pass/fail). `tokenCost`, `completionTime` and the token counts are the app's own (set on the
LLMTestCase). A case's `evaluationCost` is what its metrics' LLM judges cost (deepeval sums it
into the run's `evaluationCost`): `grader_cost_usd`, kept apart from the system's `cost_usd`.
`runDuration` (the metrics' time, not the system's) and the run's aggregates are not imported, and
the import lists them (`unimported`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from calipers.data.adapters.jsonfile import load_json
from calipers.data.adapters.unimported import Unimported
from calipers.data.adapters.values import Notes, Rows
from calipers.errors import InputError

_HINT = "Pass a test_run_<timestamp>.json deepeval saved (results_folder, DEEPEVAL_RESULTS_FOLDER)."
_STRING = r'"(?:[^"\\]|\\.)*"'
# deepeval dumps the pydantic TestRun in field order: testFile (only when set), then testCases.
_HEAD = re.compile(rf'^\s*\{{\s*(?:"testFile"\s*:\s*{_STRING}\s*,\s*)?"testCases"\s*:\s*\[')


def detect(path: Path) -> bool:
    """A .json file that opens as deepeval's TestRun does: `{"testFile": …, "testCases": [`."""
    # Older releases wrote `test_run_<timestamp>` to DEEPEVAL_RESULTS_FOLDER without an extension.
    named = path.suffix == ".json" or (not path.suffix and path.name.startswith("test_run_"))
    if not named or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return _HEAD.match(f.read(4096)) is not None
    except OSError:
        return False


def _load(path: Path) -> dict[str, Any]:
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a deepeval test run file", hint=_HINT)
    data = load_json(path, cut_short="deepeval still writing, or a partial copy")
    if not (
        isinstance(data, dict)
        and isinstance(data.get("testCases"), list)
        and isinstance(data.get("conversationalTestCases", []), list)
    ):
        raise InputError(
            f"{path}: not a deepeval test run (expected an object with a testCases list)",
            hint=_HINT,
        )
    return data


def run_name(data: dict[str, Any], path: Path) -> str:
    """The identifier the run was given, else the model among its hyperparameters."""
    hyper = data.get("hyperparameters")
    model = hyper.get("model") if isinstance(hyper, dict) else None
    for name in (data.get("identifier"), model):
        if isinstance(name, str) and name:
            return name
    return path.stem


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per deepeval test case (single-turn and conversational)."""
    data = _load(path)
    run = run_name(data, path)
    task = next(
        (t for t in (data.get("datasetAlias"), data.get("testFile")) if isinstance(t, str) and t),
        "deepeval",
    )
    rows: list[dict[str, Any]] = []
    notes = Notes()
    left = Unimported("deepeval")
    _run_left_out(path, data, left)
    first: dict[str, str] = {}
    for key in ("testCases", "conversationalTestCases"):
        for number, case in enumerate(data.get(key) or []):
            where = f"{key}[{number}]"
            if not (isinstance(case, dict) and isinstance(case.get("name"), str)):
                raise InputError(f"{path}: {where} is not a test case with a name", hint=_HINT)
            name = case["name"]
            if name in first:
                raise InputError(
                    f"{path}: {where}: test case name '{name}' again (first at {first[name]}): "
                    "calipers cannot tell these samples apart",
                    hint="Give each LLMTestCase its own name=.",
                )
            first[name] = where
            rows.append(_row(path, where, case, run, task, notes))
            left.fields(path, case, _CASE_READ, _CASE_SKIPPED, where, f"{key}[].")
            for metric in case.get("metricsData") or []:
                if isinstance(metric, dict):
                    left.fields(path, metric, _METRIC_READ, _METRIC_SKIPPED, where,
                                f"{key}[].metricsData[].")  # fmt: skip
    if not rows:
        raise InputError(f"{path}: holds no test cases", hint=_HINT)
    return Rows(rows, notes.lines(), left.entries())


_CASE_READ = {
    "name", "input", "scenario", "actualOutput", "expectedOutput", "expectedOutcome",
    "inputTokenCount", "outputTokenCount", "tokenCost", "completionTime", "metricsData",
    "success", "evaluationCost", "flaky",
}  # fmt: skip
_CASE_SKIPPED = {
    "runDuration": "the metrics' evaluation time, not the system's",
    "order": "the case's position in the run (its name is the sample id)",
    "context": "the case's context documents (inputs, not outcomes)",
    "retrievalContext": "the retrieved documents (inputs of RAG metrics, not outcomes)",
    "toolsCalled": "the tools the app called (no sample field holds a list of calls)",
    "expectedTools": "the tools expected (no sample field holds a list of calls)",
    "additionalMetadata": "free-form metadata",
    "comments": "free-form comments",
    "turns": "a conversation's turns (the case is one sample; its output is not one text)",
    "chatbotRole": "the chatbot's role description",
    "userDescription": "the simulated user's description",
    "tags": "free-form tags",
}
_METRIC_READ = {"name", "score", "success", "reason", "threshold", "error", "flaky"}
_METRIC_SKIPPED = {
    "strictMode": "how deepeval rounded the score (the score is read as written)",
    "evaluationModel": "the judge model's name (its cost is grader_cost_usd)",
    "evaluationCost": "the metric's share of the case's evaluationCost (read as a whole)",
    "verboseLogs": "the judge's intermediate steps",
}


def _run_left_out(path: Path, data: dict[str, Any], left: Unimported) -> None:
    """The run's own aggregates: deepeval's per-metric lists and counts, its cost and time."""
    listed = [e.get("metric") for e in data.get("metricsScores") or [] if isinstance(e, dict)]
    if listed:
        left.metric(
            path, "metricsScores", "aggregate-only",
            f"deepeval's per-metric summaries ({', '.join(map(str, listed))}: the cases' scores, "
            "passes, fails, errors); calipers computes them from the cases' scores",
            kind="total",
        )  # fmt: skip
    for name, detail in (
        ("testPassed", "deepeval's count of passed cases (calipers: the mean of correct)"),
        ("testFailed", "deepeval's count of failed cases"),
        ("runDuration", "the run's wall time"),
        ("evaluationCost", "the run's judge cost: the sum of the cases' evaluationCost, "
         "imported per case as grader_cost_usd"),
    ):  # fmt: skip
        value: Any = data.get(name)
        if _number(value):
            left.metric(path, name, "aggregate-only", detail, kind="total", value=float(value))


def _row(
    path: Path, where: str, case: dict[str, Any], run: str, task: str, notes: Notes
) -> dict[str, Any]:
    row: dict[str, Any] = {"run": run, "task": task, "sample_id": case["name"], "epoch": 0}
    for field, key in (
        ("input", "input"),
        ("input", "scenario"),  # a conversational case's description
        ("output", "actualOutput"),
        ("expected", "expectedOutput"),
        ("expected", "expectedOutcome"),
    ):
        if isinstance(case.get(key), str):
            row[field] = case[key]
    for field, key, whole in (
        ("tokens_in", "inputTokenCount", True), ("tokens_out", "outputTokenCount", True),
        ("cost_usd", "tokenCost", False), ("latency_s", "completionTime", False),
        ("grader_cost_usd", "evaluationCost", False),
    ):  # fmt: skip
        value = notes.number(path, field, case.get(key), where, whole=whole)
        if value is not None:
            row[field] = value
    metrics = case.get("metricsData") or []
    if not isinstance(metrics, list) or not all(isinstance(m, dict) for m in metrics):
        raise InputError(f"{path}: {where}.metricsData is not a list of metric results")
    scores: dict[str, float] = {}
    errors, assertions = [], []
    for metric in metrics:
        name = str(metric.get("name") or "metric")
        if name in scores:
            raise InputError(
                f"{path}: {where}: two metrics named '{name}'",
                hint="Give the metrics distinct names (a __name__ property on custom metrics).",
            )
        score = notes.score(path, name, metric.get("score"), where)
        if score is not None:
            scores[name] = score
        if metric.get("flaky"):  # deepeval: a flaky metric never decides pass/fail
            continue
        error = metric.get("error")
        if error:
            errors.append(f"{name}: {error}")
        elif not isinstance(metric.get("success"), bool):
            continue  # no verdict (no threshold): deepeval leaves it out of pass/fail too
        assertions.append(_assertion(name, metric, error))
    if scores:
        row["scores"] = scores
    if assertions:
        row["assertions"] = assertions
    if errors:
        row["error"] = "; ".join(errors)
    elif assertions and isinstance(case.get("success"), bool):
        row["correct"] = case["success"]
    return row


def _assertion(name: str, metric: dict[str, Any], error: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": "custom", "passed": metric.get("success") is True}
    if error:
        detail = f"not evaluated: {error}"
    else:
        detail = str(metric.get("reason") or "")
        numbers = [f"{k} {metric[k]:g}" for k in ("score", "threshold") if _number(metric.get(k))]
        if numbers:
            detail = f"{detail} ({', '.join(numbers)})".strip()
    if detail:
        out["detail"] = detail
    return out


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
