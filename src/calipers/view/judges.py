"""The judges page's data, from the calls the commands make — nothing is computed here:

- per judge of a run: samples judged, failed calls, the mean and the SD between repeats, and the
  Pearson r between each pair of judges on the samples both judged, with its interval
  (`running.judging.summarize`, the table `calipers run` and `grade` print);
- the run's agreement as the layered scheme reports it (`calipers score --scheme layered`), each
  figure with its interval or the reason it has none (`stats.agreement_intervals`, on the
  samples' means over epochs, clustered as the scores are): the Pearson r between judges (each
  pair's when there are several; Fisher's z, robust), Krippendorff's α (interval; BCa bootstrap
  over the samples, refused below 30) and, where samples carry human labels, the judge against
  them (Pearson) and the judge layer corrected by the labels, with its interval (PPI++,
  `--calibrate-judges`; a refusal with its reason below 30 labels);
- pairwise judging's position bias per judge (`grading.pairwise.judge_stats`: the position-flip
  rate and the share of decisive verdicts that chose the output shown first) and the wins, ties
  and losses per pair of runs (`pair_tallies`), as `calipers rank --pairwise` prints them.

Every interval is the library's, as the commands print it; the coverage each was measured at is
in docs/calibration.md ("Judge agreement").
"""

from __future__ import annotations

from typing import Any

from calipers import api
from calipers.data.store import Store
from calipers.errors import CalipersError


def judged_runs(store: Store) -> list[dict[str, Any]]:
    """Every run with judgments or human labels: how many observations carry each, and its
    judges' names."""
    rows = store.con.execute(
        """
        SELECT run,
               count(*) FILTER (WHERE coalesce(len(judgments), 0) > 0),
               count(*) FILTER (WHERE coalesce(len(human), 0) > 0),
               list_sort(list_distinct(flatten(list(list_transform(judgments, lambda j: j.judge)))))
        FROM samples GROUP BY run
        HAVING count(*) FILTER (WHERE coalesce(len(judgments), 0) > 0
                                   OR coalesce(len(human), 0) > 0) > 0
        ORDER BY run
        """
    ).fetchall()
    return [
        {"run": str(r), "judged": int(j), "labelled": int(h), "judges": [str(x) for x in names]}
        for r, j, h, names in rows
    ]


def position_bias(store: Store, run: str | None = None) -> dict[str, Any]:
    """The store's pairwise verdicts (those with `run` on either side, when given): per judge
    its position-flip rate and first-shown share, per pair of runs the outcomes."""
    from calipers.grading.pairwise import judge_stats, pair_tallies
    from calipers.running.pairwise import read_pairs

    # read_pairs opens the store read-only itself: in this process that is the open store's
    # own database (data/store.py shares one per file), so it waits for no lock
    rows = read_pairs(store.path)
    if run is not None:
        rows = [r for r in rows if run in (r.run_a, r.run_b)]
    return {
        "verdicts": len(rows),
        "judges": [s.to_dict() for s in judge_stats(rows)],
        "pairs": [t.to_dict() for t in pair_tallies(rows)],
    }


def run_judges(store: Store, run: str) -> dict[str, Any]:
    """One run's judges: the per-judge table and pairs (`summarize`), the layered scheme's
    agreement figures and human-label calibration, and its pairwise position bias."""
    from calipers.running.judging import summarize

    cursor = store.con.execute(
        "SELECT task, sample_id, epoch, judgments, coalesce(len(human), 0) > 0 FROM samples "
        "WHERE run = ? AND coalesce(len(judgments), 0) > 0",
        [run],
    )
    rows, labelled = [], 0
    for task, sample_id, epoch, judgments, human in cursor.fetchall():
        rows.append({"task": task, "sample_id": sample_id, "epoch": epoch,
                     "judgments": judgments})  # fmt: skip
        labelled += bool(human)
    summaries, pairs = summarize(rows)
    layered: dict[str, Any] | None = None
    note = None
    if rows:
        try:
            scored = api.score(store.samples([run]), "layered", calibrate_judges=labelled > 0)
        except CalipersError as exc:  # a judge score off its scale: said, as the command says it
            note = f"no layered figures: {exc.message}"
        else:
            report = scored.to_dict()
            summary = report["runs"].get(run) or {}
            layered = {
                "judge_pearson": summary.get("judge_pearson"),
                "judge_krippendorff_alpha": summary.get("judge_krippendorff_alpha"),
                "human_pearson": summary.get("human_pearson"),
                "agreement": summary.get("agreement"),
                "judge_calibration": (report.get("judge_calibration") or {}).get(run),
                "confidence_level": report["parameters"].get("confidence_level"),
                "cluster": report["parameters"].get("cluster"),
            }
    return {
        "run": run,
        "judged_observations": len(rows),
        "labelled_observations": labelled,
        "judges": [s.to_dict() for s in summaries],
        "agreement": pairs,
        "layered": layered,
        "note": note,
        "pairwise": position_bias(store, run),
    }
