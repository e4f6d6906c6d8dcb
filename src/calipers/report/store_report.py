"""`calipers report`: everything in a store on one page. The runs with their counts and which
sample fields they fill, then every registered scheme scored with its defaults on the runs that
have its required fields (the metric scheme once per metric); a scheme that cannot score says why
instead. Read-only: rubric evaluations are not recorded in the history, which is shown as it
stands."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calipers.data.model import FIELDS
from calipers.data.store import Store, describe_runs
from calipers.errors import CalipersError, DataError, InputError
from calipers.render.json_report import REPORT_SCHEMA_VERSION
from calipers.schemes import available

_KEY = ("run", "task", "sample_id", "epoch")


def store_report(db: str | Path, *, runs: Sequence[str] | None = None) -> dict[str, Any]:
    """The store report's JSON document (schema: `calipers schema --report store`), over every
    run or only `runs` (`--run`)."""
    sections: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    with Store(db, read_only=True) as store:
        if store.count() == 0:
            raise DataError(
                f"the store {store.path} holds no samples",
                hint="Import some with `calipers import FILE`.",
            )
        infos = store.runs()
        present = {i.run for i in infos}
        missing = [r for r in runs or [] if r not in present]
        if missing:
            raise InputError(
                f"--run {', '.join(missing)}: no such run in the store {store.path}",
                hint=f"Runs there: {', '.join(sorted(present))} (`calipers runs`).",
                parameters=["runs"],
            )
        chosen = set(runs) if runs else present
        described = describe_runs([i for i in infos if i.run in chosen])
        filled = {r: v for r, v in _filled_fields(store).items() if r in chosen}
        for cls in available().values():
            scheme = cls()
            for scoring in scheme.report_scorings(store, filled):
                picked = [r for r in scoring.runs if r in chosen]
                if scoring.skipped is not None or not picked:
                    skipped[scoring.key] = scoring.skipped or "no run to score"
                    continue
                try:
                    result = scheme.score(store.samples(picked), **scoring.options)
                except CalipersError as exc:
                    skipped[scoring.key] = exc.message
                    continue
                sections[scoring.key] = scheme.report_section(result, store)
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "kind": "store",
        "store": str(db),
        "runs": [{**r, "fields": filled[r["run"]]} for r in described],
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
