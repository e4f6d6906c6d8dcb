"""The viewer's pages beyond runs, compare, flips and sample — each a thin view over the call the
commands make, with its twin — kept apart from app.py (the plumbing and the first four):

    /compare  with several candidates   each against the baseline, the verdicts first
    /judges   (?run=R)                  agreement, against human labels, position bias
    /repeats  ?run=R&metric=M           pass@k, pass^k, flaky samples
    /leaderboard ?scheme=&metric=       any metric's leaderboard, with rank intervals
    /history  ?run=R (&stem=S)          the run name over time: its series, imports, rubric
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from starlette.requests import Request

from calipers.data.store import Store
from calipers.errors import CalipersError, InputError
from calipers.view.reading import NotFound, Reader

T = TypeVar("T")
# a store of at most this many observations has its leaderboards computed ahead (`prepare_board`:
# a second or two of work each on two cores; a larger store's wait until they are asked for)
PREPARE_OBSERVATIONS = 1_000_000
BOARDS_AHEAD = 4  # metrics whose leaderboards are computed ahead (each about a second there)


def _run_param(request: Request, listing: dict[str, Any], *, required: bool) -> str | None:
    from calipers.view.comparing import named

    run = request.query_params.get("run", "").strip()
    if not run:
        if required:
            raise InputError("this page needs `run`", hint="Pick a run below or on the runs page.",
                             parameters=["run"])  # fmt: skip
        return None
    return named(run, listing)


class MorePages:
    """The pages above, as methods of the app's `Viewer` (which provides these attributes)."""

    reader: Reader
    listing: Callable[[], dict[str, Any]]
    compared: Callable[..., Any]  # app.Viewer.compared
    page: Callable[..., Any]  # app.Page

    def _cached(self, key: Hashable, fn: Callable[[Store], T]) -> T:
        return self.reader.cached(key, fn)

    # ------------------------------------------------------------ several candidates

    def several(self, request: Request, chosen: Any) -> Any:
        """`calipers compare` with several candidates: the roll-up verdict, then one row per
        candidate — its verdict, difference and interval, α (the family's, split over the
        candidates), n, MDE — each linking to its pair's own page."""
        if request.url.path.endswith(".json"):  # the twin: `calipers compare --json`'s document
            from calipers.render.json_report import dumps

            made = self.compared(chosen, cost=True)
            return self.page("", "", {}, None, twin_text=dumps(made.report))
        compared = self.compared(chosen)
        from calipers.schemes.layered.scoring import value_label

        report = compared.report
        rows = []
        for pair in report["pairs"]:
            rows.append({"pair": pair, "query": chosen.pair(pair["treatment"]).query()})
        names = [r["run"] for r in self.listing()["runs"]]
        context = {
            "pick": chosen, "report": report, "rows": rows, "run_names": names,
            "label": value_label(report["scheme"], report["parameters"]), "query": chosen.query(),
        }  # fmt: skip
        title = f"{len(chosen.candidates)} runs against {chosen.baseline}"
        return self.page("view_several.html.j2", title, context, None)

    # ------------------------------------------------------------ judges

    def judges(self, request: Request) -> Any:
        from calipers.view.judges import judged_runs, position_bias, run_judges

        listing = self.listing()
        run = _run_param(request, listing, required=False)
        runs = self._cached(("judged-runs",), judged_runs)
        if run is None:
            bias = self._cached(("position-bias",), position_bias)
            data: dict[str, Any] = {"run": None, "runs": runs, "pairwise": bias}
            return self.page("view_judges.html.j2", "Judges", {"data": data}, data)
        data = self._cached(("judges", run), lambda store: run_judges(store, run))
        data = {**data, "runs": runs}
        return self.page("view_judges.html.j2", f"Judges of {run}", {"data": data}, data)

    # ------------------------------------------------------------ repeats

    def repeats(self, request: Request) -> Any:
        from calipers.view.repeats import metric_for, repeat_runs, run_repeats

        listing = self.listing()
        runs = repeat_runs(listing)
        run = _run_param(request, listing, required=False)
        if run is None:
            data: dict[str, Any] = {"run": None, "runs": runs}
            return self.page("view_repeats.html.j2", "Repeats", {"data": data}, data)
        row = next(r for r in listing["runs"] if r["run"] == run)
        metric = metric_for(row, request.query_params.get("metric", "").strip())
        data = self._cached(("repeats", run, metric),
                            lambda store: run_repeats(store, run, metric))  # fmt: skip
        data = {**data, "metrics": list(row.get("metrics") or {}), "runs": runs}
        return self.page("view_repeats.html.j2", f"Repeats of {run}", {"data": data}, data)

    # ------------------------------------------------------------ leaderboard

    def leaderboard(self, request: Request) -> Any:
        from calipers.view.board import all_metrics, leaderboard, pick_board

        listing = self.listing()
        board = pick_board(request.query_params, listing)
        data = self.reader.cached(("leaderboard", board.scheme, board.options),
                                  lambda store: leaderboard(store, board, self.reader))  # fmt: skip
        if request.url.path.endswith(".json"):  # the twin: `calipers leaderboard --json`'s
            from calipers.render.json_report import dumps

            return self.page("", "", {}, None, twin_text=dumps(data["report"]))
        context = {"data": data, "board": board, "metrics": all_metrics(listing),
                   "query": board.query()}  # fmt: skip
        return self.page("view_leaderboard.html.j2", "Leaderboard", context, None)

    def prepare_board(self, idle: Callable[[], bool]) -> None:
        """The leaderboards the page links to — the one it opens with (no options:
        `board.pick_board`), then each metric's (at most `BOARDS_AHEAD`) and the layered one —
        computed ahead, each once `idle()` says no request is being answered, on a store small
        enough (`PREPARE_OBSERVATIONS`), so that their first view is the template only. The
        rank intervals' resamples (`stats.rankings`) and the last staged runs are kept too,
        for a leaderboard with other options."""
        import time
        from functools import partial

        from calipers.view.board import all_metrics, leaderboard, pick_board

        listing = self.listing()
        if sum(r["observations"] for r in listing["runs"]) > PREPARE_OBSERVATIONS:
            return
        asked: list[dict[str, str]] = [{}]
        asked += [{"scheme": "metric", "metric": m} for m in all_metrics(listing)[:BOARDS_AHEAD]]
        if any(r.get("layered_observations") for r in listing["runs"]):
            asked.append({"scheme": "layered"})
        done = set()
        for params in asked:
            board = pick_board(params, listing)
            key = ("leaderboard", board.scheme, board.options)
            if key in done:
                continue
            done.add(key)
            while not idle():
                time.sleep(0.1)
            try:
                self.reader.cached(key, partial(leaderboard, board=board, reader=self.reader))
            except CalipersError:  # this one's page will say why; the others are still made
                continue

    # ------------------------------------------------------------ history

    def history(self, request: Request) -> Any:
        from calipers.view.history import run_history, series, stem

        listing = self.listing()
        run = _run_param(request, listing, required=False)
        asked = request.query_params.get("stem", "").strip()
        if run is None and not asked:
            groups: dict[str, list[str]] = {}
            for r in listing["runs"]:
                groups.setdefault(stem(r["run"]), []).append(r["run"])
            data: dict[str, Any] = {"run": None, "stem": None, "stems": groups}
            return self.page("view_history.html.j2", "History", {"data": data}, data)
        of = asked or stem(run or "")
        found = series(listing, of, prefix=bool(asked))
        if not found:
            raise NotFound(f"no run is named like {of!r}", hint="Pick a run on the runs page.")
        kept = ("run", "last_import", "samples", "observations", "epochs", "metrics", "layered",
                "cost_usd", "errors")  # fmt: skip
        data = {"run": run, "stem": of, "series": [{k: r.get(k) for k in kept} for r in found]}
        if run is not None:
            data.update(self._cached(("history", run), lambda store: run_history(store, run)))
        title = f"History of {run}" if run else f"History of {of}"
        return self.page("view_history.html.j2", title, {"data": data}, data)
