"""Cost beside the objective and ReasonScore leaderboards (docs/cost.md, issue 40 item 4): the
figures are `calipers.verdicts.cost`'s on the same data and the labels `rank --cost`'s, a missing
cost is said (never 0), hostile run names stay inert, and the JSON validates."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

import calipers
from calipers.cli.main import main
from calipers.cli.rank_cost import cost_ranking
from calipers.demo.synthetic import DEMO_SEED, generate_samples
from calipers.render.markdown import score_markdown
from calipers.report.score_pages import score_page
from calipers.schemes import get_scheme
from calipers.schemes.metric import stage_metric
from calipers.schemes.objective.costs import stage_base
from calipers.schemes.objective.scoring import Weights
from calipers.verdicts.cost import cost_runs
from conftest import validate_schema

HOSTILE = "[red]x[/red] <b>y</b> @team | `z`"


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    frame = pd.DataFrame(list(generate_samples(seed=DEMO_SEED)))
    return frame[frame["task"].isin(["dates", "boolean"])].reset_index(drop=True)


def _score(frame: pd.DataFrame, scheme: str, **options: Any) -> Any:
    if scheme == "objective":
        options.setdefault("baseline", "atlas-small")
    return calipers.score(frame, scheme, **options)


def _terminal(scheme: str, result: Any) -> str:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None, force_terminal=False)
    get_scheme(scheme).terminal(result, console)
    return out.getvalue()


def _figures(frame: pd.DataFrame, scheme: str) -> dict[str, Any]:
    """`calipers.verdicts.cost.cost_runs` on the scheme's outcome, called directly."""
    with calipers.open(frame) as samples:
        runs = list(samples.runs())
        staged = (stage_metric(samples, runs, metric="correct") if scheme == "reasonscore"
                  else stage_base(samples, runs, Weights()))  # fmt: skip
        made = cost_runs(staged, samples, runs, cluster="sample_id", confidence_level=0.95,
                         label="correct" if scheme == "reasonscore" else "base score")  # fmt: skip
    return {r: c.to_dict() for r, c in made.runs.items()}


@pytest.mark.parametrize("scheme", ["reasonscore", "objective"])
def test_leaderboard_cost_is_verdicts_cost(rows: pd.DataFrame, scheme: str) -> None:
    report = _score(rows, scheme).to_dict()["cost"]
    direct = _figures(rows, scheme)
    assert report["system_cost"] == "cost_usd" and report["includes_cost"]
    for run, figures in direct.items():
        shown = report["runs"][run]
        for key in ("estimate", "low", "high", "n_units", "cost_per_sample"):
            assert shown[key] == figures[key], (run, key)
        assert shown["tasks"].keys() == figures["tasks"].keys()
        # and by hand: Σ per-sample mean cost / Σ per-sample mean outcome
        mine = rows[rows["run"] == run]
        cost = mine.groupby(["task", "sample_id"])["cost_usd"].mean()
        if scheme == "reasonscore":
            outcome = mine.groupby(["task", "sample_id"])["correct"].mean()
            assert shown["estimate"] == pytest.approx(cost.sum() / outcome.sum(), rel=1e-12)
        assert shown["low"] < shown["estimate"] < shown["high"]
        # tokens and seconds per solved item: the same figures, beside the cost
        for measure in ("tokens", "seconds"):
            for key in ("estimate", "low", "high", "per_sample"):
                assert shown["usage"][measure][key] == figures["usage"][measure][key]
        if scheme == "reasonscore":
            tokens = mine.assign(t=mine["tokens_in"] + mine["tokens_out"]).groupby(
                ["task", "sample_id"])["t"].mean()  # fmt: skip
            assert shown["usage"]["tokens"]["estimate"] == pytest.approx(
                tokens.sum() / outcome.sum(), rel=1e-12
            )
    # the terminal shows the same figures, and the tokens and seconds beside them
    text = _terminal(scheme, _score(rows, scheme))
    some = next(iter(direct.values()))
    assert f"{some['estimate']:.3g} [{some['low']:.3g}, {some['high']:.3g}]" in text
    assert "tokens per " in text and "(tokens_in + tokens_out)" in text
    assert "seconds per " in text and "(latency_s)" in text


def test_reasonscore_reads_its_rows_once_for_the_outcome_and_the_cost(
    rows: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ReasonScore stages its outcome with the cost columns (`stage_metric(extra=...)`), and the
    cost section reads them there: one pass over the rows, the figures those of a second pass
    (test_leaderboard_cost_is_verdicts_cost compares them)."""
    import calipers.schemes.metric as metric_module
    import calipers.verdicts.cost as cost_module

    calls: list[list[str]] = []

    def counted(real: Any) -> Any:
        def stage(samples: Any, runs: list[str], expressions: Any, **kw: Any) -> Any:
            calls.append(sorted(expressions))
            return real(samples, runs, expressions, **kw)

        return stage

    monkeypatch.setattr(metric_module, "stage_rows", counted(metric_module.stage_rows))
    monkeypatch.setattr(cost_module, "stage_rows", counted(cost_module.stage_rows))
    report = _score(rows, "reasonscore").to_dict()["cost"]
    assert len(calls) == 1 and {"cost", "value"} <= set(calls[0])
    assert report["runs"] == {
        run: {**report["runs"][run], **figures}
        for run, figures in _figures(rows, "reasonscore").items()
    }


@pytest.mark.parametrize("scheme", ["reasonscore", "objective"])
def test_labels_are_rank_cost_labels(rows: pd.DataFrame, scheme: str) -> None:
    result = _score(rows, scheme, margin=0.08, seed=7)
    cost = result.to_dict()["cost"]
    assert cost["margin"] == 0.08 and len(cost["groups"]) == 1
    expected = None  # objective ranks base, not correct: checked against its own ranking
    if scheme == "reasonscore":
        with calipers.open(rows) as samples:
            made = cost_ranking(samples, margin=0.08, n_resamples=2000, seed=7).to_dict()
        expected = {r["run"]: r["label"] for r in made["runs"]}
    labels = {r: c["label"] for r, c in cost["runs"].items()}
    ranking = cost["groups"][0]["ranking"]
    assert labels == {r["run"]: r["label"] for r in ranking["runs"]}
    assert ranking["chosen"] in labels and labels[ranking["chosen"]] == "cheapest acceptable"
    if expected is not None:
        assert labels == expected
        assert ranking["critical_value"] == made["critical_value"]
    text = _terminal(scheme, result)
    assert "cheapest acceptable" in text and f"cheapest acceptable: {ranking['chosen']}" in text


@pytest.mark.parametrize("scheme", ["reasonscore", "objective"])
def test_missing_cost_is_said_never_zero(rows: pd.DataFrame, scheme: str) -> None:
    frame = rows.copy()
    lacking = frame.index[frame["run"] == "atlas-large"][:3]
    frame.loc[lacking, "cost_usd"] = np.nan
    result = _score(frame, scheme, margin=0.03)
    run = result.to_dict()["cost"]["runs"]["atlas-large"]
    assert run["estimate"] is None and run["missing_cost"] == 3 and run["label"] is None
    assert "missing cost is not 0" in run["refusal"]
    text = _terminal(scheme, result)
    assert "not given: 3 scored observation(s) lack cost_usd" in text
    assert "no label: cost missing" in text
    # no cost at all: one line says so, and the JSON has no figure
    bare = frame.drop(columns=["cost_usd"])
    report = _score(bare, scheme).to_dict()
    assert report["cost"]["refusal"].startswith("no observation")
    assert all(r["estimate"] is None for r in report["cost"]["runs"].values())
    assert "cost per solved item: not shown — no observation" in _terminal(
        scheme, _score(bare, scheme)
    )


@pytest.mark.parametrize("scheme", ["reasonscore", "objective"])
def test_hostile_run_names_are_inert(rows: pd.DataFrame, scheme: str) -> None:
    frame = rows.copy()
    frame.loc[frame["run"] == "cirrus-mini", "run"] = HOSTILE
    result = _score(frame, scheme, margin=0.03)
    assert HOSTILE in _terminal(scheme, result)  # markup shown as text, not applied
    report = result.to_dict()
    page = score_page(report)
    assert "<b>y</b>" not in page and "&lt;b&gt;y&lt;/b&gt;" in page
    summary = score_markdown(report)
    assert "<b>" not in summary and "@team" not in summary and "\\|" in summary


@pytest.mark.parametrize("scheme", ["reasonscore", "objective"])
def test_json_validates_against_the_schema(
    rows: pd.DataFrame, scheme: str, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    assert main(["schema", "--report", scheme]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(schema)
    frame = rows.copy()
    frame.loc[frame.index[:2], "cost_usd"] = np.nan
    for options in ({}, {"margin": 0.03}):
        report = json.loads(json.dumps(_score(frame, scheme, **options).to_dict()))
        validate_schema(report, schema)
        assert "cost" in report
    validate_schema(
        json.loads(json.dumps(_score(frame.drop(columns=["cost_usd"]), scheme).to_dict())),
        schema,
    )


def test_cli_margin_and_markdown(
    rows: pd.DataFrame, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "samples.jsonl"
    rows.to_json(data, orient="records", lines=True)
    assert main(["leaderboard", str(data), "--margin", "0.03", "--markdown", "-"]) == 0
    out = capsys.readouterr().out
    assert "**Cost** per solved item" in out and "cheapest acceptable" in out
    assert main(["score", str(data), "--scheme", "objective", "--baseline", "atlas-small",
                 "--margin", "0.03", "--json", "-"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["parameters"]["margin"] == 0.03
    assert report["cost"]["outcome"] == "unit of base score"
    # a scheme without cost labels refuses the option, naming it
    assert main(["score", str(data), "--scheme", "metric", "--metric", "correct",
                 "--margin", "0.03"]) == 1  # fmt: skip
