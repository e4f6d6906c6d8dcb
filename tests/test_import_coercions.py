"""Another tool's values are read exactly, refused (file, record, field) or noted at import, never
converted silently (issue 35, item 9); and its JSON is read strictly (item 10). Each case goes
through `calipers import`: the exit code, no traceback, the store unwritten on a refusal."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main

FIXTURES = Path(__file__).parent / "fixtures" / "importers"


def _lm_eval(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    (model,) = [p for p in (FIXTURES / "lm_eval" / "run-a").iterdir() if p.is_dir()]
    target = tmp_path / "out" / model.name
    shutil.copytree(model, target)
    (samples,) = target.glob("samples_tiny_mc_2*.jsonl")
    lines = [json.loads(x) for x in samples.read_text().splitlines()]
    change(lines[1])
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return samples


def _promptfoo(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads((FIXTURES / "promptfoo" / "results.json").read_text())
    change(data["results"]["results"][1])
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return path


def _inspect(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads((FIXTURES / "inspect" / "small.json").read_text())
    change(data["samples"][1])
    path = tmp_path / "log.json"
    path.write_text(json.dumps(data))
    return path


def _import(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    db = tmp_path / "s.duckdb"
    code = main(["import", str(path), "--db", str(db)])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    if code != 0:
        assert not db.exists(), "a refused import leaves no store behind"
    return code, err


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.__setitem__(key, value)


REFUSED = {
    "lm-eval doc_id an object": (_lm_eval, _set("doc_id", {"x": 1}), "field 'doc_id'"),
    "lm-eval doc_id a float": (_lm_eval, _set("doc_id", 1.5), "field 'doc_id'"),
    "lm-eval doc_id a boolean": (_lm_eval, _set("doc_id", True), "field 'doc_id'"),
    "lm-eval filter a list": (_lm_eval, _set("filter", ["none"]), "field 'filter'"),
    "promptfoo success 'yes'": (_promptfoo, _set("success", "yes"), "field 'success'"),
    "promptfoo success 1": (_promptfoo, _set("success", 1), "field 'success'"),
    "promptfoo success null": (_promptfoo, _set("success", None), "field 'success'"),
    "inspect epoch 'one'": (_inspect, _set("epoch", "one"), "field 'epoch'"),
    "inspect epoch 1.5": (_inspect, _set("epoch", 1.5), "field 'epoch'"),
    "inspect epoch true": (_inspect, _set("epoch", True), "field 'epoch'"),
    "inspect id an object": (_inspect, _set("id", {"a": 1}), "field 'id'"),
    "inspect id a list": (_inspect, _set("id", [1]), "field 'id'"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_value_that_cannot_be_read_exactly_is_refused(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, change, field = REFUSED[case]
    path = make(tmp_path, change)
    code, err = _import(path, tmp_path, capsys)
    assert code == 1, err
    assert err.startswith("error:") and str(path) in err and field in err, err
    assert "expected" in err and "got" in err, err


def _lm_eval_metric(value: Any) -> Callable[[dict[str, Any]], None]:
    def change(record: dict[str, Any]) -> None:
        record[record["metrics"][0]] = value

    return change


NOTED = {
    "lm-eval metric NaN": (_lm_eval, _lm_eval_metric(float("nan")), "is NaN in 1 record"),
    "lm-eval metric Infinity": (_lm_eval, _lm_eval_metric(float("inf")), "is Infinity"),
    "lm-eval metric an object": (_lm_eval, _lm_eval_metric({"v": 1}), "is an object"),
    "promptfoo namedScore a string": (
        _promptfoo,
        lambda r: r["namedScores"].__setitem__("brevity", "high"),
        "scores.brevity is a string in 1 record",
    ),
    "promptfoo score NaN": (_promptfoo, _set("score", float("nan")), "scores.score is NaN"),
    "inspect score a list": (
        _inspect,
        lambda s: next(iter(s["scores"].values())).__setitem__("value", [1, 2]),
        "is a list",
    ),
}


@pytest.mark.parametrize("case", sorted(NOTED))
def test_a_value_left_out_is_noted_at_import(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, change, words = NOTED[case]
    path = make(tmp_path, change)
    code, err = _import(path, tmp_path, capsys)
    assert code == 0, err
    assert "warning:" in err and words in err and "left out, not converted" in err, err


def test_integer_ids_are_their_digits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The exact reading: lm-eval's doc_id 3 is sample "3" (beyond 64 bits: refused, JSON)."""
    path = _lm_eval(tmp_path, _set("doc_id", 9_007_199_254_740_993))  # not exact as a float
    assert _import(path, tmp_path, capsys)[0] == 0
    assert main(["export", "-", "--db", str(tmp_path / "s.duckdb")]) == 0
    ids = {json.loads(x)["sample_id"] for x in capsys.readouterr().out.splitlines()}
    assert "9007199254740993" in ids
    (tmp_path / "s.duckdb").unlink()
    path = _lm_eval(tmp_path / "b", _set("doc_id", 2**64))
    code, err = _import(path, tmp_path, capsys)
    assert code == 1 and "field 'doc_id': an integer beyond 64 bits" in err, err


STRICT_JSON = {
    "a key twice": '{"version": 2, "version": 2, "status": "success"}',
    "a trailing comma": '{"version": 2, "status": "success",}',
    "an integer beyond 64 bits": '{"version": 2, "status": "success", "seed": ' + "9" * 30 + "}",
    "nested too deep": '{"version": 2, "status": "success", "x": ' + "[" * 600 + "]" * 600 + "}",
}


@pytest.mark.parametrize("case", sorted(STRICT_JSON))
def test_another_tools_json_is_read_strictly(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "log.json"
    path.write_text(STRICT_JSON[case])
    code, err = _import(path, tmp_path, capsys)
    assert code == 1 and str(path) in err, err


def test_inspect_nan_for_unscored_is_its_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """inspect_ai writes NaN for an unscored sample (Python's json): read, left out, noted."""
    path = _inspect(
        tmp_path, lambda s: next(iter(s["scores"].values())).__setitem__("value", float("nan"))
    )
    code, err = _import(path, tmp_path, capsys)
    assert code == 0 and "is NaN in 1 record" in err, err
