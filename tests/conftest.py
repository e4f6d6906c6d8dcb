"""Shared fixtures: build a SampleSet from plain dicts, straight into DuckDB (no file, no store)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any

import duckdb
import pytest

from calipers.blas import use_one_blas_thread
from calipers.data.files import sql_name
from calipers.data.model import FIELDS, duckdb_columns
from calipers.data.sampleset import SampleSet

use_one_blas_thread()  # the command line's digits (calipers/blas.py), in every test worker

MakeSamples = Callable[[Iterable[dict[str, Any]]], SampleSet]


def sample_set(rows: Iterable[dict[str, Any]], origin: str = "<test>") -> SampleSet:
    con = duckdb.connect()
    cols = duckdb_columns()
    columns = ", ".join(f"{sql_name(n)} {t}" for n, t in cols.items())  # `group`: a keyword
    con.execute(f"CREATE TABLE samples ({columns})")
    names = [f.name for f in FIELDS]
    one_row = "(" + ", ".join("?" for _ in names) + ")"
    data = []
    for row in rows:
        full = {"epoch": 0, **row}
        if "decision" in full and full["decision"] is not None:
            full["decision"] = json.dumps(full["decision"])
        data.append([full.get(n) for n in names])
    # Rows 200 to a statement, each value a parameter (DuckDB converts them as `executemany`
    # does): `executemany` took 11 s for 2,000 rows, this 1.7 s.
    for start in range(0, len(data), 200):
        chunk = data[start : start + 200]
        values = ", ".join([one_row] * len(chunk))
        con.execute(f"INSERT INTO samples VALUES {values}", [v for row in chunk for v in row])
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
    kinds = (
        "compare",
        "rank",
        "run",
        "objective-compare",
        "store",
        "plan",
        "pairwise-rank",
        "watch",
        "cost-rank",
        "summary-compare",
    )
    if isinstance(report.get("kind"), str) and report["kind"] in kinds:
        return str(report["kind"])
    if isinstance(report.get("scheme"), str):
        return str(report["scheme"])
    if "kelvin_score" in report:
        return "check"
    return None


def _schema(kind: str) -> Any:
    """A validator of each published schema, made once per test worker: `jsonschema.validate`
    checks the schema itself against its metaschema on every call, which was most of the time this
    fixture took (about 4% of the suite's)."""
    if kind not in _SCHEMAS:
        from importlib import resources

        import jsonschema

        text = resources.files("calipers.render.schemas").joinpath(f"{kind}.schema.json")
        schema = json.loads(text.read_text(encoding="utf-8"))
        validator = jsonschema.validators.validator_for(schema)
        validator.check_schema(schema)
        _SCHEMAS[kind] = validator(schema)
    return _SCHEMAS[kind]


def _first_error(document: Any, kind: str) -> Any:
    """What `jsonschema.validate` would raise (its best match of the errors), or None. A report
    that jsonschema-rs finds valid is not walked again by jsonschema, whose walk of the larger
    schemas was 17% of the time of the modules that write many reports (tests/test_cli_compare.py
    and five more: 99 s against 82 s); tests/test_schema_validators.py shows the two agree."""
    import jsonschema

    if fast_validator(kind).is_valid(document):
        return None
    return jsonschema.exceptions.best_match(_schema(kind).iter_errors(document))


_FAST: dict[str, Any] = {}


def fast_validator(kind: str) -> Any:
    """jsonschema-rs's validator of the schema `_schema(kind)` checks, made once per worker."""
    if kind not in _FAST:
        import jsonschema_rs

        _FAST[kind] = jsonschema_rs.validator_for(_schema(kind).schema)
    return _FAST[kind]


_CHECKED: dict[str, tuple[Any, Any]] = {}


def validate_schema(document: Any, schema: dict[str, Any]) -> None:
    """`jsonschema.validate(document, schema)`, with the schema checked against its metaschema
    once per worker (jsonschema checks it on every call: 3.9% of the time of the modules that
    validate most) and the document asked of jsonschema-rs first, as `_first_error` does."""
    import jsonschema
    import jsonschema_rs

    key = json.dumps(schema, sort_keys=True)
    if key not in _CHECKED:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _CHECKED[key] = (cls(schema), jsonschema_rs.validator_for(schema))
    python, fast = _CHECKED[key]
    if fast.is_valid(document):
        return
    error = jsonschema.exceptions.best_match(python.iter_errors(document))
    if error is not None:
        raise error


@pytest.fixture(autouse=True)
def _reports_match_their_schemas(monkeypatch: pytest.MonkeyPatch) -> Any:
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
        if (exc := _first_error(document, kind)) is not None:
            problems.append(f"{kind} report: {exc.message} at {list(exc.absolute_path)}")
        _VALIDATED.append(kind)
        for key, section in document.get("sections", {}).items() if kind == "store" else ():
            # each section is a score report with its own schema
            if (exc := _first_error(section, section["scheme"])) is not None:
                problems.append(f"store section {key}: {exc.message} at {list(exc.absolute_path)}")
        return text

    monkeypatch.setattr(json_report, "dumps", validated)
    yield
    assert not problems, problems


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Under pytest-xdist (`make test` runs `-n 2`) each worker validates the reports of its own
    # tests: a worker hands its list to the controller, which prints the one summary line.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["validated_reports"] = list(_VALIDATED)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown (and never called) without xdist
def pytest_testnodedown(node: Any, error: Any) -> None:
    _VALIDATED.extend(getattr(node, "workeroutput", {}).get("validated_reports", []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _VALIDATED:
        kinds = {k: _VALIDATED.count(k) for k in sorted(set(_VALIDATED))}
        terminalreporter.write_line(
            f"JSON reports validated against their schemas: {len(_VALIDATED)} " + str(kinds)
        )


# `make test` runs the suite on two workers (pytest-xdist, `-n 2 --dist loadgroup`). These run on
# one worker, in turn: modules whose module-scoped fixture is costly (a demo run, a set of pages
# built once), and the tests that time processes, kill them mid-way or count calls in flight,
# which another such test (or a Ray instance) on the other worker would slow down. Keys are a
# test module, or a module and a test function (all its parameters).
_ONE_WORKER: dict[str, str] = {
    "test_demo_hints.py": "demo_hints",
    "test_html_readable.py": "html_readable",
    "test_html_score_pages.py": "html_score_pages",
    "test_reasonscore_leaderboard.py": "reasonscore_leaderboard",
    "test_scheme_plugin.py": "scheme_plugin",
    "test_faults.py": "timing",
    "test_store_concurrency.py": "timing",
    "test_executor_ray.py": "timing",
    "test_ray_data.py": "timing",
    "test_spark_dialect.py": "spark",  # one Spark session, not one per worker
    "test_store_schema.py::test_two_processes_read_one_store_at_once": "timing",
    "test_judge_cache_faults.py::test_replies_are_cached_as_they_arrive": "timing",
    "test_judge_cache_faults.py::test_judge_timeout_and_retries_are_settable": "timing",
    "test_judging.py::test_judge_calls_run_side_by_side_within_a_run": "timing",
    "test_async_judges.py::test_at_most_j_calls_in_flight_and_j_reached": "timing",
    "test_running_invoke.py::test_timeout_kills_the_process_group_and_can_be_retried": "timing",
    "test_running_invoke.py::test_a_killed_run_resumes_without_repeating_finished_invocations": (
        "timing"
    ),
    "test_check.py::test_killed_run_resumes_to_the_same_report_without_repeating_work": "timing",
}


def one_worker_group(nodeid: str) -> str | None:
    """The group of `_ONE_WORKER` a test belongs to, from its node id, or None."""
    path, _, rest = nodeid.partition("::")
    module, function = path.rsplit("/", 1)[-1], rest.rsplit("::", 1)[-1].split("[", 1)[0]
    return _ONE_WORKER.get(f"{module}::{function}", _ONE_WORKER.get(module))


@pytest.hookimpl(optionalhook=True)  # an xdist hook
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup`, with the groups above as well as `xdist_group` marks. The groups are
    looked up from the node ids here because marks alone group nothing with pytest 9.2: its node
    ids are structured, and xdist 3.8 still rewrites the old `_nodeid` string to add `@group`
    (pytest-xdist issue #1386). `_split_scope` is how xdist's own LoadGroupScheduling groups."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class Grouped(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope: str = super()._split_scope(nodeid)
            return scope if scope != nodeid else (one_worker_group(nodeid) or nodeid)

    return Grouped(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # On the workers the slow tests come first (a stable sort: the rest keeps its order):
        # a minute-long test handed out last would leave one worker running it alone at the end.
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def chromium() -> Any:
    """One headless Chromium for every browser test (tests/browser.py)."""
    from browser import browser

    with browser() as launched:
        yield launched
