"""`calipers import DIR` does work linear in the number of its files (issue 39).

The check counts the statements an import sends to DuckDB, not seconds: a query per pair of files
(the cross-file key check once was) makes the count grow with the square of the files, which a
timing on a shared machine would not show reliably.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calipers.data.store import Store
from calipers.errors import ValidationError


class _Counting:
    """A DuckDB connection that counts the statements sent through it."""

    def __init__(self, con: Any) -> None:
        self._con = con
        self.statements = 0

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        self.statements += 1
        return self._con.execute(*args, **kwargs)

    def executemany(self, *args: Any, **kwargs: Any) -> Any:
        self.statements += 1
        return self._con.executemany(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def _shards(folder: Path, n: int, *, overlap: bool = False) -> Path:
    folder.mkdir()
    for i in range(n):
        rows = [
            {"run": "m", "task": "t", "sample_id": "same" if overlap else f"{i}-{j}",
             "epoch": j, "correct": j % 2 == 0}
            for j in range(3)
        ]  # fmt: skip
        (folder / f"shard{i:03d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _statements(tmp_path: Path, n: int) -> int:
    with Store(tmp_path / f"s{n}.duckdb") as store:
        counting = _Counting(store.con)
        store.con = counting  # type: ignore[assignment]
        summary = store.import_files([_shards(tmp_path / f"dir{n}", n)])
        store.con = counting._con
    assert summary.files == n and summary.samples == 3 * n
    return counting.statements


def test_import_dir_statements_grow_linearly_with_its_files(tmp_path: Path) -> None:
    counts = {n: _statements(tmp_path, n) for n in (3, 6, 12, 24)}
    steps = [counts[6] - counts[3], counts[12] - counts[6], counts[24] - counts[12]]
    per_file = [steps[0] / 3, steps[1] / 6, steps[2] / 12]
    # the same statements for each file more; a query per pair would add 3, 6, 12 times more
    assert per_file[0] == per_file[1] == per_file[2], counts
    assert per_file[0] <= 16, counts


def test_keys_shared_by_three_files_are_named_for_each_pair(tmp_path: Path) -> None:
    folder = _shards(tmp_path / "dir", 3, overlap=True)
    with Store(tmp_path / "s.duckdb") as store, pytest.raises(ValidationError) as caught:
        store.import_files([folder])
    messages = [p.message for p in caught.value.problems]
    a, b, c = (folder / f"shard{i:03d}.jsonl" for i in range(3))
    expected = [
        f"the sample key ('m', 't', 'same', {e}) is in both {x} and {y}"
        for x, y in ((a, b), (a, c), (b, c))
        for e in range(3)
    ]
    assert messages == expected
    assert [p.file for p in caught.value.problems] == [str(y) for y in (b,) * 3 + (c,) * 6]


def test_more_than_three_shared_keys_are_counted(tmp_path: Path) -> None:
    folder = tmp_path / "dir"
    folder.mkdir()
    for name in ("a", "b"):
        rows = [{"run": "m", "task": "t", "sample_id": f"k{j}", "correct": True} for j in range(5)]
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with Store(tmp_path / "s.duckdb") as store, pytest.raises(ValidationError) as caught:
        store.import_files([folder])
    messages = [p.message for p in caught.value.problems]
    assert messages[0].startswith("5 sample keys are in both") and len(messages) == 4
    assert "('m', 't', 'k0', 0)" in messages[1] and "('m', 't', 'k2', 0)" in messages[3]
