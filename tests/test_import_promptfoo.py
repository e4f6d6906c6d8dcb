"""The promptfoo importer against what promptfoo itself wrote: the fixtures are real
`promptfoo eval -o results.json` output (tests/fixtures/importers/promptfoo/make_fixtures.sh), and
every check below compares with promptfoo's own stats and per-column metrics, or recomputes a
score from the config's weights and the raw assertion results, not with our code."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from calipers.cli.main import main
from calipers.data.adapters import ADAPTERS, promptfoo
from calipers.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "importers" / "promptfoo"
MAIN = FIXTURES / "results.json"
REPEAT = FIXTURES / "results-repeat.json"
WEIGHTS = FIXTURES / "results-weights.json"  # promptfoo 0.123.1: named metrics, uneven weights
WEIGHTS_JSONL = FIXTURES / "results-weights.jsonl"  # `-o results-weights.jsonl`, the same eval
GOOD_JSONL = Path(__file__).parent / "fixtures" / "good" / "small.jsonl"
ERROR = 2  # promptfoo's ResultFailureReason.ERROR


def raw(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def config() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((FIXTURES / "promptfooconfig.yaml").read_text())
    return data


def by_run(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        runs.setdefault(row["run"], []).append(row)
    return runs


def column_runs(path: Path) -> dict[str, dict[str, Any]]:
    """promptfoo's columns (prompt × provider) under the run names docs/importers.md documents."""
    prompts = raw(path)["results"]["prompts"]
    several = len({p["label"] for p in prompts}) > 1
    return {(f"{p['provider']} / {p['label']}" if several else p["provider"]): p for p in prompts}


@pytest.mark.parametrize("path", [MAIN, REPEAT])
def test_outcomes_equal_promptfoos_stats_and_column_metrics(path: Path) -> None:
    rows = promptfoo.read_rows(path)
    stats = raw(path)["results"]["stats"]
    assert len(rows) == stats["successes"] + stats["failures"] + stats["errors"]
    assert sum(r.get("correct") is True for r in rows) == stats["successes"]
    assert sum(r.get("correct") is False for r in rows) == stats["failures"]
    assert sum("error" in r for r in rows) == stats["errors"]
    runs = by_run(rows)
    columns = column_runs(path)
    assert set(runs) == set(columns)
    for name, column in columns.items():
        metrics, got = column["metrics"], runs[name]
        assert sum(r.get("correct") is True for r in got) == metrics["testPassCount"], name
        assert sum(r.get("correct") is False for r in got) == metrics["testFailCount"], name
        assert sum("error" in r for r in got) == metrics["testErrorCount"], name
        # promptfoo's column score is the sum of its results' scores (an error scores 0).
        total = sum(r["scores"]["score"] for r in got if "scores" in r)
        assert total == pytest.approx(metrics["score"], abs=1e-12), name
        for metric, value in metrics["namedScores"].items():
            values = [r["scores"][metric] for r in got if metric in r.get("scores", {})]
            assert len(values) == metrics["namedScoresCount"][metric]
            # promptfoo sums score × weight; brevity's weight is 2 in every test.
            mean = value / metrics["namedScoreWeights"][metric]
            assert statistics.fmean(values) == pytest.approx(mean, abs=1e-12), (name, metric)
        assert sum(r.get("cost_usd", 0) for r in got) == pytest.approx(metrics["cost"], abs=1e-15)
        latency = sum(r["latency_s"] for r in got) * 1000
        assert latency == pytest.approx(metrics["totalLatencyMs"], abs=1e-6), name
        assert sum(r.get("tokens_in", 0) for r in got) == metrics["tokenUsage"]["prompt"]
        assert sum(r.get("tokens_out", 0) for r in got) == metrics["tokenUsage"]["completion"]
    assert sum(r.get("tokens_in", 0) for r in rows) == stats["tokenUsage"]["prompt"]
    assert sum(r.get("tokens_out", 0) for r in rows) == stats["tokenUsage"]["completion"]


def top_level(assertions: list[dict[str, Any]], components: list[dict[str, Any]]) -> list[Any]:
    """(config assertion, its promptfoo result): the results list a set's members after it."""
    pairs, i = [], 0
    for spec in assertions:
        pairs.append((spec, components[i]))
        i += 1 + len(spec.get("assert", []))
    assert i == len(components)
    return pairs


def test_the_fixtures_come_from_the_config_next_to_them() -> None:
    cfg = config()
    for path in (MAIN, REPEAT):
        written = raw(path)["config"]
        assert written["tests"] == cfg["tests"] and written["prompts"] == cfg["prompts"]
        assert written["defaultTest"]["assert"] == cfg["defaultTest"]["assert"]
        assert raw(path)["metadata"]["promptfooVersion"] == "0.121.20"


def test_scores_are_the_weighted_means_of_the_configs_assertions() -> None:
    cfg = config()
    tests = {t["description"]: t for t in cfg["tests"]}
    rows = {(r["run"], r["input"]): r for r in promptfoo.read_rows(MAIN)}
    fractional = 0
    for result in raw(MAIN)["results"]["results"]:
        run = f"{result['provider']['label']} / {result['prompt']['label']}"
        row = rows[(run, result["prompt"]["raw"])]
        specs = cfg["defaultTest"]["assert"] + tests[result["testCase"]["description"]]["assert"]
        if result["failureReason"] == ERROR:
            assert "scores" not in row and "correct" not in row and row["error"]
            assert all(not a["passed"] for a in row["assertions"])
            continue
        pairs = top_level(specs, result["gradingResult"]["componentResults"])
        weights = [spec.get("weight", 1) for spec, _ in pairs]
        mean = sum(w * c["score"] for w, (_, c) in zip(weights, pairs, strict=True)) / sum(weights)
        assert row["scores"]["score"] == pytest.approx(mean, abs=1e-12)
        fractional += 0 < mean < 1
        # One imported assertion per weighted config assertion, with its weight and outcome.
        kept = [(spec, c) for spec, c in pairs if spec.get("weight", 1) > 0]
        assert [a["name"] for a in row["assertions"]] == [s["type"] for s, _ in kept]
        assert [a.get("weight", 1) for a in row["assertions"]] == [
            s.get("weight", 1) for s, _ in kept
        ]
        assert [a["passed"] for a in row["assertions"]] == [c["pass"] for _, c in kept]
    assert fractional >= 10


def test_threshold_and_weight_zero_decide_success_not_the_assertions() -> None:
    rows = promptfoo.read_rows(MAIN)
    # sky has threshold 0.5: lookup's "Blue" fails `contains blue` yet the test passes.
    sky = [r for r in rows if r["run"].startswith("lookup") and "sky" in r["input"]]
    assert sky and all(r["correct"] and not all(a["passed"] for a in r["assertions"]) for r in sky)
    # arithmetic's not-icontains "answer" has weight 0 (promptfoo still grades it): not imported.
    arithmetic = [r for r in rows if "2 + 2" in r["input"]]
    assert all("not-icontains" not in {a["name"] for a in r["assertions"]} for r in arithmetic)


def test_tests_pair_across_columns_and_repeats_are_epochs() -> None:
    main_rows = promptfoo.read_rows(MAIN)
    ids = {r["sample_id"] for r in main_rows}
    assert len(ids) == len(config()["tests"]) == 6
    for got in by_run(main_rows).values():
        assert sorted(r["sample_id"] for r in got) == sorted(ids)
        assert {r["epoch"] for r in got} == {0}
    assert {r["task"] for r in main_rows} == {config()["description"]}
    repeat = promptfoo.read_rows(REPEAT)
    assert raw(REPEAT)["runtimeOptions"]["repeat"] == 2
    assert {r["run"] for r in repeat} == {"lookup"}  # one prompt: the provider alone
    assert Counter((r["sample_id"], r["epoch"]) for r in repeat) == {
        (i, e): 1 for i in ids for e in (0, 1)
    }


def test_fields_of_a_result_as_promptfoo_wrote_them() -> None:
    rows = {(r["run"], r["input"]): r for r in promptfoo.read_rows(MAIN)}
    for result in raw(MAIN)["results"]["results"]:
        run = f"{result['provider']['label']} / {result['prompt']['label']}"
        row = rows[(run, result["prompt"]["raw"])]
        response = result["response"]
        assert row["latency_s"] == result["latencyMs"] / 1000
        if result["failureReason"] == ERROR:
            # promptfoo writes cost 0 and zero token counts for a provider that reported none.
            assert result["cost"] == 0 and "cost" not in response
            for field in ("output", "cost_usd", "tokens_in", "tokens_out", "correct"):
                assert field not in row, field
            assert row["error"] == response["error"]
            continue
        assert row["output"] == response["output"]
        assert row["cost_usd"] == response["cost"]
        assert row["tokens_in"] == response["tokenUsage"]["prompt"]
        assert row["correct"] is result["success"]
        assert "error" not in row  # promptfoo's `error` of a failed test is the failure reason
    echo = [r for r in rows.values() if r["run"].startswith("echo")]
    assert all(r["output"] == r["input"] for r in echo)
    assert {r["tokens_in"] for r in echo} == {0}  # what the echo provider reports


def test_assertion_types_map_to_calipers_types() -> None:
    types = {(a["name"], a["type"]) for r in promptfoo.read_rows(MAIN) for a in r["assertions"]}
    assert ("icontains", "contains") in types and ("not-contains", "not_contains") in types
    assert ("equals", "equals") in types and ("contains-any", "contains_any") in types
    assert ("javascript", "custom") in types and ("assert-set", "custom") in types
    assert ("not-regex", "custom") in types and ("starts-with", "starts_with") in types
    latency = [
        a for r in promptfoo.read_rows(MAIN) for a in r["assertions"] if a["name"] == "latency"
    ]
    assert latency and {a["value"] for a in latency} == {5.0}  # 5000 ms as seconds


def test_rows_pass_calipers_validation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = promptfoo.read_rows(MAIN)
    for row in promptfoo.read_rows(REPEAT):
        rows.append({**row, "run": "lookup (repeat)"})
    path = tmp_path / "promptfoo.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["import", str(path), "--db", str(tmp_path / "db.duckdb")]) == 0
    assert "warning" not in capsys.readouterr().err.lower()


def test_detect() -> None:
    assert promptfoo.detect(MAIN) and promptfoo.detect(REPEAT)
    for path in (GOOD_JSONL, FIXTURES / "promptfooconfig.yaml", FIXTURES, FIXTURES / "nowhere"):
        assert not promptfoo.detect(path), path


def copy_with(tmp_path: Path, change: Any) -> Path:
    data = raw(MAIN)
    change(data)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_a_truncated_file_names_the_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    data = MAIN.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as err:
        promptfoo.read_rows(path)
    assert str(path) in err.value.message and "not JSON (line " in err.value.message
    assert "column" in err.value.message and err.value.hint and "cut short" in err.value.hint


def test_other_json_is_refused(tmp_path: Path) -> None:
    for text in ('{"results": [1, 2]}', "[]", json.dumps(config())):
        path = tmp_path / "other.json"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match="not a promptfoo output") as err:
            promptfoo.read_rows(path)
        assert str(path) in err.value.message
    # --format promptfoo on calipers' own JSON Lines: the line and what a promptfoo line holds.
    with pytest.raises(InputError, match=r"line 1: not a promptfoo result") as err:
        promptfoo.read_rows(GOOD_JSONL)
    assert err.value.hint and "promptfoo eval -o results.jsonl" in err.value.hint


def test_other_output_versions_are_refused(tmp_path: Path) -> None:
    path = copy_with(tmp_path, lambda d: d["results"].update(version=4))
    with pytest.raises(InputError, match="version 4 is not supported") as err:
        promptfoo.read_rows(path)
    assert str(path) in err.value.message and err.value.hint and "Upgrade" in err.value.hint
    path = copy_with(tmp_path, lambda d: d["results"].update(version=2, table={}))
    with pytest.raises(InputError, match="version 2 is not supported"):
        promptfoo.read_rows(path)


def test_same_provider_names_get_the_column(tmp_path: Path) -> None:
    def rename(data: dict[str, Any]) -> None:
        for result in data["results"]["results"]:
            result["provider"] = {"id": "openai:gpt-4o-mini"}
            result["prompt"]["label"] = "same"

    runs = {r["run"] for r in promptfoo.read_rows(copy_with(tmp_path, rename))}
    assert runs == {f"openai:gpt-4o-mini #{i}" for i in range(4)}


def test_a_missing_value_stays_absent(tmp_path: Path) -> None:
    def strip(data: dict[str, Any]) -> None:
        result = data["results"]["results"][0]
        result["response"].pop("cost")
        result["response"].pop("tokenUsage")
        result["response"]["cached"] = True
        result["score"] = math.nan  # Python's json writes NaN; JSON.stringify would write null

    row = promptfoo.read_rows(copy_with(tmp_path, strip))[0]
    for field in ("cost_usd", "tokens_in", "tokens_out", "latency_s"):
        assert field not in row, field
    assert "score" not in row["scores"] and row["scores"]["brevity"] == 0.5


def test_calipers_import_finds_it_by_its_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As registered in calipers.data.adapters (format auto: detect() picks the file).
    monkeypatch.setitem(ADAPTERS, "promptfoo", (promptfoo.detect, promptfoo.read_rows))
    assert main(["import", str(MAIN), "--db", str(tmp_path / "db.duckdb")]) == 0
    captured = capsys.readouterr()
    assert "Imported 24 observations" in captured.out and "warning" not in captured.err.lower()


def test_tests_that_cannot_be_told_apart_are_refused(tmp_path: Path) -> None:
    def strip(data: dict[str, Any]) -> None:  # PROMPTFOO_STRIP_TEST_VARS, no descriptions
        for result in data["results"]["results"]:
            result["vars"] = {}
            result["testCase"].pop("vars")
            result["testCase"].pop("description")

    with pytest.raises(InputError, match="comes 2 times with the same vars") as err:
        promptfoo.read_rows(copy_with(tmp_path, strip))
    assert err.value.hint and "description" in err.value.hint


# ----------------------------------------------- named metrics and JSON Lines (promptfoo 0.123.1)


def weights_config() -> dict[str, Any]:
    text = (FIXTURES / "promptfooconfig-weights.yaml").read_text(encoding="utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def test_the_weights_fixtures_come_from_one_eval_of_the_config_next_to_them() -> None:
    data = raw(WEIGHTS)
    assert data["metadata"]["promptfooVersion"] == "0.123.1"
    assert data["config"]["tests"] == weights_config()["tests"]
    lines = [json.loads(x) for x in WEIGHTS_JSONL.read_text(encoding="utf-8").splitlines()]
    # -o results.jsonl writes the objects of results.results, one a line, and nothing else.
    assert sorted(lines, key=json.dumps) == sorted(data["results"]["results"], key=json.dumps)


def test_named_metrics_against_promptfoos_column_metrics() -> None:
    """promptfoo's column metric is Σ namedScores·W / Σ W over the column's results, W the test's
    weight of that metric (gradingResult.namedScoreWeights): calipers keeps each test's value and
    leaves out W = 0 (a 0 promptfoo wrote without measuring); the plain mean over tests equals
    promptfoo's number only where every test weighs the metric alike (docs/importers.md)."""
    data = raw(WEIGHTS)
    rows = {(r["run"], r["sample_id"]): r for r in promptfoo.read_rows(WEIGHTS)}
    found = {}
    for column in data["results"]["prompts"]:
        metrics, run = column["metrics"], column["provider"]
        results = [r for r in data["results"]["results"] if r["provider"]["label"] == run]
        for metric, total in metrics["namedScores"].items():
            headline = total / metrics["namedScoreWeights"][metric]  # what promptfoo displays
            pairs = []  # (calipers' value, promptfoo's weight) per test
            for result in results:
                weight = (result["gradingResult"] or {}).get("namedScoreWeights", {}).get(metric)
                row = rows[(run, promptfoo._sample_id(result))]
                if weight is None:  # an error, or a test without the metric
                    assert metric not in row.get("scores", {})
                elif weight == 0:  # promptfoo writes 0 and does not count it
                    assert result["namedScores"][metric] == 0
                    assert metric not in row.get("scores", {})
                else:
                    assert row["scores"][metric] == result["namedScores"][metric]
                    assert row["score_weights"][metric] == weight
                    pairs.append((row["scores"][metric], weight))
            weighted = sum(v * w for v, w in pairs) / sum(w for _, w in pairs)
            assert weighted == pytest.approx(headline, abs=1e-12), (run, metric)
            found[(run, metric)] = (statistics.fmean(v for v, _ in pairs), headline)
    # tone: weight 0 in sky, 1 in hamlet, so the one counted test is promptfoo's number.
    assert found[("echo", "tone")] == (1.0, 1.0) and found[("lookup", "tone")] == (0.0, 0.0)
    # accuracy weighs 4, 1, 1, 4, 2, 2 across the tests: a plain mean would be 1/6 and 0.55.
    assert found[("echo", "accuracy")] == pytest.approx((1 / 6, 4 / 14), abs=1e-12)
    assert found[("lookup", "accuracy")] == pytest.approx((0.55, 5 / 12), abs=1e-12)


@pytest.mark.parametrize("path", [WEIGHTS, WEIGHTS_JSONL])
def test_calipers_means_of_named_metrics_are_promptfoos_column_metrics(path: Path) -> None:
    """`calipers score --scheme metric` weighs each test by its score_weights: every column
    metric promptfoo displays (namedScores / namedScoreWeights, from the JSON's columns; the
    JSON Lines hold the same eval) is calipers' mean, to 1e-12."""
    from click.testing import CliRunner

    from calipers.cli.main import cli

    columns = raw(WEIGHTS)["results"]["prompts"]
    checked = 0
    for metric in ("accuracy", "tone"):
        result = CliRunner().invoke(
            cli, ["score", str(path), "--scheme", "metric", "--metric", metric, "--json", "-"]
        )
        assert result.exit_code == 0, result.output
        runs = json.loads(result.stdout)["runs"]
        for column in columns:
            metrics = column["metrics"]
            headline = metrics["namedScores"][metric] / metrics["namedScoreWeights"][metric]
            got = runs[column["provider"]]["composite"]["mean"]
            assert got == pytest.approx(headline, abs=1e-12), (column["provider"], metric)
            checked += 1
    assert checked == 4


def test_promptfoo_json_lines_are_read_like_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert promptfoo.detect(WEIGHTS_JSONL) and not promptfoo.detect(GOOD_JSONL)
    from_json, from_lines = promptfoo.read_rows(WEIGHTS), promptfoo.read_rows(WEIGHTS_JSONL)
    # The lines carry no config: the task is `promptfoo`, not the config's description.
    assert {r["task"] for r in from_json} == {weights_config()["description"]}
    assert {r["task"] for r in from_lines} == {"promptfoo"}
    same = [{**r, "task": "promptfoo"} for r in from_json]
    assert sorted(from_lines, key=json.dumps) == sorted(same, key=json.dumps)
    stats = raw(WEIGHTS)["results"]["stats"]
    assert sum("error" in r for r in from_lines) == stats["errors"] == 1
    assert sum(r.get("correct") is True for r in from_lines) == stats["successes"]
    # `calipers import results.jsonl`: recognised by its content, not read as calipers' own.
    assert main(["import", str(WEIGHTS_JSONL), "--db", str(tmp_path / "db.duckdb")]) == 0
    assert "Imported 12 observations" in capsys.readouterr().out


def test_bad_promptfoo_json_lines_name_the_line(tmp_path: Path) -> None:
    lines = WEIGHTS_JSONL.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "results.jsonl"
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2], encoding="utf-8")
    with pytest.raises(InputError, match=rf"line {len(lines)}: not JSON") as err:
        promptfoo.read_rows(path)
    assert err.value.hint and "cut short" in err.value.hint and "promptfoo export" in err.value.hint
    path.write_text(lines[0] + '{"testIdx": 0}\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 2: not a promptfoo result"):
        promptfoo.read_rows(path)
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="holds no promptfoo results"):
        promptfoo.read_rows(path)
