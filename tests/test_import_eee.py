"""Every Eval Ever (EEE): instance-level JSON Lines made by every_eval_ever's own converter (from
lm-eval runs, tests/fixtures/importers/eee/make_fixtures.sh) import to the numbers of EEE's
aggregate files; `calipers export --format eee` writes files that EEE's JSON Schemas accept (and
its own validator, where installed), and that import back to the same means."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path

import jsonschema
import pytest

from calipers.cli.main import main
from calipers.data.adapters import adapter_for, eee
from calipers.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "importers" / "eee"
AGGREGATES = sorted(p for p in (FIXTURES / "data").rglob("*.json"))
INSTANCES = sorted((FIXTURES / "data").rglob("*_samples.jsonl"))
VALIDATOR = Path(os.environ.get("EEE_VALIDATOR", "/tmp/venv-eee/bin/every_eval_ever"))


def _schema(name: str) -> dict:
    return json.loads((FIXTURES / "schemas" / name).read_text())


def test_eee_instances_give_the_aggregates_numbers() -> None:
    assert len(AGGREGATES) == len(INSTANCES) == 4
    for aggregate_path in AGGREGATES:
        aggregate = json.loads(aggregate_path.read_text())
        instances = aggregate_path.with_name(aggregate_path.stem + "_samples.jsonl")
        assert adapter_for(instances, "auto") is eee.read_rows
        rows = list(eee.read_rows(instances))
        model = aggregate["model_info"]["id"]
        assert {r["run"] for r in rows} == {model}
        for result in aggregate["evaluation_results"]:
            metric = result["evaluation_result_id"]
            mine = [r["scores"][metric] for r in rows if metric in r.get("scores", {})]
            assert len(mine) == result["score_details"]["uncertainty"]["num_samples"]
            assert statistics.fmean(mine) == pytest.approx(result["score_details"]["score"])


def test_eee_import_scores_to_the_aggregates(tmp_path: Path) -> None:
    db, out = str(tmp_path / "s.duckdb"), tmp_path / "score.json"
    assert main(["import", *map(str, INSTANCES), "--db", db, "-q"]) == 0
    assert main(["score", "--db", db, "--scheme", "metric", "--metric", "acc", "--json",
                 str(out), "-q"]) == 0  # fmt: skip
    runs = json.loads(out.read_text())["runs"]
    for aggregate_path in AGGREGATES:
        aggregate = json.loads(aggregate_path.read_text())
        for result in aggregate["evaluation_results"]:
            if result["evaluation_result_id"] == "acc":
                run = runs[aggregate["model_info"]["id"]]
                assert run["composite"]["mean"] == pytest.approx(result["score_details"]["score"])


def test_an_aggregate_alone_is_refused_and_skipped_in_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(AGGREGATES[0]), "--db", db]) == 1
    err = capsys.readouterr().err
    assert "Every Eval Ever's aggregate results" in err and "_samples.jsonl" in err
    assert main(["import", str(AGGREGATES[0].parent), "--db", db]) == 0
    assert "skipped: Every Eval Ever's aggregate" in capsys.readouterr().err


def test_a_bad_instance_record_names_the_line_and_field(tmp_path: Path) -> None:
    lines = INSTANCES[0].read_text().splitlines()
    record = json.loads(lines[1])
    record["evaluation"]["is_correct"] = "yes"
    bad = tmp_path / "bad_samples.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    with pytest.raises(InputError, match=r"bad_samples\.jsonl, line 2, field 'evaluation"):
        list(eee.read_rows(bad))
    again = tmp_path / "again_samples.jsonl"
    again.write_text("\n".join([lines[0], lines[0]]) + "\n")
    with pytest.raises(InputError, match=r"line 2: sample .* has result .* again"):
        list(eee.read_rows(again))


def _export(tmp_path: Path, inputs: list[Path]) -> tuple[Path, str]:
    db = str(tmp_path / "s.duckdb")
    assert main(["import", *map(str, inputs), "--db", db, "-q"]) == 0
    out = tmp_path / "eee"
    assert main(["export", str(out), "--format", "eee", "--db", db]) == 0
    return out, db


def test_export_is_valid_eee_and_reads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    phoenix = Path(__file__).parent / "fixtures" / "importers" / "phoenix" / "guess.csv"
    out, db = _export(tmp_path, [*INSTANCES, phoenix])
    assert "neither scores nor correct (errors) left out" in capsys.readouterr().out
    aggregate_schema = _schema("eval.schema.json")
    instance_schema = _schema("instance_level_eval.schema.json")
    files = sorted(out.rglob("*"))
    written = [p for p in files if p.is_file()]
    assert written and all(str(p.relative_to(out)).startswith("data/") for p in written)
    for path in written:
        if path.suffix == ".json":
            jsonschema.validate(json.loads(path.read_text()), aggregate_schema)
        else:
            for line in path.read_text().splitlines():
                jsonschema.validate(json.loads(line), instance_schema)
    # the names are data: the run is the model_id as it is, the directories are made safe
    assert (out / "data" / "tiny_mc" / "calipers-fixture" / "dummy-a").is_dir()
    back = tmp_path / "back.duckdb"
    samples = [str(p) for p in written if p.name.endswith("_samples.jsonl")]
    assert main(["import", *samples, "--db", str(back), "-q"]) == 0
    capsys.readouterr()
    assert main(["runs", "--db", db, "--json"]) == 0
    before = {r["run"]: r["metrics"] for r in json.loads(capsys.readouterr().out)}
    assert main(["runs", "--db", str(back), "--json"]) == 0
    after = {r["run"]: r["metrics"] for r in json.loads(capsys.readouterr().out)}
    assert set(after) == set(before)
    for run, metrics in before.items():
        for name, m in metrics.items():
            assert after[run][name]["mean"] == pytest.approx(m["mean"]), (run, name)
            assert after[run][name]["n"] == m["n"]


@pytest.mark.skipif(not VALIDATOR.exists(), reason="every_eval_ever (Python >= 3.12) not installed")
def test_export_passes_every_eval_evers_own_validator(tmp_path: Path) -> None:
    out, _ = _export(tmp_path, INSTANCES)
    files = [str(p.relative_to(out)) for p in sorted(out.rglob("*")) if p.is_file()]
    done = subprocess.run([str(VALIDATOR), "validate", "--format", "json", *files], cwd=out,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    report = json.loads(done.stdout)
    assert len(report) == len(files) and all(r["valid"] for r in report), report


def test_export_needs_a_directory_and_known_runs(tmp_path: Path) -> None:
    _, db = _export(tmp_path, INSTANCES[:1])
    assert main(["export", "-", "--format", "eee", "--db", db]) == 1
    assert main(["export", str(tmp_path / "x"), "--format", "eee", "--run", "nope",
                 "--db", db]) == 1  # fmt: skip
