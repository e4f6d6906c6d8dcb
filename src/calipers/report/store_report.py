"""`calipers report`: everything in a store on one page. The runs with their counts and which
sample fields they fill, then every registered scheme scored with its defaults on the runs that
have its required fields (the metric scheme once per metric); a scheme that cannot score says why
instead. Read-only: rubric evaluations are not recorded in the history, which is shown as it
stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calipers.data.model import FIELDS
from calipers.data.store import Store, describe_runs
from calipers.errors import CalipersError, DataError
from calipers.render.json_report import REPORT_SCHEMA_VERSION
from calipers.schemes import available

_KEY = ("run", "task", "sample_id", "epoch")


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
        for cls in available().values():
            scheme = cls()
            for scoring in scheme.report_scorings(store, filled):
                if scoring.skipped is not None or not scoring.runs:
                    skipped[scoring.key] = scoring.skipped or "no run to score"
                    continue
                try:
                    result = scheme.score(store.samples(scoring.runs), **scoring.options)
                except CalipersError as exc:
                    skipped[scoring.key] = exc.message
                    continue
                sections[scoring.key] = scheme.report_section(result, store)
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "kind": "store",
        "store": str(db),
        "runs": [{**r, "fields": filled[r["run"]]} for r in runs],
        "sections": sections,
        "skipped": skipped,
    }


def _filled_fields(store: Store) -> dict[str, dict[str, int]]:
    """Per run, how many samples have each optional field (fields no sample has are left out)."""
    optional = [f.name for f in FIELDS if f.name not in _KEY]
    counts = ", ".join(f'count("{name}")' for name in optional)
    rows = store.con.execute(f"SELECT run, {counts} FROM samples GROUP BY run ORDER BY run")
    return {
        row[0]: {name: int(n) for name, n in zip(optional, row[1:], strict=True) if n}
        for row in rows.fetchall()
    }
