"""The Python front door: open samples, score them with a scheme, compare runs. The command line
is a thin layer over exactly these calls (`calipers.cli`), and `import calipers` gives them by name.

    import calipers

    with calipers.open("results.jsonl") as samples:
        result = calipers.score(samples, "reasonscore")
        result.to_frame("task")
        verdict = calipers.compare(samples, "metric", baseline="base", candidates=["new"],
                                   metric="accuracy")

Errors are `calipers.errors.CalipersError` subclasses that name the parameter they are about.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calipers.data.mapping import parse_map
from calipers.data.sampleset import SampleSet
from calipers.errors import InputError, ValidationError
from calipers.schemes import available, get_scheme
from calipers.schemes.base import Scheme, SchemeResult
from calipers.verdicts.base import Comparison
from calipers.verdicts.planning import Plan

if TYPE_CHECKING:
    from calipers.data.sides import Sides

__all__ = [
    "Samples", "available_schemes", "compare", "load", "open", "open_sides", "plan", "rank",
    "score", "watch",
]  # fmt: skip


class Samples(SampleSet):
    """A sample set that is also a context manager: `with calipers.open(...) as samples:`. It
    closes its connection on exit (or `close()`)."""

    def __enter__(self) -> Samples:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    def __repr__(self) -> str:
        return f"<calipers.Samples of {self.origin}: {self.count():,} samples, runs {self.runs()}>"


def open(
    source: str | Path | Any | None = None,
    *,
    db: str | Path | None = None,
    runs: str | Sequence[str] | None = None,
    rename: str | None = None,
    format: str = "auto",
    map: str | Mapping[str, str] | None = None,
    task: str | None = None,
) -> Samples:
    """Samples from wherever they are, ready for `score` and `compare`.

    `source` is a file (JSON Lines, CSV, Parquet, or another tool's output, read by content and
    validated, not imported) or a list of files (read together: a sample key in two of them is
    an error, as in one import), a pandas or polars DataFrame, a pyarrow Table, or a list of dicts
    (one per sample, fields as in `calipers schema`); None opens the store at `db` (default
    .calipers/calipers.duckdb) read-only. `runs` keeps only those runs (as `--run`, a name or
    several); `rename` names the run of every sample read from `source` (as `--as`), before
    `runs` picks. `map` reads a file whose columns have other names: {field: column} or
    "sample_id=doc_id,scores.acc=acc" (as `--map`; a nested field with dots); `task` names the
    task of every sample read from files (as `--task`).
    """
    from calipers.data.source import open_samples

    if source is not None and db is not None:
        raise InputError("give either `source` or `db`, not both", parameters=["source", "db"])
    picked = [runs] if isinstance(runs, str) else list(runs or [])
    where = _paths(source)
    if source is None or where is not None:
        samples = open_samples(
            where, db=db, runs=picked, rename=rename, format=format, mapping=_mapping(map, task)
        )
        return _as_samples(samples)
    samples = _open_records(source, rename=rename)
    if picked:
        samples = _only_runs(samples, picked)
    return _as_samples(samples)


def open_sides(
    baseline: str | Path | Sequence[str | Path],
    candidate: str | Path | Sequence[str | Path],
    *,
    names: tuple[str | None, str | None] = (None, None),
    format: str = "auto",
    map: str | Mapping[str, str] | None = None,
) -> tuple[Samples, Sides]:
    """Two runs from their files (`calipers compare BASE... --vs CANDIDATE...`): each side is
    files or directories (a harness's output directory) holding one run, read on its own, so
    both may hold the same samples under the tool's same name. The runs are named `names` (a
    None derived: the tool's names when they differ, else the directories', else the files',
    else baseline/candidate); `Sides` has the two names and `.note` says how they were chosen.
    """
    from calipers.data.sides import open_sides as read_sides

    def listed(side: str | Path | Sequence[str | Path]) -> list[str | Path]:
        return [side] if isinstance(side, str | Path) else list(side)

    samples, sides = read_sides(
        listed(baseline), listed(candidate), names=names, fmt=format, mapping=_mapping(map)
    )
    return _as_samples(samples), sides


def _mapping(map: str | Mapping[str, str] | None, task: str | None = None) -> dict[str, str]:
    given = map if isinstance(map, str | None) else ",".join(f"{f}={c}" for f, c in map.items())
    return parse_map(given, task)


def only_run(samples: SampleSet, ask: str) -> str:
    """The run of samples that hold exactly one, where a run must be named and was not; else
    the error asking for it (`give {ask}`)."""
    runs = samples.runs()
    if len(runs) == 1:
        return runs[0]
    raise InputError(
        f"give {ask}",
        hint=f"{samples.origin} holds {len(runs)} runs: {', '.join(runs[:10]) or '(none)'}"
        + (" …" if len(runs) > 10 else "")
        + ".",
        parameters=["baseline"],
    )


def _paths(source: Any) -> Path | list[Path] | None:
    """The file, or the files, `source` names (None when it is data, or nothing)."""
    if isinstance(source, str | Path):
        return Path(source)
    if isinstance(source, list | tuple) and all(isinstance(s, str | Path) for s in source):
        return [Path(s) for s in source] if source else None
    return None


def _as_samples(samples: SampleSet) -> Samples:
    return Samples(
        samples.con, samples.relation, samples.origin, samples.warnings, samples.whole_runs
    )


def _open_records(data: Any, *, rename: str | None = None) -> SampleSet:
    """A DataFrame, Arrow table or list of dicts: written to a temporary JSON Lines file and read
    through the same validation as any file, so every problem is reported the same way, naming
    the frame's row (the list's item)."""
    import tempfile

    from calipers.data.source import open_samples

    kind = type(data).__module__.split(".")[0]
    if isinstance(data, list | tuple):
        if not all(isinstance(row, Mapping) for row in data):
            raise InputError(
                "`source` as a list must hold one dict per sample", parameters=["source"]
            )
        rows = [dict(row) for row in data]
        origin = f"<list of {len(rows)} samples>"
    elif kind in ("pandas", "polars", "pyarrow"):
        rows = _records_of(data, kind)
        origin = f"<{kind} {type(data).__name__} of {len(rows)} rows>"
    else:
        raise InputError(
            f"`source` cannot be a {type(data).__name__}",
            hint="Give a file path, a pandas or polars DataFrame, a pyarrow Table, a list of "
            "dicts, or None for the store.",
            parameters=["source"],
        )
    from calipers.data.model import FIELD_NAMES

    # every field of the model in its order: a table `calipers.load` made (or its frame), whose
    # JSON fields hold JSON text
    fields = list(FIELD_NAMES)
    loaded = (
        (list(_columns(data)) == fields)
        if kind in _FRAMES
        else bool(rows) and all(list(row) == fields for row in rows)
    )
    rows = [_plain_maps(row, json_text=loaded) for row in rows]
    with tempfile.TemporaryDirectory(prefix="calipers-open-") as tmp:
        path = Path(tmp) / "samples.jsonl"
        path.write_text(
            "".join(json.dumps(r, default=_json_default) + "\n" for r in rows), encoding="utf-8"
        )
        try:
            samples = open_samples(path, rename=rename, format="jsonl")
        except ValidationError as exc:
            raise _named_as(exc, path, origin, "item" if kind not in _FRAMES else "row") from None
    samples.origin = origin
    samples.warnings = [w.replace(str(path), origin) for w in samples.warnings]
    return samples


_FRAMES = ("pandas", "polars", "pyarrow")
# A map field as Arrow, pandas and polars give it back: a list of (key, value) pairs
_MAP_FIELDS = ("scores", "score_weights")


def _columns(data: Any) -> list[str]:
    names = getattr(data, "column_names", None)  # pyarrow
    return list(names if names is not None else data.columns)


def _parsed(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _plain_maps(row: dict[str, Any], *, json_text: bool = False) -> dict[str, Any]:
    """`scores` and `score_weights` as objects again: `calipers.load(...)` gives them as Arrow
    maps, which `to_pylist()` and `to_pandas()` turn into lists of (key, value) pairs (polars:
    of {"key", "value"} structs). With `json_text` (a table `calipers.load` made), the JSON
    fields — `decision`, an assertion's `value`, a tool call's `input` — are JSON text, parsed
    back into their values."""
    if json_text:
        row["decision"] = _parsed(row.get("decision"))
        for name, key in (("assertions", "value"), ("tools", "input")):
            items = row.get(name)
            if items is not None and not isinstance(items, str | bytes):
                row[name] = [
                    {**item, key: _parsed(item.get(key))} if isinstance(item, Mapping) else item
                    for item in items
                ]
    for name in _MAP_FIELDS:
        value = row.get(name)
        if value is None or isinstance(value, Mapping | str | bytes):
            continue
        try:
            pairs = list(value)
        except TypeError:
            continue
        if all(isinstance(p, Mapping) and set(p) == {"key", "value"} for p in pairs):
            row[name] = {p["key"]: p["value"] for p in pairs}
        elif all(isinstance(p, list | tuple) and len(p) == 2 for p in pairs):
            row[name] = {k: v for k, v in pairs}
    return row


def _named_as(exc: ValidationError, temp: Path, origin: str, unit: str) -> ValidationError:
    """A problem in the temporary file, named by the data the user gave: `<pandas DataFrame of
    18 rows>, row 3` (counted from 1: `frame.iloc[2]`; `item 3` of a list)."""
    from dataclasses import replace

    problems = [
        replace(
            p,
            file=origin if p.file == str(temp) else p.file,
            unit=unit if p.file == str(temp) else p.unit,
            message=p.message.replace(str(temp), origin),
        )
        for p in exc.problems
    ]
    return ValidationError(problems, hint=exc.hint)


def _records_of(data: Any, kind: str) -> list[dict[str, Any]]:
    if kind == "pandas":
        frame = data.astype(object).where(data.notna(), None)
        return [dict(r) for r in frame.to_dict(orient="records")]
    if kind == "polars":
        return list(data.to_dicts())
    return list(data.to_pylist())


def _json_default(value: Any) -> Any:
    if getattr(value, "ndim", 0) > 0:  # numpy arrays in nested fields, even of one element
        return value.tolist()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _only_runs(samples: SampleSet, runs: Sequence[str]) -> SampleSet:
    from calipers.data.files import sql_literal

    present = samples.runs()
    missing = [r for r in runs if r not in present]
    if missing:
        raise InputError(
            f"run(s) not in {samples.origin}: {', '.join(missing)}",
            hint=f"Runs there: {', '.join(present) or '(none)'}.",
            parameters=["runs"],
        )
    wanted = ", ".join(sql_literal(r) for r in runs)
    view = f"{samples.relation}_runs"
    samples.con.execute(
        f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM {samples.relation} "
        f"WHERE run IN ({wanted})"
    )
    return SampleSet(samples.con, view, samples.origin, samples.warnings, samples.whole_runs)


def _samples(samples: SampleSet | str | Path | Any) -> SampleSet:
    """`score` and `compare` also take what `open` takes, for one-liners."""
    return samples if isinstance(samples, SampleSet) else open(samples)


def available_schemes() -> dict[str, type[Scheme]]:
    """Every registered scheme by name (built-in and from the `calipers.schemes` entry points)."""
    return available()


def score(samples: SampleSet | str | Path | Any, scheme: str, **options: Any) -> SchemeResult:
    """Score every run of `samples` with `scheme`; `options` are the scheme's own (an unknown one
    is an error naming it). The result has `to_dict()`, `to_frame(level)` and shows itself in a
    notebook. The rubric scheme records its evaluations in a store's history with
    `history=PATH`."""
    return get_scheme(scheme).score(_samples(samples), **options)


def compare(
    samples: SampleSet | str | Path | Any,
    scheme: str,
    *,
    baseline: str,
    candidates: Sequence[str] = (),
    **options: Any,
) -> Comparison:
    """Compare each of `candidates` with `baseline` under `scheme` (any scheme that compares
    runs: layered, metric, objective, or a plugin's). The result has the verdict, `reason`,
    `to_dict()`, `to_frame()` and `gate_failure(gate)`; layered and metric also what changed:
    `flips` (per candidate, the samples that flipped, `calipers.verdicts.flips`),
    `to_frame("task")` and `to_frame("sample")`."""
    if isinstance(candidates, str):
        raise InputError(
            "`candidates` is a list of run names, not one string",
            hint=f"Write candidates=[{candidates!r}].",
            parameters=["candidates"],
        )
    return get_scheme(scheme).compare(
        _samples(samples), baseline=baseline, candidates=list(candidates), **options
    )


def watch(
    samples: SampleSet | str | Path | Any,
    scheme: str = "metric",
    *,
    baseline: str,
    candidates: Sequence[str] = (),
    design: str = "sequence",
    n_planned: int | None = None,
    order: str = "arrival",
    every: int = 1,
    full_path: bool = True,
    **options: Any,
) -> Comparison:
    """Compare `candidates` with `baseline` as the data arrive: a sequential decision, valid
    however often it is looked at (docs/sequential.md). `design`: "sequence" (a betting
    confidence sequence, no planned size), "hybrid" (a sequence at every unit plus the exact
    fixed test at `n_planned`), "obf" / "pocock" (group-sequential looks, "pocock:5"). The
    units are taken in `order`: "arrival" (the order the rows were written) or "random" (a
    permutation drawn from `seed`). The result has the verdict, where each pair stopped and
    what it saved, `to_dict()`, `to_frame("pair" | "path")` and `gate_failure(gate)`.
    `full_path` False: a decided pair reports its interval at the stop and its sequence to the
    stop only (`interval_at_last` None, `traced_to` the stop), as `calipers watch` does without
    --full-path; the sequence past a stop is computed only when a report shows it."""
    if isinstance(candidates, str):
        raise InputError(
            "`candidates` is a list of run names, not one string",
            hint=f"Write candidates=[{candidates!r}].",
            parameters=["candidates"],
        )
    chosen = get_scheme(scheme)
    method = getattr(chosen, "watch", None)
    if method is None:
        raise InputError(
            f"the scheme '{scheme}' has no sequential comparison",
            hint="Watch with the metric or layered scheme.",
            parameters=["scheme"],
        )
    result: Comparison = method(
        _samples(samples), baseline=baseline, candidates=list(candidates), design=design,
        n_planned=n_planned, order=order, every=every, **options,
    )  # fmt: skip
    from calipers.verdicts.sequential_compare import SequentialComparison

    if isinstance(result, SequentialComparison):
        result.result.trace_full(full_path)
    return result


def plan(
    samples: SampleSet | str | Path | Any | None = None,
    scheme: str = "metric",
    *,
    effect: float | None = None,
    margin: float | str | None = None,
    equivalence: bool = False,
    truth: float = 0.0,
    power: float = 0.8,
    alpha: float = 0.05,
    treatments: int = 1,
    baseline: str | None = None,
    candidate: str | None = None,
    correlation: float = 0.0,
    epochs: int | None = None,
    sd: float | None = None,
    pass_rate: float | None = None,
    discordance: float | None = None,
    icc: float = 0.0,
    cluster_size: int = 1,
    scale: float | None = None,
    effect_share: float | None = None,
    **options: Any,
) -> Plan:
    """How many items (or groups) a comparison needs to detect `effect`, or to show
    non-inferiority (`equivalence`) at `margin` when the true difference is `truth`, with
    probability `power` at level `alpha` split over `treatments` (docs/decisions.md).

    The design is measured on `samples` — the `baseline` run, and a pilot `candidate` run
    when given — under `scheme` (metric or layered, with its options), or built from numbers:
    `sd` of one score or `pass_rate` (with the two systems' `correlation`) or a 0/1
    `discordance`, and `icc` within groups of `cluster_size` items.

    The power holds for an effect spread over the items the way the pilot varies; for one
    concentrated on a share S of the items (units), each moved by δ/S, give `effect_share=S`
    (`plan.assumption` says which)."""
    from calipers.schemes.layered import PairedScheme
    from calipers.verdicts.margin import parse_margin
    from calipers.verdicts.planning import Design, Goal
    from calipers.verdicts.planning import plan as make_plan

    if samples is not None:
        samples = _samples(samples)
        taken = None
        if baseline is None:  # the input's only run, said in the plan's notes
            baseline = taken = only_run(samples, "the baseline run to plan from: --baseline RUN")
        chosen = get_scheme(scheme)
        if not isinstance(chosen, PairedScheme):
            raise InputError(
                f"scheme {scheme!r} has no paired comparison to plan",
                hint="Plan with --scheme metric --metric NAME or --scheme layered.",
            )
        design = chosen.plan(
            samples,
            baseline=baseline,
            candidate=candidate,
            correlation=correlation,
            epochs=epochs,
            **options,
        )
        if taken is not None:
            from dataclasses import replace

            note = (
                f"baseline run '{taken}': the only run in {samples.origin} (another: "
                "--baseline RUN)"
            )
            design = replace(design, notes=(note, *design.notes))
    else:
        if options:
            raise InputError(f"options {sorted(options)} need samples to plan from")
        design = Design.from_numbers(
            sd=sd, pass_rate=pass_rate, discordance=discordance, correlation=correlation,
            icc=icc, cluster_size=cluster_size, epochs=epochs or 1, scale=scale,
        )  # fmt: skip
    on_scale = None if margin is None else parse_margin(margin).on_scale(design.scale)
    goal = Goal(
        effect=effect, margin=on_scale, equivalence=equivalence, truth=truth, power=power,
        alpha=alpha, treatments=treatments,
    )  # fmt: skip
    return make_plan(design, goal, effect_share=effect_share)


def load(
    source: str | Path | Any | None = None,
    *,
    db: str | Path | None = None,
    runs: str | Sequence[str] | None = None,
    rename: str | None = None,
    format: str = "auto",
    map: str | Mapping[str, str] | None = None,
    task: str | None = None,
) -> Any:
    """Samples as a pyarrow Table (`.to_pandas()`, `polars.from_arrow(...)`).

    Takes what `open` takes, plus a store file (`.duckdb`) or a `Store` as `source`. `runs`
    keeps only those runs (as `--run`); `rename` names the run of a file's samples (as `--as`).
    """
    from calipers.data.store import Store

    if isinstance(source, Store):
        picked = [runs] if isinstance(runs, str) else list(runs or [])
        return source.samples(picked or None).to_arrow()
    if isinstance(source, str | Path) and Path(source).suffix in (".duckdb", ".db"):
        source, db = None, source
    with open(
        source, db=db, runs=runs, rename=rename, format=format, map=map, task=task
    ) as samples:
        return samples.to_arrow()


def rank(
    source: str | Path | Any | None = None,
    *,
    db: str | Path | None = None,
    runs: str | Sequence[str] | None = None,
    judges: str | Sequence[str] | None = None,
    orders: str = "both",
    prior: float = 1.0,
    rank_method: str = "marginal",
    n_resamples: int = 10_000,
    seed: int | None = None,
    confidence_level: float = 0.95,
) -> Any:
    """Runs by Bradley–Terry strength over pairwise preferences, with bootstrap intervals, rank
    intervals and tie groups: `calipers rank --pairwise [FILE]` (docs/rankings.md).

    `source` is a preference file (CSV, JSON Lines, JSON array, Parquet: model_a, model_b,
    winner as in arena logs, or a, b, winner), or its rows as a list of dicts or a DataFrame;
    None ranks the store's verdicts at `db` (`calipers grade --pairwise`). `runs` and `judges`
    keep only those; `prior=0` gives the plain maximum-likelihood strengths. Returns a
    `PairwiseRanking`: `.fit` (strengths, intervals, `win_probability`), `.strengths`, and
    `.to_dict()`, the report of `--json` (schema pairwise-rank)."""
    from calipers.grading.pairwise import rank_pairs
    from calipers.running.pairwise import pairwise_input
    from calipers.stats import DEFAULT_SEED

    if orders not in ("both", "ab"):
        raise InputError(f"orders must be 'both' or 'ab', got {orders!r}", parameters=["orders"])
    if rank_method not in ("marginal", "simultaneous", "percentile"):
        raise InputError(
            f"rank_method must be marginal, simultaneous or percentile, got {rank_method!r}",
            parameters=["rank_method"],
        )
    picked = [runs] if isinstance(runs, str) else list(runs or [])
    by = [judges] if isinstance(judges, str) else list(judges or [])
    from calipers.workspace import DEFAULT_DB

    store = Path(db) if db is not None else DEFAULT_DB
    rows, origin, held = pairwise_input(source, db=store, runs=picked, judges=by)
    return rank_pairs(
        rows, source=origin, orders=orders, prior=prior,  # type: ignore[arg-type]
        n_resamples=n_resamples, confidence_level=confidence_level,
        rank_method=rank_method,  # type: ignore[arg-type]
        seed=DEFAULT_SEED if seed is None else seed, preferences=held,
    )  # fmt: skip
