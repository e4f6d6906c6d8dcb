"""The history page's data: what the store holds about a run name over time.

The store keeps one run per name, and an import replaces the samples it holds again, so a run's
earlier numbers are not kept; what is kept is shown, nothing estimated:

- **the series**: the runs named like it — the same name once a trailing version, number or
  date is taken off (`prompt-v1`, `prompt-v2`; `nightly-2026-11-01`, …), or a `stem` given —
  by the date of their last import, with the runs page's headline numbers (`calipers runs`), and
  a link to compare each with the one before;
- **its imports**: the files its samples came from, when, in what format, how many of its
  observations each still holds, and the import log's count of samples written and replaced;
  and imports made under its name (`--as`) whose samples were all replaced since;
- **its rubric history**: where rubric evaluations of its tasks were recorded (`--record-history`),
  each task's evaluations in order, this run's among them (`schemes.rubric.history.history_series`,
  the series the rubric report draws).
"""

from __future__ import annotations

import re
from typing import Any

from calipers.data.store import Store

# a trailing version, number or date: "-v2", "_003", ".1", "-2026-11-01", " r7", "@2026-11-01T10:00"
_TAIL = re.compile(r"(?:[-_.@ ]?(?:v|r|rev|run)?\d+(?:[-_.:T]\d+)*)+$", re.IGNORECASE)


def stem(name: str) -> str:
    """The run name without its trailing version, number or date (itself when that is all)."""
    found = _TAIL.sub("", name)
    return found or name


def series(listing: dict[str, Any], of: str, *, prefix: bool = False) -> list[dict[str, Any]]:
    """The runs of the runs page whose stem is `of` (with `prefix`, also those whose name
    starts with it), by last import, then name."""
    found = [r for r in listing["runs"]
             if stem(r["run"]) == of or (prefix and r["run"].startswith(of))]  # fmt: skip
    return sorted(found, key=lambda r: (r.get("last_import") or "", r["run"]))


def run_history(store: Store, run: str) -> dict[str, Any]:
    """The run's imports and its rubric history (see the module docstring)."""
    from calipers.schemes.rubric.history import history_series

    imports = []
    for source, at, observations, samples, tasks, fmt, written, replaced in store.con.execute(
        """
        SELECT s.source, s.imported_at, count(*), count(DISTINCT (s.task, s.sample_id)),
               count(DISTINCT s.task), any_value(i.format), any_value(i.samples),
               any_value(i.replaced)
        FROM samples s
        LEFT JOIN imports i ON i.source = s.source AND i.imported_at = s.imported_at
        WHERE s.run = ? GROUP BY s.source, s.imported_at ORDER BY s.imported_at, s.source
        """,
        [run],
    ).fetchall():
        imports.append({
            "source": source, "imported_at": None if at is None else at.isoformat(),
            "observations": int(observations), "samples": int(samples), "tasks": int(tasks),
            "format": fmt, "written": None if written is None else int(written),
            "replaced": None if replaced is None else int(replaced),
        })  # fmt: skip
    shown = {(i["source"], i["imported_at"]) for i in imports}
    gone = []  # imports under this name (`--as`) of which no sample is held now
    for source, at, fmt, written, replaced in store.con.execute(
        "SELECT source, imported_at, format, samples, replaced FROM imports "
        "WHERE run_override = ? ORDER BY imported_at",
        [run],
    ).fetchall():
        if (source, at.isoformat()) not in shown:
            gone.append({"source": source, "imported_at": at.isoformat(), "format": fmt,
                         "written": int(written or 0), "replaced": int(replaced or 0)})  # fmt: skip
    tasks = [
        str(t[0])
        for t in store.con.execute(
            "SELECT DISTINCT task FROM rubric_history WHERE run = ? ORDER BY task", [run]
        ).fetchall()
    ]
    rubric = history_series(store, tasks) if tasks else {}
    return {"imports": imports, "replaced_imports": gone, "rubric": rubric}
