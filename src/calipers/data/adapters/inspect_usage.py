"""Token usage and cost of an inspect_ai sample, split between the system under test and the
graders.

inspect records a sample's usage in `model_usage`, keyed by the model as `provider/name` — the same
string as the log's `eval.model`, the model under test. A model-graded scorer's grader is a model of
its own (`model_graded_qa(model=...)`, or one bound to its role with `eval(model_roles=...)`, which
newer logs also count in `role_usage` under the role's name), so it has a key of its own:

- `eval.model`'s entry → `tokens_in`, `tokens_out`, `cost_usd` (the system under test);
- every other entry → `grader_tokens_in`, `grader_tokens_out`, `grader_cost_usd`.

The keys cannot tell a grader from another model the solver itself calls, nor the model under test
answering from the model under test grading itself (a model-graded scorer with no grader bound falls
back to it). A sample's `events` can: each model call lies in a span, and a scorer's calls in a span
of type `scorer`. `misattributed` finds the calls that the key rule puts on the wrong side.
"""

from __future__ import annotations

from typing import Any

_IN = ("input_tokens", "input_tokens_cache_read", "input_tokens_cache_write")


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _sums(usages: list[dict[str, Any]], prefix: str) -> dict[str, Any]:
    """tokens_in (inspect's input_tokens excludes the cached ones, counted apart), tokens_out,
    cost_usd: each summed over the models, and left out when a model's count is not an integer
    (a missing or null cache count is none) or a model has no cost."""
    fields: dict[str, Any] = {}
    for field, parts in (("tokens_in", _IN), ("tokens_out", ("output_tokens",))):
        counts = [u.get(part) for u in usages for part in parts]
        counts = [c for c in counts if c is not None]
        if all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
            fields[prefix + field] = sum(counts)
    costs: list[float] = [u["total_cost"] for u in usages if _number(u.get("total_cost"))]
    if len(costs) == len(usages):
        fields[f"{prefix}cost_usd"] = float(sum(costs))
    return fields


def usage_fields(sample: dict[str, Any], model: str | None) -> dict[str, Any]:
    """The sample fields of its `model_usage`: `model`'s (the eval's) as its own, the others'
    as its graders'. Empty when the sample has no usage, or when `model` is not among its keys
    (whose usage is then not ours to guess: see `unknown_model`)."""
    usage = {str(name): _obj(u) for name, u in _obj(sample.get("model_usage")).items()}
    if model not in usage:
        return {}
    fields = _sums([usage.pop(model)], "")
    if usage:
        fields.update(_sums(list(usage.values()), "grader_"))
    return fields


def unknown_model(sample: dict[str, Any], model: str | None) -> bool:
    """The sample has usage, but none under the eval's model."""
    usage = _obj(sample.get("model_usage"))
    return bool(usage) and model not in usage


def misattributed(sample: dict[str, Any], model: str | None) -> tuple[bool, set[str]]:
    """From the sample's events (when it holds them; a chunked sample keeps them apart): whether
    the model under test was called inside a scorer (it graded itself), and which other models
    were called outside any scorer (by the solver: part of the system under test, not graders)."""
    events = [_obj(e) for e in sample.get("events") or [] if isinstance(e, dict)]
    spans = {e.get("id"): e for e in events if e.get("event") == "span_begin"}
    if not any(span.get("type") in ("scorer", "scorers") for span in spans.values()):
        return False, set()  # no scorer spans (older logs, an unscored sample): nothing to tell

    def in_scorer(span_id: Any) -> bool:
        seen = set()
        while span_id in spans and span_id not in seen:
            seen.add(span_id)
            if spans[span_id].get("type") in ("scorer", "scorers"):
                return True
            span_id = spans[span_id].get("parent_id")
        return False

    self_graded, helpers = False, set()
    for event in events:
        if event.get("event") != "model" or not isinstance(event.get("model"), str):
            continue
        scoring = in_scorer(event.get("span_id"))
        if event["model"] == model and scoring:
            self_graded = True
        elif event["model"] != model and not scoring:
            helpers.add(event["model"])
    return self_graded, helpers
