"""The fast path (DuckDB + SQL) and the diagnostic path (Python, located) enforce the same rules:
lenient-but-valid inputs pass both; every malformed fixture fails the fast path on its own."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from calipers.data import diagnose
from calipers.data.readers import stage_file
from calipers.data.validate import RecordChecker
from calipers.errors import ValidationError

BAD = Path(__file__).parent / "fixtures" / "bad"

LENIENT = {
    "integral_floats.jsonl": (
        '{"run":"m","task":"t","sample_id":"1","epoch":2.0,"tokens_out":12.0}\n'
    ),
    "numbers_as_ids.jsonl": '{"run":"m","task":7,"sample_id":17,"tier":3}\n',
    "null_metric.jsonl": '{"run":"m","task":"t","sample_id":"1","scores":{"a":null}}\n',
    "string_decision.jsonl": '{"run":"m","task":"t","sample_id":"1","decision":"approve"}\n',
    "object_value.jsonl": '{"run":"m","task":"t","sample_id":"1","assertions":'
    '[{"type":"json_schema","value":{"type":"object"}}]}\n',
    "failed_judge.jsonl": '{"run":"m","task":"t","sample_id":"1","judgments":'
    '[{"score":null,"error":"timeout"}]}\n',
    "yes_no.csv": "run,task,sample_id,correct\nm,t,1,yes\nm,t,2,no\n",
    "t_f.csv": "run,task,sample_id,correct,truncated\nm,t,1,t,f\nm,t,2,1,0\n",
    "group_strings.jsonl": '{"run":"m","task":"t","sample_id":"1","group":"7"}\n'
    '{"run":"m","task":"t","sample_id":"2","group":null}\n',
    "group_digits.csv": "run,task,sample_id,group\nm,t,1,7\nm,t,2,\n",
}


@pytest.mark.parametrize("name", sorted(LENIENT))
def test_lenient_input_passes_both_paths(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_text(LENIENT[name])
    staged = stage_file(duckdb.connect(), path, "t")
    assert staged.rows >= 1
    checker = RecordChecker(str(path))
    if path.suffix == ".jsonl":
        for i, line in enumerate(path.read_text().splitlines(), start=1):
            assert checker.check(json.loads(line), i) == []
    else:
        assert diagnose._diagnose_csv(path, checker) == []


@pytest.mark.parametrize(
    "name", sorted(p.name for p in BAD.iterdir() if p.suffix in (".jsonl", ".csv"))
)
def test_fast_path_alone_rejects_every_bad_fixture(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the diagnostic pass disabled, the fast path must still refuse the file.
    def no_diagnosis(path: Path, kind: str, run: str | None, *, fallback: str) -> None:
        raise ValidationError([])

    monkeypatch.setattr(diagnose, "raise_diagnosis", no_diagnosis)
    with pytest.raises(ValidationError):
        stage_file(duckdb.connect(), BAD / name, "t")
