"""Every page kind renders every state a result can be in (issue 35, item 1): intervals refused
(no bounds, a reason instead), absent or constant; constant data; one run; a layer missing from a
run; a task with nothing scored.

Two halves. Real edge-case data through the command line (`--html`, the path users take): every
scheme's score page, each comparison page and the store report on each generated state. Then the
property: each page kind's JSON report with its intervals refused, emptied or collapsed at random
(hypothesis), rendered again by the page's own function — no exception, and the refusal reason (a
hostile one) shows on the page as escaped text."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markupsafe import escape

from calipers.cli.main import main
from calipers.render.html import report_page
from calipers.report.check_page import check_page
from calipers.report.score_pages import score_page, store_page
from calipers.schemes import get_scheme
from calipers.schemes.rubric.html import rank_page
from page_data import KELVIN_RUN, RUNS, TASKS, evaluation_rows, reasonscore_rows, rubric_rows

REASON = "<script>alert('no interval')</script> & \"too few\" units"
SHOWN = str(escape(REASON))  # how the page must show it
STATES = ("tiny", "constant", "missing-layers", "empty-tasks")


def _edge_rows(state: str, runs: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """Samples in one edge state. tiny: 3 samples of a skewed unbounded metric (its interval is
    refused); constant: every value equal; missing-layers: one run has only assertions, the other
    only a judge; empty-tasks: every sample of one task failed (nothing scored)."""
    for r, run in enumerate(runs):
        for i in range(3 if state == "tiny" else 8):
            task = f"t{i % 2}"
            row: dict[str, Any] = {"run": run, "task": task, "sample_id": f"s{i}"}
            judge = {"judge": "j", "scale_min": 0, "scale_max": 1}
            if state == "constant":
                row.update(
                    assertions=[{"type": "contains", "value": "x", "passed": True}],
                    judgments=[{**judge, "score": 0.5}], scores={"m": 0.5}, correct=True,
                    tier="easy", point="p1", tokens_out=10, decision={"d": 1},
                    perturbation="baseline" if i % 2 == 0 else "reorder",
                    perturbation_of=f"c{i // 2}",
                )  # fmt: skip
            elif state == "tiny":
                row.update(
                    assertions=[{"type": "contains", "value": "x", "passed": i % 2 == 0}],
                    judgments=[{**judge, "score": [0.1, 0.2, 0.9][i]}],
                    scores={"m": [1.0, 7.5, 300.0][i] + r}, correct=i % 2 == 0, tier="easy",
                    point="p1", tokens_out=10 + i, decision={"d": i}, perturbation_of="c0",
                    perturbation="baseline" if i != 1 else "swap",
                )  # fmt: skip
            elif state == "missing-layers":
                if r % 2 == 0:
                    row.update(
                        assertions=[{"type": "contains", "value": "x", "passed": i % 3 == 0}],
                        scores={"m": float(i)},
                    )
                else:
                    row.update(judgments=[{**judge, "score": 0.1 * i}])
            elif task == "t1":  # empty-tasks
                row.update(error="pipeline failed")
            else:
                row.update(
                    assertions=[{"type": "contains", "value": "x", "passed": i % 4 == 0}],
                    judgments=[{**judge, "score": 0.2 * (i % 5)}], scores={"m": 0.1 * i},
                    correct=i % 4 == 0,
                )  # fmt: skip
            yield row


def _write(path: Path, rows: Iterator[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _calipers(*args: str) -> int:
    return main([*args, "-q"])


@pytest.mark.parametrize(
    "n_runs", [pytest.param(1, marks=pytest.mark.extended), 2], ids=["one-run", "two-runs"]
)  # one run: make test-all (two runs show every page one run shows, and the comparisons)
@pytest.mark.parametrize("state", STATES)
def test_every_page_renders_real_edge_data(tmp_path: Path, state: str, n_runs: int) -> None:
    """Each command that writes a page, on data in the edge state: it writes the page (exit 0)
    or refuses the data in words (exit 1 or 2) — never a traceback."""
    data = _write(tmp_path / "samples.jsonl", _edge_rows(state, ("a", "b")[:n_runs]))
    html = tmp_path / "page.html"
    written = 0
    commands = [
        ["score", str(data), "--scheme", scheme, *(["--metric", "m"] if scheme == "metric" else [])]
        for scheme in ("layered", "metric", "objective", "robustness", "reasonscore")
    ]
    if n_runs == 2:
        pair = ["--baseline", "a", "--candidate", "b", "--gate", "none"]
        commands += [
            ["compare", str(data), "--scheme", "layered", *pair, "--by", "task"],
            ["compare", str(data), "--scheme", "metric", "--metric", "m", *pair, "--by", "task"],
            ["compare", str(data), "--scheme", "objective", *pair],
        ]
    db = tmp_path / "store.duckdb"
    assert _calipers("import", str(data), "--db", str(db)) == 0
    commands.append(["report", "--db", str(db)])
    for command in commands:
        html.unlink(missing_ok=True)
        code = _calipers(*command, "--html", str(html))
        assert code in (0, 1, 2), command
        if code == 0:
            assert html.read_text(encoding="utf-8").rstrip().endswith("</html>"), command
            written += 1
    assert written >= 3  # the states are edge cases, not refusals of everything


def test_a_refused_interval_shows_its_reason_on_the_score_and_store_pages(tmp_path: Path) -> None:
    """The audit's example: an interval the data cannot support (3 skewed samples, no bounds)
    made `score --html` and `report --html` raise KeyError 'low'; the page says why instead."""
    data = _write(tmp_path / "samples.jsonl", _edge_rows("tiny", ("a", "b")))
    page, report = tmp_path / "score.html", tmp_path / "score.json"
    assert _calipers("score", str(data), "--scheme", "metric", "--metric", "m", "--html",
                     str(page), "--json", str(report)) == 0  # fmt: skip
    reason = json.loads(report.read_text(encoding="utf-8"))["runs"]["a"]["composite"]["refusal"]
    assert f"no interval: {escape(reason)}" in page.read_text(encoding="utf-8")
    db = tmp_path / "store.duckdb"
    assert _calipers("import", str(data), "--db", str(db)) == 0
    assert _calipers("report", "--db", str(db), "--html", str(page)) == 0
    assert f"no interval: {escape(reason)}" in page.read_text(encoding="utf-8")


# ---- the property: every page kind over its report with intervals in any state --------------

Page = Callable[[Any], str]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Page]]:
    """Page kind → (its JSON report, or the check's output directory; the function that draws
    the page from it)."""
    d = tmp_path_factory.mktemp("pages")
    runs, tasks = RUNS[:3], TASKS[:3]
    evaluations = _write(d / "evaluations.jsonl", evaluation_rows(runs, tasks, samples=3))
    reasonscore = _write(d / "reasonscore.jsonl", reasonscore_rows(runs, tasks, samples=1))
    rubric = _write(d / "rubric.jsonl", rubric_rows(runs, tasks[:2]))
    pair = ["--baseline", runs[0], "--candidate", runs[1], "--gate", "none"]
    commands = {
        "score-layered": ["score", str(evaluations), "--scheme", "layered"],
        "score-metric": ["score", str(evaluations), "--scheme", "metric", "--metric", "accuracy"],
        "score-objective": ["score", str(evaluations), "--scheme", "objective"],
        "score-rubric": ["score", str(rubric), "--scheme", "rubric", "--no-history"],
        "score-robustness": ["score", str(KELVIN_RUN), "--scheme", "robustness"],
        "leaderboard": ["leaderboard", str(reasonscore)],
        "compare-layered": ["compare", str(evaluations), "--scheme", "layered", *pair, "--by",
                            "task", "--n-resamples", "500"],
        "compare-metric": ["compare", str(evaluations), "--scheme", "metric", "--metric",
                           "accuracy", *pair, "--margin", "0.1"],
        "compare-objective": ["compare", str(evaluations), "--scheme", "objective", *pair],
        "rank": ["rank", str(rubric), "--no-history"],
        "plan": ["plan", str(evaluations), "--effect", "0.1", "--baseline", runs[0],
                 "--metric", "accuracy"],
    }  # fmt: skip
    db = d / "store.duckdb"
    for data in (evaluations, reasonscore, rubric):
        assert _calipers("import", str(data), "--db", str(db)) == 0
    commands["report"] = ["report", "--db", str(db)]
    out: dict[str, tuple[Any, Page]] = {}
    for kind, command in commands.items():
        path = d / f"{kind}.json"
        assert _calipers(*command, "--json", str(path)) in (0, 3), kind
        report = json.loads(path.read_text(encoding="utf-8"))
        if kind.startswith(("score", "leaderboard")):
            out[kind] = (report, score_page)
        elif kind.startswith("compare"):
            out[kind] = (report, get_scheme(report["scheme"]).compare_page)
        elif kind == "rank":
            out[kind] = (report, rank_page)
        elif kind == "report":
            out[kind] = (report, store_page)
        else:
            out[kind] = (report, lambda r: report_page(r, title="calipers plan"))
    project = d / "check-project"
    assert _calipers("init", str(project)) == 0
    assert _calipers("check", "--config", str(project / "kelvin.yaml"), "--no-store") == 0
    out["check"] = (project / "kelvin", _check_page)
    return out


def _check_page(out: Path) -> str:
    return check_page(out)


def _intervals(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every interval in a report: a mapping with `low` and `high`."""
    if isinstance(node, dict):
        if "low" in node and "high" in node:
            yield path
        for key, value in node.items():
            yield from _intervals(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _intervals(value, (*path, index))


# What an interval can be: refused (no bounds at all, or bounds None, with a reason), absent
# (None where the report allows it), collapsed (constant data: low = high = the estimate).
STATES_OF_AN_INTERVAL = ("refused", "refused-none", "absent", "collapsed", "as-is")


def _set_state(report: Any, path: tuple[Any, ...], state: str) -> None:
    parent = report
    for key in path[:-1]:
        parent = parent[key]
    node = parent[path[-1]] if path else report
    if state == "refused":
        for key in ("low", "high", "method", "interval"):
            node.pop(key, None)
        node["refusal"] = REASON
    elif state == "refused-none":
        node.update(low=None, high=None, refusal=REASON)
        if "interval" in node:
            node["interval"] = None
    elif state == "absent" and path and path[-1] in ("invariance", "sensitivity", "interval",
                                                    "net_gain_interval"):  # fmt: skip
        parent[path[-1]] = None
    elif state == "collapsed":
        value = node.get("estimate", node.get("mean", node.get("low")))
        node.update(low=value, high=value)


def _with_states(kind: str, source: Any, states: list[str], tmp: Path) -> tuple[str, int]:
    """The page of `source` with its intervals put in `states` (cycled over them); how many were
    refused."""
    if kind == "check":
        out = tmp / "kelvin"
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(source, out)
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    else:
        report = copy.deepcopy(source[0])
    paths = list(_intervals(report))
    refused = 0
    for i, path in enumerate(reversed(paths)):  # deepest first: a parent set to None is last
        state = states[i % len(states)]
        refused += state.startswith("refused")
        _set_state(report, path, state)
    if kind == "check":
        (out / "report.json").write_text(json.dumps(report), encoding="utf-8")
        return check_page(out), refused
    return source[1](report), refused


KINDS = (
    "score-layered", "score-metric", "score-objective", "score-rubric", "score-robustness",
    "leaderboard", "compare-layered", "compare-metric", "compare-objective", "rank", "plan",
    "report", "check",
)  # fmt: skip
# The pages that show an interval (the others show none, so a refusal has nowhere to appear).
SHOW_INTERVALS = {
    "score-layered", "score-metric", "score-rubric", "score-robustness", "compare-layered",
    "compare-metric", "report", "check",
}  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_every_interval_refused_shows_the_reason_escaped(
    reports: dict[str, tuple[Any, Page]], kind: str, tmp_path: Path
) -> None:
    source = reports[kind][0] if kind == "check" else reports[kind]
    html, refused = _with_states(kind, source, ["refused"], tmp_path)
    assert html.rstrip().endswith("</html>")
    assert REASON not in html and "<script>" not in html  # never as markup
    if kind in SHOW_INTERVALS:
        assert refused and SHOWN in html, kind


# make test draws the states on the pages that show an interval; the others (each refusal of
# theirs is checked above) in `make test-all`
@pytest.mark.parametrize(
    "kind",
    [k if k in SHOW_INTERVALS else pytest.param(k, marks=pytest.mark.extended) for k in KINDS],
)
@settings(
    max_examples=6, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)  # fmt: skip
@given(states=st.lists(st.sampled_from(STATES_OF_AN_INTERVAL), min_size=1, max_size=6))
def test_every_page_renders_intervals_in_any_state(
    reports: dict[str, tuple[Any, Page]], kind: str, tmp_path: Path, states: list[str]
) -> None:
    source = reports[kind][0] if kind == "check" else reports[kind]
    html, _ = _with_states(kind, source, states, tmp_path)
    assert html.rstrip().endswith("</html>")
    assert REASON not in html and "<script>" not in html
