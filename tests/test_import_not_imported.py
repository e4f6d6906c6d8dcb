"""Nothing another tool wrote is dropped silently: each importer lists, at import and in
`calipers import --json`, the metrics and fields it did not import and why. Group aggregates are
reproduced from the imported documents and checked against lm-eval's own numbers (the fixtures
are lm-eval 0.4.13's output: tests/fixtures/importers/lm_eval/make_fixtures.sh groups)."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.adapters import ADAPTERS, deepeval, lm_eval, promptfoo
from calipers.data.adapters.unimported import lines
from conftest import validate_schema

IMPORTERS = Path(__file__).parent / "fixtures" / "importers"
LM = IMPORTERS / "lm_eval"


def _results(run: str) -> dict[str, Any]:
    (path,) = (LM / run).glob("*/results_*.json")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _entry(entries: list[dict[str, Any]], **want: Any) -> dict[str, Any]:
    found = [e for e in entries if all(e.get(k) == v for k, v in want.items())]
    assert len(found) == 1, (want, entries)
    return found[0]


def _import_json(tmp_path: Path, *paths: Path) -> dict[str, Any]:
    out = tmp_path / "import.json"
    code = main(["import", *map(str, paths), "--db", str(tmp_path / "db.duckdb"), "--json",
                 str(out)])  # fmt: skip
    assert code == 0
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    schema = json.loads(
        resources.files("calipers.render.schemas").joinpath("import.schema.json").read_text()
    )
    validate_schema(report, schema)
    return report


@pytest.mark.parametrize(("run", "group", "weighting"), [
    ("run-e", "tiny_group_sized", "size"), ("run-f", "tiny_group_flat", "unweighted"),
])  # fmt: skip
def test_lm_eval_group_reproduced_with_its_weighting(run: str, group: str, weighting: str) -> None:
    results = _results(run)
    tool = results["groups"][group]["acc,none"]
    rows = lm_eval.read_rows(LM / run)
    entry = _entry(rows.not_imported, kind="group", task=group, name="acc")
    assert entry["reason"] == "aggregate-only" and entry["value"] == tool
    reproduced = entry["reproduced"]
    assert reproduced["weighting"] == weighting and reproduced["matches"] is True
    assert math.isclose(reproduced["value"], tool, rel_tol=1e-12)
    # the two weightings differ here (8 and 3 documents), so the fixture tells them apart
    subtasks = results["group_subtasks"][group]
    means = [results["results"][t]["acc,none"] for t in subtasks]
    sizes = [results["results"][t]["sample_len"] for t in subtasks]
    pooled = sum(m * n for m, n in zip(means, sizes, strict=True)) / sum(sizes)
    flat = sum(means) / len(means)
    assert not math.isclose(pooled, flat)
    docs = [r["scores"]["acc"] for r in rows if r["task"] in subtasks]
    assert math.isclose(sum(docs) / len(docs), pooled, rel_tol=1e-12)
    assert math.isclose(tool, pooled if weighting == "size" else flat, rel_tol=1e-12)


def test_lm_eval_corpus_level_metrics_are_named_with_the_tools_number() -> None:
    results = _results("run-e")["results"]
    rows = lm_eval.read_rows(LM / "run-e")
    for task, metric in (("tiny_gen_bleu", "bleu"), ("tiny_mc_small", "brier_score")):
        entry = _entry(rows.not_imported, kind="metric", task=task, name=metric)
        assert entry["reason"] == "corpus-level"
        assert entry["value"] == results[task][f"{metric},none"]
        assert all(metric not in (r.get("scores") or {}) for r in rows if r["task"] == task)
    text = "\n".join(lines(rows.not_imported))
    assert "metric 'brier_score' of task tiny_mc_small" in text
    assert "group tiny_group_sized's 'acc'" in text and "weight_by_size: true" in text


def test_lm_eval_fields_left_out_are_listed_once_per_reason() -> None:
    rows = lm_eval.read_rows(LM / "run-a")
    fields = {e["name"]: e for e in rows.not_imported if e["kind"] == "field"}
    assert {"doc", "filtered_resps", "doc_hash", "prompt_hash", "target_hash"} <= set(fields)
    assert all(e["reason"] == "not-in-model" for e in fields.values())
    text = lines(rows.not_imported)
    assert len([t for t in text if "fields doc" in t]) == 1  # two files, one line
    assert "and 1 more file(s)" in "\n".join(text)


def test_an_unknown_field_is_listed_as_unknown(tmp_path: Path) -> None:
    (source,) = (LM / "run-a").glob("*/samples_tiny_mc_*.jsonl")
    copy = tmp_path / source.name
    records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    copy.write_text("".join(json.dumps({**r, "new_field": 1}) + "\n" for r in records), "utf-8")
    rows = lm_eval.read_rows(copy)
    entry = _entry(rows.not_imported, kind="field", name="new_field")
    assert entry["reason"] == "unknown" and entry["records"] == len(records)


def test_import_json_and_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _import_json(tmp_path, LM / "run-e")
    err = capsys.readouterr().err
    assert "note:" in err and "brier_score" in err and "tiny_group_sized" in err
    assert report["kind"] == "import" and report["runs"] == ["dummy-e"]
    assert report["observations"] == sum(
        _results("run-e")["n-samples"][t]["effective"]
        for t in ("tiny_mc", "tiny_mc_small", "tiny_gen_bleu")
    )
    names = {(e["kind"], e["name"]) for e in report["not_imported"]}
    assert {("metric", "bleu"), ("metric", "brier_score"), ("group", "acc")} <= names


def test_import_json_to_stdout_holds_only_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(LM / "run-f"), "--db", str(tmp_path / "d.duckdb"), "--json",
                 "-"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["not_imported"]


def test_deepeval_run_totals_and_fields() -> None:
    path = IMPORTERS / "deepeval" / "test_run_model-a.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = deepeval.read_rows(path)
    total = _entry(rows.not_imported, kind="total", name="evaluationCost")
    assert total["value"] == data["evaluationCost"]
    names = {e["name"] for e in rows.not_imported if e["kind"] == "field"}
    assert "testCases[].runDuration" in names


def test_promptfoo_totals_and_fields() -> None:
    path = IMPORTERS / "promptfoo" / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = promptfoo.read_rows(path)
    stats = data["results"]["stats"]
    entry = _entry(rows.not_imported, kind="total", name="stats.successes")
    assert entry["value"] == stats["successes"]
    # the providers' totals are what calipers' rows sum to
    tokens = _entry(rows.not_imported, kind="total", name="stats.tokenUsage.prompt")
    assert tokens["value"] == sum(r.get("tokens_in", 0) for r in rows)
    fields = {e["name"]: e["reason"] for e in rows.not_imported if e["kind"] == "field"}
    assert fields["gradingResult.reason"] == "not-in-model"


@pytest.mark.parametrize(("tool", "path"), [
    ("lm-eval", LM / "run-e"), ("promptfoo", IMPORTERS / "promptfoo" / "results.json"),
    ("deepeval", IMPORTERS / "deepeval" / "test_run_model-a.json"),
])  # fmt: skip
def test_every_entry_has_a_known_reason(tool: str, path: Path) -> None:
    from calipers.data.adapters.unimported import REASONS

    rows = ADAPTERS[tool][1](path)
    assert rows.not_imported  # type: ignore[attr-defined]
    for entry in rows.not_imported:  # type: ignore[attr-defined]
        assert entry["reason"] in REASONS and entry["detail"] and entry["tool"] == tool
