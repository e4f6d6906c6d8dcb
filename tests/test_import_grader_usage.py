"""Grader usage kept apart from the system's, equal to the tools' own totals, through the same
fields inspect_ai's importer uses (grader_tokens_in/_out, grader_cost_usd). Fixtures made by the
tools: oaieval 3.0.1.post1 (openai_evals/make_fixtures.sh: `oaieval lookup-a,judge tiny-fact`),
deepeval 4.3.1, promptfoo 0.123.1 (promptfoo/make_fixtures.sh rubric, when present)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.adapters import deepeval, openai_evals, promptfoo
from calipers.data.store import Store

IMPORTERS = Path(__file__).parent / "fixtures" / "importers"
GRADED = IMPORTERS / "openai_evals" / "lookup-a+judge_tiny-fact.jsonl"
RUBRIC = IMPORTERS / "promptfoo" / "results-rubric.json"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _total(rows: list[dict[str, Any]], field: str) -> int | float:
    return sum(r.get(field, 0) for r in rows)


def test_oaieval_model_graded_run_is_the_subject_and_usage_is_split() -> None:
    records = _lines(GRADED)
    spec = records[0]["spec"]
    (final,) = [r["final_report"] for r in records if "final_report" in r]
    rows = openai_evals.read_rows(GRADED)
    # evals' ModelBasedClassify grades with the last completion fn; the run is the others
    assert spec["completion_fns"] == ["lookup-a", "judge"]
    assert {r["run"] for r in rows} == {"lookup-a"}
    samplings = [r["data"] for r in records if r.get("type") == "sampling"]
    for who, prefix in (("lookup-a", ""), ("judge", "grader_")):
        usage = [s["usage"] for s in samplings if s["model"] == who]
        assert _total(rows, f"{prefix}tokens_in") == sum(u["prompt_tokens"] for u in usage)
        assert _total(rows, f"{prefix}tokens_out") == sum(u["completion_tokens"] for u in usage)
    # together, oaieval's own totals
    assert (
        _total(rows, "tokens_in") + _total(rows, "grader_tokens_in") == final["usage_prompt_tokens"]
    )
    assert (
        _total(rows, "tokens_out") + _total(rows, "grader_tokens_out")
        == final["usage_completion_tokens"]
    )
    # the subject's own answer is the output, not the grader's verdict
    assert all("output" in r and "[Expert]" not in r.get("input", "") for r in rows)


def test_oaieval_without_a_grader_is_unchanged() -> None:
    path = IMPORTERS / "openai_evals" / "lookup-a_tiny-match.jsonl"
    (final,) = [r["final_report"] for r in _lines(path) if "final_report" in r]
    rows = openai_evals.read_rows(path)
    assert _total(rows, "tokens_in") == final["usage_prompt_tokens"]
    assert not any("grader_tokens_in" in r for r in rows)


def test_oaieval_one_fn_grading_itself_leaves_tokens_absent(tmp_path: Path) -> None:
    """A model-graded log of one completion fn (evals then grades with it): its answering and
    grading calls cannot be told apart (the log below is the fixture's, its spec naming one fn)."""
    records = _lines(GRADED)
    records[0]["spec"]["completion_fns"] = ["judge"]
    copy = tmp_path / "self.jsonl"
    copy.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    rows = openai_evals.read_rows(copy)
    assert {r["run"] for r in rows} == {"judge"}
    assert not any("tokens_in" in r or "grader_tokens_in" in r for r in rows)
    assert any("also grades" in w for w in rows.warnings)


def test_deepeval_judge_cost_is_grader_cost() -> None:
    path = IMPORTERS / "deepeval" / "test_run_model-a.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = deepeval.read_rows(path)
    assert math.isclose(_total(rows, "grader_cost_usd"), data["evaluationCost"], rel_tol=1e-12)
    for row, case in zip(rows, data["testCases"], strict=True):
        assert row["grader_cost_usd"] == case["evaluationCost"]


def test_promptfoo_without_graders_has_no_grader_tokens() -> None:
    rows = promptfoo.read_rows(IMPORTERS / "promptfoo" / "results.json")
    assert not any("grader_tokens_in" in r for r in rows)


@pytest.mark.skipif(not RUBRIC.exists(), reason="promptfoo/make_fixtures.sh rubric not run")
def test_promptfoo_grader_tokens_equal_promptfoos_assertion_totals() -> None:
    data = json.loads(RUBRIC.read_text(encoding="utf-8"))
    stats = data["results"]["stats"]["tokenUsage"]
    rows = promptfoo.read_rows(RUBRIC)
    assert stats["assertions"]["prompt"] > 0
    assert _total(rows, "grader_tokens_in") == stats["assertions"]["prompt"]
    assert _total(rows, "grader_tokens_out") == stats["assertions"]["completion"]
    assert _total(rows, "tokens_in") == stats["prompt"]
    assert _total(rows, "tokens_out") == stats["completion"]


def test_imported_grader_tokens_reach_the_store(tmp_path: Path) -> None:
    db = tmp_path / "db.duckdb"
    assert main(["import", str(GRADED), "--db", str(db)]) == 0
    with Store(db, read_only=True) as store:
        got = store.con.execute(
            "SELECT run, sum(tokens_in), sum(grader_tokens_in) FROM samples GROUP BY run"
        ).fetchall()
    rows = openai_evals.read_rows(GRADED)
    assert got == [("lookup-a", _total(rows, "tokens_in"), _total(rows, "grader_tokens_in"))]
