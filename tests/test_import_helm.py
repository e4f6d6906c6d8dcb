"""The HELM importer against what helm-run itself wrote: the fixtures are real crfm-helm 0.5.16
run directories (tests/fixtures/importers/helm/make_fixtures.sh, offline models), and the
aggregates below are checked against HELM's own stats.json, not against our code."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.adapters import adapter_for, helm
from calipers.errors import InputError

IMPORTERS = Path(__file__).parent / "fixtures" / "importers"
OUTPUT = IMPORTERS / "helm" / "benchmark_output"
SUITE = OUTPUT / "runs" / "calipers"
MODEL1 = SUITE / "calipers_tiny:model=simple_model1"
MODEL2 = SUITE / "calipers_tiny:model=calipers_model2"
PERTURBED = SUITE / "calipers_tiny:model=simple_model1,data_augmentation=extra_space2"
GOOD = Path(__file__).parent / "fixtures" / "good"


def load(run: Path, name: str) -> Any:
    return json.loads((run / name).read_text(encoding="utf-8"))


def helm_means(run: Path, computed_on: str | None) -> dict[str, tuple[float, int]]:
    """stats.json: metric → (mean, count) over the original instances (computed_on None) or
    the perturbed copies ("perturbed")."""
    out = {}
    for stat in load(run, "stats.json"):
        perturbation = stat["name"].get("perturbation")
        on = perturbation["computed_on"] if perturbation else None
        if on == computed_on and stat["count"]:
            out[stat["name"]["name"]] = (stat["mean"], stat["count"])
    return out


@pytest.mark.parametrize("run", [MODEL1, MODEL2])
def test_every_per_instance_metric_averages_to_helms_stats(run: Path) -> None:
    rows = helm.read_rows(run)
    spec = load(run, "run_spec.json")["adapter_spec"]
    trials, instances = spec["num_train_trials"], spec["max_eval_instances"]
    assert len(rows) == trials * instances == 6
    assert {r["epoch"] for r in rows} == set(range(trials))
    means = helm_means(run, None)
    keys = {k for r in rows for k in r["scores"]}
    assert {"exact_match", "exact_match@2", "quasi_exact_match", "num_prompt_tokens"} <= keys
    for key in keys:
        # HELM averages each trial's instances, then the trials (count = trials); with the same
        # instances in every trial that is the mean over all rows.
        mean, count = means[key]
        assert count == trials
        values = [r["scores"][key] for r in rows]
        assert statistics.fmean(values) == pytest.approx(mean, rel=1e-12, abs=1e-15), key


def test_the_two_models_pair_on_the_same_instances() -> None:
    one = {(r["sample_id"], r["epoch"]): r for r in helm.read_rows(MODEL1)}
    two = {(r["sample_id"], r["epoch"]): r for r in helm.read_rows(MODEL2)}
    assert set(one) == set(two)
    assert {r["run"] for r in one.values()} == {"simple/model1"}
    assert {r["run"] for r in two.values()} == {"calipers/model2"}
    assert {r["task"] for r in (*one.values(), *two.values())} == {"calipers_tiny"}
    assert helm_means(MODEL1, None)["exact_match"][0] < helm_means(MODEL2, None)["exact_match"][0]


def test_fields_come_from_the_scenario_state() -> None:
    rows = {(r["sample_id"], r["epoch"]): r for r in helm.read_rows(MODEL1)}
    for state in load(MODEL1, "scenario_state.json")["request_states"]:
        row = rows[(state["instance"]["id"], state["train_trial_index"])]
        assert row["input"] == state["request"]["prompt"]
        assert row["output"] == state["result"]["completions"][0]["text"]
        (gold,) = [r for r in state["instance"]["references"] if "correct" in r["tags"]]
        assert row["expected"] == gold["output"]["text"]
        # HELM's exact_match scores the first completion against the reference.
        assert row["scores"]["exact_match"] == float(row["output"].strip() == row["expected"])
        assert row["tokens_in"] == row["scores"]["num_prompt_tokens"]
        assert row["tokens_out"] == row["scores"]["num_completion_tokens"]
        assert row["latency_s"] == row["scores"]["inference_runtime"]
        assert "correct" not in row and "error" not in row and "cost_usd" not in row


def test_a_stat_without_a_value_stays_absent() -> None:
    for row in helm.read_rows(MODEL1):
        # count 0: HELM has no training cost for an offline model; it must not become 0.
        assert "training_co2_cost" not in row["scores"]
        assert "training_energy_cost" not in row["scores"]


def test_perturbed_copies_are_their_own_samples() -> None:
    rows = helm.read_rows(PERTURBED)
    assert {r["task"] for r in rows} == {"calipers_tiny:data_augmentation=extra_space2"}
    original = [r for r in rows if r["perturbation"] == "baseline"]
    perturbed = [r for r in rows if r["perturbation"] == "extra_space"]
    assert len(original) == len(perturbed) == 2
    assert {r["perturbation_of"] for r in perturbed} == {r["sample_id"] for r in original}
    for row in perturbed:
        assert row["sample_id"] == f"{row['perturbation_of']}|extra_space:num_spaces=2"
        assert "  " in row["input"]  # the perturbation doubled the input's spaces
    for on, group in ((None, original), ("perturbed", perturbed)):
        means = helm_means(PERTURBED, on)
        for key in ("exact_match", "num_prompt_tokens"):
            values = [r["scores"][key] for r in group]
            assert statistics.fmean(values) == pytest.approx(means[key][0]), (on, key)


def test_every_entry_point_gives_the_same_rows() -> None:
    whole = helm.read_rows(OUTPUT)
    assert len(whole) == 6 + 6 + 4
    assert helm.read_rows(OUTPUT / "runs") == whole == helm.read_rows(SUITE)
    assert helm.read_rows(MODEL1 / helm.STATS) == helm.read_rows(MODEL1)


def test_detected_by_content() -> None:
    for path in (OUTPUT, SUITE, MODEL1, MODEL1 / helm.STATS):
        assert helm.detect(path), path
        assert adapter_for(path, "auto") is helm.read_rows, path
    for name in ("stats.json", "scenario_state.json", "run_spec.json"):
        assert not helm.detect(MODEL1 / name)
    others = [p for p in IMPORTERS.rglob("*") if "helm" not in p.relative_to(IMPORTERS).parts[:1]]
    for path in [*others, GOOD, *GOOD.iterdir()]:
        assert not helm.detect(path), path


def test_a_truncated_stats_file_names_the_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(MODEL1, run)
    text = (run / helm.STATS).read_text(encoding="utf-8")
    (run / helm.STATS).write_text(text[: len(text) // 2], encoding="utf-8")
    assert helm.detect(run)  # still HELM's: the error below, not "unknown format"
    with pytest.raises(InputError) as err:
        helm.read_rows(run)
    assert str(run / helm.STATS) in err.value.message and "not JSON (line" in err.value.message
    assert err.value.hint and "cut short" in err.value.hint


def test_wrong_shapes_are_refused(tmp_path: Path) -> None:
    stats = tmp_path / helm.STATS
    stats.write_text('[{"instance_id": "id1", "stats": 3}]', encoding="utf-8")
    with pytest.raises(InputError, match="not HELM per-instance stats") as err:
        helm.read_rows(stats)
    assert str(stats) in err.value.message
    with pytest.raises(InputError, match=r"no HELM per_instance_stats\.json"):
        helm.read_rows(GOOD)
    stats.write_text("[]", encoding="utf-8")
    with pytest.raises(InputError, match="holds no instances"):
        helm.read_rows(stats)


def test_without_scenario_state_and_run_spec(tmp_path: Path) -> None:
    run = tmp_path / "calipers_tiny:model=simple_model1"
    run.mkdir()
    shutil.copy(MODEL1 / helm.STATS, run)
    rows = helm.read_rows(run)
    assert {r["run"] for r in rows} == {"simple_model1"} and {r["task"] for r in rows} == {
        "calipers_tiny"
    }
    assert all("output" not in r and "input" not in r for r in rows)


def test_import_and_score_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(MODEL1), str(MODEL2), "--db", db]) == 0
    assert "warning" not in capsys.readouterr().err.lower()
    out = tmp_path / "score.json"
    code = main(["score", "--db", db, "--scheme", "metric", "--metric", "exact_match",
                 "--json", str(out), "-q"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    runs = json.loads(out.read_text())["runs"]
    for run, directory in (("simple/model1", MODEL1), ("calipers/model2", MODEL2)):
        assert runs[run]["composite"]["mean"] == pytest.approx(
            helm_means(directory, None)["exact_match"][0]
        )
