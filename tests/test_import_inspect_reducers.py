"""inspect_ai logs with epoch reducers other than the mean (issue 38), made by inspect_ai 0.3.285
itself (tests/fixtures/importers/inspect/make_reducers.py): each reducer's per-sample values and
run means equal the numbers inspect's own `read_eval_log` gave (reducers.json), the plain score
name holds the headline reducer's, and a note names the reducers."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.adapters import inspect_log

FIXTURES = Path(__file__).parent / "fixtures" / "importers" / "inspect"
NUMBERS: dict[str, Any] = json.loads((FIXTURES / "reducers.json").read_text(encoding="utf-8"))
EVAL_SET = sorted((FIXTURES / "eval-set").glob("*.eval"))


def key_of(entry: dict[str, Any]) -> str:
    """calipers' name of a results.scores entry: `scorer`, or `scorer/key` of a dict score."""
    name, scorer = entry["name"], entry["scorer"]
    return name if name == scorer else f"{scorer}/{name}"


def per_sample(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    """calipers' per-sample value of a score: the mean of its epochs (docs/statistics.md)."""
    values: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if key in row.get("scores", {}):
            values[row["sample_id"]].append(row["scores"][key])
    return {sid: statistics.fmean(v) for sid, v in values.items()}


def cases() -> list[tuple[str, str, str]]:
    """(log, calipers' name, reducer) for each headline entry inspect recorded."""
    found = []
    for log, numbers in NUMBERS.items():
        for entry in numbers["scores"]:
            if entry["metrics"]:  # a dict scorer's own entry has none: its keys' entries do
                found.append((log, key_of(entry), entry["reducer"] or "mean"))
    return found


@pytest.mark.parametrize(("log", "key", "reducer"), cases())
def test_each_reducers_run_mean_is_inspects_headline(log: str, key: str, reducer: str) -> None:
    numbers, rows = NUMBERS[log], inspect_log.read_rows(FIXTURES / log)
    headline = numbers["epochs_reducer"][0]
    name = key if reducer == "mean" and headline == "mean" else f"{key}@{reducer}"
    (entry,) = [
        e for e in numbers["scores"] if key_of(e) == key and (e["reducer"] or "mean") == reducer
    ]
    (expected,) = [v for m, v in entry["metrics"].items() if m in ("accuracy", "mean")]
    values = per_sample(rows, name)
    assert statistics.fmean(values.values()) == pytest.approx(expected, abs=1e-12)
    if reducer == headline:  # the plain name is the headline reducer's: inspect's number
        assert statistics.fmean(per_sample(rows, key).values()) == pytest.approx(
            expected, abs=1e-12
        )


@pytest.mark.parametrize("log", list(NUMBERS))
def test_each_samples_reduced_value_is_inspects(log: str) -> None:
    """Every sample's value under NAME@REDUCER (NAME@mean: the mean of its epochs) equals the
    log's reductions as inspect's API reads them, on every scored epoch of the sample."""
    numbers, rows = NUMBERS[log], inspect_log.read_rows(FIXTURES / log)
    headline = numbers["epochs_reducer"][0]
    checked = 0
    for reduction in numbers["reductions"]:
        reducer = reduction["reducer"] or "mean"
        for sid, value in reduction["samples"].items():
            parts = value.items() if isinstance(value, dict) else [(None, value)]
            for part, raw in parts:
                key = reduction["scorer"] + (f"/{part}" if part else "")
                name = key if reducer == "mean" and headline == "mean" else f"{key}@{reducer}"
                expected = inspect_log._to_float(raw)
                got = [r["scores"][name] for r in rows if r["sample_id"] == sid]
                assert got and statistics.fmean(got) == pytest.approx(expected, abs=1e-12)
                if reducer != "mean":  # the same value on each epoch
                    assert set(got) == {expected}
                checked += 1
    assert checked == sum(len(r["samples"]) * (1 if r["scorer"] != "shape" else 2)
                          for r in numbers["reductions"])  # fmt: skip


def test_the_plain_name_is_the_headline_and_each_epoch_is_kept() -> None:
    rows = inspect_log.read_rows(FIXTURES / "reduce-mode.eval")
    by_epoch = {(r["sample_id"], r["epoch"]): r["scores"] for r in rows}
    # sample 5: "26" then "27" in epochs 1, 2; inspect's mode of [I, C] is I (the first seen)
    assert by_epoch[("5", 1)]["match@mean"] == 0.0 and by_epoch[("5", 2)]["match@mean"] == 1.0
    assert by_epoch[("5", 1)]["match"] == by_epoch[("5", 2)]["match"] == 0.0
    assert by_epoch[("5", 1)]["match@mode"] == 0.0
    # a mean headline keeps the plain name as each epoch's value and writes no NAME@mean
    mean_max = inspect_log.read_rows(FIXTURES / "reduce-mean-max.eval")
    assert all("match@mean" not in r["scores"] and "match@max" in r["scores"] for r in mean_max)


@pytest.mark.parametrize("log", list(NUMBERS))
def test_a_note_names_the_reducers(log: str) -> None:
    numbers = NUMBERS[log]
    rows = inspect_log.read_rows(FIXTURES / log)
    reducers = numbers["epochs_reducer"]
    (note,) = [w for w in rows.warnings if "reduced each sample's epochs" in w]
    assert note.startswith(f"{FIXTURES / log}: inspect_ai reduced each sample's epochs with "
                           f"{', '.join(reducers)} (eval.config.epochs_reducer; inspect's "
                           f"headline is the first, {reducers[0]})")  # fmt: skip
    if reducers[0] != "mean":
        assert f"each sample's {reducers[0]}" in note and "NAME@mean" in note
    for reducer in reducers:
        assert reducer == "mean" or f"NAME@{reducer}" in note


def test_a_log_with_the_mean_only_is_as_before() -> None:
    rows = inspect_log.read_rows(FIXTURES / "run-a.eval")
    assert not any("@" in key for r in rows for key in r.get("scores", {}))
    assert rows.warnings == []


def test_the_mean_reduction_is_checked_against_the_epochs(tmp_path: Path) -> None:
    log = tmp_path / "small.json"
    data = json.loads((FIXTURES / "small.json").read_text(encoding="utf-8"))
    data["reductions"][0]["samples"][0]["value"] = 0.25
    log.write_text(json.dumps(data), encoding="utf-8")
    rows = inspect_log.read_rows(log)
    (warning,) = [w for w in rows.warnings if "mean reduction differs" in w]
    assert warning.startswith(f"{log}: inspect's mean reduction differs from the mean of the "
                              "sample's epochs in 1 case (first: ")  # fmt: skip


def test_a_log_without_reductions_keeps_each_epochs_value(tmp_path: Path) -> None:
    """An unfinished run writes no reductions: the plain names hold each epoch's value, said."""
    log = tmp_path / "small.json"
    data = json.loads((FIXTURES / "small.json").read_text(encoding="utf-8"))
    data["eval"]["config"]["epochs_reducer"] = ["mode"]
    data.pop("reductions")
    log.write_text(json.dumps(data), encoding="utf-8")
    rows = inspect_log.read_rows(log)
    plain = inspect_log.read_rows(FIXTURES / "small.json")
    assert [r["scores"] for r in rows] == [r["scores"] for r in plain]
    (warning,) = [w for w in rows.warnings if "holds no mode reduction" in w]
    assert "an unfinished run writes none" in warning


def test_two_eval_set_models_compare_as_inspects_headlines(tmp_path: Path, capsys: Any) -> None:
    """The eval set's directory imported whole (its manifests skipped with a note); the paired
    difference on `match` is that of inspect's headlines (mode), and `match@mean` that of the
    means of the epochs."""
    db = str(tmp_path / "s.duckdb")
    assert main(["import", str(FIXTURES / "eval-set"), "--db", db]) == 0
    err = capsys.readouterr().err
    for manifest in ("logs.json", "eval-set.json"):
        assert f"{FIXTURES / 'eval-set' / manifest}: skipped: inspect_ai's eval-set" in err
    accuracy = {}
    for path in EVAL_SET:
        numbers = NUMBERS[f"eval-set/{path.name}"]
        (entry,) = numbers["scores"]
        accuracy[numbers["model"]] = entry["metrics"]["accuracy"]
    difference = accuracy["mockllm/model-b"] - accuracy["mockllm/model-a"]
    out = tmp_path / "compare.json"
    args = ["compare", "--db", db, "--scheme", "metric", "--control", "mockllm/model-a",
            "--treatment", "mockllm/model-b", "--gate", "none", "--json", str(out),
            "-q"]  # fmt: skip
    assert main([*args, "--metric", "match"]) == 0, capsys.readouterr().err
    (pair,) = json.loads(out.read_text())["pairs"]
    assert pair["composite"]["estimate"] == pytest.approx(difference, abs=1e-12)
    assert difference == pytest.approx(0.5 - 5 / 6)
    assert main([*args, "--metric", "match@mode"]) == 0
    (pair,) = json.loads(out.read_text())["pairs"]
    assert pair["composite"]["estimate"] == pytest.approx(difference, abs=1e-12)


def test_the_estimand_note_says_what_is_averaged(tmp_path: Path) -> None:
    """A sample with an unscored epoch under a mode headline: the note says each sample weighs
    the same through its mode, not its mean."""
    log = tmp_path / "small.json"
    data = json.loads((FIXTURES / "small.json").read_text(encoding="utf-8"))
    data["eval"]["config"]["epochs_reducer"] = ["mode"]
    for reduction in data["reductions"]:
        reduction["reducer"] = "mode"
    data["samples"][0]["scores"] = {}
    log.write_text(json.dumps(data), encoding="utf-8")
    rows = inspect_log.read_rows(log)
    (note,) = [w for w in rows.warnings if "fewer scored epochs" in w]
    assert note == (
        f"{log}: 1 sample has fewer scored epochs than others (an errored or unscored epoch); "
        "each sample still weighs the same in calipers' means — the mode of its scored epochs, "
        "inspect's reduced value — as in inspect's headline, but those samples' values rest on "
        "fewer epochs"
    )
