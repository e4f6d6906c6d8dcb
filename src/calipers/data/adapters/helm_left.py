"""What of a HELM run is not imported, and why (`unimported`): the stats of `stats.json` that no
instance carries (perplexity, bits_per_byte and logprob_per_byte, which HELM derives from sums
over the instances: corpus-level; num_instances and other counts: aggregate-only), and the
aggregates over perturbations (robustness, fairness: each instance's worst case, the perturbed
copies, their originals), whose inputs are imported as perturbed samples. A stat every instance
carries is the mean calipers computes from the imported samples, and is not listed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from calipers.data.adapters.unimported import Unimported

TOOL = "helm"
# HELM's derived stats: ratios of sums over the instances (logprob, tokens, bytes)
CORPUS = {"perplexity", "bits_per_byte", "logprob_per_byte"}
ENTRY_READ = {"instance_id", "stats", "train_trial_index", "perturbation"}


def run_left_out(
    directory: Path, task: str, entries: list[dict[str, Any]], stats: Any, left: Unimported
) -> None:
    file = directory / "per_instance_stats.json"
    for number, entry in enumerate(entries):
        left.fields(file, entry, ENTRY_READ, {}, f"entry {number}")
    per_instance = {_label(s) for e in entries for s in e["stats"] if isinstance(s, dict)}
    stats_file = directory / "stats.json"
    perturbations: dict[str, list[dict[str, Any]]] = {}
    for stat in stats if isinstance(stats, list) else []:
        name = stat.get("name") if isinstance(stat, dict) else None
        if not isinstance(name, dict) or not isinstance(name.get("name"), str):
            continue
        perturbation = name.get("perturbation")
        if isinstance(perturbation, dict):
            shown = f"{perturbation.get('name')} ({perturbation.get('computed_on')})"
            perturbations.setdefault(shown, []).append(stat)
            continue
        label = _label(stat)
        if label in per_instance or not _number(stat.get("mean")):
            continue
        corpus = name["name"] in CORPUS
        left.metric(
            stats_file, label, "corpus-level" if corpus else "aggregate-only",
            "HELM derives it from sums over the instances (their logprob, tokens or bytes, "
            "which are imported per instance)" if corpus
            else "HELM's number over the instances, which no instance carries",
            task=task, value=stat["mean"],
        )  # fmt: skip
    for shown, found in perturbations.items():
        names = sorted({str(s["name"]["name"]) for s in found})
        value = next((s.get("mean") for s in found if s["name"]["name"] == "exact_match"), None)
        left.metric(
            stats_file, shown, "aggregate-only",
            f"HELM's {len(found)} stats ({', '.join(names[:4])}{', …' if len(names) > 4 else ''}) "
            "over perturbed copies, their originals or each instance's worst case; calipers "
            "imports each copy as a sample (perturbation, perturbation_of)"
            + ("; the value shown is exact_match's" if _number(value) else ""),
            task=task, value=value if _number(value) else None,
        )  # fmt: skip


def _label(stat: dict[str, Any]) -> str:
    name: dict[str, Any] = stat["name"] if isinstance(stat.get("name"), dict) else {}
    label = str(name.get("name"))
    return f"{label}/{name['sub_split']}" if name.get("sub_split") else label


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
