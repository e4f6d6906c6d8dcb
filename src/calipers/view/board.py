"""The leaderboard page's data: `calipers leaderboard --scheme metric --metric M` (any metric a
run has) or `--scheme layered` over the store — the same `calipers.score` call, so the twin is
the document `--json` writes — and its rows best first as the command prints them
(`schemes.layered.leaderboard.leaderboard_order`: rank, rank interval, tie group, mean and
interval, n), with the runs that lack the metric listed after, unranked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from calipers import api
from calipers.data.store import Store
from calipers.errors import InputError
from calipers.schemes import get_scheme
from calipers.view.comparing import OPTIONS, QUERY_NAMES
from calipers.view.reading import Reader

# a staging is kept for the next leaderboard when its samples' names (read then: about 0.1 s)
# are at most this many
STAGED_NAMES = 200_000
SCHEMES = ("metric", "layered")  # the schemes whose leaderboard is a mean with rank intervals
# the query parameters (the flags' names) a leaderboard takes, as `calipers leaderboard` does
BOARD_OPTIONS = ("metric", "bounds", "cluster", "interval", "confidence", "seed")


@dataclass(frozen=True)
class Board:
    """The leaderboard a query asks for: the scheme and the options given (library names)."""

    scheme: str
    options: tuple[tuple[str, Any], ...]
    chosen: str | None = None

    def query(self) -> dict[str, str]:
        out = {"scheme": self.scheme}
        for option, value in self.options:
            out[QUERY_NAMES.get(option, option)] = str(value)
        return out

    def option(self, name: str) -> Any:
        return dict(self.options).get(name)


def all_metrics(listing: dict[str, Any]) -> list[str]:
    """Every metric some run has, `correct` first, then by name."""
    names = {m for r in listing["runs"] for m in r.get("metrics", {})}
    return sorted(names, key=lambda m: (m != "correct", m))


def pick_board(params: Mapping[str, str], listing: dict[str, Any]) -> Board:
    scheme = params.get("scheme", "").strip()
    if scheme and scheme not in SCHEMES:
        raise InputError(
            f"the viewer ranks with the metric or layered scheme, not {scheme!r}",
            hint=f"For {scheme}: calipers leaderboard --scheme {scheme} --html PAGE.",
            parameters=["scheme"],
        )
    given: dict[str, Any] = {}
    for name in BOARD_OPTIONS:
        value = params.get(name, "").strip()
        if value:
            option, parse = OPTIONS[name]
            given[option] = parse(name, value)
    chosen = None
    if not scheme:
        layered = any(r.get("layered_observations") for r in listing["runs"])
        scheme = "layered" if layered and "metric" not in given else "metric"
        chosen = "runs have assertions or judgments" if scheme == "layered" else None
    if scheme == "layered":
        given.pop("metric", None)
        given.pop("bounds", None)
    elif "metric" not in given:
        metrics = all_metrics(listing)
        if not metrics:
            raise InputError(
                "no run has a metric (`correct` or a key of `scores`)",
                hint="Rank with ?scheme=layered, or import scored runs.",
                parameters=["metric"],
            )
        given["metric"] = metrics[0]
        chosen = f"the first metric of {len(metrics)}"
    elif given["metric"] not in all_metrics(listing):
        from calipers.view.reading import NotFound

        raise NotFound(
            f"no run has the metric {given['metric']!r}",
            hint=f"Metrics in the store: {', '.join(all_metrics(listing)) or '(none)'}.",
        )
    ordered = tuple((o, given[o]) for o, _ in OPTIONS.values() if o in given)
    return Board(scheme, ordered, chosen)


def leaderboard(store: Store, board: Board, reader: Reader | None = None) -> dict[str, Any]:
    """{"report": what `calipers leaderboard --json` writes, "rows": best first, "label"}: the
    `calipers.score` call the command makes — with `reader`, from the runs as staged for an
    earlier leaderboard of the same scheme and metric when the store has not changed since
    (`Reader.staged`; `PairedScheme.compute_staged` is `compute` from there on)."""
    from calipers.render.json_report import clean
    from calipers.schemes.layered import PairedScheme
    from calipers.schemes.layered.leaderboard import leaderboard_order
    from calipers.schemes.layered.scoring import SummaryResult, value_label
    from calipers.verdicts.persample import names_kept

    scheme = get_scheme(board.scheme)
    if reader is None or not isinstance(scheme, PairedScheme):
        result = api.score(store.samples(), board.scheme, **dict(board.options))
    else:  # as `api.score` → `Scheme.score` → `compute`, with the staging kept
        options = scheme.options(**dict(board.options))
        samples = store.samples()
        runs = samples.runs()
        key = ("staged", board.scheme, board.option("metric"), board.option("bounds"), *runs)
        staged = reader.staged(key, store, lambda _: scheme.stage(samples, runs, options),
                               partial(names_kept, most=STAGED_NAMES))  # fmt: skip
        result = scheme.compute_staged(samples, options, runs, staged)
    assert isinstance(result, SummaryResult)  # the metric and layered schemes' result
    report = clean(result.to_dict())
    return {
        "report": report,
        "rows": clean(leaderboard_order(result)),
        "lacking": list(result.lacking),
        "label": value_label(report["scheme"], report["parameters"]),
    }
