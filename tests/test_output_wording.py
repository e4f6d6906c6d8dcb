"""Wording that must agree with the numbers beside it: the robustness summary's closing sentence
follows the bands it prints (never "healthy" under a "watch" or "concerning" band), and the metric
scheme's value is called by its metric's name, not "composite" (terminal and pages; the JSON key
stays `composite`, as its schema says)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

import calipers
from calipers.cli.main import main
from calipers.schemes.robustness.scoring import CaseResult, RunRobustness, VariantResult
from calipers.schemes.robustness.terminal import band, run_summary

ROOT = Path(__file__).parent.parent
KELVIN = ROOT / "tests" / "fixtures" / "kelvin" / "experiments" / "pillar2_decomposition_demo"
REASON = ROOT / "docs" / "examples" / "reasonscore.jsonl"


def printed(result: RunRobustness, governing_types: list[str] | None = None) -> str:
    out = io.StringIO()
    run_summary(result, Console(file=out, width=200, color_system=None),
                governing_types=governing_types)  # fmt: skip
    return out.getvalue()


def uniform_run(changed_reorders: int, changed_swaps: int, *, cases: int = 6) -> RunRobustness:
    """Every case alike (no per-case variance): 10 reorders of which `changed_reorders` change the
    decision, 10 swaps of the governing rule of which `changed_swaps` do."""

    def variant(kind: str, i: int, changed: bool) -> VariantResult:
        return VariantResult(f"{kind}-{i}", kind, "rule" if kind == "swap" else None, True, None,
                             "b" if changed else "a", 1.0 if changed else 0.0)  # fmt: skip

    return RunRobustness(
        run="pipe",
        cases=[
            CaseResult(
                f"case{c}",
                True,
                None,
                "a",
                variants=[variant("reorder", i, i < changed_reorders) for i in range(10)]
                + [variant("swap", i, i < changed_swaps) for i in range(10)],
            )
            for c in range(cases)
        ],
        intervals={},
        confidence_level=0.95,
    )


@pytest.mark.parametrize("changed_reorders", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("changed_swaps", [10, 9, 7, 6, 5, 4, 3])
def test_the_closing_sentence_follows_the_bands(changed_reorders: int, changed_swaps: int) -> None:
    result = uniform_run(changed_reorders, changed_swaps)
    text = printed(result)
    inv, sens = result.invariance, result.sensitivity
    assert inv is not None and sens is not None
    bands = {"invariance": band(inv, "invariance"), "sensitivity": band(sens, "sensitivity")}
    for label in bands.values():
        assert label in text  # the bands are printed
    last = text.strip().splitlines()[-2]  # the diagnostic, before "Diagnostic signals — …"
    not_good = {name: label for name, label in bands.items() if not label.endswith("— good")}
    if not_good:
        assert "healthy" not in last, text
        for name, label in not_good.items():
            assert f"{name} is {label}" in last, text
    else:
        assert last.strip() == (
            "Both signals look healthy. Spot-check the per-case results for anomalies."
        )


def test_only_invariance_measured_says_so() -> None:
    result = uniform_run(0, 10)
    text = printed(result, governing_types=[])
    assert "Sensitivity not measured" in text
    assert "Both signals" not in text
    assert "Invariance looks healthy (the only signal measured)" in text
    text = printed(uniform_run(4, 10), governing_types=[])
    assert "healthy" not in text and "invariance is uneven — watch (0.60)" in text


def test_kelvins_published_run_partial_sensitivity_is_not_called_healthy() -> None:
    result = calipers.score(KELVIN, "robustness")
    run = next(iter(result.runs.values()))  # type: ignore[attr-defined]
    text = " ".join(printed(run).split())
    # 0.67 [0.24, 0.94] from 6 cases: the band is judged on the interval (test_robustness_bands)
    assert "healthy" not in text
    assert (
        "sensitivity is undetermined — the interval spans barely (concerning) to sharply "
        "reactive (good) (0.67 [0.24, 0.94])" in text
    )


def test_the_metric_value_is_named_after_its_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--scheme", "metric", "--metric", "correct"]
    assert main(["score", str(REASON), *base, "--html", str(tmp_path / "s.html")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"┃\s*correct┃", out) and "composite" not in out
    page = (tmp_path / "s.html").read_text()
    assert "<th>correct</th><th>interval</th></tr>" in page
    assert "composite" not in page and "layers used" not in page
    pages = ["--html", str(tmp_path / "c.html"), "--json", str(tmp_path / "c.json")]
    args = ["compare", str(REASON), *base, "--control", "alpha", "--treatment", "beta",
            "--gate", "none", *pages]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    table = out[out.index("variants") :]
    assert re.search(r"┃\s*correct┃", table) and re.search(r"│correct\s+│", table)
    assert "composite" not in table
    page = (tmp_path / "c.html").read_text()
    assert "<th>correct</th><th>interval</th></tr>" in page
    assert "<tr><td>correct</td>" in page and "layers used" not in page
    # the JSON keeps its keys (its schema is shared with the layered scheme)
    report = json.loads((tmp_path / "c.json").read_text())
    assert "composite" in report["pairs"][0] and report["parameters"]["metric"] == "correct"


def test_the_layered_value_is_still_the_composite(capsys: pytest.CaptureFixture[str]) -> None:
    data = ROOT / "docs" / "examples" / "layered.jsonl"
    assert main(["score", str(data), "--scheme", "layered"]) == 0
    assert re.search(r"┃\s*composite ┃", capsys.readouterr().out)
