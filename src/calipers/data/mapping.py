"""`--map FIELD=COLUMN,…`: read a JSON Lines, CSV or Parquet file whose columns have other names
(`sample_id=doc_id,scores.acc=acc,run=model`). The file is rewritten with the model's names into a
temporary file, which then goes through the same validation as any file; every problem names the
original file (and, for JSON Lines and CSV, the same line, since lines are kept one for one).

Only names change: values are never converted here, so the type rules are the same as for a file
written with the model's names. Columns the map does not name keep their own names.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb

from calipers.data.files import open_bytes, sql_literal, sql_name
from calipers.data.model import FIELD_BY_NAME
from calipers.errors import InputError

_HINT = "Write --map FIELD=COLUMN[,FIELD=COLUMN…], e.g. --map sample_id=doc_id,scores.acc=acc."


def parse_map(text: str | None) -> dict[str, str]:
    """`FIELD=COLUMN,…` → {column: field}. Every FIELD is a sample field or `scores.NAME`."""
    if not text:
        return {}
    out: dict[str, str] = {}
    for part in text.split(","):
        field, sep, column = (s.strip() for s in part.partition("="))
        if not sep or not field or not column:
            raise InputError(f"--map: '{part}' is not FIELD=COLUMN", hint=_HINT)
        if field not in FIELD_BY_NAME and not (field.startswith("scores.") and len(field) > 7):
            raise InputError(
                f"--map: '{field}' is not a sample field",
                hint="The fields are listed by `calipers schema`; a metric is scores.NAME.",
            )
        if column in out:
            raise InputError(f"--map: column '{column}' is mapped twice", hint=_HINT)
        if field in out.values():
            raise InputError(f"--map: field '{field}' is given twice", hint=_HINT)
        out[column] = field
    return out


def mapped_copy(path: Path, kind: str, mapping: dict[str, str], directory: Path) -> Path:
    """A copy of `path` (format `kind`) in `directory` with the mapped columns renamed."""
    target = directory / f"mapped{''.join(path.suffixes[-2:-1]) or ''}.{_EXT[kind]}"
    if kind == "jsonl":
        _jsonl(path, mapping, target)
    elif kind == "csv":
        _csv(path, mapping, target)
    else:
        _parquet(path, mapping, target)
    return target


_EXT = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet"}


def _missing(path: Path, columns: set[str], mapping: dict[str, str]) -> None:
    absent = [c for c in mapping if c not in columns]
    if absent:
        raise InputError(
            f"{path}: --map names column(s) not in the file: {', '.join(absent)}",
            hint=f"Columns there: {', '.join(sorted(columns))}.",
        )


def _jsonl(path: Path, mapping: dict[str, str], target: Path) -> None:
    seen: set[str] = set()
    with open_bytes(path) as src, target.open("w", encoding="utf-8") as out:
        for raw in src:
            try:
                record = json.loads(raw) if raw.strip() else None
            except (ValueError, RecursionError):
                out.write(raw.decode("utf-8", "replace").rstrip("\n") + "\n")  # reported later
                continue
            if not isinstance(record, dict):
                out.write(raw.decode("utf-8", "replace").rstrip("\n") + "\n")
                continue
            seen |= set(record)
            renamed: dict[str, object] = {}
            for key, value in record.items():
                field: str = mapping.get(str(key), str(key))
                if field.startswith("scores."):
                    scores = renamed.setdefault("scores", {})
                    if isinstance(scores, dict):
                        scores[field[7:]] = value
                else:
                    renamed[field] = value
            out.write(json.dumps(renamed) + "\n")
    _missing(path, seen, mapping)


def _csv(path: Path, mapping: dict[str, str], target: Path) -> None:
    with open_bytes(path) as src:
        text = io.TextIOWrapper(src, encoding="utf-8", newline="")
        header_line = text.readline()
        header = next(csv.reader([header_line]), [])
        _missing(path, set(header), mapping)
        with target.open("w", encoding="utf-8", newline="") as out:
            csv.writer(out, lineterminator="\n").writerow([mapping.get(c, c) for c in header])
            for chunk in iter(lambda: text.read(1 << 20), ""):
                out.write(chunk)


def _parquet(path: Path, mapping: dict[str, str], target: Path) -> None:
    con = duckdb.connect()
    try:
        source = f"read_parquet({sql_literal(str(path))})"
        columns = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
        _missing(path, set(columns), mapping)
        select = ", ".join(f"{sql_name(c)} AS {sql_name(mapping.get(c, c))}" for c in columns)
        con.execute(
            f"COPY (SELECT {select} FROM {source}) TO {sql_literal(str(target))} (FORMAT parquet)"
        )
    finally:
        con.close()
