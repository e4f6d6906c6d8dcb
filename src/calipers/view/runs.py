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
from calipers.data.store import RunInfo, Store, describe_runs
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
    """{"store": path, "runs": [one dict per run, by name], "notes": [], "digests": ...}: the
    runs with layered data are found by their digests (`Digests`, read when first needed), for
    `Composites` to find their composites by. The runs' counts are `Store.runs`'
    (`_run_counts`)."""
    from calipers.data.layer_inputs import stale_runs

    means = run_metric_means(store)
    stale = set(stale_runs(store.con))
    counted = _run_counts(store, stale)
    formats: dict[str, list[str]] = {}
    for run, fmt in store.con.execute(
        "SELECT DISTINCT s.run, i.format FROM (SELECT DISTINCT run, source FROM samples) s "
        "JOIN imports i ON i.source = s.source WHERE i.format IS NOT NULL ORDER BY 1, 2"
    ).fetchall():
        formats.setdefault(str(run), []).append(str(fmt))
    layered = [run for run, e in counted.items() if e[1][4]]
    infos = describe_runs([info for info, _ in counted.values()])
    for info in infos:
        run = info["run"]
        cost, n_cost, tokens_in, tokens_out, n_layered, errors = counted[run][1]
        info["metrics"] = means.get(run, {})
        info["cost_usd"] = None if not n_cost else float(cost)
        info["cost_usd_n"] = int(n_cost or 0)
        info["tokens_in"] = None if tokens_in is None else int(tokens_in)
        info["tokens_out"] = None if tokens_out is None else int(tokens_out)
        info["errors"] = int(errors or 0)
        info["layered_observations"] = int(n_layered or 0)
        info["formats"] = formats.get(run, [])
    digests = Digests(layered, stale, stamp)
    return {"store": str(store.path), "runs": infos, "notes": [], "digests": digests}


def _run_counts(store: Store, stale: set[str]) -> dict[str, tuple[RunInfo, tuple[Any, ...]]]:
    """Per run, by name: `Store.runs`' `RunInfo` and the listing's other sums (cost, its count,
    tokens in and out, observations with assertions or judgments, errors), in one pass over the
    samples. A run's distinct (task, sample_id) keys are counted by `Store.runs` with a DISTINCT
    over every row (0.2 s of a cold start's 0.6 s of listing on 100 runs × 10,000 samples); a run
    whose layered summaries are current has them numbered already, `layer_inputs.key_rank` — the
    dense rank of (task, sample_id) among the run's keys, from 0 — so it has max + 1 keys."""
    rows = store.con.execute(
        """
        SELECT run, count(*), count(DISTINCT task), count(DISTINCT epoch), max(imported_at),
               sum(cost_usd), count(cost_usd), sum(tokens_in), sum(tokens_out),
               count(*) FILTER (WHERE coalesce(len(assertions), 0) > 0
                                   OR coalesce(len(judgments), 0) > 0),
               count(error)
        FROM samples WHERE run IS NOT NULL GROUP BY run ORDER BY run
        """
    ).fetchall()
    names = [str(r[0]) for r in rows]
    fresh = [run for run in names if run not in stale]
    keys: dict[str, int] = {}
    if fresh:
        keys.update(store.con.execute(
            "SELECT run, max(key_rank) + 1 FROM layer_inputs WHERE run IN (SELECT unnest(?)) "
            "GROUP BY run HAVING count(key_rank) = count(*)", [fresh],
        ).fetchall())  # fmt: skip
    if len(keys) < len(names):  # a run without current summaries: its keys counted as there
        rest = [run for run in names if run not in keys]
        keys.update(store.con.execute(
            "SELECT run, count(*) FROM (SELECT DISTINCT run, task, sample_id FROM samples "
            "WHERE run IN (SELECT unnest(?))) GROUP BY run", [rest],
        ).fetchall())  # fmt: skip
    return {
        str(r[0]): (RunInfo(str(r[0]), int(keys[str(r[0])]), int(r[1]), int(r[2]), int(r[3]),
                            r[4]), tuple(r[5:]))
        for r in rows
    }  # fmt: skip


class Digests:
    """The digests of a listing's runs with layered data (`_digests`; `stamp`, the store's state,
    for a run whose layered summaries are not current): the key their composites are kept under.
    Read when first needed — by the composites' thread, or by a page when composites are kept
    from an earlier state — rather than with the listing: 0.1–0.2 s of a cold start's first page,
    which shows no composite yet."""

    def __init__(self, runs: list[str], stale: set[str], stamp: str) -> None:
        self.runs, self.stale, self.stamp = runs, stale, stamp
        self._found: dict[str, str] | None = None if runs else {}
        self._lock = threading.Lock()

    def known(self) -> dict[str, str] | None:
        return self._found

    def read(self, store: Store) -> dict[str, str]:
        """The digests, read from `store` (open, in the listing's state or after) when not yet
        known."""
        with self._lock:
            if self._found is None:
                found = _digests(store, self.runs, self.stale)
                self._found = {r: found.get(r, f"not summarised; {self.stamp}") for r in self.runs}
            return self._found

    def get(self, read: Callable[[Callable[[Store], Any]], Any]) -> dict[str, str]:
        """The digests, opening the store with `read` (`Reader.read`) when not yet known."""
        known = self._found
        return known if known is not None else read(self.read)  # type: ignore[no-any-return]


def _digests(store: Store, runs: list[str], stale: set[str]) -> dict[str, str]:
    """Per run whose layered summaries are current (`layer_inputs`: every write through calipers
    keeps them so; `stale`: the runs whose are not), a digest of them — its judges and a sum of
    the rows' hashes — that changes whenever they do; none for a run written by SQL of its own
    (its digest is then the store's state, `runs_listing`'s `stamp`)."""
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

    def __init__(self, *, after: threading.Event | None = None, wait_s: float = 0.0) -> None:
        # computed on the thread once `after` is set (a first page answered) or `wait_s` passed
        self.after, self.wait_s = after, wait_s
        self.memo: dict[tuple[str, str], float | None] = {}
        self.notes: dict[tuple[str, str], str] = {}
        self.lock = threading.Lock()
        self.working = threading.Lock()  # held by the one thread computing

    def fill(
        self, listing: dict[str, Any], read: Callable[[Callable[[Store], Any]], Any]
    ) -> dict[str, Any]:
        digests: Digests = listing["digests"]
        size = {r["run"]: r["layered_observations"] for r in listing["runs"]}
        found = digests.known()
        small = sum(size[run] for run in digests.runs) <= SYNC_LIMIT
        if found is None and (small or self.memo):  # needed now: to compute, or to look up
            found = digests.get(read)
        todo = None if found is None else [k for k in found.items() if k not in self.memo]
        if todo is None or todo:
            if todo is not None and sum(size[run] for run, _ in todo) <= SYNC_LIMIT:
                self._compute(todo, read, digests)
            elif self.working.acquire(blocking=False):
                threading.Thread(
                    target=self._compute, args=(todo, read, digests, True), daemon=True,
                    name="calipers-view-composites",
                ).start()  # fmt: skip
        found = digests.known()
        runs, notes = [], list(listing["notes"])
        for r in listing["runs"]:
            digest = None if found is None else found.get(r["run"])
            key = (r["run"], digest or "")  # "": no digest (no layered data, or not read yet)
            shown = dict(r)
            shown["layered"] = self.memo.get(key)
            shown["layered_pending"] = bool(r["layered_observations"]) and key not in self.memo
            if key in self.notes and self.notes[key] not in notes:
                notes.append(self.notes[key])
            runs.append(shown)
        pending = any(r["layered_pending"] for r in runs)
        rest = {k: v for k, v in listing.items() if k != "digests"}
        return {**rest, "runs": runs, "notes": notes, "layered_pending": pending}

    def _compute(
        self,
        todo: list[tuple[str, str]] | None,
        read: Callable[[Callable[[Store], Any]], Any],
        digests: Digests,
        background: bool = False,
    ) -> None:
        """The composites of `todo`'s (run, digest) — None: of the runs whose digest, read here
        with them, has none kept."""

        def means(store: Store) -> tuple[list[tuple[str, str]], dict[str, float | None], Any]:
            asked = todo
            if asked is None:
                asked = [k for k in digests.read(store).items() if k not in self.memo]
            return (asked, *layered_means(store, [run for run, _ in asked]))

        try:
            if background and self.after is not None:
                self.after.wait(self.wait_s)
            todo, found, note = read(means)
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
