"""`calipers report`: everything in a store on one page. The runs with their counts and which
sample fields they fill, then every registered scheme scored with its defaults on the runs that
have its required fields (the metric scheme once per metric); a scheme that cannot score says why
instead. Read-only: rubric evaluations are not recorded in the history, which is shown as it
stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calipers.data.history import history_series
from calipers.data.model import FIELDS
from calipers.data.store import Store, describe_runs
from calipers.errors import CalipersError, DataError
from calipers.schemes import available, get_scheme
from calipers.schemes.base import SCHEMA_VERSION

_KEY = ("run", "task", "sample_id", "epoch")
METRICS_SHOWN = 6  # metric sections at most, in name order


def store_report(db: str | Path) -> dict[str, Any]:
    """The store report's JSON document (schema: `calipers schema --report store`)."""
    sections: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    with Store(db, read_only=True) as store:
        if store.count() == 0:
            raise DataError(
                f"the store {store.path} holds no samples",
                hint="Import some with `calipers import FILE`.",
            )
        runs = describe_runs(store.runs())
        filled = _filled_fields(store)
        for name, cls in available().items():
            for key, runs_of, options in _scorings(name, cls.required_fields, filled, store):
                if not runs_of:
                    skipped[key] = f"no run has {', '.join(_needed(cls.required_fields))}"
                    continue
                try:
                    result = get_scheme(name).score(store.samples(runs_of), **options)
                except CalipersError as exc:
                    skipped[key] = exc.message
                    continue
                sections[key] = result.to_dict()
        history_tasks = {
            r[0] for r in store.con.execute("SELECT DISTINCT task FROM rubric_history").fetchall()
        }
    rubric = sections.get("rubric")
    tasks = sorted({e["task"] for e in rubric["evaluations"]} & history_tasks) if rubric else []
    if rubric and tasks:
        rubric["history"] = history_series(db, tasks)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "store",
        "store": str(db),
        "runs": [{**r, "fields": filled[r["run"]]} for r in runs],
        "sections": sections,
        "skipped": skipped,
    }


def _needed(required: tuple[str, ...]) -> list[str]:
    return [f for f in required if f not in _KEY]


def _scorings(
    scheme: str, required: tuple[str, ...], filled: dict[str, dict[str, int]], store: Store
) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(section key, runs, options) per scoring of `scheme`."""
    if scheme != "metric":
        runs = [r for r, fields in filled.items() if all(fields.get(f) for f in _needed(required))]
        return [(scheme, runs, {})]
    by_metric: dict[str, list[str]] = {}
    for run, fields in filled.items():
        if fields.get("correct"):
            by_metric.setdefault("correct", []).append(run)
    rows = store.con.execute(
        "SELECT DISTINCT unnest(map_keys(scores)) AS metric, run FROM samples ORDER BY metric, run"
    ).fetchall()
    for metric, run in rows:
        by_metric.setdefault(metric, []).append(run)
    names = sorted(by_metric)[:METRICS_SHOWN]
    if not names:
        return [("metric", [], {})]
    return [
        (f"metric:{m}" if len(names) > 1 else "metric", by_metric[m], {"metric": m}) for m in names
    ]


def _filled_fields(store: Store) -> dict[str, dict[str, int]]:
    """Per run, how many samples have each optional field (fields no sample has are left out)."""
    optional = [f.name for f in FIELDS if f.name not in _KEY]
    counts = ", ".join(f'count("{name}")' for name in optional)
    rows = store.con.execute(f"SELECT run, {counts} FROM samples GROUP BY run ORDER BY run")
    return {
        row[0]: {name: int(n) for name, n in zip(optional, row[1:], strict=True) if n}
        for row in rows.fetchall()
    }
