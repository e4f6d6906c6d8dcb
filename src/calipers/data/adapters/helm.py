"""HELM (crfm-helm, `helm-run --suite SUITE -o OUT`; checked with 0.5.16) run directories:
`OUT/runs/SUITE/<run spec name>/` holding `per_instance_stats.json` (a JSON array, one entry per
instance × train trial × perturbation: instance_id, train_trial_index, perturbation, stats),
`scenario_state.json` (adapter_spec and request_states: instance, request, result),
`run_spec.json` (name, adapter_spec with model), `stats.json` (HELM's aggregates) and more.

The path is a run directory, its per_instance_stats.json, or a directory with run directories up
to three levels down (a suite, `runs/`, HELM's output directory): every run in it.

One sample per entry of per_instance_stats.json. `run` is the adapter spec's `model`; `task` the
run spec name without its `model=`/`model_deployment=` arguments (`mmlu:subject=anatomy`), so
runs of different models on the same run spec pair. `sample_id` is the instance id, followed by
`|<perturbation>` for a perturbed copy (its parameters too: `id9|extra_space:num_spaces=2`),
which also gets `perturbation` and `perturbation_of` (the instance id; the original then has
`perturbation` "baseline"). `epoch` is the train trial (each trial draws other in-context
examples). `scores` holds every per-instance stat with a count and a finite mean, under its
name; HELM names no primary metric, so there is no `correct`. From scenario_state.json, when
the entry has exactly one request: `output` the first completion (the one HELM's exact_match
scores), `input` the prompt, `error` a failed request's error; `expected` is the instance's
first reference tagged `correct`. `tokens_in`/`tokens_out`/`latency_s` are the stats
num_prompt_tokens, num_completion_tokens (all completions) and inference_runtime.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from calipers.data.adapters import helm_left
from calipers.data.adapters.jsonfile import load_json
from calipers.data.adapters.manifests import HELM_RUN
from calipers.data.adapters.unimported import Unimported
from calipers.data.adapters.values import Notes, Rows, count, key
from calipers.errors import InputError

STATS = "per_instance_stats.json"
_HINT = "Pass a HELM run directory (benchmark_output/runs/<suite>/<run>) or a directory above it."
_HEAD = re.compile(r'^\s*\[\s*(?:\]|\{\s*"instance_id"\s*:)')
# Bookkeeping of HELM's PerturbationDescription, not part of what was perturbed.
_DESCRIPTION_ONLY = {"name", "robustness", "fairness", "computed_on"}
_FIELDS = {"num_prompt_tokens": "tokens_in", "num_completion_tokens": "tokens_out"}


def _looks_like_stats(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return _HEAD.match(f.read(512)) is not None
    except OSError:
        return False


def _run_dirs(path: Path) -> list[Path]:
    for pattern in (STATS, f"*/{STATS}", f"*/*/{STATS}", f"*/*/*/{STATS}"):
        found = sorted(p.parent for p in path.glob(pattern) if _looks_like_stats(p))
        if found:
            return found
    return []


def detect(path: Path) -> bool:
    """A per_instance_stats.json opening as HELM writes it (an array of objects starting with
    instance_id), or a directory with one in it or up to three levels down."""
    try:
        if path.is_dir():
            return bool(_run_dirs(path))
        # display_predictions.json opens alike but is helm-summarize's (adapters.manifests)
        named = path.suffix == ".json" and path.name not in HELM_RUN
        return named and path.is_file() and _looks_like_stats(path)
    except OSError:
        return False


def read_rows(path: Path) -> list[dict[str, Any]]:
    """One sample row per instance, train trial and perturbation of every run the path holds."""
    if path.is_dir():
        runs = _run_dirs(path)
        if not runs:
            raise InputError(f"{path}: no HELM {STATS} in it or below it", hint=_HINT)
    else:
        runs = [path.parent]
    rows: list[dict[str, Any]] = []
    notes = Notes()
    left = Unimported(helm_left.TOOL)
    for run in runs:
        rows += _run_rows(run, notes, left)
    return Rows(rows, notes.lines(), left.entries())


def _load(path: Path) -> Any:
    return load_json(path, cut_short="helm-run still writing, or a partial copy", hint=_HINT)


def _run_rows(directory: Path, notes: Notes, left: Unimported) -> list[dict[str, Any]]:
    stats_path = directory / STATS
    entries = _load(stats_path)
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and "instance_id" in e and isinstance(e.get("stats"), list)
        for e in entries
    ):
        raise InputError(
            f"{stats_path}: not HELM per-instance stats "
            "(expected a JSON array of objects with instance_id and stats)",
            hint=_HINT,
        )
    if not entries:
        raise InputError(f"{stats_path}: holds no instances", hint="Re-run helm-run.")
    run, task = _names(directory)
    requests = _requests(directory / "scenario_state.json")
    perturbed = any(e.get("perturbation") for e in entries)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, int], int] = {}
    for number, entry in enumerate(entries):
        row = _row(entry, run, task, perturbed, (stats_path, f"entry {number}"), notes)
        key = (row["sample_id"], row["epoch"])
        if key in seen:
            raise InputError(
                f"{stats_path}: entry {number}: instance {row['sample_id']} trial {row['epoch']} "
                f"again (first at entry {seen[key]})",
                hint="Keep the files of one helm-run per run directory.",
            )
        seen[key] = number
        found = requests.get(_key(entry["instance_id"], entry))
        if found is not None:
            _add_request(row, found)
        rows.append(row)
    aggregates = directory / "stats.json"
    stats = _load(aggregates) if aggregates.is_file() else None
    helm_left.run_left_out(directory, task, entries, stats, left)
    return rows


def _names(directory: Path) -> tuple[str, str]:
    """run = the model; task = the run spec name less the model arguments."""
    spec_path = directory / "run_spec.json"
    loaded = _load(spec_path) if spec_path.exists() else {}
    spec: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
    name = str(spec.get("name") or directory.name)
    adapter = spec["adapter_spec"] if isinstance(spec.get("adapter_spec"), dict) else {}
    model = adapter.get("model") or adapter.get("model_deployment")
    head, _, args = name.partition(":")
    kept = [a for a in args.split(",") if a and not a.startswith(("model=", "model_deployment="))]
    if not model:  # HELM writes the model into the name as model=org_name ("/" → "_")
        model = next((a[6:] for a in args.split(",") if a.startswith("model=")), directory.name)
    return str(model), head + (":" + ",".join(kept) if kept else "")


def _perturbation(entry: dict[str, Any]) -> tuple[str, str] | None:
    """(name, name with parameters) of a perturbed copy; None for the original instance."""
    description = entry.get("perturbation")
    if not isinstance(description, dict) or not description.get("name"):
        return None
    params = sorted((k, v) for k, v in description.items() if k not in _DESCRIPTION_ONLY)
    shown = ",".join(f"{k}={v}" for k, v in params)
    return str(description["name"]), str(description["name"]) + (f":{shown}" if shown else "")


def _key(instance_id: Any, holder: dict[str, Any]) -> tuple[str, int, str]:
    perturbation = _perturbation(holder)
    trial = holder.get("train_trial_index")
    return (
        str(instance_id),
        trial if isinstance(trial, int) else 0,
        perturbation[1] if perturbation else "",
    )


def _row(
    entry: dict[str, Any], run: str, task: str, perturbed: bool, place: tuple[Path, str],
    notes: Notes,
) -> dict[str, Any]:  # fmt: skip
    file, record = place
    instance = key(entry["instance_id"], f"{file}, {record}", "instance_id")
    perturbation = _perturbation(entry)
    trial = entry.get("train_trial_index")
    if trial is not None:
        count(trial, f"{file}, {record}", "train_trial_index")
    row: dict[str, Any] = {
        "run": run,
        "task": task,
        "sample_id": f"{instance}|{perturbation[1]}" if perturbation else instance,
        "epoch": trial if isinstance(trial, int) and not isinstance(trial, bool) else 0,
    }
    if perturbed:
        row["perturbation"] = perturbation[0] if perturbation else "baseline"
        row["perturbation_of"] = instance
    scores: dict[str, float] = {}
    for stat in entry["stats"]:
        name = stat.get("name") if isinstance(stat, dict) else None
        mean = stat.get("mean") if isinstance(stat, dict) else None
        # A stat with count 0 (training_co2_cost of a model HELM has no figure for) has no mean.
        if not isinstance(name, dict) or not stat.get("count"):
            continue
        label = str(name.get("name"))
        if name.get("sub_split"):
            label = f"{label}/{name['sub_split']}"
        number = notes.score(file, label, mean, record)
        if number is not None:
            scores[label] = number
    for stat, field in _FIELDS.items():
        if stat in scores and scores[stat] >= 0 and scores[stat].is_integer():
            row[field] = int(scores[stat])
    if "inference_runtime" in scores and scores["inference_runtime"] >= 0:
        row["latency_s"] = scores["inference_runtime"]
    if scores:
        row["scores"] = scores
    return row


def _requests(path: Path) -> dict[tuple[str, int, str], dict[str, Any]]:
    """The request state of each (instance, trial, perturbation) that made exactly one request
    (multiple_choice_separate_* methods make one per answer choice: no single output)."""
    if not path.exists():
        return {}
    state = _load(path)
    states = state.get("request_states") if isinstance(state, dict) else None
    if not isinstance(states, list):
        raise InputError(f"{path}: not a HELM scenario state (no request_states)", hint=_HINT)
    found: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for request_state in states:
        instance = request_state.get("instance") if isinstance(request_state, dict) else None
        if isinstance(instance, dict) and "id" in instance:
            key = _key(instance["id"], {**instance, **request_state})
            found.setdefault(key, []).append(request_state)
    return {key: group[0] for key, group in found.items() if len(group) == 1}


def _add_request(row: dict[str, Any], request_state: dict[str, Any]) -> None:
    instance, request = request_state["instance"], request_state.get("request") or {}
    result = request_state.get("result") or {}
    if isinstance(request.get("prompt"), str):
        row["input"] = request["prompt"]
    references = instance.get("references") or []
    correct = [r for r in references if isinstance(r, dict) and "correct" in (r.get("tags") or [])]
    text = (correct[0].get("output") or {}).get("text") if correct else None
    if isinstance(text, str):
        row["expected"] = text
    if result.get("success") is False:
        row["error"] = str(result.get("error") or "request failed")
    completions = result.get("completions") or []
    if (
        completions
        and isinstance(completions[0], dict)
        and isinstance(completions[0].get("text"), str)
    ):
        row["output"] = completions[0]["text"]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
