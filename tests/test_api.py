"""The Python front door: `import calipers` gives open / score / compare, results that show
themselves, and errors that name parameters."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import calipers
from calipers.errors import InputError

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


def test_every_result_has_a_readable_repr_and_a_notebook_table() -> None:
    results = [
        calipers.score(EXAMPLES / "reasonscore.jsonl", "reasonscore"),
        calipers.score(EXAMPLES / "layered.jsonl", "layered", n_resamples=500),
        calipers.score(EXAMPLES / "objective.jsonl", "objective"),
        calipers.compare(
            EXAMPLES / "layered.jsonl", "layered", baseline="prompt-v1",
            candidates=["prompt-v2"], n_resamples=500,
        ),
        calipers.compare(
            EXAMPLES / "objective.jsonl", "objective", baseline="prompt-v1",
            candidates=["prompt-v2"], n_resamples=500,
        ),
    ]  # fmt: skip
    for result in results:
        text = repr(result)
        assert text.startswith("<") and len(text) < 4000, text[:200]
        assert "<table" in result._repr_html_()


def test_a_dataframe_with_nested_arrays_opens_like_the_file() -> None:
    frame = calipers.load(EXAMPLES / "layered.jsonl").to_pandas()
    with calipers.open(frame) as from_frame, calipers.open(EXAMPLES / "layered.jsonl") as from_file:
        assert from_frame.count() == from_file.count()
        a = calipers.score(from_frame, "layered", n_resamples=500).to_frame("run")
        b = calipers.score(from_file, "layered", n_resamples=500).to_frame("run")
    assert a.equals(b)


def test_a_list_of_dicts_and_a_bad_source() -> None:
    rows = [{"run": "a", "task": "t", "sample_id": str(i), "correct": i % 2 == 0} for i in range(6)]
    with calipers.open(rows) as samples:
        assert samples.runs() == ["a"] and samples.count() == 6
    with pytest.raises(InputError) as info:
        calipers.open(object())
    assert info.value.parameters == ["source"] and len(info.value.message) < 200


def test_errors_name_parameters_not_flags() -> None:
    with pytest.raises(InputError) as info:
        calipers.score(EXAMPLES / "reasonscore.jsonl", "nope")
    assert info.value.parameters == ["scheme"]
    with pytest.raises(InputError) as info:
        calipers.score(EXAMPLES / "layered.jsonl", "metric")
    assert info.value.parameters == ["metric"] and "--" not in info.value.message


def test_runs_filter_and_unknown_run() -> None:
    with calipers.open(EXAMPLES / "layered.jsonl", runs=["prompt-v1"]) as samples:
        assert samples.runs() == ["prompt-v1"]
    with pytest.raises(InputError) as info:
        calipers.open(EXAMPLES / "layered.jsonl", runs=["nope"])
    assert info.value.parameters == ["runs"]


def test_python_m_calipers_and_the_version_from_metadata() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "calipers", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert calipers.__version__ == version("calipers") and calipers.__version__ in out
