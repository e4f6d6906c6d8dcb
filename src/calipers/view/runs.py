"""The runs page's data: what `calipers runs --json` lists for every run (samples, observations,
tasks, epochs, the last import, the mean of `correct` and of each metric), plus its cost and
tokens where the samples carry them, the formats it was imported from, and — for a run with
assertions or judgments — the layered composite's mean, the number `calipers score --scheme
layered` reports as the run's mean (its interval is not computed here: the page is a listing).

The listing is a few aggregate queries (a third of a second over 1,000,000 samples); the
layered composites need the runs staged (about a second for 100 runs of 10,000 samples). So they
are kept apart (`Composites`): each under a digest of the run's layered inputs, computed again
only when those change — after an import, only for the runs it wrote — and, when there are many
to compute, on a thread while the page shows the rest and says they are on their way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from calipers.data.run_metrics import run_metric_means
from calipers.data.store import Store, describe_runs
from calipers.errors import CalipersError
from calipers.view.reading import Reader, StoreBusy, fingerprint

# layered observations to stage while the page waits (about 0.1 s); more go to a thread
SYNC_LIMIT = 100_000
MEMO_LIMIT = 10_000  # composites kept before the memo starts afresh


def cached_listing(reader: Reader) -> dict[str, Any]:
    """The runs page's data for the store's state as it is now, kept by `reader` (computed once
    per state, by whichever caller asks first; the others wait for it)."""
    stamp = repr(fingerprint(reader.db))
    return reader.cached(("runs",), lambda store: runs_listing(store, stamp))


def runs_listing(store: Store, stamp: str) -> dict[str, Any]:
    """{"store": path, "runs": [one dict per run, by name], "notes": []}; a run with layered
    data carries `layered_digest` (`_digests`; `stamp`, the store's state, for a run whose
    layered summaries are not current), for `Composites` to find its composite by."""
    infos = describe_runs(store.runs())
    means = run_metric_means(store)
    extra = {
        str(r[0]): r[1:]
        for r in store.con.execute(
            """
            SELECT run, sum(cost_usd), count(cost_usd), sum(tokens_in), sum(tokens_out),
                   count(*) FILTER (WHERE coalesce(len(assertions), 0) > 0
                                       OR coalesce(len(judgments), 0) > 0),
                   count(error)
            FROM samples GROUP BY run
            """
        ).fetchall()
    }
    formats: dict[str, list[str]] = {}
    for run, fmt in store.con.execute(
        "SELECT DISTINCT s.run, i.format FROM (SELECT DISTINCT run, source FROM samples) s "
        "JOIN imports i ON i.source = s.source WHERE i.format IS NOT NULL ORDER BY 1, 2"
    ).fetchall():
        formats.setdefault(str(run), []).append(str(fmt))
    layered = [run for run, e in extra.items() if e[4]]
    digests = _digests(store, layered)
    for info in infos:
        run = info["run"]
        cost, n_cost, tokens_in, tokens_out, n_layered, errors = extra.get(run, (None,) * 6)
        info["metrics"] = means.get(run, {})
        info["cost_usd"] = None if not n_cost else float(cost)
        info["cost_usd_n"] = int(n_cost or 0)
        info["tokens_in"] = None if tokens_in is None else int(tokens_in)
        info["tokens_out"] = None if tokens_out is None else int(tokens_out)
        info["errors"] = int(errors or 0)
        info["layered_observations"] = int(n_layered or 0)
        info["layered_digest"] = digests.get(run, f"not summarised; {stamp}") if n_layered else None
        info["formats"] = formats.get(run, [])
    return {"store": str(store.path), "runs": infos, "notes": []}


def _digests(store: Store, runs: list[str]) -> dict[str, str]:
    """Per run whose layered summaries are current (`layer_inputs`: every write through calipers
    keeps them so), a digest of them — its judges and a sum of the rows' hashes — that changes
    whenever they do; none for a run written by SQL of its own (its digest is then the store's
    state, `runs_listing`'s `stamp`)."""
    from calipers.data.layer_inputs import stale_runs

    stale = set(stale_runs(store.con))
    fresh = [r for r in runs if r not in stale]
    if not fresh:
        return {}
    rows = store.con.execute(
        """
        SELECT l.run, any_value(r.judges)::VARCHAR || ' ' || sum(hash(
                   l.key_rank, l.task_rank, l.epoch, l."group", l.packed, l.n_assertions,
                   l.human, l.judge_sum, l.judge_count, l.judge_min, l.judge_max, l.judge_ss
               ))::VARCHAR
        FROM layer_inputs l JOIN layer_input_runs r ON r.run = l.run
        WHERE l.run IN (SELECT unnest(?)) GROUP BY l.run
        """,
        [fresh],
    ).fetchall()
    return {str(run): str(digest) for run, digest in rows}


def layered_means(store: Store, runs: list[str]) -> tuple[dict[str, float | None], str | None]:
    """Each run's layered composite mean with the scheme's default options, staged as a compare
    stages it (from the summaries the store keeps) and averaged as the run's summary averages:
    each sample weighs the same however many epochs it has. When the scheme refuses the runs (a
    judge score off its scale) none has one, and the message says why."""
    from calipers.schemes import get_scheme
    from calipers.schemes.base import ComparableScheme

    scheme = get_scheme("layered")
    if not runs or not isinstance(scheme, ComparableScheme):
        return {}, None
    try:
        staged = scheme.stage(store.samples(runs), runs, scheme.compare_options())
    except CalipersError as exc:
        return dict.fromkeys(runs), f"no layered composite: {exc.message}"
    found: dict[str, float | None] = {}
    for run in runs:
        values = staged.composite(run)
        present = np.isfinite(values)
        weights = staged.fetch(run).weights(present)
        total = float(np.sum(weights))
        found[run] = float(np.sum(weights * values[present]) / total) if total > 0 else None
    return found, None


class Composites:
    """The runs' layered composites, kept under (run, digest). `fill(listing, read)` gives the
    listing with each run's `layered` mean (None and `layered_pending` while it is computed);
    `read(fn)` runs `fn` on an open store (`Reader.read`)."""

    def __init__(self) -> None:
        self.memo: dict[tuple[str, str], float | None] = {}
        self.notes: dict[tuple[str, str], str] = {}
        self.lock = threading.Lock()
        self.working = threading.Lock()  # held by the one thread computing

    def fill(
        self, listing: dict[str, Any], read: Callable[[Callable[[Store], Any]], Any]
    ) -> dict[str, Any]:
        keys = [(r["run"], r["layered_digest"]) for r in listing["runs"] if r["layered_digest"]]
        todo = [key for key in keys if key not in self.memo]
        if todo:
            size = {r["run"]: r["layered_observations"] for r in listing["runs"]}
            if sum(size[run] for run, _ in todo) <= SYNC_LIMIT:
                self._compute(todo, read)
            elif self.working.acquire(blocking=False):
                threading.Thread(
                    target=self._compute, args=(todo, read, True), daemon=True,
                    name="calipers-view-composites",
                ).start()  # fmt: skip
        runs, notes = [], list(listing["notes"])
        for r in listing["runs"]:
            key = (r["run"], r["layered_digest"])
            shown = {k: v for k, v in r.items() if k != "layered_digest"}
            shown["layered"] = self.memo.get(key)
            shown["layered_pending"] = bool(r["layered_digest"]) and key not in self.memo
            if key in self.notes and self.notes[key] not in notes:
                notes.append(self.notes[key])
            runs.append(shown)
        pending = any(r["layered_pending"] for r in runs)
        return {**listing, "runs": runs, "notes": notes, "layered_pending": pending}

    def _compute(
        self,
        todo: list[tuple[str, str]],
        read: Callable[[Callable[[Store], Any]], Any],
        background: bool = False,
    ) -> None:
        try:
            found, note = read(lambda store: layered_means(store, [run for run, _ in todo]))
            with self.lock:
                if len(self.memo) > MEMO_LIMIT:
                    self.memo.clear()
                    self.notes.clear()
                for run, digest in todo:
                    self.memo[run, digest] = found.get(run)
                    if note:
                        self.notes[run, digest] = note
        except StoreBusy:  # a writer holds the store: they stay pending, the page reloads
            pass
        except Exception:  # a bug: a page says so; on the thread, the next page asks again
            if not background:
                raise
        finally:
            if background:
                self.working.release()
