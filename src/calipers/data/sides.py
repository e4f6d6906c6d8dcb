"""Two runs from their files: `calipers compare BASE... --vs CANDIDATE...`.

Each side is files or directories (a harness's output directory: `directories.expand`) holding
one run, and each is read on its own, so the two may hold the same samples under the same name
(two inspect_ai runs of one model: inspect names runs after the model). Each side's run is then
named, in this order:

1. as given (`--baseline NAME`, `--candidate NAME`);
2. by the tool's own names, when each side holds one run and the two differ (two models);
3. by the directories, when each side's files lie in one directory and the two names differ
   (`logs/v1/*.eval --vs logs/v2/*.eval` → v1, v2);
4. by the file names, when each side is one file and the names differ (`a.eval --vs b.eval`);
5. else `baseline` and `candidate`.

`Sides.note` says which, for the command to print.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from calipers.data.directories import expand_all, stem
from calipers.data.duck import connect
from calipers.data.files import sql_literal
from calipers.data.readers import StagedFile, stage_files
from calipers.data.sampleset import SampleSet
from calipers.errors import InputError, ValidationError

DEFAULT_NAMES = ("baseline", "candidate")
_TWICE = "One side's files hold the same sample twice: each side of --vs is one run."
_HOW = {
    "given": "as given",
    "tool": "by the tool's run names",
    "directory": "after their directories",
    "file": "after their files",
    "default": "by their roles (nothing else tells them apart)",
}
_ONE = {
    "tool": "by the tool's run name",
    "directory": "after its directory",
    "file": "after its file",
    "default": "by its role",
}


@dataclass(frozen=True)
class Sides:
    """The two runs' names and how they were chosen (a key of `_HOW`)."""

    baseline: str
    candidate: str
    named: str
    origins: tuple[str, str] = ("", "")
    given: tuple[str | None, str | None] = (None, None)

    @property
    def note(self) -> str:
        how = f"named {_HOW[self.named]}"
        if self.named != "given" and self.given != (None, None):
            side, other = ("baseline", "candidate")[:: 1 if self.given[0] is None else -1]
            how = f"the {side} named {_ONE[self.named]}, the {other} as given"
        return (
            f"baseline run '{self.baseline}' ({self.origins[0]}), candidate run "
            f"'{self.candidate}' ({self.origins[1]}): {how}"
        )


def open_sides(
    baseline: Sequence[str | Path],
    candidate: Sequence[str | Path],
    *,
    names: tuple[str | None, str | None] = (None, None),
    fmt: str = "auto",
    mapping: dict[str, str] | None = None,
) -> tuple[SampleSet, Sides]:
    """Both sides read, each as one run, named (see the module), in one relation."""
    if not baseline or not candidate:
        raise InputError(
            "--vs compares two sides: give the baseline's files or directories before --vs and "
            "the candidate's after it",
            hint="calipers compare logs/v1 --vs logs/v2 --scheme metric --metric NAME",
        )
    con = connect()
    con.execute("SET enable_progress_bar = false")
    sides = []
    for i, given in enumerate((baseline, candidate)):
        files = expand_all(given, fmt)
        staged, problems, shared = stage_files(
            con, files, f"side{i}_", run=None, fmt=fmt, mapping=mapping, runs=None
        )
        if problems or shared:
            raise ValidationError(
                problems + shared,
                hint=None if problems else _TWICE,
            )
        sides.append((list(given), files, staged, _runs(con, staged)))
    chosen = choose_names([(given, files, runs) for given, files, _, runs in sides], names)
    for (given, _, staged, runs), name in zip(sides, (chosen.baseline, chosen.candidate),
                                              strict=True):  # fmt: skip
        if len(runs) > 1:
            raise InputError(
                f"{_origin(given)} holds {len(runs)} runs ({', '.join(runs)}): each side of --vs "
                "is one run",
                hint="Pass the files of one run on each side, or compare the runs of one input "
                "with --baseline RUN --candidate RUN.",
            )
        for s in staged:
            con.execute(f"UPDATE {s.table} SET run = {sql_literal(name)}")
    tables = [s.table for _, _, staged, _ in sides for s in staged]
    union = " UNION ALL BY NAME ".join(f"SELECT * FROM {t}" for t in tables)
    con.execute(f"CREATE TEMP TABLE file_samples AS {union}")
    for table in tables:
        con.execute(f"DROP TABLE {table}")
    origin = f"{chosen.origins[0]} vs {chosen.origins[1]}"
    warnings = [w for _, _, staged, _ in sides for s in staged for w in s.warnings]
    return SampleSet(con, "file_samples", origin, warnings), chosen


def choose_names(
    sides: list[tuple[list[str | Path], list[Path], list[str]]],
    given: tuple[str | None, str | None],
) -> Sides:
    """The names of the two sides, each (paths given, files read, runs held)."""
    origins = (_origin(sides[0][0]), _origin(sides[1][0]))
    if given[0] is not None and given[0] == given[1]:
        raise InputError(
            f"--baseline and --candidate both name the run '{given[0]}'",
            hint="Give the two sides different names.",
        )
    if given[0] is not None and given[1] is not None:
        return Sides(given[0], given[1], "given", origins)
    labels: dict[str, list[str | None]] = {
        "tool": [runs[0] if len(runs) == 1 else None for _, _, runs in sides],
        "directory": [_directory(given, files) for given, files, _ in sides],
        "file": [stem(files[0]) if len(files) == 1 else None for _, files, _ in sides],
        "default": list(DEFAULT_NAMES),
    }
    for how, (base, cand) in labels.items():
        if base is None or cand is None or base == cand:
            continue
        pair = (given[0] or base, given[1] or cand)
        if pair[0] != pair[1]:
            return Sides(*pair, how, origins, given)
    # one name given, equal to the default of the other side
    pair = (given[0] or DEFAULT_NAMES[1], given[1] or DEFAULT_NAMES[0])
    return Sides(*pair, "default", origins, given)


def _runs(con: duckdb.DuckDBPyConnection, staged: list[StagedFile]) -> list[str]:
    found: set[str] = set()
    for s in staged:
        found |= {r[0] for r in con.execute(f"SELECT DISTINCT run FROM {s.table}").fetchall()}
    return sorted(found)


def _directory(given: list[str | Path], files: list[Path]) -> str | None:
    """The one directory a side's inputs lie in (a directory given, or the files' parent)."""
    folders = {Path(g).resolve() if Path(g).is_dir() else Path(g).resolve().parent for g in given}
    if len(folders) != 1:
        return None
    return next(iter(folders)).name or None


def _origin(given: Sequence[str | Path]) -> str:
    shown = ", ".join(map(str, given[:3]))
    return shown + (f" and {len(given) - 3} more" if len(given) > 3 else "")
