"""Each run's headline numbers for `calipers runs`: the mean of `correct` and of every key of
`scores` it has, over its observations (every sample and epoch), with how many observations have
the metric. A listing, not an estimate: `calipers score --scheme metric` gives intervals and
`calipers leaderboard --scheme metric` ranks."""

from __future__ import annotations

from typing import Any

from calipers.data.store import Store


def run_metric_means(store: Store) -> dict[str, dict[str, dict[str, Any]]]:
    """{run: {metric: {"mean": float | None, "n": int}}}, metrics in name order (`correct`
    first); a run without any metric maps to {}."""
    rows = store.con.execute(
        """
        SELECT run, 'correct' AS metric, avg(correct::DOUBLE), count(correct)
        FROM samples GROUP BY run HAVING count(correct) > 0
        UNION ALL
        SELECT run, metric, avg(value), count(value) FROM (
            SELECT run, unnest(map_keys(scores)) AS metric,
                   unnest(map_values(scores))::DOUBLE AS value
            FROM samples
        ) GROUP BY run, metric
        ORDER BY run, metric <> 'correct', metric
        """
    ).fetchall()
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for run, metric, mean, n in rows:
        found.setdefault(str(run), {})[str(metric)] = {
            "mean": None if mean is None else float(mean),
            "n": int(n),
        }
    return found
