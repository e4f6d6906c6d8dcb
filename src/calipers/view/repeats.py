"""The repeats page's data: a run's pass@k and pass^k with their intervals, its flaky samples,
the variance between and within samples and the epochs a width needs — the `repeats` section of
`calipers score --scheme metric --metric M` for the run (`calipers.verdicts.repeats`,
docs/repeats.md), unchanged. The page adds only a link to each flaky sample: the report names
them `task/sample_id`, read back here against the run's samples (a name that two samples could
make is left without a link)."""

from __future__ import annotations

from typing import Any

from calipers import api
from calipers.data.store import Store
from calipers.errors import InputError


def repeat_runs(listing: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of the runs page that have a sample in two epochs or more."""
    return [r for r in listing["runs"] if r["epochs"] > 1]


def metric_for(run: dict[str, Any], asked: str) -> str:
    """The metric the page shows: the one asked for, else `correct`, else the run's first."""
    metrics = list(run.get("metrics") or {})
    if asked:
        if asked not in metrics:
            raise InputError(
                f"the run {run['run']!r} has no metric {asked!r}",
                hint=f"Its metrics: {', '.join(metrics) or '(none)'}.",
                parameters=["metric"],
            )
        return asked
    if not metrics:
        raise InputError(
            f"the run {run['run']!r} has no metric (`correct` or a key of `scores`) to repeat",
            hint="pass@k needs a pass/fail outcome in every epoch.",
            parameters=["metric"],
        )
    return str(metrics[0])


def run_repeats(store: Store, run: str, metric: str) -> dict[str, Any]:
    """{"run", "metric", "repeats" (the score report's section; None for one epoch), "links"
    (flaky name → [task, sample_id]), "score" (the run's mean and interval)}."""
    result = api.score(store.samples([run]), "metric", metric=metric).to_dict()
    summary = result["runs"].get(run) or {}
    repeats = summary.get("repeats")
    links: dict[str, list[str]] = {}
    flaky = (repeats or {}).get("flaky") or []
    if flaky:
        keys = store.con.execute(
            "SELECT DISTINCT task, sample_id FROM samples WHERE run = ?", [run]
        ).fetchall()
        made: dict[str, list[list[str]]] = {}
        for task, sample_id in keys:
            made.setdefault(f"{task}/{sample_id}", []).append([str(task), str(sample_id)])
        links = {name: made[name][0] for name in flaky if len(made.get(name, [])) == 1}
    return {
        "run": run,
        "metric": metric,
        "parameters": result["parameters"],
        "score": summary.get("composite"),
        "n_samples": summary.get("n_samples"),
        "repeats": repeats,
        "links": links,
        "notes": result["notes"],
    }
