"""What an importer did not import, and why: nothing another tool wrote is dropped silently.

Each adapter lists, per file it read, the metrics and fields of the tool's output that did not
become sample fields, with one of four reasons:

- `corpus-level`: a metric the tool computes over the whole task (bleu, chrf, brier_score, mcc…),
  whose per-sample values are its inputs (a reference and a prediction), not scores;
- `aggregate-only`: a number the tool reports over samples (a group of tasks, a run total, a
  metric's summary) with no per-sample value of its own; where the tool's weighting is known it
  is reproduced from the imported samples and said to match or not (`reproduced`);
- `unknown`: a metric, field or event this importer does not know (a newer tool version, a
  custom key): listed so that a user sees it is there;
- `not-in-model`: a field the importer knows but the sample model has no place for (hashes, the
  tool's own configuration, raw documents).

The entries go to `calipers import --json` (`not_imported`, schema `import`) and, one line per
file and reason, to the import's notes (`lines`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

REASONS = {
    "corpus-level": "computed over the whole task; its per-sample values are inputs, not scores",
    "aggregate-only": "an aggregate over samples, with no per-sample value of its own",
    "unknown": "not known to this importer",
    "not-in-model": "no place in the sample model",
}


class Unimported:
    """The entries of one adapter's read: metrics one by one, fields counted per file."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self._metrics: list[dict[str, Any]] = []
        self._seen: set[tuple[str, str, str, str]] = set()
        # (file, reason) → {field name: [records, first record]}
        self._fields: dict[tuple[str, str], dict[str, list[Any]]] = {}
        self._why: dict[tuple[str, str], str] = {}

    def metric(
        self,
        file: Path | str,
        name: str,
        reason: str,
        detail: str,
        *,
        kind: str = "metric",
        task: str | None = None,
        value: float | None = None,
        reproduced: dict[str, Any] | None = None,
    ) -> None:
        """One metric (or group, or run total) of the tool's, left out; once per file, task and
        name."""
        seen = (str(file), kind, task or "", name)
        if seen in self._seen:
            return
        self._seen.add(seen)
        entry: dict[str, Any] = {
            "file": str(file), "tool": self.tool, "kind": kind, "name": name,
            "reason": reason, "detail": detail,
        }  # fmt: skip
        if task is not None:
            entry["task"] = task
        if value is not None:
            entry["value"] = value
        if reproduced is not None:
            entry["reproduced"] = reproduced
        self._metrics.append(entry)

    def field(self, file: Path | str, name: str, reason: str, record: str, why: str = "") -> None:
        """A field left out of one record: counted per file and reason, the first record kept."""
        found = self._fields.setdefault((str(file), reason), {})
        entry = found.setdefault(name, [0, record])
        entry[0] += 1
        if why:
            self._why[(str(file), name)] = why

    def fields(
        self,
        file: Path | str,
        record: Mapping[str, Any],
        read: Iterable[str],
        skipped: Mapping[str, str],
        where: str,
        prefix: str = "",
    ) -> None:
        """The keys of `record` that are neither `read` nor known and `skipped` (name → why
        they are not imported, reason `not-in-model`): reason `unknown`. Keys named in `skipped`
        are listed only when the record has them."""
        known = set(read)
        for name in record:
            if name in known:
                continue
            if name in skipped:
                self.field(file, prefix + name, "not-in-model", where, skipped[name])
            else:
                self.field(file, prefix + name, "unknown", where)

    def entries(self) -> list[dict[str, Any]]:
        out = list(self._metrics)
        for (file, reason), found in self._fields.items():
            for name, (records, first) in found.items():
                entry: dict[str, Any] = {
                    "file": file, "tool": self.tool, "kind": "field", "name": name,
                    "reason": reason, "detail": self._why.get((file, name), REASONS[reason]),
                    "records": records, "first": first,
                }  # fmt: skip
                out.append(entry)
        return out


def lines(entries: list[dict[str, Any]]) -> list[str]:
    """The import's notes: one per metric or group left out, and one per file and reason for the
    run totals and for the fields (their names, with the tool's value of a total). Files leaving
    out the same things (a directory of logs) share a line, which then names them without the
    values (each file's are in `import --json`)."""
    out: list[str] = []
    metrics: dict[tuple[str, str, str, str, str], list[dict[str, Any]]] = {}
    grouped: dict[tuple[str, str, str], list[tuple[str, Any]]] = {}
    for entry in entries:
        if entry["kind"] in ("field", "total", "event"):
            group = (entry["file"], entry["kind"], entry["reason"])
            grouped.setdefault(group, []).append((entry["name"], entry.get("value")))
            continue
        same = (entry["kind"], entry.get("task") or "", entry["name"], entry["reason"],
                entry["detail"])  # fmt: skip
        metrics.setdefault(same, []).append(entry)
    for (kind, task, name, reason, detail), found in metrics.items():
        what = f"{kind} '{name}'"
        if task:
            what = (
                f"metric '{name}' of task {task}"
                if kind == "metric"
                else f"{kind} {task}'s '{name}'"
            )
        values = [_number(e["value"]) for e in found if e.get("value") is not None]
        shown = ""
        if len(found) == 1 and values:
            shown = f" ({values[0]} in the tool's report)"
        elif values and len(values) <= _VALUES:
            shown = f" ({', '.join(values)} in the tool's reports, file by file)"
        out.append(
            f"{_place([e['file'] for e in found])}: not imported: {what}{shown}: {reason}, {detail}"
        )
    labels = {"field": "fields", "total": "run totals", "event": "events"}
    files: dict[tuple[str, str, tuple[str, ...]], list[tuple[str, list[tuple[str, Any]]]]] = {}
    for (file, kind, reason), named in grouped.items():
        names = tuple(n for n, _ in named)
        files.setdefault((kind, reason, names), []).append((file, named))
    for (kind, reason, names), where in files.items():
        why = _GROUPED.get((kind, reason), REASONS[reason])
        if len(where) == 1:
            listed = [f"{n} {_number(v)}" if v is not None else n for n, v in where[0][1]]
        else:
            listed = list(names)
            if any(v is not None for _, named in where for _, v in named):
                why += "; each file's values in import --json"
        place = _place([file for file, _ in where])
        out.append(f"{place}: not imported: {labels[kind]} {', '.join(listed)} ({reason}: {why})")
    return out


def _place(files: list[str]) -> str:
    return files[0] if len(files) == 1 else f"{files[0]} and {len(files) - 1} more file(s)"


_VALUES = 6  # the tool's values shown on a line that several files share

_GROUPED = {
    ("total", "aggregate-only"): "the tool's summaries of the samples, which calipers computes "
    "from them",
}


def _number(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def held(record: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a record that hold something (an empty list, map or string, null or false
    leaves nothing out)."""
    return {
        k: v
        for k, v in record.items()
        if not (v is None or v is False or (isinstance(v, str | list | dict) and not v))
    }
