"""The sample: one row per observation, keyed by (run, task, sample_id, epoch).

This module is the single definition of the data model. The JSON Schema shipped with the package
(`sample.schema.json`), the DuckDB table of the store, the readers' typed columns and the validator
are all derived from `FIELDS`, so they cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KEY = ("run", "task", "sample_id", "epoch")
# The fields that name an independent unit, which a comparison can cluster by; `auto`: by group
# when every sample names one (verdicts/persample.py, resolve_cluster).
CLUSTER_UNITS = ("sample_id", "group", "task")
CLUSTERS = ("auto", *CLUSTER_UNITS)

ASSERTION_STRUCT = (
    "STRUCT(name VARCHAR, type VARCHAR, layer VARCHAR, weight DOUBLE, passed BOOLEAN, "
    "value JSON, detail VARCHAR)"
)
JUDGMENT_STRUCT = (
    "STRUCT(judge VARCHAR, dimension VARCHAR, score DOUBLE, scale_min DOUBLE, scale_max DOUBLE, "
    "rationale VARCHAR, red_flags VARCHAR[], bonuses VARCHAR[], error VARCHAR, "
    "prompt_hash VARCHAR, repeat INTEGER)"
)
HUMAN_STRUCT = "STRUCT(dimension VARCHAR, score DOUBLE)"
TOOL_STRUCT = "STRUCT(name VARCHAR, input JSON, output VARCHAR)"

# Every assertion type belongs to exactly one layer of the layered scheme (seed 000): fact checks
# what the output says, behavior how the system got there. The map is exhaustive; a type outside it
# is an input error wherever it appears.
FACT_ASSERTIONS = (
    "contains",
    "not_contains",
    "regex",
    "equals",
    "not_equals",
    "contains_all",
    "contains_any",
    "json_valid",
    "json_schema",
    "semantic_similarity",
    "tool_output_contains",
    "tool_input_contains",
)
BEHAVIOR_ASSERTIONS = (
    "starts_with",
    "ends_with",
    "min_length",
    "max_length",
    "word_count_min",
    "word_count_max",
    "cost_max",
    "latency_max",
    "turns_min",
    "turns_max",
    "tools_called",
    "tools_not_called",
    "tools_count_min",
    "tools_count_max",
    "custom",
)
ASSERTION_LAYERS: dict[str, str] = {
    **{t: "fact" for t in FACT_ASSERTIONS},
    **{t: "behavior" for t in BEHAVIOR_ASSERTIONS},
}


def layer_case(item: str) -> str:
    """SQL for the layer of assertion struct `item` from its type; 'unknown' for a type outside
    the map (NULL when the type itself is NULL)."""
    fact = ", ".join(f"'{t}'" for t in FACT_ASSERTIONS)
    behavior = ", ".join(f"'{t}'" for t in BEHAVIOR_ASSERTIONS)
    return (
        f"(CASE WHEN {item}.type IN ({fact}) THEN 'fact' "
        f"WHEN {item}.type IN ({behavior}) THEN 'behavior' "
        f"WHEN {item}.type IS NOT NULL THEN 'unknown' END)"
    )


_NUM = {"type": "number"}
_NONNEG_NUM = {"type": "number", "minimum": 0}
INT32_MAX = 2**31 - 1  # the store's INTEGER columns (epoch, tool_calls, steps)
INT64_MAX = 2**63 - 1  # its BIGINT columns (tokens)
_NONNEG_INT32 = {"type": "integer", "minimum": 0, "maximum": INT32_MAX}
_NONNEG_INT = {"type": "integer", "minimum": 0, "maximum": INT64_MAX}
_STR = {"type": "string"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


_ASSERTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type"],
    "properties": {
        "name": _nullable(_STR),
        "type": {
            **_STR,
            "enum": list(ASSERTION_LAYERS),
            "description": "assertion type; maps to exactly one layer",
        },
        "layer": _nullable(
            {
                "type": "string",
                "enum": ["fact", "behavior"],
                "description": "optional; must agree with the type's layer",
            }
        ),
        "weight": _nullable({"type": "number", "exclusiveMinimum": 0}),
        "passed": _nullable({"type": "boolean"}),
        "value": {"description": "the assertion's argument (string, number, list or object)"},
        "detail": _nullable(_STR),
    },
}
_JUDGMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "judge": _nullable(_STR),
        "dimension": _nullable({**_STR, "description": "null means the overall score"}),
        "score": _nullable({**_NUM, "description": "null when the judge failed (see error)"}),
        "scale_min": _nullable(_NUM),
        "scale_max": _nullable(_NUM),
        "rationale": _nullable(_STR),
        "red_flags": _nullable({"type": "array", "items": _STR}),
        "bonuses": _nullable({"type": "array", "items": _STR}),
        "error": _nullable(_STR),
        "prompt_hash": _nullable(_STR),
        "repeat": _nullable(_NONNEG_INT),
    },
}
_HUMAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["score"],
    "properties": {"dimension": _nullable(_STR), "score": _NUM},
}


_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {**_STR, "description": "the tool's name"},
        "input": {"description": "the arguments it was called with (any JSON)"},
        "output": _nullable({**_STR, "description": "what it returned, as text"}),
    },
}


@dataclass(frozen=True)
class Field:
    """One field of the sample: its store type, JSON Schema, and whether flat files carry it."""

    name: str
    duckdb_type: str
    schema: dict[str, Any]
    description: str
    required: bool = False
    flat: bool = True  # carried by CSV / Parquet columns (nested lists are JSONL-only)
    default: Any = None
    since: str | None = None  # the migration that added the column (None: the first one)
    # A string and nothing else: a number or any other JSON value is an input error, never read
    # as its text (the other VARCHAR fields take a number as its text, e.g. sample_id 17).
    strict: bool = False

    def json_schema(self) -> dict[str, Any]:
        body = {**self.schema, "description": self.description}
        return body if self.required else _nullable(body)


FIELDS: tuple[Field, ...] = (
    Field(
        "run",
        "VARCHAR",
        _STR,
        "the system under test: model, prompt version, agent config",
        required=True,
    ),
    Field("task", "VARCHAR", _STR, "task, skill or domain", required=True),
    Field(
        "sample_id",
        "VARCHAR",
        _STR,
        "identity of the input; the pairing key across runs",
        required=True,
    ),
    Field(
        "epoch",
        "INTEGER",
        _NONNEG_INT32,
        "repeat index; repeats of one sample form a cluster",
        required=True,
        default=0,
    ),
    Field("tier", "VARCHAR", _STR, "difficulty tier (reasonscore)"),
    Field(
        "point", "VARCHAR", _STR, "difficulty coordinate within the tier, e.g. length=16,depth=2"
    ),
    Field("correct", "BOOLEAN", {"type": "boolean"}, "outcome of the sample"),
    Field(
        "guess_chance",
        "DOUBLE",
        {"type": "number", "minimum": 0, "maximum": 1},
        "probability that a guess is right",
    ),
    Field("truncated", "BOOLEAN", {"type": "boolean"}, "the output hit the context limit"),
    Field("output", "VARCHAR", _STR, "raw output text"),
    Field("decision", "JSON", {}, "the structured decision value (any JSON)"),
    Field("perturbation", "VARCHAR", _STR, "baseline, reorder, pad, swap, …"),
    Field("perturbation_of", "VARCHAR", _STR, "the case this sample perturbs"),
    Field("tokens_in", "BIGINT", _NONNEG_INT, "input tokens"),
    Field("tokens_out", "BIGINT", _NONNEG_INT, "output tokens"),
    Field("cost_usd", "DOUBLE", _NONNEG_NUM, "cost in US dollars"),
    Field("latency_s", "DOUBLE", _NONNEG_NUM, "wall-clock latency in seconds"),
    Field("tool_calls", "INTEGER", _NONNEG_INT32, "number of tool calls"),
    Field("steps", "INTEGER", _NONNEG_INT32, "number of agent steps or turns"),
    Field("error", "VARCHAR", _STR, "why the pipeline or judge failed for this sample"),
    Field(
        "assertions",
        f"{ASSERTION_STRUCT}[]",
        {"type": "array", "items": _ASSERTION_SCHEMA},
        "assertion results or specs",
        flat=False,
    ),
    Field(
        "judgments",
        f"{JUDGMENT_STRUCT}[]",
        {"type": "array", "items": _JUDGMENT_SCHEMA},
        "judge scores, overall (dimension null) or per dimension",
        flat=False,
    ),
    Field(
        "human",
        f"{HUMAN_STRUCT}[]",
        {"type": "array", "items": _HUMAN_SCHEMA},
        "human reference labels",
        flat=False,
    ),
    Field(
        "tools",
        f"{TOOL_STRUCT}[]",
        {"type": "array", "items": _TOOL_SCHEMA},
        "the tool calls made, in order (tools_called, tool_output_contains, … assertions)",
        flat=False,
        since="0003_tools",
    ),
    Field(
        "scores",
        "MAP(VARCHAR, DOUBLE)",
        {"type": "object", "additionalProperties": {"type": "number"}},
        "named per-sample metrics (accuracy, f1, exact_match, …); flat files use scores.NAME "
        "columns",
        flat=False,
    ),
    Field(
        "input",
        "VARCHAR",
        _STR,
        "the input given to the system (judges are shown it; `calipers grade --judge`)",
        since="0005_input_expected",
    ),
    Field(
        "expected",
        "VARCHAR",
        _STR,
        "the reference answer, when there is one (judges are shown it)",
        since="0005_input_expected",
    ),
    Field(
        "group",
        "VARCHAR",
        _STR,
        "a label shared by samples that are not independent (same passage, same problem "
        "family); intervals cluster by it when every sample has one (`--cluster auto`)",
        since="0006_group",
        strict=True,
    ),
    Field(
        "grader_tokens_in",
        "BIGINT",
        _NONNEG_INT,
        "input tokens of the graders and judges that scored the sample (a model-graded "
        "scorer), kept apart from the system's own `tokens_in`",
        since="0007_grader_usage",
    ),
    Field(
        "grader_tokens_out",
        "BIGINT",
        _NONNEG_INT,
        "output tokens of the graders",
        since="0007_grader_usage",
    ),
    Field(
        "grader_cost_usd",
        "DOUBLE",
        _NONNEG_NUM,
        "cost of the graders in US dollars",
        since="0007_grader_usage",
    ),
    Field(
        "score_weights",
        "MAP(VARCHAR, DOUBLE)",
        {"type": "object", "additionalProperties": {"type": "number", "exclusiveMinimum": 0}},
        "the sample's weight in the mean of scores.NAME, per name (> 0; absent: 1), as a "
        "harness weighs it — promptfoo weighs each test's named metric by its assertions' "
        "weights",
        flat=False,
        since="0008_score_weights",
    ),
)

FIELD_BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}
FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)


def duckdb_columns() -> dict[str, str]:
    """Column name → DuckDB type, in model order."""
    return {f.name: f.duckdb_type for f in FIELDS}


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one sample (one line of a JSON Lines file)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://calipers.dev/schemas/sample.schema.json",
        "title": "calipers sample",
        "description": "One observation of an evaluation; key (run, task, sample_id, epoch). "
        "`run` may be omitted when given on the command line (--as); `epoch` defaults to 0.",
        "type": "object",
        "required": ["task", "sample_id"],
        "properties": {f.name: f.json_schema() for f in FIELDS},
        "additionalProperties": True,
    }
