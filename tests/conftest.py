"""Shared fixtures: build a SampleSet from plain dicts, straight into DuckDB (no file, no store)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import duckdb
import pytest

from calipers.data.model import FIELDS, duckdb_columns
from calipers.data.source import SampleSet

MakeSamples = Callable[[Iterable[dict[str, Any]]], SampleSet]


def sample_set(rows: Iterable[dict[str, Any]], origin: str = "<test>") -> SampleSet:
    con = duckdb.connect()
    cols = duckdb_columns()
    con.execute("CREATE TABLE samples (" + ", ".join(f"{n} {t}" for n, t in cols.items()) + ")")
    names = [f.name for f in FIELDS]
    placeholders = ", ".join("?" for _ in names)
    data = []
    for row in rows:
        full = {"epoch": 0, **row}
        if "decision" in full and full["decision"] is not None:
            full["decision"] = json.dumps(full["decision"])
        data.append([full.get(n) for n in names])
    if data:
        con.executemany(f"INSERT INTO samples VALUES ({placeholders})", data)
    return SampleSet(con, "samples", origin)


@pytest.fixture
def make_samples() -> MakeSamples:
    return sample_set
