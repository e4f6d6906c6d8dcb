"""inspect_ai's epoch reducers (`epochs=Epochs(3, ["mode", "max"])`): inspect reduces each
sample's epochs to one value per scorer and reducer, and its headline (`results.scores`, the first
reducer's entries first) averages those values over samples. The log holds them: `reductions`
(the `.eval`'s `reductions.json`, a `.json` log's top-level key), a list of `{scorer, reducer,
samples: [{sample_id, value}]}`, `reducer` null for the default mean.

calipers keeps one row per sample and epoch, and every mean it takes is over samples of each
sample's mean over its epochs (docs/statistics.md). A value that is the same on each of a
sample's epochs is therefore averaged exactly as inspect averages its reduced values. So, for a
score NAME (a scorer, or `scorer/key` of a dict-valued one):

- `NAME@REDUCER`: each sample's reduced value from the log's reductions, on each of its scored
  epochs, for every reducer but the mean (`match@mode`, `match@max`, `match@pass_at_2`);
- `NAME`: the headline reducer's (the first): each epoch's value when it is the mean (as before:
  their per-sample mean is inspect's mean reduction), else that reducer's value, so `--metric
  NAME` is inspect's headline under inspect's name;
- `NAME@mean`, only when the headline is not the mean: each epoch's value (the mean reducer's).

Reduced values are read, never recomputed; the mean reduction is checked against the epochs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calipers.data.adapters.values import Notes

MEAN = "mean"
_SHOWN = 6  # score names listed in a note

Reduced = dict[tuple[str, str], dict[str, float]]  # (score name, reducer) → sample id → value


def reducers(header: dict[str, Any]) -> list[str]:
    """The log's reducers, headline first: `eval.config.epochs_reducer` (absent: the mean), then
    any other found in its reductions."""
    config = _obj(_obj(header.get("eval")).get("config"))
    given = config.get("epochs_reducer")
    names = [given] if isinstance(given, str) else given if isinstance(given, list) else []
    found = [r if isinstance(r, str) else MEAN for r in names] or [MEAN]
    for entry in header.get("reductions") or []:
        name = _obj(entry).get("reducer") or MEAN
        if isinstance(name, str) and name not in found:
            found.append(name)
    return found


def apply(
    rows: list[dict[str, Any]],
    header: dict[str, Any],
    path: Path,
    to_float: Callable[[Any], float | None],
    notes: Notes,
) -> list[str]:
    """Add the reduced values to `rows` (one per sample and epoch, `scores` of each epoch) as
    the module says; the warnings: the reducers named when one is not the mean, a mean
    reduction that disagrees with the epochs, a headline reducer the log holds no values of."""
    names = reducers(header)
    reduced = _reduced(header.get("reductions"), path, to_float, notes)
    warnings = _check_means(rows, reduced, path)
    if names == [MEAN]:
        return warnings
    headline = names[0]
    keys = sorted({key for row in rows for key in row.get("scores", {})})
    kept = [k for k in keys if headline == MEAN or (k, headline) in reduced]
    for row in rows:
        scores = row.get("scores")
        if not scores:
            continue
        for key, value in list(scores.items()):
            for name in names:
                found = reduced.get((key, name), {}).get(row["sample_id"])
                if name != MEAN and found is not None:
                    scores[f"{key}@{name}"] = found
            if headline != MEAN and key in kept:
                scores[f"{key}@{MEAN}"] = value
                if f"{key}@{headline}" in scores:
                    scores[key] = scores[f"{key}@{headline}"]
                else:  # inspect's reduction is unscored (NaN): inspect leaves the sample out
                    del scores[key]
    return warnings + _notes(path, names, keys, kept)


def _reduced(
    entries: Any, path: Path, to_float: Callable[[Any], float | None], notes: Notes
) -> Reduced:
    reduced: Reduced = {}
    for entry in entries if isinstance(entries, list) else []:
        scorer, name = _obj(entry).get("scorer"), _obj(entry).get("reducer") or MEAN
        if not isinstance(scorer, str) or not isinstance(name, str):
            continue
        for sample in _obj(entry).get("samples") or []:
            if not isinstance(sample, dict) or "sample_id" not in sample:
                continue
            value = sample.get("value")
            sid = str(sample["sample_id"])
            parts = value.items() if isinstance(value, dict) else [(None, value)]
            for part, raw in parts:
                key = scorer if part is None else f"{scorer}/{part}"
                number = to_float(raw)
                if number is not None:
                    reduced.setdefault((key, name), {})[sid] = number
                elif raw is not None and not (isinstance(raw, float) and math.isnan(raw)):
                    # NaN is inspect's unscored sample (e.g. majority without one): left out
                    notes.score(path, f"{key}@{name}", raw, f"reductions, sample {sid!r}")
    return reduced


def _check_means(rows: list[dict[str, Any]], reduced: Reduced, path: Path) -> list[str]:
    """The mean reduction is what calipers computes from the epochs: say where it is not (a
    scorer with its own value_to_float, which the log does not record)."""
    epochs: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        for key, value in row.get("scores", {}).items():
            epochs.setdefault((key, row["sample_id"]), []).append(value)
    differ = []
    for (key, name), values in reduced.items():
        for sid, expected in values.items():
            own = epochs.get((key, sid))
            if (
                name == MEAN
                and own
                and not math.isclose(sum(own) / len(own), expected, rel_tol=1e-9, abs_tol=1e-12)
            ):
                differ.append((key, sid, expected, sum(own) / len(own)))
    if not differ:
        return []
    key, sid, expected, mean = differ[0]
    return [
        f"{path}: inspect's mean reduction differs from the mean of the sample's epochs in "
        f"{len(differ)} case{'s' if len(differ) != 1 else ''} (first: {_shown(key)}, sample "
        f"{sid!r}: {expected:.6g} in the log's reductions, {mean:.6g} from its epochs); calipers "
        "averages the epochs' values as inspect's value_to_float reads them: a scorer with its "
        "own value_to_float is not recorded in the log"
    ]


def _notes(path: Path, names: list[str], keys: list[str], kept: list[str]) -> list[str]:
    headline = names[0]
    others = [n for n in names if n != MEAN]
    listed = keys if headline == MEAN else kept
    shown = ", ".join(map(_shown, listed[:_SHOWN])) + (
        f" and {len(listed) - _SHOWN} more" if len(listed) > _SHOWN else ""
    )
    scores = f"the score {shown} holds" if len(listed) == 1 else f"the scores {shown} hold"
    said = (
        f"{path}: inspect_ai reduced each sample's epochs with {', '.join(names)} "
        f"(eval.config.epochs_reducer; inspect's headline is the first, {headline}): "
    )
    if headline == MEAN:
        said += f"{scores} each epoch's value, and calipers' mean of them is inspect's mean"
    else:
        said += (
            f"{scores} each sample's {headline} (the log's reductions) on each of its "
            f"scored epochs, so calipers' means and comparisons of them are inspect's headline, "
            f"the mean over samples of their {headline}; each epoch's own value is under "
            f"NAME@{MEAN} (calipers' mean of it is inspect's mean reducer)"
        )
    said += (
        "; each sample's " + ", ".join(others) + " under " + ", ".join(f"NAME@{n}" for n in others)
    )
    warnings = [said]
    missing = [k for k in keys if k not in kept]
    if missing:
        warnings.append(
            f"{path}: the log holds no {headline} reduction of "
            f"{', '.join(map(_shown, missing))} (an unfinished run writes none): these hold "
            f"each epoch's value, whose mean is inspect's mean reducer, not its {headline}"
        )
    return warnings


def _shown(name: str) -> str:
    return name if name.isprintable() else repr(name)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
