"""Pairwise judging against a real chat-completions server on 127.0.0.1 (the official `openai`
client): a judge that picks the output shown first 70% of the time regardless of quality, and
otherwise the better one. Measured: its position-flip rate (0.70 expected) and first-shown share
(0.85 expected); the both-orders Bradley–Terry ranking equals the truth, while the single-order
ranking (the first run by name always shown first) is the truth reversed. Also: cache keys hold
the order, re-judging replaces, failures are loud and missing (never a tie), the key is never
stored, and the JSON report matches its schema (conftest validates every report)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calipers.cli.main import main
from calipers.grading.judge_cache import JudgeCache
from calipers.grading.judges import JudgeReplyError, PromptTemplate, parse_reply
from calipers.grading.pairwise import combine, fit_pairs, judge_stats, verdict
from calipers.running.pairwise import read_pairs
from judge_server import judge_server

KEY = "sk-test-pairwise-0123456789"
QUALITY = {"alpha": 0.3, "bravo": 0.5, "charlie": 0.7}  # truth: charlie best
TRUTH = ["charlie", "bravo", "alpha"]
N_SAMPLES = 40
BIAS = 0.7  # share of calls answered "1" (the output shown first) regardless


def _uniform(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16**12


def biased_judge(body: dict[str, Any]) -> tuple[str, str]:
    prompt = body["messages"][0]["content"]
    first, second = (
        float(re.search(rf"<answer_{i}>\n.*?quality=(\S+)", prompt, re.S).group(1))  # type: ignore[union-attr]
        for i in (1, 2)
    )
    if _uniform(prompt) < BIAS:
        winner = "1"
    else:
        winner = "1" if first > second else "2" if second > first else "tie"
    return ("answer", json.dumps({"winner": winner, "rationale": "compared"}))


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_KEY", KEY)
    rng = np.random.default_rng(11)
    lines = []
    for run, mean in QUALITY.items():
        for i in range(N_SAMPLES):
            q = round(float(mean + rng.normal(0, 0.15)), 4)
            lines.append({"run": run, "task": "write", "sample_id": f"s{i:02d}",
                          "input": f"question {i}", "expected": "a good answer",
                          "output": f"answer by {run}: quality={q}"})  # fmt: skip
    path = tmp_path / "outputs.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(["import", str(path), "--db", "s.duckdb", "-q"]) == 0
    return tmp_path / "s.duckdb"


def judge_args(url: str, *extra: str) -> list[str]:
    return ["grade", "--pairwise", "--db", "s.duckdb", "--judge", f"biased=openai:judge@{url}",
            "--judge-key-env", "JUDGE_KEY", "-j", "8", *extra]  # fmt: skip


def order(report: dict[str, Any]) -> list[str]:
    return [r["run"] for r in report["bradley_terry"]["runs"]]


def test_a_position_biased_judge_flips_and_both_orders_remove_the_bias(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with judge_server() as server:
        server.script = biased_judge
        assert main(judge_args(server.url)) == 0
        calls = len(server.requests)
        out = capsys.readouterr().out
        # every pair of runs × sample × 2 orders, each its own call
        assert calls == 3 * N_SAMPLES * 2
        assert "Judged 120 pair(s) of outputs in both orders (3 pair(s) of runs)" in out
        # cached under keys that hold the order: a second judging asks nothing, replaces all
        assert main(judge_args(server.url)) == 0
        assert len(server.requests) == calls
        assert "(120 earlier verdict(s) replaced)" in capsys.readouterr().out
    cache = JudgeCache(Path(".calipers/judge-cache")).keys()
    assert len(cache) == calls
    # the two orders of a pair are shown as two prompts with the outputs swapped
    first = server.requests[0]["body"]["messages"][0]["content"]
    assert "<answer_1>" in first and "<answer_2>" in first

    rows = read_pairs(store)
    [stats] = judge_stats(rows)
    assert (stats.pairs, stats.missing, stats.failed) == (120, 0, 0)
    # expected flip rate BIAS (a flip whenever the biased order disagrees with the true one)
    # and first-shown share BIAS + (1 − BIAS)/2; SE ≈ 0.042 and 0.023 on 120 pairs
    assert stats.flip_rate is not None and abs(stats.flip_rate - BIAS) < 0.1
    assert stats.first_shown is not None and abs(stats.first_shown - (BIAS + 0.15)) < 0.06

    assert main(["rank", "--pairwise", "--db", str(store), "--json", "both.json",
                 "--n-resamples", "2000", "-q"]) == 0  # fmt: skip
    assert main(["rank", "--pairwise", "--db", str(store), "--orders", "ab", "--json",
                 "ab.json", "--n-resamples", "2000", "-q"]) == 0  # fmt: skip
    both = json.loads(Path("both.json").read_text())
    single = json.loads(Path("ab.json").read_text())
    assert both["judges"][0]["flip_rate"] == stats.flip_rate
    assert order(both) == TRUTH  # the bias is gone: the truth, in order
    assert order(single) == TRUTH[::-1]  # one order: the first shown (by name) wins
    fit = both["bradley_terry"]
    assert fit["seed"] is not None and fit["n_units"] == N_SAMPLES
    best = fit["runs"][0]
    assert best["run"] == "charlie" and best["rank_low"] == 1
    assert fit["runs"][-1]["rank_high"] == 3
    # both orders: every true rank inside its interval; one order: confidently wrong — the
    # truly best run's interval excludes rank 1
    for position, r in enumerate(fit["runs"], start=1):
        assert r["rank_low"] <= TRUTH.index(r["run"]) + 1 <= r["rank_high"]
        assert r["rank"] == position
    best_single = {r["run"]: r for r in single["bradley_terry"]["runs"]}[TRUTH[0]]
    assert best_single["rank_low"] > 1

    # the terminal view
    assert main(["rank", "--pairwise", "--db", str(store), "--n-resamples", "500"]) == 0
    shown = capsys.readouterr().out
    assert "flip rate" in shown and "rank interval" in shown and "seed" in shown
    # and the page: the strengths and rank intervals as tables, the judges' flip rate
    assert main(["rank", "--pairwise", "--db", str(store), "--n-resamples", "500",
                 "--html", "pairwise.html", "-q"]) == 0  # fmt: skip
    page = Path("pairwise.html").read_text()
    assert "bradley_terry · runs" in page and "charlie" in page and "flip_rate" in page

    # the key was sent (header) but is kept nowhere
    headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert headers["authorization"] == f"Bearer {KEY}"
    for path in [*Path(".calipers/judge-cache").iterdir(), store]:
        assert KEY.encode() not in path.read_bytes()


def test_failed_calls_are_missing_and_loud(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with judge_server() as server:
        server.script = lambda body: ("status", 500)
        code = main([*judge_args(server.url, "--judge-retries", "0"), "--run", "alpha",
                     "--run", "bravo"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "judge biased: 80 of 80 calls failed (all)" in err and "HTTP 500" in err
    rows = read_pairs(store)
    assert len(rows) == N_SAMPLES and all(r.outcome is None for r in rows)
    assert all(r.error_ab and r.error_ba for r in rows)
    assert main(["rank", "--pairwise", "--db", str(store), "-q"]) == 1  # nothing to rank


def test_one_failed_order_leaves_the_pair_missing_not_tied(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def script(body: dict[str, Any]) -> tuple[str, Any]:
        prompt = body["messages"][0]["content"]
        if "question 3\n" in prompt and "<answer_1>\nanswer by alpha" in prompt:
            return ("raw", "not json")  # alpha shown first, sample 3: an unreadable reply
        return biased_judge(body)

    with judge_server() as server:
        server.script = script
        code = main([*judge_args(server.url, "--judge-retries", "0"), "--run", "alpha",
                     "--run", "charlie"])  # fmt: skip
    assert code == 0
    assert "1 of 80 calls failed" in capsys.readouterr().out
    rows = read_pairs(store)
    missing = [r for r in rows if r.outcome is None]
    assert [(r.sample_id, r.verdict_ab, r.error_ab is not None) for r in missing] == [
        ("s03", None, True)
    ]
    fit = fit_pairs(rows, n_resamples=200)
    assert fit.n_comparisons == N_SAMPLES - 1  # the missing pair is left out


def test_pairwise_options_are_checked(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grade", "--pairwise", "--db", "s.duckdb"]) == 1
    assert "--pairwise needs a judge" in capsys.readouterr().err
    assert main(["grade", "--pairwise", "--db", "s.duckdb", "--judge", "openai:m",
                 "--run", "alpha"]) == 1  # fmt: skip
    assert "needs two runs or more" in capsys.readouterr().err
    assert main(["grade", "--pairwise", "--db", "s.duckdb", "--judge", "openai:m",
                 "--judge-kind", "objective"]) == 1  # fmt: skip
    assert main(["rank", "--pairwise", "--db", "s.duckdb", "--rubric", "x.yaml"]) == 1
    assert main(["rank", "--pairwise", "--db", "s.duckdb"]) == 2
    assert "no pairwise verdicts" in capsys.readouterr().err


# --------------------------------------------------------------------------- without a server


def test_replies_verdicts_and_outcomes() -> None:
    assert parse_reply("pairwise", '{"winner": "1"}')[0]["score"] == 1.0
    assert parse_reply("pairwise", '```json\n{"winner": "tie"}\n```')[0]["score"] == 0.5
    assert parse_reply("pairwise", '{"winner": 2, "rationale": "b"}')[0]["score"] == 0.0
    with pytest.raises(JudgeReplyError, match="winner is 'A'"):
        parse_reply("pairwise", '{"winner": "A"}')
    # order ab shows a first; order ba shows b first
    assert (verdict(1.0, "ab"), verdict(1.0, "ba"), verdict(0.0, "ba")) == ("a", "b", "a")
    assert verdict(0.5, "ba") == "tie" and verdict(None, "ab") is None
    assert combine("a", "a") == "a" and combine("a", "b") == "tie"
    assert combine("a", "tie") == "tie" and combine("a", None) is None


# Changing the pairwise prompt changes every verdict's prompt_hash: update on purpose, with the
# prompt's version in its file name.
FROZEN = {
    True: "55ef77a3a86527d035c83d39ac07bc6db5d62772774e7fc1aa842c321c738a73",
    False: "8d5a844711e354ab1de394d5ac5ea771de15009868f4229b37cc14daa5aacdc0",
}


@pytest.mark.parametrize("debias", [True, False])
def test_pairwise_prompt_is_frozen_and_marks_outputs_as_data(debias: bool) -> None:
    template = PromptTemplate.load("pairwise", debias_length=debias)
    assert template.sha256 == FROZEN[debias]
    assert "Do not reward length" in template.text if debias else True
