"""The schema check every test makes of the reports it writes (tests/conftest.py) asks jsonschema-rs
first and walks a report with jsonschema only where jsonschema-rs finds it invalid. That is sound
only if the two agree: here, on reports of each kind the commands write, and on copies of them with
one value of the wrong type or one key removed, wherever in the report."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from calipers.cli.main import main
from calipers.render import json_report
from conftest import _schema, _schema_kind, fast_validator

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
COMMANDS = [
    ["compare", "layered.jsonl", "--scheme", "layered", "--control", "prompt-v1",
     "--treatment", "prompt-v2", "--gate", "none"],
    ["score", "layered.jsonl", "--scheme", "layered"],
    ["compare", "objective.jsonl", "--scheme", "objective", "--baseline", "prompt-v1",
     "--candidate", "prompt-v3", "--gate", "none"],
    ["score", "rubric.jsonl", "--scheme", "rubric"],
]  # fmt: skip


def _places(document: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in the document: each key of an object and each item of a list."""
    if isinstance(document, dict):
        for key, value in document.items():
            yield (*path, key)
            yield from _places(value, (*path, key))
    elif isinstance(document, list):
        for n, value in enumerate(document):
            yield (*path, n)
            yield from _places(value, (*path, n))


def _wrong(value: Any) -> Any:
    """A value of another JSON type."""
    if isinstance(value, bool) or value is None:
        return "x"
    if isinstance(value, int | float):
        return "1"
    if isinstance(value, str):
        return 12345
    return 0.5


def _changed(document: Any, place: tuple[Any, ...], remove: bool) -> Any:
    changed = copy.deepcopy(document)
    parent = changed
    for step in place[:-1]:
        parent = parent[step]
    if remove and isinstance(parent, dict):
        del parent[place[-1]]
    else:
        parent[place[-1]] = _wrong(parent[place[-1]])
    return changed


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Any]]:
    written: list[str] = []
    original = json_report.dumps

    def kept(report: dict[str, Any]) -> str:
        text = original(report)
        written.append(text)
        return text

    json_report.dumps = kept  # type: ignore[assignment]
    try:
        for n, args in enumerate(COMMANDS):
            out = tmp_path_factory.mktemp("reports") / f"{n}.json"
            data = str(EXAMPLES / args[1])
            db = str(out.with_suffix(".duckdb"))
            assert main([args[0], data, *args[2:], "--json", str(out), "--db", db, "-q"]) == 0
    finally:
        json_report.dumps = original  # type: ignore[assignment]
    documents = [json.loads(text) for text in written]
    found = [(kind, d) for d in documents if (kind := _schema_kind(d)) is not None]
    assert len({kind for kind, _ in found}) >= 3
    return found


def test_the_two_validators_agree_on_reports_and_their_broken_copies(
    reports: list[tuple[str, Any]],
) -> None:
    rng = random.Random(20261128)
    checked = invalid = 0
    for kind, document in reports:
        python = _schema(kind)
        assert python.is_valid(document) and fast_validator(kind).is_valid(document)
        places = list(_places(document))
        for place in rng.sample(places, min(60, len(places))):
            for remove in (False, True):
                changed = _changed(document, place, remove)
                by_python = jsonschema.exceptions.best_match(python.iter_errors(changed)) is None
                assert fast_validator(kind).is_valid(changed) == by_python, (kind, place, remove)
                checked += 1
                invalid += not by_python
    print(f"{checked} copies of {len(reports)} reports, {invalid} invalid")
    assert checked >= 300 and invalid >= checked // 4  # the copies break the schemas often
