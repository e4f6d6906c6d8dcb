"""Every kind of HTML page, built with realistically large inputs (16 runs, 24 tasks where a page
has both): for the readability tests (tests/test_html_readable.py) and the screenshots in
docs/images (benchmarks/page_screenshots.py). Names are data: one run name has `$` signs (no
mathtext) and one is long enough to be cut in a plot."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from calipers.cli.main import main

RUNS = (
    "gpt-4o-2024-08-06",
    "gpt-4o-mini",
    "claude-3-5-sonnet",
    "claude-3-haiku",
    "llama-3.1-70b-instruct",
    "llama-3.1-8b-instruct",
    "mistral-large-2407",
    "qwen2.5-72b-instruct",
    "gemma-2-27b-it",
    "deepseek-v3",
    "prompt-v2 cost_$_per_$_token",
    "agent/retrieval-on/temperature-0.2/long-context-experiment",
    "o1-mini",
    "phi-3.5-mini",
    "command-r-plus",
    "yi-large",
)
TASKS = (
    "fix-login-bug",
    "add-pagination",
    "migrate-user-table-to-uuid-keys",
    "write-release-notes",
    "triage-flaky-test",
    "summarise-incident",
    "refactor-payment-module",
    "add-rate-limiting",
    "translate-error-messages",
    "review-pull-request",
    "optimise-slow-query",
    "update-dependencies",
    "explain-stack-trace",
    "draft-api-docs",
    "add-dark-mode",
    "fix-timezone-bug",
    "extract-invoice-fields",
    "classify-support-ticket",
    "answer-billing-question",
    "detect-pii",
    "generate-unit-tests",
    "port-script-to-python",
    "plan-db-backup",
    "resolve-merge-conflict",
)
TIERS = {
    "easy": ("length=8,depth=1", "length=16,depth=1"),
    "medium": ("length=16,depth=2", "length=32,depth=2"),
    "hard": ("length=32,depth=3", "length=64,depth=4"),
}
KELVIN_RUN = Path(__file__).parent / "fixtures/kelvin/experiments/pillar2_decomposition_demo"

# page kind → what it is, for the tests' ids and the screenshots' captions
PAGES = {
    "score-layered": "calipers score --scheme layered --html",
    "score-metric": "calipers score --scheme metric --metric accuracy --html",
    "score-objective": "calipers score --scheme objective --html",
    "score-rubric": "calipers score --scheme rubric --html",
    "score-robustness": "calipers score --scheme robustness --html",
    "leaderboard": "calipers leaderboard --html (score --scheme reasonscore)",
    "compare": "calipers compare --scheme layered --html",
    "compare-objective": "calipers compare --scheme objective --html",
    "check": "calipers check --html",
    "rank": "calipers rank --html",
    "report": "calipers report --html",
}


def _ability(run: int, task: int) -> float:
    return 0.35 + 0.04 * (run % 9) + 0.02 * ((task * 7 + run * 3) % 5)


def evaluation_rows(
    runs: tuple[str, ...] = RUNS, tasks: tuple[str, ...] = TASKS, *, samples: int = 2,
    epochs: int = 2, seed: int = 7,
) -> Iterator[dict[str, Any]]:  # fmt: skip
    """Samples with assertions (fact and behavior), one 0–1 judge, cost and an accuracy score:
    enough for layered, metric and objective."""
    rng = np.random.default_rng(seed)
    for r, run in enumerate(runs):
        for t, task in enumerate(tasks):
            p = _ability(r, t)
            for s in range(samples):
                for epoch in range(epochs):
                    passed = [bool(rng.random() < p + 0.1 * k) for k in range(4)]
                    yield {
                        "run": run, "task": task, "sample_id": f"{task}/{s}", "epoch": epoch,
                        "assertions": [
                            {"name": f"check-{k}", "type": "contains" if k < 2 else "custom",
                             "value": "answer", "passed": passed[k]}
                            for k in range(4)
                        ],
                        "judgments": [{"judge": "reviewer", "scale_min": 0, "scale_max": 1,
                                       "score": round(float(np.clip(p + rng.normal(0, 0.15), 0, 1)),
                                                      2)}],
                        "cost_usd": round(0.01 + 0.002 * (r % 7) + 0.001 * s, 4),
                        "tool_calls": 3 + (r + t) % 6,
                        "scores": {"accuracy": float(passed[0])},
                    }  # fmt: skip


def reasonscore_rows(
    runs: tuple[str, ...] = RUNS, tasks: tuple[str, ...] = TASKS[:12], *, samples: int = 2,
    seed: int = 11,
) -> Iterator[dict[str, Any]]:  # fmt: skip
    """Tiers of difficulty points per task; right answers fall with difficulty, tokens grow."""
    rng = np.random.default_rng(seed)
    for r, run in enumerate(runs):
        ability, verbosity = 1.0 + 0.18 * (r % 11), 300.0 + 90.0 * (r % 7)
        for tier_index, (tier, points) in enumerate(TIERS.items()):
            for t, task in enumerate(tasks):
                for p, point in enumerate(points):
                    difficulty = tier_index + 0.5 * p + (t % 5) / 10
                    p_right = 1 / (1 + math.exp(-(ability - difficulty)))
                    for s in range(samples):
                        tokens = int(verbosity * (1 + difficulty / 2) * rng.uniform(0.8, 1.2))
                        yield {
                            "run": run, "task": task, "sample_id": f"{tier}/{task}/{point}/{s}",
                            "tier": tier, "point": point, "correct": bool(rng.random() < p_right),
                            "guess_chance": 0.25 if t % 3 == 0 else 0.0, "truncated": False,
                            "tokens_out": tokens,
                        }  # fmt: skip


def rubric_rows(
    runs: tuple[str, ...] = RUNS, tasks: tuple[str, ...] = TASKS[:6], *, seed: int = 5
) -> Iterator[dict[str, Any]]:
    """Two evaluations per run and task with the seven dimensions, a red flag or a bonus here and
    there."""
    from rubric_data import rubric_row

    rng = np.random.default_rng(seed)
    for r, run in enumerate(runs):
        for t, task in enumerate(tasks):
            for s in range(2):
                score = float(np.clip(round(rng.normal(6.5 + 0.15 * (r % 9), 1.2) * 2) / 2, 1, 10))
                flags = ["invented_api"] if (r + t + s) % 11 == 0 else None
                bonuses = ["adds_tests"] if (r * t + s) % 13 == 0 else None
                yield rubric_row(run, f"{task}/{s}", score, task=task, red_flags=flags,
                                 bonuses=bonuses)  # fmt: skip


def write_rows(path: Path, rows: Iterator[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _run(args: list[str]) -> None:
    code = main([*args, "-q"])
    if code not in (0, 3):  # 3: the verdict fails its gate, and the page is written anyway
        raise AssertionError(f"calipers {' '.join(args)} exited {code}")


def build_pages(directory: Path, kinds: list[str] | None = None) -> dict[str, Path]:
    """Write each page kind (all of `PAGES` by default) into `directory`; kind → page path."""
    directory.mkdir(parents=True, exist_ok=True)
    wanted = list(PAGES) if kinds is None else kinds
    evaluations = write_rows(directory / "evaluations.jsonl", evaluation_rows())
    reasonscore = write_rows(directory / "reasonscore.jsonl", reasonscore_rows())
    rubric = write_rows(directory / "rubric.jsonl", rubric_rows())
    pages: dict[str, Path] = {}
    for kind in wanted:
        html = pages[kind] = directory / f"{kind}.html"
        if kind in ("score-layered", "score-objective"):
            _run(["score", str(evaluations), "--scheme", kind.split("-")[1], "--html", str(html)])
        elif kind == "score-metric":
            _run(["score", str(evaluations), "--scheme", "metric", "--metric", "accuracy",
                  "--html", str(html)])  # fmt: skip
        elif kind == "score-rubric":
            _run(["score", str(rubric), "--scheme", "rubric", "--no-history", "--html",
                  str(html)])  # fmt: skip
        elif kind == "score-robustness":
            _run(["score", str(KELVIN_RUN), "--scheme", "robustness", "--html", str(html)])
        elif kind == "leaderboard":
            _run(["leaderboard", str(reasonscore), "--html", str(html)])
        elif kind == "compare":
            four = write_rows(directory / "compare.jsonl", evaluation_rows(RUNS[:4]))
            _run(["compare", str(four), "--scheme", "layered", "--control", RUNS[0],
                  *(x for run in RUNS[1:4] for x in ("--treatment", run)), "--gate", "none",
                  "--n-resamples", "1000", "--html", str(html)])  # fmt: skip
        elif kind == "compare-objective":
            _run(["compare", str(evaluations), "--scheme", "objective", "--baseline", RUNS[0],
                  "--candidate", RUNS[11], "--gate", "none", "--html", str(html)])  # fmt: skip
        elif kind == "check":
            project = directory / "check-project"
            if not project.exists():
                _run(["init", str(project)])
                for case in sorted((project / "cases").glob("*.md")):  # six cases, not three
                    (case.parent / f"{case.stem}-copy.md").write_text(case.read_text())
            _run(["check", "--config", str(project / "kelvin.yaml"), "--no-store", "--html",
                  str(html)])  # fmt: skip
        elif kind == "rank":
            _run(["rank", str(rubric), "--no-history", "--html", str(html)])
        elif kind == "report":
            db = directory / "store.duckdb"
            for data in (evaluations, reasonscore):
                _run(["import", str(data), "--db", str(db)])
            _run(["report", "--db", str(db), "--html", str(html)])
        else:
            raise ValueError(f"no page kind {kind}")
    return pages
