"""Nothing dropped silently, for the importers beyond lm-eval, promptfoo, deepeval and oaieval:
each lists, at import and in `calipers import --json`, what of the tool's own files it did not
import and why. Every expectation is read from the fixture files the tools wrote (json, zipfile,
pyarrow, YAML), never written down here."""

from __future__ import annotations

import json
import math
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from calipers.cli.main import main
from calipers.data import yamltext
from calipers.data.adapters import (
    helm,
    inspect_log,
    kelvin,
    lighteval,
    nemo_evaluator,
    phoenix,
    phoenix_csv,
)
from calipers.data.adapters.unimported import REASONS, lines
from conftest import validate_schema
from test_import_inspect import member

FIX = Path(__file__).parent / "fixtures"
IMPORTERS = FIX / "importers"
INSPECT = IMPORTERS / "inspect"
LIGHTEVAL = IMPORTERS / "lighteval"
HELM = IMPORTERS / "helm" / "benchmark_output" / "runs" / "calipers"
NEMO = IMPORTERS / "nemo_evaluator"
PHOENIX = IMPORTERS / "phoenix"
KELVIN = FIX / "kelvin" / "experiments" / "pillar2_decomposition_demo"


def _import(tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Any, str]:
    """`calipers import PATH --json`: the report (schema-checked) and the terminal notes."""
    capsys.readouterr()
    out = tmp_path / "import.json"
    code = main(["import", str(path), "--db", str(tmp_path / "db.duckdb"), "--json", str(out)])
    assert code == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    schema = json.loads(
        resources.files("calipers.render.schemas").joinpath("import.schema.json").read_text()
    )
    validate_schema(report, schema)
    for entry in report["not_imported"]:
        assert entry["reason"] in REASONS and entry["detail"]
    return report["not_imported"], " ".join(capsys.readouterr().err.split())


def _one(entries: list[dict[str, Any]], **want: Any) -> dict[str, Any]:
    found = [e for e in entries if all(e.get(k) == v for k, v in want.items())]
    assert len(found) == 1, (want, [e["name"] for e in entries])
    return found[0]


def _eval_member(path: Path, name: str) -> Any:
    """An entry of a .eval, read independently of the importer (test_import_inspect.member)."""
    return member(path, name)


@pytest.mark.parametrize("name", ["run-a.eval", "reduce-mode.eval", "reduce-mean-max.eval",
                                  "reduce-pass-at.eval"])  # fmt: skip
def test_inspect_metrics_totals_and_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = INSPECT / name
    header = _eval_member(path, "header.json")
    entries, err = _import(tmp_path, path, capsys)
    headline = (header["eval"]["config"].get("epochs_reducer") or ["mean"])[0]
    for scorer in header["results"]["scores"]:
        base = scorer["name"] if scorer["scorer"] == scorer["name"] else (
            f"{scorer['scorer']}/{scorer['name']}")  # fmt: skip
        reducer = scorer.get("reducer") or "mean"
        score = base if reducer == headline else f"{base}@{reducer}"
        for metric, found in scorer["metrics"].items():
            listed = [e for e in entries if e["name"] == f"{score} {metric}"]
            if metric in ("accuracy", "mean"):
                assert not listed  # calipers' mean of `score` reproduces it: imported
                continue
            (entry,) = listed
            assert entry["reason"] == "aggregate-only" and entry["value"] == found["value"]
            assert f"{score} {metric}" in err
    usage = header["stats"]["model_usage"]
    for model, counts in usage.items():
        entry = _one(entries, name=f"stats.model_usage[{model}].input_tokens")
        assert entry["value"] == counts["input_tokens"] and entry["kind"] == "total"
    total = _one(entries, name="results.total_samples")
    assert total["value"] == header["results"]["total_samples"]
    fields = {e["name"]: e for e in entries if e["kind"] == "field"}
    with zipfile.ZipFile(path) as archive:
        first = next(n for n in archive.namelist() if n.startswith("samples/"))
    sample = _eval_member(path, first)
    for key in ("events", "messages", "uuid"):
        assert sample[key] and fields[f"samples[].{key}"]["reason"] == "not-in-model"
    assert "samples[].events" in err and "not imported: fields" in err


def test_inspect_a_score_inspect_cannot_read_is_listed(tmp_path: Path) -> None:
    """A string value (inspect's value_to_float makes it 0 with a warning) is named, with why."""
    data = json.loads((INSPECT / "small.json").read_text(encoding="utf-8"))
    data["samples"][0]["scores"]["match"]["value"] = "maybe"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    rows = inspect_log.read_rows(path)
    entry = _one(rows.not_imported, name="samples[].scores.match")
    assert entry["reason"] == "not-in-model" and entry["records"] == 1


def test_lighteval_corpus_level_with_lightevals_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entries, err = _import(tmp_path, LIGHTEVAL / "model-a", capsys)
    (results_file,) = (LIGHTEVAL / "model-a" / "results").glob("*/results_*.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))["results"]
    corpus = set()
    for details in (LIGHTEVAL / "model-a" / "details").glob("*/*/details_*.parquet"):
        for record in pq.read_table(details).to_pylist():
            task = record["doc"]["task_name"]
            corpus |= {(task, m) for m, v in record["metric"].items() if isinstance(v, list | dict)}
    assert corpus
    for task, metric in corpus:
        entry = _one(entries, kind="metric", task=task, name=metric)
        assert entry["reason"] == "corpus-level" and entry["value"] == results[task][metric]
        assert f"metric '{metric}' of task {task}" in err and "corpus-level" in err
    for task, entry in results.items():
        for name, value in entry.items():
            if name.endswith("_stderr"):
                assert _one(entries, name=f"{task} {name}")["value"] == value
    # `all` is the unweighted mean over tasks, reproduced from the documents where it can be
    rows = lighteval.read_rows(LIGHTEVAL / "model-a")
    for name, value in results["all"].items():
        if name.endswith("_stderr"):
            continue
        group = _one(entries, kind="group", task="all", name=name)
        assert group["value"] == value
        if (reproduced := group.get("reproduced")) is not None:
            assert reproduced["matches"] and math.isclose(reproduced["value"], value)
            tasks = reproduced["from"]
            means = [sum(v) / len(v) for t in tasks
                     if (v := [r["scores"][name] for r in rows if r["task"] == t])]  # fmt: skip
            assert math.isclose(sum(means) / len(means), value)
    assert "is a list" not in err  # no longer a warning: a corpus-level metric, named as such


def test_helm_aggregate_only_and_corpus_level_stats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entries, err = _import(tmp_path, HELM, capsys)
    for run in sorted(p for p in HELM.iterdir() if (p / "per_instance_stats.json").is_file()):
        stats = json.loads((run / "stats.json").read_text(encoding="utf-8"))
        per = json.loads((run / "per_instance_stats.json").read_text(encoding="utf-8"))
        names = {s["name"]["name"] for e in per for s in e["stats"]}
        file = str(run / "stats.json")
        for stat in stats:
            if stat["name"]["name"] in names or "perturbation" in stat["name"]:
                continue
            entry = _one(entries, file=file, kind="metric", name=stat["name"]["name"])
            assert entry["value"] == stat["mean"]
            assert entry["reason"] == ("corpus-level" if stat["name"]["name"] in
                                       helm.helm_left.CORPUS else "aggregate-only")  # fmt: skip
            assert f"metric '{stat['name']['name']}'" in err
        for stat in stats:
            p = stat["name"].get("perturbation")
            if p:
                shown = f"{p['name']} ({p['computed_on']})"
                assert _one(entries, file=file, name=shown)["reason"] == "aggregate-only"
                assert f"metric '{shown}'" in err


def test_nemo_evaluator_statistics_and_totals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entries, err = _import(tmp_path, NEMO / "run-a", capsys)
    results = yamltext.parse((NEMO / "run-a" / "results.yml").read_text(), "results.yml").data
    for task, body in results["results"]["tasks"].items():
        for metric, entry in body["metrics"].items():
            for name, score in entry["scores"].items():
                for stat in ("stddev", "stderr"):
                    found = _one(entries, name=f"{task} {metric} {name}.{stat}")
                    assert found["value"] == score["stats"][stat]
                # the mean over every sample and repeat is calipers' mean: not listed
                assert not [e for e in entries if e["name"] == f"{metric} {name}"]
    factory = json.loads((NEMO / "run-a" / "eval_factory_metrics.json").read_text())
    for key in ("avg_prompt_tokens", "avg_completion_tokens", "avg_latency_ms"):
        found = _one(entries, name=f"response_stats.{key}")
        assert found["value"] == factory["response_stats"][key] and found["kind"] == "total"
        assert f"response_stats.{key}" in err
    assert _one(entries, name="metadata")["reason"] == "not-in-model"
    rows = nemo_evaluator.read_rows(NEMO / "run-a")
    assert all("tokens_in" not in r for r in rows)  # the totals are all there is of them


@pytest.mark.parametrize(("reader", "name"), [(phoenix, "lookup.json"),
                                              (phoenix_csv, "lookup.csv")])  # fmt: skip
def test_phoenix_label_only_evaluator_and_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reader: Any, name: str
) -> None:
    entries, err = _import(tmp_path, PHOENIX / name, capsys)
    data = json.loads((PHOENIX / "lookup.json").read_text(encoding="utf-8"))
    annotations = [a for r in data for a in r["annotations"]]
    label_only = {a["name"] for a in annotations} - {
        a["name"] for a in annotations if a["score"] is not None
    }
    assert label_only
    for evaluator in label_only:
        assert _one(entries, kind="metric", name=evaluator)["reason"] == "not-in-model"
        assert f"metric '{evaluator}'" in err
    fields = {e["name"] for e in entries if e["kind"] == "field"}
    assert {"trace_id", "annotations[].label", "annotations[].explanation"} - fields <= {
        "annotations[].explanation"  # null throughout the fixture: nothing left out
    }
    assert reader.read_rows(PHOENIX / name).not_imported == [
        {**e, "file": str(PHOENIX / name)} for e in entries
    ]


def test_kelvin_scores_are_listed_with_kelvins_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entries, err = _import(tmp_path, KELVIN, capsys)
    report = json.loads((KELVIN / "report.json").read_text(encoding="utf-8"))
    for name in ("kelvin_score", "invariance", "sensitivity"):
        entry = _one(entries, file=str(KELVIN / "report.json"), name=name)
        assert entry["value"] == report[name] and entry["reason"] == "aggregate-only"
        assert name in err
    for case in report["cases"]["run"]:
        case_report = json.loads((KELVIN / case / "report.json").read_text(encoding="utf-8"))
        for name, value in case_report["scores"].items():
            if isinstance(value, int | float):
                assert _one(entries, file=str(KELVIN / case / "report.json"),
                            name=f"scores.{name}")["value"] == value  # fmt: skip
    # six case reports leave out the same totals: one line, not six
    text = lines(kelvin.read_rows(KELVIN).not_imported)
    assert len([t for t in text if "scores.invariance" in t]) == 1
    assert "and 5 more file(s)" in err


def test_a_directory_of_logs_shares_its_lines(capsys: pytest.CaptureFixture[str]) -> None:
    entries = [e for n in ("small.eval", "small.json")
               for e in inspect_log.read_rows(INSPECT / n).not_imported]  # fmt: skip
    text = lines(entries)
    assert len([t for t in text if "match stderr" in t]) == 1
    assert len([t for t in text if "not imported: fields" in t]) == 1


def test_names_are_escaped_in_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An evaluator name is data: Rich markup in it is printed, not interpreted."""
    data = json.loads((PHOENIX / "lookup.json").read_text(encoding="utf-8"))
    for record in data:
        for annotation in record["annotations"]:
            if annotation["name"] == "polite":
                annotation["name"] = "[bold]polite[/bold]"
    path = tmp_path / "marked.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    _, err = _import(tmp_path, path, capsys)
    assert "metric '[bold]polite[/bold]'" in err


def _means(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], float]:
    """calipers' mean of each score: over samples, of each sample's mean over its epochs."""
    per: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for row in rows:
        for name, value in (row.get("scores") or {}).items():
            per.setdefault((row["run"], row["task"], name), {}).setdefault(
                row["sample_id"], []
            ).append(value)
    return {k: sum(sum(v) / len(v) for v in d.values()) / len(d) for k, d in per.items()}


def test_must_show_rows() -> None:
    """The rows added to docs/importers.md's must-show table: each tool's number, read from its
    own file, equals calipers' mean of the imported score."""
    for run in sorted(p for p in HELM.iterdir() if (p / "per_instance_stats.json").is_file()):
        stats = json.loads((run / "stats.json").read_text(encoding="utf-8"))
        means = _means(helm.read_rows(run))
        for stat in stats:
            name = stat["name"]
            if name["name"] in ("exact_match", "quasi_exact_match") and "perturbation" not in name:
                (mine,) = [v for k, v in means.items() if k[2] == name["name"]]
                assert math.isclose(mine, stat["mean"])
    for run in ("run-a", "run-b"):
        results = yamltext.parse((NEMO / run / "results.yml").read_text(), "results.yml").data
        means = _means(nemo_evaluator.read_rows(NEMO / run))
        for task, body in results["results"]["tasks"].items():
            for score, entry in body["metrics"]["pass@1"]["scores"].items():
                (mine,) = [v for k, v in means.items() if k[1:] == (task, score)]
                assert abs(mine - entry["value"]) <= 5e-5  # nemo-evaluator rounds to 4 places
    summary = json.loads((PHOENIX / "summary.json").read_text(encoding="utf-8"))
    for name in ("lookup.json", "guess.json"):
        means = _means(phoenix.read_rows(PHOENIX / name))
        for entry in summary[name]["annotationSummaries"]:
            key = (Path(name).stem, phoenix.TASK, entry["annotationName"])
            if entry["meanScore"] is None:
                assert key not in means
            else:
                assert math.isclose(means[key], entry["meanScore"])
    for name in ("run-a.eval", "run-b.eval"):
        header = _eval_member(INSPECT / name, "header.json")
        means = _means(inspect_log.read_rows(INSPECT / name))
        for scorer in header["results"]["scores"]:
            for metric, found in scorer["metrics"].items():
                if metric in ("accuracy", "mean") and scorer["name"] == scorer["scorer"]:
                    (mine,) = [v for k, v in means.items() if k[2] == scorer["name"]]
                    assert math.isclose(mine, found["value"])
