"""A summary table from a file — what a warehouse returned for `calipers sql`'s query, saved as
CSV, Parquet or JSON Lines — checked column by column before any statistic reads it: every
problem is reported with its file, line (Parquet: row) and column, what was expected and what
was found (`ValidationError`, exit 1), as calipers reports the samples' own files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from calipers.data.files import sql_literal
from calipers.data.summaries import COLUMNS
from calipers.errors import DataError, InputError, Problem, ValidationError

WHOLE = ("n_a", "n_b", "items", "count")
SUMS = ("sum_a", "sum_b", "sum_aa", "sum_bb", "sum_ab")
HINT = (
    "A summary table has the columns " + ", ".join(COLUMNS) + " (docs/scale.md); `calipers sql "
    "--dialect …` prints the query that makes it."
)


def read_summary_file(path: Path) -> dict[str, Any]:
    """The table's columns (task and unit as text or None, the rest as floats), checked."""
    if not path.is_file():
        raise InputError(f"--summaries {path}: no such file")
    kind = _kind(path)
    rows, unit = (_json_lines(path) if kind == "jsonl" else _duckdb(path, kind)), _unit(kind)
    if not rows:
        raise DataError(f"{path}: the summary table has no row",
                        hint="The pair shares no item, or the query returned nothing.")  # fmt: skip
    present = list(rows[0][1])
    missing = [c for c in COLUMNS if c not in present]
    if missing:
        raise InputError(
            f"{path}: the summary table lacks the column(s) {', '.join(missing)} (it has "
            f"{', '.join(present) or 'none'})",
            hint=HINT,
        )
    problems: list[Problem] = []
    columns: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    seen: dict[tuple[str, str], int] = {}
    for line, row in rows:

        def bad(column: str, message: str, expected: str, got: Any, line: int = line) -> None:
            problems.append(Problem(message, str(path), line, column, expected, repr(got), unit))

        task = row.get("task")
        if task is None or not str(task).strip():
            bad("task", "a task is needed", "a task name", task)
        name = row.get("unit")
        name = None if name is None or (isinstance(name, str) and not name) else str(name)
        values: dict[str, float] = {}
        for column in (*WHOLE, *SUMS):
            x = _number(row.get(column))
            if x is None:
                bad(column, "not a number", "a finite number", row.get(column))
                continue
            if column in WHOLE and (x < 0 or x != math.floor(x)):
                bad(column, "not a count", "a whole number ≥ 0", row.get(column))
            values[column] = x
        if len(values) < len(WHOLE) + len(SUMS):
            continue
        items, count = values["items"], values["count"]
        if items < 1 or count < 1:
            bad(
                "items" if items < 1 else "count",
                "a row stands for at least one unit and item",
                "≥ 1",
                row.get("items" if items < 1 else "count"),
            )
        if values["n_a"] < items or values["n_b"] < items:
            side = "n_a" if values["n_a"] < items else "n_b"
            bad(
                side,
                "each paired item has a value in both runs: observations ≥ items",
                f"≥ items ({items:g})",
                row.get(side),
            )
        if name is None and items != 1:
            bad(
                "unit",
                "a row without a unit stands for collapsed items (items = 1); a "
                "cluster needs its name",
                "a unit name, or items = 1",
                row.get("unit"),
            )
        if name is not None and count != 1:
            bad("count", "a named unit is one cluster", "1", row.get("count"))
        _check_sums(values, bad)
        if name is not None and task is not None:
            key = (str(task), name)
            if key in seen:
                bad(
                    "unit",
                    f"(task, unit) repeats line {seen[key]}",
                    "one row per (task, unit)",
                    name,
                )
            seen[key] = line
        for column in COLUMNS:
            columns[column].append(
                str(task) if column == "task" else name if column == "unit" else values[column]
            )
    if problems:
        raise ValidationError(problems, hint=HINT)
    return {c: np.asarray(v, dtype=object if c in ("task", "unit") else np.float64)
            for c, v in columns.items()}  # fmt: skip


def _check_sums(values: dict[str, float], bad: Any) -> None:
    """Sums a table of means can have: squares ≥ 0, and Cauchy–Schwarz between a unit's sums
    ((Σā)² ≤ m·Σā², (Σāb̄)² ≤ Σā²·Σb̄²) — a swapped or mislabelled column breaks them."""
    items = values["items"]
    for side in ("a", "b"):
        total, square = values[f"sum_{side}"], values[f"sum_{side}{side}"]
        if square < 0:
            bad(f"sum_{side}{side}", "a sum of squares is ≥ 0", "≥ 0", square)
        elif total * total > items * square * (1 + 1e-9) + 1e-12:
            bad(
                f"sum_{side}{side}",
                f"smaller than sum_{side}²/items: not the sum of the squared item means",
                f"≥ {total * total / items:.6g}",
                square,
            )
    product = values["sum_ab"]
    if product * product > values["sum_aa"] * values["sum_bb"] * (1 + 1e-9) + 1e-12:
        bad(
            "sum_ab",
            "larger than √(sum_aa·sum_bb): not the sum of the products of the item means",
            f"≤ {math.sqrt(max(values['sum_aa'] * values['sum_bb'], 0.0)):.6g}",
            product,
        )


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _kind(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    for suffix, kind in ((".csv", "csv"), (".parquet", "parquet"), (".jsonl", "jsonl"),
                         (".ndjson", "jsonl"), (".json", "jsonl")):  # fmt: skip
        if name.endswith(suffix):
            return kind
    raise InputError(f"--summaries {path}: not a CSV, Parquet or JSON Lines file (by its name)",
                     hint="Name it .csv, .parquet or .jsonl.")  # fmt: skip


def _unit(kind: str) -> str:
    return "row" if kind == "parquet" else "line"


def _duckdb(path: Path, kind: str) -> list[tuple[int, dict[str, Any]]]:
    """CSV (every cell as text, checked here) or Parquet, read by DuckDB; lines count from the
    header (CSV: data starts at line 2), rows from 1."""
    import duckdb

    from calipers.data.duck import connect

    con = connect()
    reader = (f"read_csv({sql_literal(str(path))}, header = true, all_varchar = true)"
              if kind == "csv" else f"read_parquet({sql_literal(str(path))})")  # fmt: skip
    try:
        result = con.execute(f"SELECT * FROM {reader}")
        names = [d[0] for d in result.description]
        records = result.fetchall()
    except duckdb.Error as exc:
        raise InputError(f"--summaries {path}: cannot read it as {kind.upper()}: "
                         f"{str(exc).splitlines()[0]}", hint=HINT) from exc  # fmt: skip
    finally:
        con.close()
    first = 2 if kind == "csv" else 1
    return [(first + i, dict(zip(names, r, strict=True))) for i, r in enumerate(records)]


def _json_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    import gzip

    opener: Any = gzip.open if path.name.lower().endswith(".gz") else open
    rows: list[tuple[int, dict[str, Any]]] = []
    problems = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                problems.append(Problem(f"not JSON ({exc.msg})", str(path), line))
                continue
            if not isinstance(row, dict):
                problems.append(Problem("not a JSON object", str(path), line, None, "an object",
                                        type(row).__name__))  # fmt: skip
                continue
            rows.append((line, row))
    if problems:
        raise ValidationError(problems, hint=HINT)
    return rows
