"""A third-party scheme installed as a real distribution (a package and its .dist-info on the path,
found by importlib.metadata through the `calipers.schemes` entry-point group, nothing patched)
gets every command the built-in schemes get: `schemes`, `score` (terminal, --json, --html),
`compare` with its gates and page, and a section of `calipers report`. Every command runs as
`python -m calipers` in a subprocess whose PYTHONPATH holds the plugin.

The plugin uses only public names: Scheme, SchemeOptions and SchemeResult from
calipers.schemes.base, Comparison from calipers.verdicts.base, and calipers.stats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

import pytest

from calipers.stats import wilson_interval, z_from_confidence

HOSTILE = "<script>alert(1)</script>"
# run → share of its N samples that are correct (sample i is correct when i·37 mod N < N·p)
RATES = {"a": 0.5, "b": 0.95, "c": 0.1, HOSTILE: 0.6}
N = 60

PLUGIN = '''
"""pass-rate: the share of correct samples of each run, with a Wilson interval."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import Field

from calipers.schemes.base import Scheme, SchemeOptions, SchemeResult
from calipers.stats import wilson_interval, z_from_confidence
from calipers.verdicts.base import Comparison


class PassRateOptions(SchemeOptions):
    confidence_level: float = Field(default=0.95, gt=0, lt=1)


class PassRateCompareOptions(PassRateOptions):
    trivial_diff: float = Field(default=0.0, ge=0)


def pass_rates(samples: Any, confidence_level: float) -> dict[str, dict[str, Any]]:
    frame = samples.to_arrow().to_pandas()
    frame = frame[frame["correct"].notna()]
    z = z_from_confidence(confidence_level)
    runs = {}
    for run, group in frame.groupby("run", sort=True):
        n, passed = len(group), int(group["correct"].astype(bool).sum())
        center, margin = wilson_interval(passed, n, z=z)
        runs[str(run)] = {
            "n": n,
            "passed": passed,
            "pass_rate": passed / n,
            "ci_low": center - margin,
            "ci_high": center + margin,
        }
    return runs


@dataclass
class PassRateResult(SchemeResult):
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**self.header(), "runs": self.runs}

    def to_frame(self, level: str = "run") -> pd.DataFrame:
        if level != "run":
            raise ValueError(f"pass-rate has only the run level, not {level!r}")
        return pd.DataFrame([{"run": run, **row} for run, row in self.runs.items()])


class PassRateComparison(Comparison):
    def __init__(self, baseline: str, pairs: list[dict[str, Any]], parameters: dict[str, Any]):
        self.scheme = "pass-rate"
        self.baseline = baseline
        self.pairs = pairs
        self.parameters = parameters
        worse = [p["candidate"] for p in pairs if p["outcome"] == "worse"]
        better = [p["candidate"] for p in pairs if p["outcome"] == "better"]
        if worse:
            self.verdict, self.reason = "REGRESS", f"{', '.join(worse)} pass less often"
        elif pairs and len(better) == len(pairs):
            self.verdict, self.reason = "PROGRESS", f"{', '.join(better)} pass more often"
        else:
            self.verdict, self.reason = "NOISE", "the intervals overlap"

    @property
    def verdict_text(self) -> str:
        return f"{self.verdict}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": "1",
            "kind": "pass-rate-compare",
            "scheme": self.scheme,
            "parameters": self.parameters,
            "baseline": self.baseline,
            "verdict": self.verdict,
            "reason": self.reason,
            "pairs": self.pairs,
        }

    def to_frame(self, level: str = "pair") -> pd.DataFrame:
        return pd.DataFrame(self.pairs)

    def gate_failure(self, gate: str) -> str | None:
        if gate == "no-regress" and self.verdict == "REGRESS":
            return f"pass-rate: {self.reason}"
        if gate == "ship" and self.verdict != "PROGRESS":
            return f"pass-rate: {self.verdict}, not PROGRESS"
        return None


class PassRateScheme(Scheme):
    name = "pass-rate"
    description = "share of correct samples per run, with a Wilson interval"
    required_fields = ("correct",)
    higher_is_better = True
    Options = PassRateOptions
    CompareOptions = PassRateCompareOptions

    def compute(self, samples: Any, options: PassRateOptions) -> PassRateResult:
        return PassRateResult(
            scheme=self.name,
            parameters=options.model_dump(),
            origin=samples.origin,
            runs=pass_rates(samples, options.confidence_level),
        )

    def compare(
        self, samples: Any, *, baseline: str, candidates: list[str], **options: Any
    ) -> PassRateComparison:
        o = self.compare_options(**options)
        assert isinstance(o, PassRateCompareOptions)
        runs = pass_rates(samples, o.confidence_level)
        pairs = []
        for candidate in candidates:
            base, cand = runs[baseline], runs[candidate]
            diff = cand["pass_rate"] - base["pass_rate"]
            if cand["ci_low"] > base["ci_high"] and diff > o.trivial_diff:
                outcome = "better"
            elif cand["ci_high"] < base["ci_low"] and -diff > o.trivial_diff:
                outcome = "worse"
            else:
                outcome = "same"
            pairs.append(
                {"baseline": baseline, "candidate": candidate, "diff": diff, "outcome": outcome}
            )
        return PassRateComparison(baseline, pairs, o.model_dump())
'''


@dataclass(frozen=True)
class Plugin:
    root: Path  # on PYTHONPATH: the package and its .dist-info
    samples: Path
    work: Path  # the subprocesses' working directory


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Plugin:
    root = tmp_path_factory.mktemp("site")
    package = root / "calipers_plugin_demo"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(PLUGIN).lstrip(), encoding="utf-8")
    dist_info = root / "calipers_plugin_demo-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: calipers-plugin-demo\nVersion: 0.1\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(
        "[calipers.schemes]\npass-rate = calipers_plugin_demo:PassRateScheme\n", encoding="utf-8"
    )
    work = tmp_path_factory.mktemp("work")
    samples = work / "samples.jsonl"
    rows = [
        # tokens_out: `calipers report` also scores these samples with the built-in reasonscore,
        # whose page section fails without a score-against-tokens plot (not the plugin's doing).
        {"run": run, "task": f"t{i % 2}", "sample_id": f"s{i}", "correct": (i * 37) % N < N * p,
         "tokens_out": 100}
        for run, p in RATES.items()
        for i in range(N)
    ]  # fmt: skip
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return Plugin(root, samples, work)


def calipers(plugin: Plugin, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m calipers ARGS` with the plugin's distribution on the path."""
    path = os.pathsep.join(p for p in (str(plugin.root), os.environ.get("PYTHONPATH")) if p)
    env = {
        **os.environ,
        "PYTHONPATH": path,
        "NO_COLOR": "1",
        "COLUMNS": "200",
        "CALIPERS_DB": str(plugin.work / "default.duckdb"),  # never the working directory's
    }
    return subprocess.run(
        [sys.executable, "-m", "calipers", *args],
        cwd=plugin.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def score(plugin: Plugin, *args: str) -> subprocess.CompletedProcess[str]:
    return calipers(plugin, "score", str(plugin.samples), "--scheme", "pass-rate", *args)


def compare(plugin: Plugin, *args: str) -> subprocess.CompletedProcess[str]:
    """`compare` with run a as the baseline."""
    base = ["compare", str(plugin.samples), "--scheme", "pass-rate", "--baseline", "a"]
    return calipers(plugin, *base, *args)


def expected(run: str, confidence: float = 0.95) -> dict[str, Any]:
    passed = sum((i * 37) % N < N * RATES[run] for i in range(N))
    center, margin = wilson_interval(passed, N, z=z_from_confidence(confidence))
    low, high = center - margin, center + margin
    return {"n": N, "passed": passed, "pass_rate": passed / N, "ci_low": low, "ci_high": high}


def test_the_distribution_is_found_by_importlib_metadata(plugin: Plugin) -> None:
    found = [d for d in distributions(path=[str(plugin.root)]) if d.name == "calipers-plugin-demo"]
    assert len(found) == 1
    (entry,) = [e for e in found[0].entry_points if e.group == "calipers.schemes"]
    assert (entry.name, entry.value) == ("pass-rate", "calipers_plugin_demo:PassRateScheme")


def test_schemes_lists_the_plugin(plugin: Plugin) -> None:
    done = calipers(plugin, "schemes")
    assert done.returncode == 0, done.stderr
    line = " ".join(done.stdout.split())  # the terminal may wrap a long line
    assert "pass-rate share of correct samples per run, with a Wilson interval" in line
    assert "compares runs; needs correct" in line
    assert "reasonscore" in line  # the built-ins are still there


@pytest.mark.extended  # a process more: make test-all
def test_score_prints_a_table_of_the_runs(plugin: Plugin) -> None:
    done = score(plugin)
    assert done.returncode == 0, done.stderr
    assert "pass-rate scores" in done.stdout
    for run in RATES:
        assert run in done.stdout
    assert "0.95" in done.stdout  # b's pass rate


def test_score_json_is_the_plugins_document(plugin: Plugin) -> None:
    done = score(plugin, "--json", "-")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # stdout holds the document and nothing else
    assert report["schema_version"] == "1" and report["scheme"] == "pass-rate"
    assert report["parameters"] == {"confidence_level": 0.95}
    assert report["source"] == str(plugin.samples) and report["notes"] == []
    assert sorted(report["runs"]) == sorted(RATES)
    for run, row in report["runs"].items():
        assert row == pytest.approx(expected(run))


@pytest.mark.extended  # a process more: make test-all
def test_an_option_the_plugin_does_not_take_is_refused(plugin: Plugin) -> None:
    out = plugin.work / "refused.json"
    done = score(plugin, "--z", "2", "--json", str(out))
    assert done.returncode == 1
    assert "--z" in done.stderr and "pass-rate" in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()
    compared = compare(plugin, "--candidate", "b", "--weights", "fact=2")
    assert compared.returncode == 1
    assert "--weights" in compared.stderr and "pass-rate" in compared.stderr
    ranked = calipers(plugin, "leaderboard", str(plugin.samples), "--scheme", "pass-rate")
    assert ranked.returncode == 1 and "does not rank runs" in ranked.stderr


@pytest.mark.extended  # a process more: make test-all
def test_an_option_the_plugin_takes_is_passed_on(plugin: Plugin) -> None:
    done = score(plugin, "--confidence", "0.9", "--json", "-")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["parameters"] == {"confidence_level": 0.9}
    for run, row in report["runs"].items():
        assert row == pytest.approx(expected(run, 0.9))
        wide = expected(run)
        assert row["ci_high"] - row["ci_low"] < wide["ci_high"] - wide["ci_low"]


@pytest.mark.parametrize(
    ("candidate", "gate", "code", "verdict"),
    [
        ("b", "ship", 0, "PROGRESS"),
        (HOSTILE, "ship", 3, "NOISE"),
        # the other gates (a process each): make test-all
        pytest.param("b", "no-regress", 0, "PROGRESS", marks=pytest.mark.extended),
        pytest.param("c", "no-regress", 3, "REGRESS", marks=pytest.mark.extended),
        pytest.param("c", "none", 0, "REGRESS", marks=pytest.mark.extended),
    ],
)
def test_compare_follows_the_plugins_gates(
    plugin: Plugin, tmp_path: Path, candidate: str, gate: str, code: int, verdict: str
) -> None:
    out = tmp_path / "compare.json"
    done = compare(plugin, "--candidate", candidate, "--gate", gate, "--json", str(out))
    assert done.returncode == code, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["kind"] == "pass-rate-compare" and report["verdict"] == verdict
    assert [p["candidate"] for p in report["pairs"]] == [candidate]
    assert report["pairs"][0]["diff"] == pytest.approx(RATES[candidate] - RATES["a"])
    assert f"{verdict}:" in done.stdout  # the default terminal view: the verdict, then a table
    assert "pass-rate comparison" in done.stdout
    if code == 3:
        assert "pass-rate:" in done.stderr and "Traceback" not in done.stderr


# ----------------------------------------------------------------------------- pages


def page_of(chromium: Any, html: Path) -> Any:
    """The page in headless Chromium, checked: no console error, no request beyond its own file,
    no script or image element (the hostile run name is text), and not blank."""
    from browser import open_page, screenshot_is_blank

    loaded = open_page(chromium, html)
    assert loaded.console_errors == []
    assert loaded.requests == [html.resolve().as_uri()]
    assert loaded.page.locator("img, script").count() == 0
    assert not screenshot_is_blank(loaded.page.screenshot(full_page=True))
    return loaded.page


def table_rows(page: Any, selector: str) -> list[list[str]]:
    return [row.split("\t") for row in page.locator(f"{selector} tr").all_inner_texts()]


@pytest.mark.slow
def test_score_page(plugin: Plugin, chromium: Any, tmp_path: Path) -> None:
    html = tmp_path / "out.html"
    done = score(plugin, "--html", str(html), "-q")
    assert done.returncode == 0, done.stderr
    page = page_of(chromium, html)
    rows = table_rows(page, "#pass-rate table")
    assert rows[0] == ["name", "n", "passed", "pass_rate", "ci_low", "ci_high"]
    shown = {row[0]: row[1:] for row in rows[1:] if len(row) == 6}
    assert sorted(shown) == sorted(RATES)  # the hostile name shows as text
    assert shown["b"][:3] == ["60", "57", "0.950"]
    assert "confidence level" in page.inner_text("#pass-rate")


@pytest.mark.slow
@pytest.mark.extended
def test_compare_page(plugin: Plugin, chromium: Any, tmp_path: Path) -> None:
    html = tmp_path / "compare.html"
    done = compare(plugin, "--candidate", "b", "--candidate", HOSTILE, "--html", str(html), "-q")
    assert done.returncode == 0, done.stderr
    page = page_of(chromium, html)
    assert page.inner_text(".verdict") == "NOISE"
    rows = table_rows(page, "table")
    assert rows[0] == ["baseline", "candidate", "diff", "outcome"]
    assert rows[1:] == [["a", "b", "0.450", "better"], ["a", HOSTILE, "0.100", "same"]]


@pytest.mark.slow
@pytest.mark.extended
def test_store_report_has_a_pass_rate_section(
    plugin: Plugin, chromium: Any, tmp_path: Path
) -> None:
    db, html, out = tmp_path / "x.duckdb", tmp_path / "r.html", tmp_path / "r.json"
    imported = calipers(plugin, "import", str(plugin.samples), "--db", str(db), "-q")
    assert imported.returncode == 0, imported.stderr
    done = calipers(plugin, "report", "--db", str(db), "--html", str(html), "--json", str(out))
    assert done.returncode == 0, done.stderr
    section = json.loads(out.read_text(encoding="utf-8"))["sections"]["pass-rate"]
    assert section["scheme"] == "pass-rate" and section["parameters"] == {"confidence_level": 0.95}
    for run, row in section["runs"].items():
        assert row == pytest.approx(expected(run))
    page = page_of(chromium, html)
    assert page.locator('nav a[href="#pass-rate"]').count() == 1
    assert page.inner_text("#pass-rate h2") == "pass-rate scores"
    rows = table_rows(page, "#pass-rate table")
    assert sorted(row[0] for row in rows[1:]) == sorted(RATES)
