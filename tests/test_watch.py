"""`calipers watch`, `calipers.watch` and `compare --sequential`: the sequential decision on a
file or store, in the order the rows were written (or a seeded order), equal to the engine's
decision on units built independently here from the raw file; a file that grows while it is
watched; gates and exit codes; and `compare`'s note when a run looks incomplete."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers
from calipers.cli.main import main
from calipers.verdicts.sequential import PairedUnits, decide_sequentially, parse_design


def _pairs(n: int, p_base: float, p_cand: float, seed: int, *, epochs: int = 1) -> list[dict]:
    """Rows of two runs, sample by sample (a sample's rows of both runs, then the next)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        for run, p in (("base", p_base), ("cand", p_cand)):
            for e in range(epochs):
                rows.append({"run": run, "task": "t", "sample_id": f"s{i}", "epoch": e,
                             "correct": rng.random() < p})  # fmt: skip
    return rows


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _units_by_hand(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Per sample, in the order its last row was written: the epoch means of both runs."""
    last: dict[str, int] = {}
    values: dict[tuple[str, str], list[float]] = {}
    for i, r in enumerate(rows):
        last[r["sample_id"]] = i
        values.setdefault((r["run"], r["sample_id"]), []).append(float(r["correct"]))
    order = sorted(last, key=last.__getitem__)
    base = np.array([np.mean(values[("base", s)]) for s in order])
    cand = np.array([np.mean(values[("cand", s)]) for s in order])
    return base, cand


@pytest.mark.parametrize(("p_cand", "epochs"), [(0.75, 1), (0.3, 1), (0.8, 3)])
def test_watch_decides_as_the_engine_does_on_units_built_from_the_file(
    tmp_path: Path, p_cand: float, epochs: int
) -> None:
    rows = _pairs(400, 0.55, p_cand, seed=3, epochs=epochs)
    path = _write(tmp_path / "runs.jsonl", rows)
    result = calipers.watch(path, "metric", baseline="base", candidates=["cand"], metric="correct")
    base, cand = _units_by_hand(rows)
    units = PairedUnits("base", "cand", None, base, cand, (0.0, 1.0), epochs == 1)
    expected = decide_sequentially([units], design=parse_design("sequence", n_planned=None))
    got = result.to_dict()["pairs"][0]
    want = expected.to_dict()["pairs"][0]
    assert got["stopped_at"] == want["stopped_at"] is not None
    assert got["decision"]["verdict"] == want["decision"]["verdict"]
    assert got["decision"]["low"] == pytest.approx(want["decision"]["low"])
    assert got["n_seen"] == 400
    assert result.verdict_text == ("PROGRESS" if p_cand > 0.55 else "REGRESS")


def test_a_random_order_is_drawn_from_the_seed(tmp_path: Path) -> None:
    path = _write(tmp_path / "runs.jsonl", _pairs(300, 0.5, 0.7, seed=4))

    def stop(seed: int) -> int | None:
        r = calipers.watch(path, "metric", baseline="base", candidates=["cand"],
                           metric="correct", order="random", seed=seed)  # fmt: skip
        return r.to_dict()["pairs"][0]["stopped_at"]

    assert stop(11) == stop(11)
    assert len({stop(s) for s in range(6)}) > 1  # the order matters, and the seed sets it


def test_hybrid_reports_the_units_not_needed(tmp_path: Path) -> None:
    path = _write(tmp_path / "runs.jsonl", _pairs(500, 0.4, 0.8, seed=5))
    r = calipers.watch(path, "metric", baseline="base", candidates=["cand"], metric="correct",
                       design="hybrid", n_planned=500)  # fmt: skip
    pair = r.to_dict()["pairs"][0]
    assert r.verdict_text == "PROGRESS"
    assert pair["units_saved"] == 500 - pair["stopped_at"] > 250
    assert r.to_frame("pair").loc[0, "units_saved"] == pair["units_saved"]
    assert list(r.to_frame("path").columns) == ["treatment", "task", "n", "low", "high"]


def test_watch_without_bounds_refuses_and_says_how(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"run": run, "task": "t", "sample_id": f"s{i}", "scores": {"latency": 1.0 + i}}
            for i in range(20) for run in ("base", "cand")]  # fmt: skip
    path = _write(tmp_path / "runs.jsonl", rows)
    args = ["watch", str(path), "--metric", "latency", "--baseline", "base", "--candidate", "cand"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "bounds" in err and "--bounds" in err and "Traceback" not in err
    assert main([*args, "--bounds", "0,100"]) == 0


def test_watch_gates_and_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "runs.jsonl", _pairs(400, 0.8, 0.5, seed=6))
    base = ["watch", str(path), "--metric", "correct", "--baseline", "base", "--candidate", "cand"]
    assert main(base) == 3  # REGRESS fails no-regress
    assert main([*base, "--gate", "none"]) == 0
    capsys.readouterr()
    assert main([*base, "--gate", "none", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "watch" and report["verdict"] == "REGRESS"
    assert report["pairs"][0]["decision"]["high"] < 0
    md = tmp_path / "w.md"
    page = tmp_path / "w.html"
    assert main([*base, "--gate", "none", "--markdown", str(md), "--html", str(page)]) == 0
    assert "REGRESS" in md.read_text() and "anytime-valid" in md.read_text()
    html = page.read_text()
    assert "<svg" in html and "REGRESS" in html


def test_names_are_escaped_in_every_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _pairs(200, 0.3, 0.9, seed=7)
    for r in rows:
        r["run"] = "<b>[red]x[/]</b>" if r["run"] == "cand" else r["run"]
    path = _write(tmp_path / "runs.jsonl", rows)
    page = tmp_path / "w.html"
    args = ["watch", str(path), "--metric", "correct", "--baseline", "base",
            "--candidate", "<b>[red]x[/]</b>", "--html", str(page)]  # fmt: skip
    assert main(args) == 0
    assert "<b>[red]" not in page.read_text()
    assert "[red]x[/]" in capsys.readouterr().out  # shown as typed, not as markup


def test_follow_reads_a_file_that_grows_and_stops_when_decided(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _pairs(1500, 0.4, 0.75, seed=8)
    path = tmp_path / "growing.jsonl"
    path.write_text("")
    written = threading.Event()

    def writer() -> None:
        with path.open("a") as f:
            for i, r in enumerate(rows):
                f.write(json.dumps(r) + "\n")
                if i % 100 == 99:
                    f.flush()
                    time.sleep(0.15)
        written.set()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        code = main(["watch", str(path), "--metric", "correct", "--baseline", "base",
                     "--candidate", "cand", "--follow", "--poll", "0.1", "--timeout", "60",
                     "--json", str(tmp_path / "w.json")])  # fmt: skip
    finally:
        thread.join()
    assert code == 0
    report = json.loads((tmp_path / "w.json").read_text())
    pair = report["pairs"][0]
    assert report["decided"] and report["verdict"] == "PROGRESS"
    assert pair["n_seen"] < 1500  # it stopped before the writer had finished
    assert "look:" in capsys.readouterr().err
    # the stop is the one the finished file gives: a look never depended on rows to come
    final = calipers.watch(path, "metric", baseline="base", candidates=["cand"], metric="correct")
    assert final.to_dict()["pairs"][0]["stopped_at"] == pair["stopped_at"]


def test_compare_says_when_it_is_a_peek_and_gives_the_sequence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _pairs(300, 0.5, 0.6, seed=9)
    rows = [r for r in rows if r["run"] == "base" or int(r["sample_id"][1:]) < 120]
    path = _write(tmp_path / "runs.jsonl", rows)
    capsys.readouterr()
    assert main(["compare", str(path), "--scheme", "metric", "--metric", "correct", "--baseline",
                 "base", "--candidate", "cand", "--sequential", "--json", "-"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert any("120 of the 300 samples" in n and "calipers watch" in n for n in report["notes"])
    sequential = report["sequential"]
    assert sequential["kind"] == "watch" and sequential["pairs"][0]["n_seen"] == 120
    low, high = sequential["pairs"][0]["interval_at_last"]
    fixed = report["pairs"][0]["composite"]
    assert low <= fixed["low"] and high >= fixed["high"]  # wider: valid at every look


def test_a_decided_pair_is_not_traced_past_its_stop_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`calipers watch` reports a decided pair at its stop: the sequence over the units after it
    (the interval at the last unit, the path) is not computed at all — counted here by the units
    the sequence's functions see — and the report says so; --full-path computes it as before,
    and the decision and its interval are the same either way."""
    from calipers.verdicts import sequential_trace

    seen: list[int] = []
    for name in ("confidence_sequence", "interval_trace"):
        real = getattr(sequential_trace, name)

        def counted(values: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            seen.append(int(np.asarray(values).size))
            return _real(values, *args, **kwargs)

        monkeypatch.setattr(sequential_trace, name, counted)
    path = _write(tmp_path / "runs.jsonl", _pairs(3000, 0.4, 0.8, seed=12))

    def watched(*extra: str) -> dict[str, Any]:
        seen.clear()
        capsys.readouterr()
        assert main(["watch", str(path), "--metric", "correct", "--baseline", "base",
                     "--candidate", "cand", "--json", "-", *extra]) == 0  # fmt: skip
        return json.loads(capsys.readouterr().out)

    report = watched()
    pair = report["pairs"][0]
    stop = pair["stopped_at"]
    assert stop is not None and stop < 300 and pair["n_seen"] == 3000
    assert seen and max(seen) <= stop  # nothing past the stop was computed
    assert pair["interval_at_last"] is None and pair["traced_to"] == stop
    assert pair["path"][-1][0] == stop and len(pair["path"]) > 10
    assert any(f"the one at the stop, unit {stop}" in n and "--full-path" in n
               for n in report["notes"])  # fmt: skip
    full = watched("--full-path")
    traced = full["pairs"][0]
    assert max(seen) == 3000 and traced["traced_to"] == 3000
    assert traced["interval_at_last"] is not None
    assert not any("--full-path" in n for n in full["notes"])
    for key in ("stopped_at", "decision", "interval_at_stop"):
        assert traced[key] == pair[key]


def test_an_undecided_pair_reports_its_last_interval(tmp_path: Path) -> None:
    """Nothing lies past the stop of a pair that has not stopped: its last interval is shown."""
    path = _write(tmp_path / "runs.jsonl", _pairs(200, 0.5, 0.5, seed=2))
    result = calipers.watch(path, "metric", baseline="base", candidates=["cand"],
                            metric="correct", full_path=False)  # fmt: skip
    pair = result.to_dict()["pairs"][0]
    assert pair["stopped_at"] is None and pair["traced_to"] == 200
    low, high = pair["interval_at_last"]
    assert low < 0 < high
