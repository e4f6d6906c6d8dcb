"""Numbers the raw-line test of `strict_values` once sent to the diagnostic pass after every
staging (`NaN`, `Infinity`, 19 digits, a 3-digit exponent): after the fast staging it is no longer
run (issue 39), so each such number must keep the verdict and value it had (the outcomes below
are those of the code before the change, checked on both)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from calipers.data.store import Store
from calipers.errors import ValidationError

K = '"run": "r", "task": "t", "sample_id": "s", "correct": true'
BIG = 1234567890123456789  # 19 digits, within 64 bits

# name: (line, column read back, its value); None: refused
TAKEN: dict[str, tuple[str, str, Any]] = {
    "19 digits as a cost": (f'{{{K}, "cost_usd": {BIG}}}', "cost_usd", float(BIG)),
    "19 digits as tokens": (f'{{{K}, "tokens_in": {BIG}}}', "tokens_in", BIG),
    "19 digits as a score": (f'{{{K}, "scores": {{"a": {BIG}}}}}', "scores", {"a": float(BIG)}),
    "19 digits as a human label": (
        f'{{{K}, "human": [{{"score": {BIG}}}]}}',
        "human[1].score",
        float(BIG),
    ),
    "19 digits as a name": (
        f'{{"run": "r", "task": "t", "sample_id": {BIG}, "correct": true}}',
        "sample_id",
        str(BIG),
    ),
    "19 digits in a tool input": (
        f'{{{K}, "tools": [{{"name": "f", "input": {{"n": {BIG}}}}}]}}',
        "tools[1].input",
        f'{{"n":{BIG}}}',
    ),
    "an exponent that underflows": (f'{{{K}, "cost_usd": 1e-400}}', "cost_usd", 0.0),
    "a 3-digit exponent": (f'{{{K}, "latency_s": 1.5E+100}}', "latency_s", 1.5e100),
    "a 3-digit exponent in a score": (f'{{{K}, "scores": {{"a": 1e100}}}}', "scores", {"a": 1e100}),
    "a padded exponent": (
        f'{{{K}, "judgments": [{{"judge": "j", "score": 3, "scale_min": 1, "scale_max": 1e003}}]}}',
        "judgments[1].scale_max",
        1000.0,
    ),
    "NaN in an unknown field": (f'{{{K}, "extra": NaN}}', "sample_id", "s"),
    "30 digits in an unknown field": (f'{{{K}, "extra": {10**29}}}', "sample_id", "s"),
    "NaN in an unknown key of an assertion": (
        f'{{{K}, "assertions": [{{"type": "contains", "passed": true, "zz": NaN}}]}}',
        "len(assertions)",
        1,
    ),
    "25 digits in an unknown key of a judgment": (
        f'{{{K}, "judgments": [{{"judge": "j", "score": 3, "zz": {10**24}}}]}}',
        "judgments[1].score",
        3.0,
    ),
}
REFUSED = {
    "NaN as a cost": f'{{{K}, "cost_usd": NaN}}',
    "-Infinity as a latency": f'{{{K}, "latency_s": -Infinity}}',
    "1e400 as a score": f'{{{K}, "scores": {{"a": 1e400}}}}',
    "2**63 as tokens": f'{{{K}, "tokens_out": {2**63}}}',
    "NaN as a run": '{"run": NaN, "task": "t", "sample_id": "s", "correct": true}',
    "20 digits in a decision": f'{{{K}, "decision": {{"n": {10**19}}}}}',
}


@pytest.mark.parametrize("case", sorted(TAKEN))
def test_numbers_the_raw_test_flagged_keep_their_values(case: str, tmp_path: Path) -> None:
    line, column, value = TAKEN[case]
    path = tmp_path / "x.jsonl"
    path.write_text(line + "\n")
    with Store(tmp_path / "s.duckdb") as store:
        store.import_files([path])
        got = store.con.execute(f"SELECT {column} FROM samples").fetchall()
    if column == "tools[1].input":  # JSON text, as DuckDB keeps it
        got = [(str(got[0][0]).replace(" ", ""),)]
    assert got == [(value,)]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_numbers_no_field_takes_stay_refused(case: str, tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(REFUSED[case] + "\n")
    with Store(tmp_path / "s.duckdb") as store, pytest.raises(ValidationError) as caught:
        store.import_files([path])
    assert all(p.line == 1 and p.file == str(path) for p in caught.value.problems)
