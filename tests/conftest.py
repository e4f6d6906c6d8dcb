"""Shared fixtures: build a SampleSet from plain dicts, straight into DuckDB (no file, no store)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import duckdb
import pytest

from calipers.data.files import sql_name
from calipers.data.model import FIELDS, duckdb_columns
from calipers.data.sampleset import SampleSet

MakeSamples = Callable[[Iterable[dict[str, Any]]], SampleSet]


def sample_set(rows: Iterable[dict[str, Any]], origin: str = "<test>") -> SampleSet:
    con = duckdb.connect()
    cols = duckdb_columns()
    columns = ", ".join(f"{sql_name(n)} {t}" for n, t in cols.items())  # `group`: a keyword
    con.execute(f"CREATE TABLE samples ({columns})")
    names = [f.name for f in FIELDS]
    placeholders = ", ".join("?" for _ in names)
    data = []
    for row in rows:
        full = {"epoch": 0, **row}
        if "decision" in full and full["decision"] is not None:
            full["decision"] = json.dumps(full["decision"])
        data.append([full.get(n) for n in names])
    if data:
        con.executemany(f"INSERT INTO samples VALUES ({placeholders})", data)
    return SampleSet(con, "samples", origin)


@pytest.fixture
def make_samples() -> MakeSamples:
    return sample_set


# Every JSON report the suite writes (through calipers.render.json_report, the one writer behind
# every --json) is validated against its published schema; an invalid one fails the test that
# wrote it. The count is printed at the end of the run.
_SCHEMAS: dict[str, Any] = {}
_VALIDATED: list[str] = []


def _schema_kind(report: dict[str, Any]) -> str | None:
    kinds = ("compare", "rank", "run", "objective-compare", "store", "plan", "pairwise-rank")
    if isinstance(report.get("kind"), str) and report["kind"] in kinds:
        return str(report["kind"])
    if isinstance(report.get("scheme"), str):
        return str(report["scheme"])
    if "kelvin_score" in report:
        return "check"
    return None


def _schema(kind: str) -> Any:
    if kind not in _SCHEMAS:
        from importlib import resources

        text = resources.files("calipers.render.schemas").joinpath(f"{kind}.schema.json")
        _SCHEMAS[kind] = json.loads(text.read_text(encoding="utf-8"))
    return _SCHEMAS[kind]


@pytest.fixture(autouse=True)
def _reports_match_their_schemas(monkeypatch: pytest.MonkeyPatch) -> Any:
    import jsonschema

    from calipers.render import json_report

    original = json_report.dumps
    problems: list[str] = []

    def validated(report: dict[str, Any]) -> str:
        text = original(report)
        document = json.loads(text)
        kind = _schema_kind(document)
        if kind is None:
            problems.append(f"a report with no schema: keys {sorted(document)[:8]}")
            return text
        try:
            jsonschema.validate(document, _schema(kind))
        except jsonschema.ValidationError as exc:
            problems.append(f"{kind} report: {exc.message} at {list(exc.absolute_path)}")
        _VALIDATED.append(kind)
        for key, section in document.get("sections", {}).items() if kind == "store" else ():
            try:  # each section is a score report with its own schema
                jsonschema.validate(section, _schema(section["scheme"]))
            except jsonschema.ValidationError as exc:
                problems.append(f"store section {key}: {exc.message} at {list(exc.absolute_path)}")
        return text

    monkeypatch.setattr(json_report, "dumps", validated)
    yield
    assert not problems, problems


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _VALIDATED:
        kinds = {k: _VALIDATED.count(k) for k in sorted(set(_VALIDATED))}
        terminalreporter.write_line(
            f"JSON reports validated against their schemas: {len(_VALIDATED)} " + str(kinds)
        )


@pytest.fixture(scope="session")
def chromium() -> Any:
    """One headless Chromium for every browser test (tests/browser.py)."""
    from browser import browser

    with browser() as launched:
        yield launched
