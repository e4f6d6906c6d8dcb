"""Suites: the tasks `calipers run` puts through a user's pipeline, in YAML (tasks may also come
from a JSON Lines file, one task per line).

```yaml
name: support-bot            # optional
epochs: 2                    # runs of each task (default 1; a task's own `epochs` wins)
cases_file: more_tasks.jsonl # optional: more tasks, one JSON object per line
pipeline:                    # optional; each is overridden by its `calipers run` option
  timeout_s: 60              # --timeout (default 150)
  transient_exit_codes: [75] # --retry-exit-code: retried with backoff
  attempts: 3                # --attempts (default 3 when transient codes are given, else 1)
  version: "2024-06-rc1"     # --pipeline-version: part of the cache key
  env: [MODEL_NAME]          # variables whose values are part of the cache key
judge:                       # optional
  timeout_s: 30              # --judge-timeout
  retries: 1                 # --judge-retries
  pairwise:                  # optional: after the run is stored, judge its outputs against
    against: [baseline-v1]   # these runs of the store, in both orders (--pairwise-against)
tasks:
  - id: refund-window
    input: "A customer asks for a refund after 40 days. What do we answer?"
    expected: "Refunds are accepted within 30 days."     # optional, shown to judges
    assertions:                                            # the types of `calipers schema`
      - {type: contains, value: "30 days"}
      - {type: max_length, value: 600}
    rubric: rubrics/support.yaml                           # optional: judge on the rubric
  - id: long-ticket
    input_file: inputs/ticket-1042.md                      # relative to the suite file
```

Every problem names the file, the task (line for JSONL) and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from calipers.data import configfile, jsontext
from calipers.data.configfile import StrictModel
from calipers.data.model import ASSERTION_LAYERS
from calipers.errors import InputError


class AssertionSpec(StrictModel):
    type: str
    value: Any = None
    name: str | None = None
    weight: float = Field(default=1.0, gt=0)

    @model_validator(mode="after")
    def _known_type(self) -> AssertionSpec:
        if self.type not in ASSERTION_LAYERS:
            raise ValueError(
                f"unknown assertion type '{self.type}' (see `calipers schema` for the types)"
            )
        return self


class Task(StrictModel):
    id: str = Field(min_length=1)
    input: str | None = None
    input_file: str | None = None
    expected: str | None = None
    assertions: list[AssertionSpec] = Field(default_factory=list)
    rubric: str | None = None
    epochs: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _one_input(self) -> Task:
        if (self.input is None) == (self.input_file is None):
            raise ValueError("give exactly one of `input` and `input_file`")
        return self


class PipelineSettings(StrictModel):
    """How the pipeline is invoked; each is overridden by its `calipers run` option."""

    timeout_s: float | None = Field(default=None, gt=0)
    # exit codes that mean "try again" (rate limited, a flaky dependency): retried with backoff
    transient_exit_codes: list[Annotated[int, Field(ge=1, le=255)]] = Field(default_factory=list)
    attempts: int | None = Field(default=None, ge=1, le=20)
    # part of every cached output's key: a new version is run again, never served old outputs
    version: str | None = Field(default=None, min_length=1)  # --pipeline-version
    env: list[str] = Field(default_factory=list)  # variables whose values are part of the key

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return str(value) if number else value

    @field_validator("env", mode="after")
    @classmethod
    def _variable_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or "=" in name or "\x00" in name:
                raise ValueError(f"'{name}' is not an environment variable's name")
        return value


class PairwiseSettings(StrictModel):
    """Pairwise judging of the new run against runs already in the store (on the samples they
    share, both orders, the run's --judge judges); overridden by --pairwise-against."""

    against: list[str] = Field(min_length=1)

    @field_validator("against", mode="before")
    @classmethod
    def _one_name(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value  # `against: baseline-v1` is a list

    @field_validator("against", mode="after")
    @classmethod
    def _named_once(cls, value: list[str]) -> list[str]:
        if any(not name for name in value):
            raise ValueError("a run name is empty")
        twice = sorted({n for n in value if value.count(n) > 1})
        if twice:
            raise ValueError(f"run {', '.join(twice)} named twice")
        return value


class JudgeSettings(StrictModel):
    """Judge call limits; each is overridden by --judge-timeout / --judge-retries."""

    timeout_s: float | None = Field(default=None, gt=0)
    retries: int | None = Field(default=None, ge=0, le=10)
    pairwise: PairwiseSettings | None = None


class SuiteFile(StrictModel):
    name: str | None = None
    epochs: int = Field(default=1, ge=1)
    cases_file: str | None = None
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    tasks: list[Task] = Field(default_factory=list)


class Suite(BaseModel):
    """A loaded suite: tasks with their input text resolved."""

    path: Path
    name: str
    epochs: int
    tasks: list[Task]
    inputs: dict[str, str]  # task id → the text given to the pipeline
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)

    def epochs_of(self, task: Task, override: int | None = None) -> int:
        return override or task.epochs or self.epochs


_TASK_HINT = "A task needs `id` and one of `input` or `input_file`; see docs/running.md."
_PAIRWISE_HINT = (
    "`judge: {pairwise: {against: [RUN, ...]}}` names runs of the store; see docs/running.md."
)


def _fields_at(loc: list[Any]) -> str:
    owners: dict[str, type[StrictModel]] = {
        "tasks": Task, "pipeline": PipelineSettings, "judge": JudgeSettings
    }  # fmt: skip
    owner = owners.get(str(loc[0]) if len(loc) > 1 else "", SuiteFile)
    what = {Task: "a task", PipelineSettings: "`pipeline:`", JudgeSettings: "`judge:`"}.get(
        owner, "a suite"
    )
    return f"{what} takes " + ", ".join(f"`{name}`" for name in owner.model_fields)


def _problem(
    exc: ValidationError, doc: configfile.Document, prefix: tuple[Any, ...] = ()
) -> InputError:
    first = exc.errors()[0]
    loc = [*prefix, *first["loc"]]
    if loc[:2] == ["judge", "pairwise"]:
        hint = _PAIRWISE_HINT
    elif first["type"] in ("missing", "value_error"):
        hint = _TASK_HINT
    elif first["type"] == "extra_forbidden":  # a misspelt or misplaced key: say what fits there
        hint = f"`{loc[-1]}` is not a field here; {_fields_at(loc)} (docs/running.md)."
    else:  # a value of the wrong type or range: nothing is converted
        hint = (
            'Write each value as its type: a count as a whole number (2, not "2", 2.0 or '
            "true), a time as a finite number; see the suite format in docs/running.md."
        )
    return configfile.invalid(exc, doc, hint=hint, prefix=prefix)


def load_suite(path: Path) -> Suite:
    """Read and validate a suite file (YAML, or strict JSON for a .json name) and the files it
    names; every problem names the file, its line and the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: suite file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the suite: {exc}") from None
    doc = configfile.parse(text, str(path), json=path.suffix.lower() == ".json")
    raw = doc.data
    if not isinstance(raw, dict):
        raise InputError(f"{path}: a suite is a mapping with `tasks:` (got {type(raw).__name__})")
    try:
        spec = SuiteFile.model_validate(raw)
    except ValidationError as exc:
        raise _problem(exc, doc) from None
    tasks = list(spec.tasks)
    if spec.cases_file:
        tasks += _jsonl_tasks(path.parent / spec.cases_file)
    if not tasks:
        raise InputError(f"{path}: the suite has no task", hint="Add `tasks:` or `cases_file:`.")
    seen: set[str] = set()
    inputs = {}
    for task in tasks:
        if task.id in seen:
            raise InputError(f"{path}: task id '{task.id}' appears twice")
        seen.add(task.id)
        inputs[task.id] = _input_text(path, task)
        _check_assertion_values(path, task)
    return Suite(
        path=path, name=spec.name or path.stem, epochs=spec.epochs, tasks=tasks, inputs=inputs,
        pipeline=spec.pipeline, judge=spec.judge,
    )  # fmt: skip


def _jsonl_tasks(path: Path) -> list[Task]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the cases file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: the cases file is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
            f"offset {exc.start})",
            hint="Save it as UTF-8.",
        ) from None
    tasks = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            tasks.append(Task.model_validate(jsontext.loads(line)))
        except jsontext.JSONError as exc:
            where = f"{path}, line {number}" + (f", {exc.where()}" if exc.field else "")
            column = f", column {exc.column}" if exc.column is not None else ""
            raise InputError(
                f"{where}{column}: {exc.message}",
                hint="One task per line, as strict JSON (no repeated key, NaN or trailing comma).",
            ) from None
        except ValidationError as exc:
            raise _problem(exc, configfile.Document(f"{path}, line {number}", None)) from None
    return tasks


def _input_text(suite_path: Path, task: Task) -> str:
    if task.input is not None:
        return task.input
    assert task.input_file is not None
    source = suite_path.parent / task.input_file
    try:
        return source.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"{suite_path}: task '{task.id}': field 'input_file': cannot read {source}: "
            f"{exc.strerror}"
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{suite_path}: task '{task.id}': field 'input_file': {source} is not UTF-8 text "
            f"(byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
            hint="Save it as UTF-8.",
        ) from None


# Every telemetry field present, so that a dry evaluation can only fail on the spec itself.
_DRY_SAMPLE = {"output": "", "cost_usd": 0.0, "latency_s": 0.0, "steps": 0, "tool_calls": 0,
               "tools": [], "decision": None, "error": None}  # fmt: skip


def _check_assertion_values(path: Path, task: Task) -> None:
    """Evaluate each assertion once on an empty sample, so that a value of the wrong type (a
    number for `contains`, a bad regex or JSON schema) is reported before the pipeline runs."""
    from calipers.grading.assertions import evaluate

    for i, spec in enumerate(task.assertions):
        if spec.type in ("semantic_similarity", "custom"):  # a model to load; nothing to check
            continue
        evaluate(spec.model_dump(), _DRY_SAMPLE, where=f"{path}: task {task.id}, assertions[{i}]")
