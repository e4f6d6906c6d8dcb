"""promptfoo results: `promptfoo eval -o results.json` (output `results.version` 3: promptfoo 0.121
and the releases since the eval refactor that replaced v2's table with `prompts`), or
`promptfoo eval -o results.jsonl` (one result per line, the same objects as `results.results`).

One sample per result, i.e. per test × column (a column is one prompt on one provider). `run` is
the provider's label (else its id), with ` / <prompt label>` when the file's columns use more than
one prompt; two columns still sharing a name get ` #<promptIdx>`. `task` is the config's
`description` (else `promptfoo`). `sample_id` hashes the test's description and vars, so a test
pairs across columns and files whatever its position; its repeats (`--repeat`, which promptfoo
numbers as new testIdx values) become epochs 0, 1, … in testIdx order.

`correct` is promptfoo's success, `scores` its weighted score and named metrics (per test, as
promptfoo normalised them; a metric whose assertions in a test all weigh 0 is left out, promptfoo's
0 there is no measurement). `score_weights` holds each named metric's weight in the test (the sum
of its assertions' weights, promptfoo's namedScoreWeights): promptfoo's per-column metric weighs
each test by it, and so does calipers' mean of that metric. A provider error
(failureReason 2) has `error` and neither, and its assertions are failed "not evaluated" as
calipers' own runs record them. Assertions are the top-level ones promptfoo scored (an assert-set
is one `custom` assertion); weight 0 ones are left out (calipers weights are > 0). Cost, tokens and
output come from the provider's `response` (promptfoo fills the result-level copies with zeros).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from calipers.data import jsontext
from calipers.data.adapters.unimported import Unimported
from calipers.data.adapters.values import Notes, Rows, flag
from calipers.errors import InputError

SUPPORTED_VERSION = 3
ERROR = 2  # promptfoo's ResultFailureReason.ERROR (1 is ASSERT)
_HINT = "Pass what `promptfoo eval -o results.json` (or `-o results.jsonl`) writes."
_CUT = (
    "The file may be cut short (promptfoo still writing, or a partial copy); promptfoo keeps the "
    "eval unless run with --no-write: `promptfoo export eval EVAL_ID -o results.json`."
)
_LINES_HINT = (
    "`promptfoo eval -o results.jsonl` writes one result object per line; calipers' own JSON "
    "Lines are read with --format jsonl (or auto)."
)
# What every line of `-o results.jsonl` has (one EvaluateResult, keys in alphabetical order).
_RESULT_KEYS = ("testIdx", "promptIdx", "testCase", "provider", "success")
_HEAD = re.compile(r'^\s*\{\s*"evalId"\s*:.*?"results"\s*:\s*\{\s*"version"\s*:', re.DOTALL)

# promptfoo assertion type → calipers type; the rest are `custom` (their own pass/fail).
_TYPES = {
    "contains": "contains",
    "icontains": "contains",
    "not-contains": "not_contains",
    "not-icontains": "not_contains",
    "contains-all": "contains_all",
    "icontains-all": "contains_all",
    "contains-any": "contains_any",
    "icontains-any": "contains_any",
    "equals": "equals",
    "not-equals": "not_equals",
    "regex": "regex",
    "is-json": "json_valid",
    "similar": "semantic_similarity",
    "similar:cosine": "semantic_similarity",
    "starts-with": "starts_with",
    "cost": "cost_max",
    "latency": "latency_max",
}


def detect(path: Path) -> bool:
    """A .json file that opens as promptfoo's output does (evalId, then results with a version),
    or a .jsonl file whose first line is a promptfoo result (`-o results.jsonl`)."""
    if path.suffix not in (".json", ".jsonl") or not path.is_file():
        return False
    try:
        if path.suffix == ".jsonl":
            return _lines_of_results(path)
        with path.open(encoding="utf-8", errors="replace") as f:
            return _HEAD.match(f.read(4096)) is not None
    except OSError:
        return False


def _is_result(value: Any) -> bool:
    return isinstance(value, dict) and all(key in value for key in _RESULT_KEYS)


def _lines_of_results(path: Path) -> bool:
    """Whether the first line is one promptfoo result (as `-o results.jsonl` writes them)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return _is_result(jsontext.loads_tool(f.readline()))
    except (OSError, ValueError, RecursionError):  # the reader reports what is wrong
        return False


def _load_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """`promptfoo eval -o results.jsonl`: one result per line, nothing else (no config); with
    their line numbers."""
    results = []
    try:
        with path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    result = jsontext.loads_tool(line)
                except ValueError as exc:
                    message = f"{path}, line {number}: not JSON ({exc})"
                    raise InputError(message, hint=_CUT) from None
                if not _is_result(result):
                    raise InputError(
                        f"{path}, line {number}: not a promptfoo result (expected an object with "
                        f"{', '.join(_RESULT_KEYS)}, one per line)",
                        hint=_LINES_HINT,
                    )
                results.append((number, result))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not readable: {exc}") from None
    if not results:
        raise InputError(f"{path}: holds no promptfoo results", hint=_LINES_HINT)
    return results


def _load(path: Path) -> dict[str, Any]:
    try:
        data = jsontext.loads_tool(path.read_text(encoding="utf-8"))
    except jsontext.JSONError as exc:
        raise InputError(f"{path}: not JSON ({exc})", hint=_CUT) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not readable: {exc}") from None
    summary = data.get("results") if isinstance(data, dict) else None
    if not (isinstance(summary, dict) and "version" in summary and "evalId" in data):
        raise InputError(
            f"{path}: not a promptfoo output (expected an object with evalId and results.version)",
            hint=_HINT,
        )
    version = summary["version"]
    if version != SUPPORTED_VERSION or not isinstance(summary.get("results"), list):
        newer = isinstance(version, int) and version > SUPPORTED_VERSION
        raise InputError(
            f"{path}: promptfoo output version {version!r} is not supported "
            f"(expected {SUPPORTED_VERSION}, with results.results a list)",
            hint="Upgrade calipers, or re-run `promptfoo eval -o results.json` with promptfoo "
            "0.121 to 0.123 (they write version 3)."
            if newer
            else "Re-run `promptfoo eval -o results.json` with a current promptfoo (0.121 to 0.123 "
            "write version 3).",
        )
    return dict(data)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per promptfoo result (test × prompt × provider)."""
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not promptfoo's results file", hint=_HINT)
    if path.suffix == ".jsonl" or _lines_of_results(path):
        # JSON Lines carry the results alone: no config (description), no repeat count.
        data: dict[str, Any] = {}
        results, place = _load_lines(path), "line {}"
    else:
        data = _load(path)
        results = [(n, r) for n, r in enumerate(data["results"]["results"]) if isinstance(r, dict)]
        place = "results.results[{}]"
    task = str(_dict(data, "config").get("description") or "promptfoo")
    repeat = _dict(data, "runtimeOptions").get("repeat")
    runs = _run_names([r for _, r in results])
    epochs: dict[tuple[str, str], int] = {}
    rows = []
    notes = Notes()
    left = Unimported("promptfoo")
    for number, result in sorted(results, key=lambda x: (_index(x[1]), x[0])):
        run, sample = runs[_column(result)], _sample_id(result)
        epoch = epochs[(run, sample)] = epochs.get((run, sample), -1) + 1
        test = _dict(result, "testCase")
        times = _dict(test, "options").get("repeat", repeat)
        if isinstance(times, int) and epoch >= times:
            raise InputError(
                f"{path}: {place.format(number)}: test '{test.get('description') or ''}' "
                f"of run '{run}' comes {epoch + 1} times with the same vars, but promptfoo "
                f"repeats it {times} time(s): calipers cannot tell these samples apart",
                hint="Give each test its own `description` in promptfooconfig.yaml (or keep its "
                "vars: PROMPTFOO_STRIP_TEST_VARS removes them), and re-run `promptfoo eval`.",
            )
        record = place.format(number)
        try:
            rows.append(_row(result, run, task, sample, epoch, (path, record), notes))
        except (AttributeError, TypeError, ValueError) as exc:
            raise InputError(f"{path}, {record} is malformed: {exc}") from None
        _left_out(path, result, record, left)
    _totals_left_out(path, data, left)
    return Rows(rows, notes.lines(), left.entries())


_RESULT_READ = {
    "error", "gradingResult", "latencyMs", "namedScores", "prompt", "promptIdx", "provider",
    "response", "score", "success", "testCase", "testIdx", "vars", "failureReason",
}  # fmt: skip
_RESULT_SKIPPED = {
    "id": "promptfoo's id of the result",
    "promptId": "promptfoo's id of the prompt (the run is named after its label)",
    "cost": "a copy promptfoo fills with 0 (the provider's response.cost is read)",
    "tokenUsage": "a copy promptfoo fills with 0 (the provider's response.tokenUsage is read)",
    "metadata": "free-form metadata",
}
_RESPONSE_READ = {"output", "cost", "tokenUsage", "cached", "error"}
_RESPONSE_SKIPPED = {
    "raw": "the provider's raw answer (its parsed output is read)",
    "isRefusal": "promptfoo's guess that the answer refused",
    "metadata": "free-form metadata",
    "finishReason": "why the provider stopped",
    "logProbs": "token log-probabilities",
    "guardrails": "the provider's guardrail flags",
}
_GRADING_READ = {"pass", "score", "namedScores", "namedScoreWeights", "tokensUsed",
                 "componentResults"}  # fmt: skip
_GRADING_SKIPPED = {
    "reason": "the overall reason (each assertion's own reason is its detail)",
    "assertion": "the assertion that decided the test (each is read from componentResults)",
}


def _left_out(path: Path, result: dict[str, Any], record: str, left: Unimported) -> None:
    left.fields(path, result, _RESULT_READ, _RESULT_SKIPPED, record)
    left.fields(path, _dict(result, "response"), _RESPONSE_READ, _RESPONSE_SKIPPED, record,
                "response.")  # fmt: skip
    left.fields(path, _dict(result, "gradingResult"), _GRADING_READ, _GRADING_SKIPPED, record,
                "gradingResult.")  # fmt: skip


def _totals_left_out(path: Path, data: dict[str, Any], left: Unimported) -> None:
    """promptfoo's run totals (`results.stats`) and per-column metrics (`results.prompts`)."""
    stats = _dict(_dict(data, "results"), "stats")
    usage = _dict(stats, "tokenUsage")
    graded = _dict(usage, "assertions")
    for name, value, detail in (
        ("stats.successes", stats.get("successes"), "passed tests"),
        ("stats.failures", stats.get("failures"), "failed tests"),
        ("stats.errors", stats.get("errors"), "provider errors"),
        ("stats.tokenUsage.prompt", usage.get("prompt"), "the providers' prompt tokens"),
        ("stats.tokenUsage.completion", usage.get("completion"), "the providers' output tokens"),
        ("stats.tokenUsage.assertions.prompt", graded.get("prompt"), "the graders' prompt "
         "tokens (grader_tokens_in)"),
        ("stats.tokenUsage.assertions.completion", graded.get("completion"), "the graders' "
         "output tokens (grader_tokens_out)"),
    ):  # fmt: skip
        if _number(value):
            left.metric(path, name, "aggregate-only", detail, kind="total", value=value)
    if any(
        isinstance(p, dict) and "metrics" in p for p in _dict(data, "results").get("prompts") or []
    ):
        left.metric(
            path, "prompts[].metrics", "aggregate-only",
            "promptfoo's per-column score, pass counts and named metrics",
            kind="total",
        )  # fmt: skip


def _index(result: dict[str, Any]) -> int:
    index = result.get("testIdx")
    return index if isinstance(index, int) else 0


def _column(result: dict[str, Any]) -> int:
    index = result.get("promptIdx")
    return index if isinstance(index, int) else 0


def _provider(result: dict[str, Any]) -> str:
    provider = result.get("provider")
    if isinstance(provider, dict):
        return str(provider.get("label") or provider.get("id") or "promptfoo")
    return str(provider or "promptfoo")


def _prompt_label(result: dict[str, Any]) -> str:
    prompt = _dict(result, "prompt")
    return str(prompt.get("label") or prompt.get("raw") or "")


def _run_names(results: list[dict[str, Any]]) -> dict[int, str]:
    columns: dict[int, tuple[str, str]] = {}
    for result in results:
        columns.setdefault(_column(result), (_provider(result), _prompt_label(result)))
    several = len({label for _, label in columns.values()}) > 1
    names = {c: f"{p} / {label}" if several else p for c, (p, label) in columns.items()}
    taken = list(names.values())
    return {c: f"{n} #{c}" if taken.count(n) > 1 else n for c, n in names.items()}


def _sample_id(result: dict[str, Any]) -> str:
    test = _dict(result, "testCase")
    key = {"description": test.get("description"), "vars": result.get("vars") or {}}
    text = json.dumps(key, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _row(
    result: dict[str, Any], run: str, task: str, sample: str, epoch: int,
    place: tuple[Path, str], notes: Notes,
) -> dict[str, Any]:  # fmt: skip
    """The sample row of one result; `place` is (the file, the result's line or index)."""
    file, record = place
    row: dict[str, Any] = {"run": run, "task": task, "sample_id": sample, "epoch": epoch}
    response = _dict(result, "response")
    if isinstance(raw := _dict(result, "prompt").get("raw"), str):
        row["input"] = raw
    output = response.get("output")
    if output is not None:
        row["output"] = output if isinstance(output, str) else json.dumps(output)
    # A cached response's latency is the cache lookup's, not the provider's.
    if _number(result.get("latencyMs")) and not response.get("cached"):
        row["latency_s"] = result["latencyMs"] / 1000
    if _number(response.get("cost")):
        row["cost_usd"] = response["cost"]
    usage = _dict(response, "tokenUsage")
    for field, key in (("tokens_in", "prompt"), ("tokens_out", "completion")):
        if isinstance(usage.get(key), int) and not isinstance(usage[key], bool):
            row[field] = usage[key]
    row.update(grader_usage(result))
    if result.get("failureReason") == ERROR:
        row["error"] = str(result.get("error") or response.get("error") or "provider error")
        test = _dict(result, "testCase")
        specs = [a for a in test.get("assert") or [] if isinstance(a, dict)]
        detail = f"not evaluated: {row['error']}"
        row["assertions"] = [a for s in specs if (a := _assertion(s, False, detail)) is not None]
    else:
        row["correct"] = flag(result.get("success"), f"{file}, {record}", "success")
        named = _named_scores(result)
        scores = {"score": result.get("score"), **{k: v for k, v in named.items() if k != "score"}}
        row["scores"] = {
            k: number for k, v in scores.items()
            if (number := notes.score(file, k, v, record)) is not None
        }  # fmt: skip
        weights = _dict(_dict(result, "gradingResult"), "namedScoreWeights")
        row["score_weights"] = {
            k: float(weights[k])
            for k in named
            if k != "score" and k in row["scores"] and _number(weights.get(k))
        }
        components = _dict(result, "gradingResult").get("componentResults") or []
        row["assertions"] = _graded(components, f"{file}, {record}")
    for field in ("scores", "score_weights", "assertions"):
        if not row.get(field):
            row.pop(field, None)
    return row


def grader_usage(result: dict[str, Any]) -> dict[str, int]:
    """The graders' tokens (model-graded assertions: llm-rubric, factuality, g-eval, …):
    `gradingResult.tokensUsed`, which promptfoo sums into `stats.tokenUsage.assertions`, apart
    from the provider's. None when no grader was called (promptfoo writes zeros there, with
    numRequests 0)."""
    used = _dict(_dict(result, "gradingResult"), "tokensUsed")
    counts = {k: used.get(k) for k in ("prompt", "completion", "total", "numRequests")}
    if not any(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in counts.values()):
        return {}
    return {
        field: value
        for field, key in (("grader_tokens_in", "prompt"), ("grader_tokens_out", "completion"))
        if isinstance(value := used.get(key), int) and not isinstance(value, bool) and value >= 0
    }


def _named_scores(result: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's per-test named metrics, each Σ(score·weight)/Σweight over the test's assertions
    with that metric. A metric whose weights sum to 0 there is written as 0 without being measured
    (and adds nothing to promptfoo's column metric): left out."""
    weights = _dict(_dict(result, "gradingResult"), "namedScoreWeights")
    named = _dict(result, "namedScores")
    return {k: v for k, v in named.items() if not (_number(weights.get(k)) and weights[k] <= 0)}


def _graded(components: list[Any], where: str) -> list[dict[str, Any]]:
    """The top-level assertions: promptfoo flattens an assert-set (or any assertion returning
    component results) into the set's result followed by its members, which it did not score."""
    out, skip = [], 0
    for i, component in enumerate(components):
        if skip:
            skip -= 1
            continue
        if not isinstance(component, dict):
            continue
        members = [m for m in component.get("componentResults") or [] if isinstance(m, dict)]
        skip = len(component.get("componentResults") or [])
        spec = component.get("assertion")
        if not isinstance(spec, dict):  # an assert-set: its weight is in metadata
            spec = _dict(_dict(component, "metadata"), "assertionSet")
            spec = {**spec, "assert": [m.get("assertion") for m in members]}
        score = component.get("score")
        detail = str(component.get("reason") or "")
        if _number(score):
            detail = f"{detail} (score {score:g})".strip()
        passed = flag(component.get("pass"), where, f"gradingResult.componentResults[{i}].pass")
        assertion = _assertion(spec, passed, detail)
        if assertion is not None:
            out.append(assertion)
    return out


def _assertion(spec: dict[str, Any], passed: bool, detail: str) -> dict[str, Any] | None:
    weight = spec.get("weight")
    if weight is not None and not (_number(weight) and weight > 0):
        return None  # weight 0 only gates promptfoo's pass; calipers needs weights > 0
    kind = str(spec.get("type") or "unknown")
    out: dict[str, Any] = {"name": kind, "type": _TYPES.get(kind, "custom"), "passed": passed}
    if weight is not None:
        out["weight"] = float(weight)
    value = spec.get("value", spec.get("assert"))  # an assert-set: its members' specs
    if kind in ("cost", "latency") and _number(spec.get("threshold")):
        value = spec["threshold"] / (1000 if kind == "latency" else 1)  # latency: ms → s
    if kind == "is-json" and value is not None:
        out["type"] = "json_schema"
    if value is not None:
        out["value"] = value
    if detail:
        out["detail"] = detail
    return out


def _dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
