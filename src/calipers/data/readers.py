"""Read sample files (JSON Lines, CSV, Parquet) into a DuckDB table of the model's typed columns.

Fast path (here): DuckDB parses the file with the model's types and one SQL query checks every
rule. Only when either fails does the diagnostic pass (`diagnose.py`) re-read the file to report
every problem with its line (or row) and field; its per-record checks (`validate.RecordChecker`)
are the precise definition of validity.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb

from calipers.data import diagnose, fast_jsonl, guards, strict_values
from calipers.data.files import open_bytes, sql_literal, sql_name
from calipers.data.mapping import (
    constants_of,
    conversion_notes,
    mapped_copy,
    missing_columns_hint,
)
from calipers.data.model import FIELDS, INT32_MAX, KEY, layer_case
from calipers.data.sampleset import scalar
from calipers.data.tabular import create_within_memory, keyed, parquet_select, stage_csv
from calipers.data.validate import NONNEGATIVE
from calipers.errors import InputError, Problem, ValidationError

FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_UNKNOWN_SCAN_LINES = 1000


@dataclass
class StagedFile:
    path: Path
    format: str
    table: str
    rows: int
    warnings: list[str] = field(default_factory=list)
    # what another tool's file held that was not imported (`adapters.unimported`)
    not_imported: list[dict[str, object]] = field(default_factory=list)


def detect_format(path: Path, fmt: str = "auto") -> str:
    if fmt != "auto":
        if fmt not in ("jsonl", "csv", "parquet"):
            from calipers.data.adapters import ADAPTERS

            raise InputError(
                f"unknown format '{fmt}'",
                hint=f"Use auto, jsonl, csv, parquet or {', '.join(ADAPTERS)}.",
            )
        return fmt
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in FORMATS:
        return FORMATS[suffixes[-1]]
    raise InputError(
        f"{path}: cannot tell the format from the extension '{''.join(path.suffixes)}'",
        hint="Use .jsonl, .csv or .parquet, or pass --format.",
    )


def _check_readable(path: Path) -> None:
    """A FIFO, socket or device would block or never end, and a .gz that is not gzip (or is cut
    short) fails halfway through a read: each is refused up front with what is wrong."""
    import stat

    if not path.exists() or path.is_dir():
        return  # _check_path (or a directory adapter) says what to do
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"
        raise ValidationError(
            [Problem("is not a regular file", file=str(path), expected="a regular file", got=kind)],
            hint="Write the data to a file first (calipers reads a file more than once).",
        )
    if path.suffix.lower() == ".gz":
        import gzip
        import zlib

        try:
            with gzip.open(path, "rb") as fh:
                while fh.read(1 << 20):
                    pass
        except (OSError, EOFError, zlib.error) as exc:
            what = "cut short" if isinstance(exc, EOFError) else str(exc)
            raise ValidationError(
                [
                    Problem(
                        "is named .gz but is not a whole gzip file",
                        file=str(path),
                        expected="a complete gzip stream",
                        got=what,
                    )
                ],
                hint="Re-create the file (gzip FILE), or drop the .gz from its name if it is "
                "not compressed.",
            ) from None


def _directory_hint(path: Path) -> str:
    from calipers.data import directories

    return directories.hint(path)


def _not_a_document(path: Path, kind: str) -> str:
    """`kind`, once a file read as JSON Lines is known not to be a manifest or another single
    JSON document, which would otherwise be an error per line (`adapters.manifests`)."""
    if kind == "jsonl":
        from calipers.data.adapters import manifests

        manifests.refuse(path)
    return kind


def _check_path(path: Path) -> None:
    if not path.exists():
        raise ValidationError(
            [Problem("no such file", file=str(path), expected="an existing file", got="nothing")],
            hint="Check the path.",
        )
    if path.is_dir():
        raise ValidationError(
            [
                Problem(
                    "is a directory, not a file",
                    file=str(path),
                    expected="a file",
                    got="a directory",
                )
            ],
            hint=_directory_hint(path),
        )


def stage_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    table: str,
    *,
    run: str | None = None,
    fmt: str = "auto",
    mapping: dict[str, str] | None = None,
) -> StagedFile:
    """`_stage_file`; a required field the file lacks suggests `--map`."""
    try:
        return _stage_file(con, path, table, run=run, fmt=fmt, mapping=mapping)
    except ValidationError as exc:
        missing = ("missing key field", "missing required column")
        if any(p.message.startswith(missing) for p in exc.problems) and (
            not exc.hint or exc.hint.startswith("Fix the listed fields")
        ):
            raise ValidationError(exc.problems, hint=missing_columns_hint()) from None
        raise


def _stage_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    table: str,
    *,
    run: str | None = None,
    fmt: str = "auto",
    mapping: dict[str, str] | None = None,
) -> StagedFile:
    """Read and validate `path` into a new temporary table `table`; raise ValidationError with
    every problem found, leaving no table behind. Another tool's output (`adapters`) is turned
    into sample rows first and validated as JSON Lines; `mapping` ({column: field}, `--map`)
    renames a file's columns first."""
    from calipers.data.adapters import adapter_for

    _check_readable(path)
    constants = constants_of(mapping)
    if mapping and not (constants and not len(mapping) and _adapter(path, fmt) is not None):
        _check_path(path)
        kind = _not_a_document(path, detect_format(path, fmt))
        with tempfile.TemporaryDirectory(prefix="calipers-map-") as tmp:
            copy = mapped_copy(path, kind, mapping, Path(tmp))
            with _named_as(copy, path):
                staged = stage_file(con, copy, table, run=run, fmt=kind)
        noted = _renamed(staged.warnings, copy, path) + conversion_notes(path, mapping)
        return StagedFile(path, kind, table, staged.rows, noted)
    read_rows = adapter_for(path, fmt) if path.exists() else None
    if read_rows is not None:
        adapted = read_rows(path)
        for row in adapted:
            row.update(constants)  # --task names another tool's tasks too
        staged = _stage_rows(con, path, table, adapted, run=run, fmt=fmt)
        # an adapter may say what the file lacks (an incomplete log); plain lists say nothing
        staged.warnings += list(getattr(adapted, "warnings", []))
        staged.not_imported = list(getattr(adapted, "not_imported", []))
        return staged
    _check_path(path)
    kind = _not_a_document(path, detect_format(path, fmt))
    name = str(path)
    if path.stat().st_size == 0:
        raise ValidationError(
            [
                Problem(
                    "the file is empty",
                    file=name,
                    line=1,
                    expected="at least one sample",
                    got="0 bytes",
                )
            ]
        )
    warnings: list[str] = []
    fast = False  # staged by fast_jsonl
    try:
        if kind == "jsonl":
            fast = _stage_jsonl(con, table, path, run)
            warnings += _jsonl_unknown_fields(path)
        else:
            if kind == "csv":
                warnings += stage_csv(con, table, path, run)
            else:
                select, more = parquet_select(con, path, run)
                warnings += more
                create_within_memory(con, table, select, path)
    except duckdb.Error as exc:
        con.execute(f"DROP TABLE IF EXISTS {table}")
        diagnose.raise_diagnosis(path, kind, run, fallback=f"DuckDB could not read it: {exc}")
    rows = _count(con, table)
    if rows == 0:
        con.execute(f"DROP TABLE {table}")
        raise ValidationError(
            [
                Problem(
                    "the file holds no samples",
                    file=name,
                    line=1,
                    expected="at least one sample",
                    got="no rows",
                )
            ]
        )
    flagged = _sql_violations(con, table)
    if flagged:
        con.execute(f"DROP TABLE {table}")
        diagnose.raise_diagnosis(
            path, kind, run, fallback=f"{flagged} row(s) break the sample rules"
        )
    try:  # strict JSON where DuckDB's reading is lenient (trailing commas, NaN in a decision, …)
        strict_values.check(con, table, path, kind, run, fast=fast)
    except ValidationError:
        con.execute(f"DROP TABLE {table}")
        raise
    return StagedFile(path, kind, table, rows, warnings)


def _stage_rows(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    table: str,
    rows: list[dict[str, object]],
    *,
    run: str | None,
    fmt: str,
) -> StagedFile:
    """Stage an adapter's rows through a temporary JSON Lines file (same validation)."""
    if not rows:
        raise InputError(f"{path}: holds no samples")
    with tempfile.TemporaryDirectory(prefix="calipers-adapter-") as tmp:
        lines = Path(tmp) / f"{path.name or 'samples'}.jsonl"
        lines.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        with _named_as(lines, path, rows_of=True):
            staged = stage_file(con, lines, table, run=run, fmt="jsonl")
    return StagedFile(
        path, fmt if fmt != "auto" else "adapter", table, staged.rows,
        _renamed(staged.warnings, lines, path),
    )  # fmt: skip


def _adapter(path: Path, fmt: str) -> object:
    from calipers.data.adapters import adapter_for

    return adapter_for(path, fmt) if path.exists() else None


def _renamed(texts: list[str], temp: Path, original: Path) -> list[str]:
    return [t.replace(str(temp), str(original)) for t in texts]


@contextlib.contextmanager
def _named_as(temp: Path, original: Path, *, rows_of: bool = False) -> Iterator[None]:
    """Problems found in a temporary copy name the file the user gave (an adapter's rows are
    numbered as the sample rows it made from the file, not as its lines)."""
    try:
        yield
    except ValidationError as exc:
        problems = [
            replace(
                p,
                file=str(original) if p.file == str(temp) else p.file,
                message=p.message.replace(str(temp), str(original)),
                unit="sample" if rows_of and p.file == str(temp) else p.unit,
            )
            for p in exc.problems
        ]
        raise ValidationError(problems, hint=exc.hint) from None


def keep_runs(
    con: duckdb.DuckDBPyConnection, tables: list[str], runs: list[str], origin: str
) -> None:
    """Keep only `runs` (`--run`, repeatable) in the staged tables; a run that none of them holds
    is an error naming the runs there (a filter that silently matched nothing would score or
    import nothing, or the wrong thing)."""
    present: set[str] = set()
    for table in tables:
        present |= {r[0] for r in con.execute(f"SELECT DISTINCT run FROM {table}").fetchall()}
    missing = [r for r in runs if r not in present]
    if missing:
        raise InputError(
            f"--run {', '.join(missing)}: no such run in {origin}",
            hint=f"Runs there: {', '.join(sorted(present)) or '(none)'}. `--run` picks runs; "
            "`--as NAME` names the run of what is read.",
            parameters=["runs"],
        )
    wanted = ", ".join(sql_literal(r) for r in runs)
    for table in tables:
        con.execute(f"DELETE FROM {table} WHERE run NOT IN ({wanted})")


def stage_files(
    con: duckdb.DuckDBPyConnection,
    paths: list[Path],
    prefix: str,
    *,
    run: str | None,
    fmt: str,
    mapping: dict[str, str] | None,
    runs: Sequence[str] | None,
    names: Sequence[str | None] | None = None,
) -> tuple[list[StagedFile], list[Problem], list[Problem]]:
    """Stage each file into `{prefix}{i}`, gathering every file's problems (one failing file
    raises its own error, with its own hint), keep `runs`, and find the keys two files share:
    (staged, problems, shared). `names`, one per path, names each file's run (else `run`)."""
    staged: list[StagedFile] = []
    problems: list[Problem] = []
    failures: list[ValidationError] = []
    for i, path in enumerate(paths):
        named = run if names is None or names[i] is None else names[i]
        try:
            staged.append(stage_file(con, Path(path), f"{prefix}{i}", run=named, fmt=fmt,
                                     mapping=mapping))  # fmt: skip
        except ValidationError as exc:
            failures.append(exc)
            problems.extend(exc.problems)
    if len(failures) == 1:
        raise failures[0]
    if runs:
        keep_runs(con, [s.table for s in staged], list(runs), ", ".join(map(str, paths)))
        for s in staged:
            s.rows = scalar(con, f"SELECT count(*) FROM {s.table}")
    return staged, problems, cross_file_duplicates(con, staged)


def cross_file_duplicates(
    con: duckdb.DuckDBPyConnection, staged: list[StagedFile]
) -> list[Problem]:
    """A problem for every sample key that two of the staged files hold (three shown per pair,
    all counted): files read or imported together must not overlap.

    One query finds the pairs of files that share keys, whatever the number of files (a query
    per pair made `import DIR` of 100 shards take 36 s: 4,950 pairs); only a pair found then
    reads its first keys. A file's own keys are unique by then (`_sql_violations`)."""
    if len(staged) < 2:
        return []
    keys = ", ".join(KEY)
    tagged = " UNION ALL ".join(
        f"SELECT {i} AS f, {keys} FROM {s.table}" for i, s in enumerate(staged)
    )
    pairs = con.execute(
        f"WITH k AS ({tagged}), "
        f"m AS (SELECT * FROM k WHERE ({keys}) IN (SELECT ({keys}) FROM k GROUP BY ALL "
        "HAVING count(*) > 1)) "
        f"SELECT a.f, b.f, count(*) FROM m a JOIN m b USING ({keys}) WHERE a.f < b.f "
        "GROUP BY ALL ORDER BY 1, 2"
    ).fetchall()
    problems: list[Problem] = []
    for i, j, total in pairs:
        a, b = staged[i], staged[j]
        shared = f"SELECT {keys} FROM {a.table} INTERSECT SELECT {keys} FROM {b.table}"
        rows = con.execute(f"{shared} ORDER BY ALL LIMIT 3").fetchall()
        if total > len(rows):  # every collision counted, three shown
            problems.append(
                Problem(
                    f"{total} sample keys are in both {a.path} and {b.path} (the first "
                    f"{len(rows)} follow)",
                    file=str(b.path),
                    field="sample_id",
                    expected="each key in one file of an import",
                    got=f"{total} repeats",
                )
            )
        for row in rows:
            problems.append(
                Problem(
                    f"the sample key {tuple(row)} is in both {a.path} and {b.path}",
                    file=str(b.path),
                    field="sample_id",
                    expected="each key in one file of an import",
                    got="a repeat",
                )
            )
    return problems


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return scalar(con, f"SELECT count(*) FROM {table}")


# ---------------------------------------------------------------- fast path: DuckDB + SQL checks


# DuckDB's JSON reader allocates buffers of twice `maximum_object_size` per thread: at 64 MB, the
# staging of a 921 MB file ran out of the default 600 MB on two threads (and was retried on one, in
# twice the time). Its own default, 16 MB, reads lines up to about 32 MB; a file with longer lines
# is read again with room for them.
_OBJECT_SIZES = (16 << 20, 64 << 20, 256 << 20, 1 << 30)


def _stage_jsonl(con: duckdb.DuckDBPyConnection, table: str, path: Path, run: str | None) -> bool:
    """Whether the fast path staged it (else the strict one did)."""
    # the fast path takes only what the strict one takes, with the same values; anything else
    # (an error among them) is staged again here, which keeps every refusal as it was
    if fast_jsonl.stage(con, table, path, run, object_size=_OBJECT_SIZES[0]):
        return True
    # as the fast path does, a small file is read for the fields it names (a refused one-line
    # file: 24-50 ms against 80-84; its error comes from the diagnosis, which reads the lines)
    named = fast_jsonl.named_fields(path)
    for size in _OBJECT_SIZES:
        try:
            select = _jsonl_select(path, run, object_size=size, named=named)
            create_within_memory(con, table, select, path)
            if named is not None and not named.still(path):  # changed as it was read
                con.execute(f"DROP TABLE {table}")
                create_within_memory(con, table, _jsonl_select(path, run, object_size=size), path)
            return False
        except duckdb.InvalidInputException as exc:
            if "maximum_object_size" not in str(exc) or size == _OBJECT_SIZES[-1]:
                raise
            con.execute(f"DROP TABLE IF EXISTS {table}")
    return False


def _jsonl_select(
    path: Path,
    run: str | None,
    *,
    object_size: int = _OBJECT_SIZES[0],
    named: fast_jsonl.Named | None = None,
) -> str:
    """Every field is read as JSON and converted by the type rules (`guards`), so a value of
    the wrong type fails the read instead of being cast. `named` (`fast_jsonl.named_fields`):
    only these fields are read; the others, named nowhere in the file, are null, as reading
    them would make them (the caller checks `named.still(path)` after)."""
    read = [f for f in FIELDS if named is None or f.name in named.fields]
    columns = "{" + ", ".join(f"{sql_literal(f.name)}: 'JSON'" for f in read) + "}"
    typed = ", ".join(
        f"{guards.from_json(f) if f in read else f'NULL::{f.duckdb_type}'} AS {sql_name(f.name)}"
        for f in FIELDS
    )
    source = (
        f"(SELECT {typed} FROM read_json({sql_literal(str(path))}, "
        f"format='newline_delimited', columns={columns}, maximum_object_size={object_size}))"
    )
    exprs = ", ".join(
        f"{keyed(f.name, sql_name(f.name), run)} AS {sql_name(f.name)}" for f in FIELDS
    )
    return f"SELECT {exprs} FROM {source}"


def _jsonl_unknown_fields(path: Path) -> list[str]:
    """Unknown top-level fields in the first lines (the full list comes with any error)."""
    known = {f.name for f in FIELDS}
    unknown: dict[str, int] = {}
    with open_bytes(path) as fh:
        for i, raw in enumerate(fh, start=1):
            if i > _UNKNOWN_SCAN_LINES:
                break
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):  # the diagnostic pass reports the line
                continue
            if isinstance(obj, dict):
                for k in obj:
                    if k not in known:
                        unknown.setdefault(k, i)
    if not unknown:
        return []
    listed = ", ".join(f"'{k}' (line {v})" for k, v in sorted(unknown.items()))
    return [f"{path}: unknown field(s) ignored: {listed}; see `calipers schema`"]


def _sql_violations(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """Rows breaking any rule, plus repeated keys: 0 means the file is clean."""
    bad = scalar(con, f"SELECT count(*) FROM {table} WHERE {rule_violation()}")
    return bad + repeated_keys(con, table)


def repeated_keys(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """The number of keys (run, task, sample_id, epoch) given more than once in `table`."""
    return scalar(
        con,
        f"SELECT count(*) FROM (SELECT 1 FROM {table} GROUP BY {', '.join(KEY)} "
        "HAVING count(*) > 1)",
    )


def rule_violation() -> str:
    """SQL, true for a typed row that breaks a rule of the model beyond its types (an empty key,
    NaN, a negative count, an out-of-range score…): the rows `_sql_violations` counts."""
    conds = [f"{k} IS NULL OR {k}::VARCHAR = ''" for k in KEY]
    for f in FIELDS:
        if f.duckdb_type == "DOUBLE":
            conds.append(f"isnan({f.name}) OR isinf({f.name})")
    conds += [f"{name} < 0" for name in NONNEGATIVE]
    # the store's INTEGER columns are 32-bit: a Parquet INT64 epoch of 2³³ is an error, not a cast
    conds += [f"{sql_name(f.name)} > {INT32_MAX}" for f in FIELDS if f.duckdb_type == "INTEGER"]
    conds.append("guess_chance < 0 OR guess_chance > 1")
    conds.append(
        "list_bool_or(list_transform(assertions, lambda a: a.type IS NULL OR a.type = '' "
        "OR a.weight <= 0 OR isnan(a.weight) OR isinf(a.weight) "
        f"OR {layer_case('a')} = 'unknown' OR coalesce(a.layer <> {layer_case('a')}, false) "
        "OR (a.layer IS NOT NULL AND a.layer NOT IN ('fact', 'behavior'))))"
    )
    conds.append(
        "list_bool_or(list_transform(judgments, lambda j: isnan(j.score) OR isinf(j.score) "
        "OR isnan(j.scale_min) OR isinf(j.scale_min) OR isnan(j.scale_max) "
        "OR isinf(j.scale_max) OR j.scale_min >= j.scale_max OR j.score < j.scale_min "
        "OR j.score > j.scale_max OR j.repeat < 0))"
    )
    conds.append(
        "list_bool_or(list_transform(human, lambda h: h.score IS NULL OR isnan(h.score) "
        "OR isinf(h.score)))"
    )
    conds.append("list_bool_or(list_transform(tools, lambda t: t.name IS NULL OR t.name = ''))")
    conds.append("list_bool_or(list_transform(map_values(scores), lambda v: isnan(v) OR isinf(v)))")
    conds.append(
        "list_bool_or(list_transform(map_values(score_weights), "
        "lambda v: v IS NULL OR isnan(v) OR isinf(v) OR v <= 0))"
    )
    where = " OR ".join(f"coalesce({c}, false)" for c in conds[len(KEY) :])
    return " OR ".join(f"({c})" for c in conds[: len(KEY)]) + " OR " + where
