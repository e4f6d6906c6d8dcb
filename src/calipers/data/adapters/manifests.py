"""Files that sit beside results but hold none: the manifests and summaries harnesses write
(inspect_ai eval-set's `logs.json` and `eval-set.json`; helm-summarize's `groups.json`,
`summary.json`, `run_specs.json`, …; the other files of a HELM run directory), and any other
single JSON document. None of them is JSON Lines, which is how calipers reads a `.json` that no
adapter recognises: each of its lines used to be an error of its own (926 for an eval set's
`logs.json`). Instead a known manifest is named, skipped when a directory is read
(`directories.expand`, with a note) and refused alone with what to pass instead; any other
single JSON document (an object or array spanning lines) is one error listing what calipers
reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from calipers.data import jsontext
from calipers.errors import InputError

_HEAD = 4096
# inspect writes logs.json as {"<log file name>": {"version": 2, "status": …, "eval": …}, …} and
# eval-set.json as {"eval_set_id": …, "tasks": [...]}, both indented, keys in this order.
_INSPECT_INDEX = re.compile(rb'\A\s*\{\s*"[^"\n]*\.(?:eval|json)"\s*:\s*\{\s*"version"\s*:')
_INSPECT_SET = re.compile(rb'\A\s*\{\s*"eval_set_id"\s*:')
_INSPECT_EMPTY_INDEX = re.compile(rb"\A\s*\{\s*\}\s*\Z")
# Every Eval Ever's aggregate file (eval.schema.json): {"schema_version": …, "evaluation_id": …,
# …, "retrieved_timestamp": …}; its instance-level records: `<uuid>_samples.jsonl` beside it
_EEE_AGGREGATE = re.compile(
    rb'\A\s*\{\s*"schema_version"\s*:\s*"[^"\n]*"\s*,\s*"evaluation_id"\s*:'
)
# helm-summarize writes these into benchmark_output/runs/<suite>/ (0.5.16)
HELM_SUITE = {
    "groups.json": "its tables of aggregate metrics per group",
    "groups_metadata.json": "the groups' descriptions",
    "summary.json": "the suite and date of the summary",
    "run_specs.json": "the run specs of the suite",
    "runs.json": "the list of runs",
    "runs_to_run_suites.json": "which suite each run is in",
    "costs.json": "token and cost totals per model",
    "schema.json": "the metrics and groups shown",
}
# a HELM run directory's files besides per_instance_stats.json (helm-run and helm-summarize)
HELM_RUN = {
    "run_spec.json": "the run spec",
    "stats.json": "the run's aggregate stats",
    "scenario.json": "the scenario's description",
    "scenario_state.json": "the requests and completions",
    "instances.json": "the instances shown by HELM's frontend",
    "display_predictions.json": "the predictions shown by HELM's frontend",
    "display_requests.json": "the requests shown by HELM's frontend",
}
# what calipers reads, for the error of an unknown single JSON document
FORMATS = (
    "inspect_ai logs (.eval, .json), lm-eval output, promptfoo -o results.json/.jsonl, kelvin, "
    "lighteval --save-details, OpenAI evals logs, deepeval test runs, HELM run directories, "
    "NeMo Evaluator output, Arize Phoenix experiment downloads (JSON, CSV), promptfoo -o "
    "results.csv, MLflow eval_results_table.json, ragas results, LangSmith and Braintrust "
    "experiment exports, Every Eval Ever instance-level JSON Lines, and calipers' own JSON Lines "
    "(one sample object per line), CSV and Parquet"
)


@dataclass(frozen=True)
class Manifest:
    """A known file that holds no per-sample results: what it is, and what to pass instead."""

    what: str
    instead: str


def identify(path: Path) -> Manifest | None:
    """The manifest `path` is, by content (inspect's) or by name and place (HELM's); None for
    any other file."""
    try:
        if path.suffix.lower() != ".json" or not path.is_file():
            return None
        with path.open("rb") as f:
            head = f.read(_HEAD)
    except OSError:
        return None
    where = path.parent
    if _INSPECT_INDEX.match(head) or (
        path.name == "logs.json" and _INSPECT_EMPTY_INDEX.match(head)
    ):
        return Manifest(
            "inspect_ai's eval-set log index (logs.json: each log's header, no samples)",
            f"the logs it lists ({where}/*.eval), or the directory {where} itself",
        )
    if _INSPECT_SET.match(head):
        return Manifest(
            "inspect_ai's eval-set manifest (eval-set.json: the set's id and tasks)",
            f"the logs beside it ({where}/*.eval), or the directory {where} itself",
        )
    if (
        _EEE_AGGREGATE.match(head)
        and b'"retrieved_timestamp"' in head
        and b'"sample_id"' not in head
    ):
        return Manifest(
            "Every Eval Ever's aggregate results (eval.schema.json: a score per metric, no "
            "samples)",
            f"its instance-level results beside it ({where}/<id>_samples.jsonl, named in "
            "detailed_evaluation_results.file_path)",
        )
    if head.lstrip()[:1] not in (b"{", b"["):
        return None
    if path.name in HELM_RUN and (where / "per_instance_stats.json").is_file():
        return Manifest(
            f"a file of a HELM run directory ({path.name}: {HELM_RUN[path.name]})",
            f"the run directory {where} (its per_instance_stats.json is read)",
        )
    if path.name in HELM_SUITE and _holds_runs(where):
        return Manifest(
            f"helm-summarize's {path.name} ({HELM_SUITE[path.name]}), not per-instance results",
            f"the suite directory {where}, or one run directory in it",
        )
    if where.name == "groups" and _holds_runs(where.parent):
        return Manifest(
            f"helm-summarize's table of the group {_shown(path.stem)}, not per-instance results",
            f"the suite directory {where.parent}, or one run directory in it",
        )
    return None


def _shown(name: str) -> str:
    return name if name.isprintable() else repr(name)


def _holds_runs(directory: Path) -> bool:
    """A HELM suite directory: helm-summarize's summary, or a run directory in it."""
    try:
        return (directory / "summary.json").is_file() or any(
            (d / "per_instance_stats.json").is_file() for d in directory.iterdir() if d.is_dir()
        )
    except OSError:
        return False


def refuse(path: Path) -> None:
    """Raise the error for a manifest given where results were expected, or for any other
    single JSON document; return for anything else (JSON Lines, or JSON broken on some line,
    which the JSON Lines reader reports line by line)."""
    manifest = identify(path)
    if manifest is not None:
        raise InputError(
            f"{path}: {manifest.what}; calipers reads per-sample results, and this file holds none",
            hint=f"Pass {manifest.instead}; a directory's manifests are skipped with a note.",
        )
    shape = single_document(path)
    if shape is not None:
        raise InputError(
            f"{path}: one JSON document ({shape}), in no format calipers knows; a .json that "
            "no importer recognises is read as JSON Lines, one sample object per line",
            hint=f"calipers reads {FORMATS} (docs/importers.md). Pass one of these, or write "
            "the samples one object per line and name their fields with --map FIELD=COLUMN.",
        )


def single_document(path: Path) -> str | None:
    """'an array …' or 'an object over N lines' when the whole file is one JSON value that is
    not one object per line; None otherwise (the first line is an object of its own, or the
    file is not one JSON value)."""
    try:
        with path.open("rb") as f:
            first = b""
            for line in f:
                if line.strip():
                    first = line.strip()
                    break
        if first[:1] not in (b"{", b"["):
            return None
        if first[:1] == b"{":
            try:
                jsontext.loads_tool(first)
                return None  # a whole object on the first line: JSON Lines
            except jsontext.JSONError:
                pass
        data = path.read_bytes()
        value = jsontext.loads_tool(data)
    except (OSError, UnicodeDecodeError, RecursionError, jsontext.JSONError, ValueError):
        return None
    count = data.count(b"\n") + (not data.endswith(b"\n"))
    lines = f"{count} line{'s' if count != 1 else ''}"
    if isinstance(value, list):
        return f"an array of {len(value)} item{'s' if len(value) != 1 else ''}, over {lines}"
    if isinstance(value, dict):
        return f"an object over {lines}"
    return None
