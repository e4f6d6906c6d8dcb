"""The compare and flips pages' data: which comparison a query asks for, the comparison itself
(`calipers.compare`, the call `calipers compare` makes, so the page says what `--json` says), and
the flips of its pair, filtered and paged.

A query names its runs (`baseline`, `candidate`, or two `run`s ticked on the runs page) and the
options, by the names of `calipers compare`'s flags (`metric`, `margin`, `cluster`, …). As on the
command line, an option is passed to the library only when it was given, so the scheme's own
defaults apply and the report's `parameters` are those `--json` would show. Without a scheme the
viewer picks one the runs allow, and says so: layered when both runs have assertions or
judgments, else metric with the first metric both runs have (`correct` first)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calipers.data.files import visible_controls
from calipers.data.store import Store
from calipers.errors import InputError
from calipers.view.reading import NotFound

PAIRED_SCHEMES = ("metric", "layered")  # the schemes whose comparisons have flips
PER_PAGE = 25  # flips listed per page
DIRECTIONS = {"regressions": "regression", "improvements": "improvement"}
CLASSES = ("stable", "flaky", "judge-only", "error")


def _text(name: str, value: str) -> str:
    return value


def _number(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise InputError(f"{name}={value!r} is not a finite number", parameters=[name])
    return number


def _integer(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InputError(f"{name}={value!r} is not a whole number", parameters=[name]) from None


def _flag(name: str, value: str) -> bool:
    if value.lower() in ("1", "true", "on", "yes"):
        return True
    if value.lower() in ("0", "false", "off", "no"):
        return False
    raise InputError(f"{name}={value!r}: give 1 or 0", parameters=[name])


# query parameter (the flag's name) → the library's option and how the text becomes its value,
# as click types it for `calipers compare`
OPTIONS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "metric": ("metric", _text),
    "bounds": ("bounds", _text),
    "margin": ("margin", _text),
    "equivalence": ("equivalence", _flag),
    "cluster": ("cluster", _text),
    "interval": ("interval", _text),
    "confidence": ("confidence_level", _number),
    "errors": ("errors", _text),
    "adjust": ("adjust", _text),
    "seed": ("seed", _integer),
}
QUERY_NAMES = {option: query for query, (option, _) in OPTIONS.items()} | {
    "candidates": "candidate"
}


@dataclass(frozen=True)
class Pick:
    """The comparison a query asks for: two runs, a scheme, the options given (library names,
    in `OPTIONS` order), and how the viewer chose what the query left out."""

    baseline: str
    candidate: str
    scheme: str
    options: tuple[tuple[str, Any], ...]
    chosen: str | None = field(default=None, compare=False)

    def query(self) -> dict[str, str]:
        """The query that names this comparison (links to its pages)."""
        out = {"baseline": self.baseline, "candidate": self.candidate, "scheme": self.scheme}
        for option, value in self.options:
            text = ("1" if value else "0") if isinstance(value, bool) else str(value)
            out[QUERY_NAMES.get(option, option)] = text
        return out

    def option(self, name: str) -> Any:
        return dict(self.options).get(name)


def _named(run: str, runs: Mapping[str, dict[str, Any]]) -> str:
    """The run `run` names: itself, or — from a form, where a page shows a name's control
    characters as `\\xNN` (render/html.py) and so submits them so — the one run shown as it."""
    if run in runs:
        return run
    shown = [name for name in runs if visible_controls(name) == run]
    if len(shown) == 1:
        return shown[0]
    names = list(runs)
    raise NotFound(
        f"no run {run!r} in the store",
        hint=f"Runs there: {', '.join(names[:10]) or '(none)'}" + (" …" if len(names) > 10 else "")
        + ". Reload the runs page to pick again.",
    )  # fmt: skip


def named(run: str, listing: dict[str, Any]) -> str:
    """The run of the runs page's `listing` that `run` names (`_named`), or 404."""
    return _named(run, {r["run"]: r for r in listing["runs"]})


def asked_runs(
    params: Mapping[str, str], ticked: list[str], candidates: list[str], listing: dict[str, Any]
) -> tuple[str, list[str]]:
    """The baseline and the candidates a query names: `baseline` and `candidate` (repeatable),
    or the runs ticked on the runs page (`run=A&run=B&run=C`) with `baseline` the one chosen
    there — else the earliest import — and the others its candidates, in order of import."""
    runs = {r["run"]: r for r in listing["runs"]}
    baseline = params.get("baseline", "")
    given = [c for c in candidates if c]
    if not given and ticked:
        picked = sorted(set(_named(r, runs) for r in ticked),
                        key=lambda r: (runs[r].get("last_import") or "", r))  # fmt: skip
        if baseline:
            baseline = _named(baseline, runs)
            picked = [r for r in picked if r != baseline]
        elif len(picked) >= 2:
            baseline, picked = picked[0], picked[1:]
        if not picked or not baseline:
            raise InputError(
                f"tick two runs or more to compare ({len(ticked)} ticked)",
                hint="Go back to the runs page and tick two (or more: each is compared with the "
                "baseline).",
            )
        given = picked
    if not baseline or not given:
        raise InputError(
            "a comparison needs `baseline` and `candidate`",
            hint="Tick two runs on the runs page, or add ?baseline=RUN&candidate=RUN.",
            parameters=["baseline", "candidates"],
        )
    baseline = _named(baseline, runs)
    found = list(dict.fromkeys(_named(c, runs) for c in given))
    if baseline in found:
        raise InputError(
            "the baseline and the candidate are the same run",
            hint="Pick two different runs.",
            parameters=["baseline", "candidates"],
        )
    return baseline, found


def choose(
    params: Mapping[str, str], compared: list[dict[str, Any]]
) -> tuple[str, tuple[tuple[str, Any], ...], str | None]:
    """The scheme and the options (library names, in `OPTIONS` order) of a comparison of the
    runs `compared` (their runs-page rows), and how the viewer chose what the query left out."""
    given: dict[str, Any] = {}
    for name, (option, parse) in OPTIONS.items():
        value = params.get(name, "").strip()
        if value:
            given[option] = parse(name, value)
    scheme, chosen = params.get("scheme", "").strip(), None
    if scheme and scheme not in PAIRED_SCHEMES:
        raise InputError(
            f"the viewer compares with the metric or layered scheme, not {scheme!r}",
            hint=f"For {scheme}: calipers compare --scheme {scheme} --html PAGE.",
            parameters=["scheme"],
        )
    every = "both runs" if len(compared) == 2 else "every run"
    if not scheme:
        if "metric" in given:
            scheme = "metric"
        elif all(r.get("layered_observations") for r in compared):
            scheme, chosen = "layered", f"{every} have assertions or judgments"
        else:
            scheme = "metric"
    if scheme == "layered" and ("metric" in given or "bounds" in given):
        # the form keeps the metric it showed when the scheme is switched to layered
        given.pop("metric", None)
        given.pop("bounds", None)
        chosen = "the metric left out: the layered scheme compares its layers"
    if scheme == "metric" and "metric" not in given:
        shared = [m for m in compared[0].get("metrics", {})
                  if all(m in r.get("metrics", {}) for r in compared[1:])]  # fmt: skip
        if not shared:
            these = "these two runs share" if len(compared) == 2 else "these runs share"
            raise InputError(
                f"{these} no metric (`correct` or a key of `scores`) and do not "
                f"{'both' if len(compared) == 2 else 'all'} have assertions or judgments",
                hint="Compare runs that were scored alike, or give ?metric=NAME.",
                parameters=["metric"],
            )
        given["metric"] = shared[0]
        chosen = f"the first metric {every} have ({len(shared)} shared)"
    return scheme, tuple((o, given[o]) for o, _ in OPTIONS.values() if o in given), chosen


def pick(
    params: Mapping[str, str],
    ticked: list[str],
    listing: dict[str, Any],
    candidates: list[str] | None = None,
) -> Pick:
    """The comparison of two runs `params` ask for, checked against the runs of `listing` (the
    runs page's data); `ticked`: the runs ticked on the runs page (`asked_runs`)."""
    several = pick_several(params, ticked, listing, candidates)
    if len(several.candidates) != 1:
        raise InputError(
            f"this page shows one pair; {len(several.candidates)} candidates were given",
            hint="Open each pair from the comparison of several runs.",
            parameters=["candidates"],
        )
    return Pick(several.baseline, several.candidates[0], several.scheme, several.options,
                several.chosen)  # fmt: skip


@dataclass(frozen=True)
class Several:
    """A comparison of one baseline with one candidate or more (`calipers compare --baseline A
    --candidate B --candidate C`): as `Pick`, with the candidates in order."""

    baseline: str
    candidates: tuple[str, ...]
    scheme: str
    options: tuple[tuple[str, Any], ...]
    chosen: str | None = field(default=None, compare=False)

    def option(self, name: str) -> Any:
        return dict(self.options).get(name)

    def pair(self, candidate: str) -> Pick:
        return Pick(self.baseline, candidate, self.scheme, self.options, self.chosen)

    def query(self) -> dict[str, Any]:
        """The query that names this comparison: `candidate` once per candidate."""
        first = self.pair(self.candidates[0]).query()
        return {**first, "candidate": list(self.candidates)}


def pick_several(
    params: Mapping[str, str],
    ticked: list[str],
    listing: dict[str, Any],
    candidates: list[str] | None = None,
) -> Several:
    """The comparison `params` ask for: a baseline and its candidates (`asked_runs`), the scheme
    and options (`choose`). `candidates`: the query's `candidate`s (default: its one)."""
    runs = {r["run"]: r for r in listing["runs"]}
    asked = [params.get("candidate", "")] if candidates is None else candidates
    baseline, found = asked_runs(params, ticked, asked, listing)
    scheme, options, chosen = choose(params, [runs[baseline], *(runs[c] for c in found)])
    return Several(baseline, tuple(found), scheme, options, chosen)


@dataclass
class Compared:
    """A comparison as the pages use it: the result and its JSON document (what `calipers compare
    --json --gate none` writes, once `costed`)."""

    result: Any  # calipers.verdicts.compare.CompareResult
    report: dict[str, Any]
    # with its cost section: the twin's document holds it, the pages do not show it, and its
    # bootstraps were 0.3–1.3 s of a 2 × 10,000 metric comparison's 0.35–1.7 s (2026-11-27)
    costed: bool = True

    @property
    def pair(self) -> dict[str, Any]:
        return dict(self.report["pairs"][0])

    def flips(self, candidate: str) -> Any:
        """The candidate's `calipers.verdicts.flips.PairFlips`, or None."""
        return dict(getattr(self.result, "flips", {}) or {}).get(candidate)


def compare(store: Store, chosen: Pick | Several, *, cost: bool = True) -> Compared:
    """`calipers.compare` over the store's samples, as `calipers compare --db` calls it (the
    paired schemes' `compare`); `cost` False: without its cost section (`PairedScheme.compare`)."""
    from calipers.render.json_report import clean
    from calipers.schemes import get_scheme

    candidates = list(chosen.candidates) if isinstance(chosen, Several) else [chosen.candidate]
    scheme: Any = get_scheme(chosen.scheme)
    result = scheme.compare(
        store.samples(), baseline=chosen.baseline, candidates=candidates, cost=cost,
        **dict(chosen.options),
    )  # fmt: skip
    return Compared(result, clean(result.to_dict()), costed=cost)


def with_cost(store: Store, chosen: Pick | Several, compared: Compared) -> Compared:
    """`compared` (made without its cost section) with it: what `calipers compare --json`
    writes."""
    from calipers.render.json_report import clean
    from calipers.schemes import get_scheme

    scheme: Any = get_scheme(chosen.scheme)
    scheme.cost_of(store.samples(), compared.result, **dict(chosen.options))
    return Compared(compared.result, clean(compared.result.to_dict()))


def pair_flips(store: Store, chosen: Pick) -> Any:
    """The pair's flips (`calipers.verdicts.flips.PairFlips`) as `compare` finds them, without
    the comparison (`PairedScheme.flips`): the flips page's first view waits for these only."""
    from calipers.schemes import get_scheme

    scheme: Any = get_scheme(chosen.scheme)
    return scheme.flips(store.samples(), baseline=chosen.baseline, candidate=chosen.candidate,
                        **dict(chosen.options))  # fmt: skip


def forest(pair: Mapping[str, Any], label: str) -> list[dict[str, Any]]:
    """The pair's paired differences — the compared value (`label`), then each layer — with
    where each falls on one scale shared by them, zero and the margin (`_bars`): the forest the
    static page draws with matplotlib, as bars in a table (the figure was 0.07–0.14 s of a
    comparison's first view, and the viewer's only use of matplotlib)."""
    rows = [(label, pair.get("composite") or {}),
            *((name, d or {}) for name, d in (pair.get("layers") or {}).items())]  # fmt: skip
    margin = (pair.get("margin") or {}).get("margin")
    marks = [] if margin is None else [-float(margin), float(margin)]
    bars = _bars({name: (d.get("estimate"), d.get("low"), d.get("high")) for name, d in rows},
                 marks)  # fmt: skip
    return [{"name": name, "d": d, "bar": bars.get(name)} for name, d in rows]


def task_bars(pair: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per task, where its difference and interval fall on one scale shared by the tasks (and
    zero), in percent of the bar's width (`_bars`)."""
    tasks: Mapping[str, Mapping[str, Any]] = pair.get("tasks") or {}
    return _bars({name: (t.get("diff"), t.get("low"), t.get("high")) for name, t in tasks.items()})


def _bars(
    values: Mapping[str, tuple[Any, Any, Any]], marks: list[float] | None = None
) -> dict[str, dict[str, Any]]:
    """Per name with an estimate, where its (estimate, low, high) fall on one scale shared by
    them, zero and `marks` (the margin), in percent of the bar's width: `low`, `width`, `at` (the
    estimate), `zero` and `marks`."""
    ends = [0.0, *(marks or [])] + [float(x) for v in values.values() for x in v if x is not None]
    lo, hi = min(ends), max(ends)
    span = (hi - lo) or 1.0

    def at(x: float) -> float:
        return round(100 * (x - lo) / span, 2)

    bars = {}
    for name, (estimate, low_end, high_end) in values.items():
        if estimate is None:
            continue
        diff = float(estimate)
        low = float(low_end) if low_end is not None else diff
        high = float(high_end) if high_end is not None else diff
        bars[name] = {"low": at(low), "width": max(at(high) - at(low), 0.5), "at": at(diff),
                      "zero": at(0.0), "marks": [at(m) for m in marks or []]}  # fmt: skip
    return bars


def _value(x: Any) -> Any:
    if isinstance(x, np.generic):
        x = x.item()
    return None if isinstance(x, float) and not math.isfinite(x) else x


def flips_page(
    found: Any,
    chosen: Pick,
    verdict: str | None,
    *,
    kind: str = "",
    task: str = "",
    klass: str = "",
    size: float | None = None,
    page: int = 1,
) -> dict[str, Any]:
    """The pair's flips: the counts and tables of `PairFlips.to_dict()` (without its listed
    flips), and the samples that regressed or improved — of one direction (`kind`), `task` and
    class (`klass`), and changed by at least `size` (the magnitude of the change on the compared
    value's scale: an error's flip, which has no change, is then left out) when given — largest
    change first, PER_PAGE of them on page `page`. `found`: the pair's `PairFlips`; `verdict`:
    the comparison's, None while it is computed."""
    if kind and kind not in DIRECTIONS:
        raise InputError(f"kind={kind!r}: give regressions or improvements", parameters=["kind"])
    if klass and klass not in CLASSES:
        raise InputError(f"class={klass!r}: give one of {', '.join(CLASSES)}", parameters=["class"])
    if page < 1:
        raise InputError(f"page={page}: pages count from 1", parameters=["page"])
    if size is not None and size < 0:
        raise InputError(f"size={size:g}: give a change's magnitude, 0 or more",
                         parameters=["size"])  # fmt: skip
    if found is None:
        raise InputError(f"the {chosen.scheme} comparison lists no flips")
    summary = found.to_dict()
    listed = {(f.task, f.sample_id): f for f in (*found.regressions, *found.improvements)}
    del summary["regressions"], summary["improvements"]
    if task and task not in summary["tasks"]:
        raise NotFound(f"no task {task!r} in this comparison", hint="Pick a task from the table.")
    s = found.samples
    direction = np.asarray(s["direction"], dtype=object)
    wanted = [DIRECTIONS[kind]] if kind else list(DIRECTIONS.values())
    mask = np.isin(direction, wanted)
    if task:
        mask &= np.asarray(s["task"], dtype=object) == task
    if klass:
        mask &= np.asarray(s["kind"], dtype=object) == klass
    change = np.abs(np.asarray(s["difference"], dtype=float))
    if size is not None:
        mask &= np.nan_to_num(change, nan=-1.0) >= size
    rows = np.flatnonzero(mask)
    magnitude = change[rows]
    # largest change first (an error with no outcome on one side has none: last), ties in the
    # samples' (task, sample_id) order
    rows = rows[np.argsort(-np.nan_to_num(magnitude, nan=-1.0), kind="stable")]
    pages = max(1, math.ceil(rows.size / PER_PAGE))
    page = min(page, pages)
    items = []
    for j in rows[(page - 1) * PER_PAGE : page * PER_PAGE]:
        item = {name: _value(s[name][j]) for name in s}
        flip = listed.get((item["task"], item["sample_id"]))
        item["diff"] = flip.diff if flip is not None else None
        item["epoch_values"] = flip.epochs if flip is not None else None
        items.append(item)
    return {
        "pair": {"baseline": chosen.baseline, "candidate": chosen.candidate},
        "scheme": chosen.scheme,
        "verdict": verdict,
        "filters": {
            "kind": kind or None,
            "task": task or None,
            "class": klass or None,
            "size": size,
        },
        "page": page,
        "pages": pages,
        "per_page": PER_PAGE,
        "total": int(rows.size),
        "items": items,
        "summary": summary,
    }


def sample_change(found: Any, task: str, sample_id: str) -> dict[str, Any]:
    """One sample's line in the pair's flips (`PairFlips`): both values, the change, its
    direction and class (and, for a listed flip, each epoch's values); {} when the pair does not
    hold it."""
    if found is None:
        return {}
    s = found.samples
    at = np.flatnonzero(
        (np.asarray(s["task"], dtype=object) == task)
        & (np.asarray(s["sample_id"], dtype=object) == sample_id)
    )
    if not at.size:
        return {}
    line = {name: _value(s[name][int(at[0])]) for name in s}
    for flip in (*found.regressions, *found.improvements):
        if (flip.task, flip.sample_id) == (task, sample_id):
            line["epoch_values"] = flip.epochs
    return line
