"""Pairwise judging from a suite: `calipers run` judges the run it has just stored against runs
already in the store (the suite's `judge.pairwise.against`, or --pairwise-against), in both
orders, through `judge_pairs`, into the `pairwise` table — then `calipers rank --pairwise`.

End to end against a real chat-completions server on 127.0.0.1 (tests/judge_server.py) whose
judge picks the output shown first 70% of the time regardless of quality: three runs of true
quality 0.3 < 0.5 < 0.7 made one after the other, each judged against the earlier ones. The
measured flip rate and first-shown share are compared with their closed forms (BIAS and
BIAS + (1 − BIAS)/2), the both-orders ranking with the truth and the single-order ranking with
the truth reversed. Also: only the new run's pairs are judged, a re-run asks nothing again, and
every misuse is exit 1 before the pipeline runs, naming the file and field or the option."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from calipers.cli.main import main
from calipers.grading.pairwise import judge_stats
from calipers.running.pairwise import read_pairs
from judge_server import judge_server
from test_pairwise_judging import BIAS, biased_judge

KEY = "sk-test-suite-pairwise-42"
QUALITY = {"alpha": 0.3, "bravo": 0.5, "charlie": 0.7}
TRUTH = ["charlie", "bravo", "alpha"]
N_TASKS = 40

# A pipeline whose answer carries its quality: `pipe.py INPUT OUTPUT RUN MEAN`; the quality of a
# task is drawn around MEAN (SD 0.15), seeded by the run and the question. "CRASH" exits 2.
PIPE = """import json, random, sys
question = open(sys.argv[1], encoding="utf-8").read()
if "CRASH" in question:
    sys.exit(2)
q = random.Random(sys.argv[3] + question).gauss(float(sys.argv[4]), 0.15)
json.dump({"output": f"answer by {sys.argv[3]}: quality={q:.4f}"}, open(sys.argv[2], "w"))
"""


def both_kinds(body: dict[str, Any]) -> tuple[str, str]:
    """The biased pairwise judge; a plain score for the run's own (pointwise) judging."""
    if "<answer_1>" in body["messages"][0]["content"]:
        return biased_judge(body)
    return ("answer", json.dumps({"score": 3, "rationale": "fine"}))


def write_suite(path: Path, n: int, *, against: str | None = "[alpha]", extra: str = "") -> Path:
    head = "name: qa\n" + (f"judge:\n  pairwise:\n    against: {against}\n" if against else "")
    tasks = "".join(f"  - id: q{i:02d}\n    input: question {i}\n" for i in range(n))
    path.write_text(head + "tasks:\n" + tasks + extra)
    return path


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_KEY", KEY)
    (tmp_path / "pipe.py").write_text(PIPE)
    return write_suite(tmp_path / "suite.yaml", N_TASKS)


def run(suite: Path, name: str, *args: str, quality: float | None = None) -> int:
    mean = QUALITY[name] if quality is None else quality
    pipeline = f"{shlex.quote(sys.executable)} pipe.py {{input}} {{output}} {name} {mean}"
    return main(["run", str(suite), "--pipeline", pipeline, "--run", name, "--db", "s.duckdb",
                 "-j", "8", *args])  # fmt: skip


def judge(url: str) -> list[str]:
    return ["--judge", f"biased=openai:judge@{url}", "--judge-key-env", "JUDGE_KEY"]


def pair_prompts(requests: list[dict[str, Any]]) -> list[str]:
    prompts = [r["body"]["messages"][0]["content"] for r in requests]
    return [p for p in prompts if "<answer_1>" in p]


def order(report: dict[str, Any]) -> list[str]:
    return [r["run"] for r in report["bradley_terry"]["runs"]]


def test_each_new_run_is_judged_against_the_stored_ones_in_both_orders(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The baseline is made with the suite that names it: not compared with itself, no judge.
    assert run(suite, "alpha", "-q") == 0
    assert read_pairs(Path("s.duckdb")) == []
    with judge_server() as server:
        server.script = both_kinds
        # bravo: the suite's judge.pairwise.against [alpha]
        assert run(suite, "bravo", *judge(server.url), "--json", "bravo.json", "-q") == 0
        assert len(pair_prompts(server.requests)) == 2 * N_TASKS  # every shared sample × 2
        bravo = json.loads(Path("bravo.json").read_text())["pairwise"]
        assert bravo["against"] == ["alpha"] and bravo["pairs"] == N_TASKS
        assert [(o["run_a"], o["run_b"]) for o in bravo["outcomes"]] == [("alpha", "bravo")]
        before = len(server.requests)
        # charlie: the option replaces the suite's list; alpha–bravo is not judged again
        capsys.readouterr()
        assert run(suite, "charlie", *judge(server.url), "--pairwise-against", "alpha",
                   "--pairwise-against", "bravo", "--json", "charlie.json") == 0  # fmt: skip
        shown = " ".join(capsys.readouterr().out.split())
        new = pair_prompts(server.requests[before:])
        assert len(new) == 2 * 2 * N_TASKS
        assert all("answer by charlie" in p for p in new)  # only the new run's pairs
        assert len(server.requests) - before == N_TASKS + len(new)  # + its own judging
        # a re-run: pipeline and judges from their caches, the verdicts replaced
        calls = len(server.requests)
        assert run(suite, "charlie", *judge(server.url), "--pairwise-against", "alpha",
                   "--pairwise-against", "bravo", "--json", "again.json", "-q") == 0  # fmt: skip
        assert len(server.requests) == calls
    assert json.loads(Path("again.json").read_text())["pairwise"]["replaced"] == 2 * N_TASKS
    # the terminal: pairs judged, the flip rate, where to rank
    assert f"pairwise charlie against alpha, bravo: {2 * N_TASKS} pair(s) of outputs judged " \
        "in both orders" in shown  # fmt: skip
    assert "flip rate" in shown and "calipers rank --pairwise --db s.duckdb" in shown
    report = json.loads(Path("charlie.json").read_text())["pairwise"]
    assert report["unshared"] == [] and report["judges"][0]["called"] == 2 * 2 * N_TASKS

    # every pair of runs, each order recorded, in run terms (a before b by name)
    rows = read_pairs(Path("s.duckdb"))
    assert sorted({(r.run_a, r.run_b) for r in rows}) == [
        ("alpha", "bravo"), ("alpha", "charlie"), ("bravo", "charlie")
    ]  # fmt: skip
    assert len(rows) == 3 * N_TASKS and all(r.complete for r in rows)
    [stats] = judge_stats(rows)
    # closed forms for this judge: it flips whenever the biased order disagrees with the
    # true one (probability BIAS); it chooses the first shown BIAS + (1 − BIAS)/2 of the time.
    # SE ≈ 0.042 and 0.023 on 120 pairs.
    assert stats.flip_rate is not None and abs(stats.flip_rate - BIAS) < 0.1
    assert stats.first_shown is not None and abs(stats.first_shown - (BIAS + 0.15)) < 0.06
    charlie_stats = report["judges"][0]
    assert abs(charlie_stats["flip_rate"] - BIAS) < 0.12  # 80 pairs: SE ≈ 0.051

    assert main(["rank", "--pairwise", "--db", "s.duckdb", "--json", "both.json",
                 "--n-resamples", "2000", "-q"]) == 0  # fmt: skip
    assert main(["rank", "--pairwise", "--db", "s.duckdb", "--orders", "ab", "--json", "ab.json",
                 "--n-resamples", "2000", "-q"]) == 0  # fmt: skip
    both = json.loads(Path("both.json").read_text())
    assert both["judges"][0]["flip_rate"] == stats.flip_rate
    assert order(both) == TRUTH  # both orders: the position bias cancels
    assert order(json.loads(Path("ab.json").read_text())) == TRUTH[::-1]  # one order: it rules
    for r in both["bradley_terry"]["runs"]:
        assert r["rank_low"] <= TRUTH.index(r["run"]) + 1 <= r["rank_high"]


def test_misuse_is_exit_1_before_the_pipeline_runs(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = write_suite(Path("small.yaml"), 3)
    assert run(small, "alpha", "-q") == 0
    stub = ["--judge", "openai:judge@http://127.0.0.1:9/v1"]  # never called: errors come first

    def fails(*args: str, path: Path = small, name: str = "bravo") -> str:
        assert run(path, name, *args, "-q") == 1
        return " ".join(capsys.readouterr().err.split())

    err = fails(*stub, "--pairwise-against", "nosuch")
    assert "--pairwise-against: no run nosuch in s.duckdb" in err and "Runs there: alpha" in err
    err = fails(*stub, path=write_suite(Path("typo.yaml"), 3, against="[alpha, nosuch]"))
    assert "typo.yaml: field 'judge.pairwise.against': no run nosuch in s.duckdb" in err
    assert "needs a judge" in fails() and "--judge SPEC" in fails()
    assert "that is the run being made" in fails(*stub, "--pairwise-against", "bravo")
    assert "contradict" in fails(*stub, "--no-pairwise", "--pairwise-against", "alpha")
    assert run(small, "bravo", *stub, "--db", "other.duckdb", "-q") == 1
    assert "no store at other.duckdb" in capsys.readouterr().err
    other = write_suite(Path("other.yaml"), 0, against=None, extra="  - id: z\n    input: zz\n")
    err = fails(*stub, "--pairwise-against", "alpha", path=other)
    assert "run 'alpha' shares no task with other.yaml (its tasks: q00, q01, q02)" in err
    for bad, message in (("[]", "at least 1 item"), ("[alpha, alpha]", "alpha named twice"),
                         ("{run: alpha}", "valid list")):  # fmt: skip
        err = fails(*stub, path=write_suite(Path("bad.yaml"), 3, against=bad))
        assert "bad.yaml, line 4, field 'judge.pairwise.against'" in err and message in err
        assert "against: [RUN, ...]" in err
    # none of these ran the pipeline: no run but alpha in the store
    con = duckdb.connect("s.duckdb", read_only=True)
    assert con.execute("SELECT DISTINCT run FROM samples").fetchall() == [("alpha",)]
    con.close()
    # a single name is a list of one; --no-pairwise skips the suite's (and needs no judge)
    assert run(write_suite(Path("one.yaml"), 3, against="alpha"), "bravo", "--no-pairwise",
               "-q") == 0  # fmt: skip


def test_nothing_shared_after_the_run_is_exit_2_with_the_run_stored(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(write_suite(Path("small.yaml"), 2), "alpha", "-q") == 0
    # the same task ids, but bravo's invocations of them crash: only task z has an output
    crashing = Path("crash.yaml")
    crashing.write_text(
        "judge: {pairwise: {against: [alpha]}}\ntasks:\n"
        "  - {id: q00, input: CRASH 0}\n  - {id: q01, input: CRASH 1}\n  - {id: z, input: zz}\n"
    )
    with judge_server() as server:
        server.script = both_kinds
        code = run(crashing, "bravo", *judge(server.url), "--json", "b.json", "-q")
        assert pair_prompts(server.requests) == []
    assert code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "run 'bravo' is stored, but shares no sample with an output with alpha" in err
    section = json.loads(Path("b.json").read_text())["pairwise"]
    assert section["pairs"] == 0 and section["unshared"] == ["alpha"]
    con = duckdb.connect("s.duckdb", read_only=True)
    assert con.execute("SELECT count(*) FROM samples WHERE run = 'bravo'").fetchone() == (3,)
    con.close()


def test_failed_pairwise_calls_are_missing_and_exit_2(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = write_suite(Path("small.yaml"), 5)
    assert run(small, "alpha", "-q") == 0

    def refuse_pairs(body: dict[str, Any]) -> tuple[str, Any]:
        if "<answer_1>" in body["messages"][0]["content"]:
            return ("status", 500)
        return both_kinds(body)

    with judge_server() as server:
        server.script = refuse_pairs
        code = run(small, "bravo", *judge(server.url), "--judge-retries", "0", "-q")
    assert code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "pairwise: judge biased: 10 of 10 calls failed (all)" in err and "HTTP 500" in err
    rows = read_pairs(Path("s.duckdb"))
    assert len(rows) == 5 and all(r.outcome is None and r.error_ab and r.error_ba for r in rows)


def test_an_interrupt_while_judging_pairs_keeps_the_run_and_the_finished_pairs(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from calipers.running import pairwise
    from calipers.running.judging import JudgingInterrupted

    small = write_suite(Path("small.yaml"), 5)
    assert run(small, "alpha", "-q") == 0
    real = pairwise.judge_requests

    def stop_halfway(requests: Any, *args: Any, **kwargs: Any) -> Any:
        done = list(real(requests, *args, **kwargs))  # as if Ctrl-C came after half the calls
        raise JudgingInterrupted(done[:5] + [None] * (len(done) - 5))

    monkeypatch.setattr(pairwise, "judge_requests", stop_halfway)
    with judge_server() as server:
        server.script = both_kinds
        assert run(small, "bravo", *judge(server.url), "-q") == 130
        err = " ".join(capsys.readouterr().err.split())
        # 10 calls: pairs 0 and 1 complete, pair 2 has one order only and is not stored
        assert "run 'bravo' is stored (5 samples in s.duckdb); pairwise judging stopped: 2 of " \
            "5 pairs judged in both orders and stored" in err  # fmt: skip
        assert len(read_pairs(Path("s.duckdb"))) == 2
        monkeypatch.setattr(pairwise, "judge_requests", real)
        calls = len(server.requests)
        assert run(small, "bravo", *judge(server.url), "-q") == 0  # the same command finishes
        assert len(server.requests) == calls  # every reply came from the cache
    assert len(read_pairs(Path("s.duckdb"))) == 5
