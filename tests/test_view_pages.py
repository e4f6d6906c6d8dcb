"""`calipers view`'s Judges, Repeats, Leaderboard and History pages, a comparison of several runs
and the flips' size filter: each page and its JSON twin against the library call's own numbers
(`calipers.score`, `calipers.compare`, the pairwise judge statistics, the rubric history), the
twins of leaderboard and compare against the commands' `--json`, byte for byte, hostile names
(markup and ANSI codes) inert on every page, an unknown run or metric a 404 that says so, and a
store busy with a writer. `build_store` is also the store benchmarks/bench_view.py screenshots."""

from __future__ import annotations

import json
import random
import re
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient

import calipers
from calipers.cli.main import main
from calipers.data.store import Store
from calipers.view import create_app

BASE = "http://127.0.0.1"
ANSI = "\x1b[31mred\x1b[0m"
HOSTILE = ["<script>alert(1)</script>", ANSI]
SERIES = ["alpha-v1", "alpha-v2", "alpha-v3"]
LABELLED = "alpha-v2"  # the run with human labels on 32 of its 40 samples (PPI++ needs 30)
NAV = ['href="/leaderboard"', 'href="/judges"', 'href="/repeats"', 'href="/history"']


def _rows(run: str, rate: float, seed: int, *, epochs: int = 3, human: bool = False) -> list[dict]:
    """Two tasks × 20 samples × `epochs`, pass/fail with a score, two judges who mostly agree
    (judge-b a point more lenient), and — with `human` — a human label on 16 samples a task."""
    rng = random.Random(seed)
    out = []
    for task in ("algebra", "geometry"):
        for i in range(20):
            quality = min(0.95, max(0.05, rate + 0.03 * (i % 5) - 0.06))
            for epoch in range(epochs):
                ok = rng.random() < quality
                judge = 2 + 2 * ok + (rng.random() < 0.3)
                row = {
                    "run": run, "task": task, "sample_id": f"q{i:02d}", "epoch": epoch,
                    "input": f"Solve item {i}.", "expected": str(i),
                    "output": f"It is {i if ok else i + 1}. {run}", "correct": ok,
                    "scores": {"accuracy": float(ok)}, "cost_usd": 0.002, "tokens_in": 30,
                    "judgments": [
                        {"judge": "judge-a", "score": judge, "scale_min": 1, "scale_max": 5,
                         "rationale": f"Scored {judge} <b>for</b> {run}"},
                        {"judge": "judge-b", "score": min(5, judge + 1), "scale_min": 1,
                         "scale_max": 5},
                    ],
                }  # fmt: skip
                if human and i < 16:
                    row["human"] = [{"score": float(judge - (rng.random() < 0.5))}]
                out.append(row)
    return out


def _pairwise(con: Any) -> None:
    """A pairwise judge that picks the output shown first 80% of the time: alpha-v1 against
    alpha-v2 on every shared (task, sample) of epoch 0."""
    rng, when = random.Random(7), datetime(2026, 11, 1)
    rows = []
    for task in ("algebra", "geometry"):
        for i in range(20):
            ab = "a" if rng.random() < 0.8 else "b"
            ba = "b" if rng.random() < 0.8 else "a"
            rows.append(("biased", "alpha-v1", "alpha-v2", task, f"q{i:02d}", 0, 0, ab, ba,
                         "first <i>wins</i>", None, None, None, "hash", when))  # fmt: skip
    con.executemany(
        "INSERT INTO pairwise (judge, run_a, run_b, task, sample_id, epoch, repeat, verdict_ab, "
        "verdict_ba, rationale_ab, rationale_ba, error_ab, error_ba, prompt_hash, judged_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def _rubric_history(con: Any) -> None:
    """Recorded rubric evaluations of task algebra: alpha-v1's then alpha-v2's."""
    start = datetime(2026, 11, 1)
    rows = []
    for seq, (run, i) in enumerate([(r, i) for r in SERIES[:2] for i in range(6)], start=1):
        final = 6.0 + (seq % 4) * 0.5
        rows.append((seq, start + timedelta(hours=seq), run, "algebra", f"q{i:02d}", 0, "sha",
                     *([7.0] * 7), final, final, "B"))  # fmt: skip
    con.executemany(
        "INSERT INTO rubric_history VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def build_store(path: Path) -> Path:
    """A store of three versions of one run (alpha-v1…v3, three epochs, two judges; v2 with
    human labels), a one-epoch run, the hostile names, pairwise verdicts and rubric history."""
    rows = _rows("alpha-v1", 0.55, 1) + _rows(LABELLED, 0.7, 2, human=True)
    rows += _rows("alpha-v3", 0.75, 3) + _rows("single", 0.6, 4, epochs=1)
    for k, name in enumerate(HOSTILE):
        rows += _rows(name, 0.6, 10 + k)
    source = path.with_suffix(".jsonl")
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with Store(path) as store:
        store.import_files([source])
        _pairwise(store.con)
        _rubric_history(store.con)
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("view_pages") / "store.duckdb")


@pytest.fixture(scope="module")
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(db), base_url=BASE) as test_client:
        yield test_client


def _get(client: TestClient, path: str, params: Any = None, status: int = 200) -> Any:
    response = client.get(path, params=params)
    assert response.status_code == status, (path, params, response.text[-600:])
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    if not path.split("?")[0].endswith(".json"):
        for link in NAV:  # every page links every page
            assert link in response.text, link
    return response


def _score(db: Path, run: str | None, scheme: str, **options: Any) -> dict[str, Any]:
    with calipers.open(db=db, runs=[run] if run else None) as samples:
        return calipers.score(samples, scheme, **options).to_dict()


def test_judges_pages_show_the_library_figures(client: TestClient, db: Path) -> None:
    from calipers.grading.pairwise import judge_stats
    from calipers.running.pairwise import read_pairs

    overview = _get(client, "/judges.json").json()
    assert {r["run"] for r in overview["runs"]} >= {*SERIES, *HOSTILE}
    labelled = next(r for r in overview["runs"] if r["run"] == LABELLED)
    assert labelled["labelled"] == 96 and labelled["judges"] == ["judge-a", "judge-b"]
    expected_bias = [s.to_dict() for s in judge_stats(read_pairs(db))]
    assert overview["pairwise"]["judges"] == expected_bias
    assert expected_bias[0]["first_shown"] > 0.7  # the biased judge is seen as biased
    page = _get(client, "/judges").text
    assert f"{expected_bias[0]['first_shown']:.2f}" in page and 'id="position-bias"' in page

    twin = _get(client, "/judges.json", {"run": LABELLED}).json()
    report = _score(db, LABELLED, "layered", calibrate_judges=True)
    summary = report["runs"][LABELLED]
    layered = twin["layered"]
    assert layered["judge_pearson"] == pytest.approx(summary["judge_pearson"])
    assert layered["judge_krippendorff_alpha"] == pytest.approx(summary["judge_krippendorff_alpha"])
    assert layered["human_pearson"] == pytest.approx(summary["human_pearson"])
    calibration = report["judge_calibration"][LABELLED]
    assert "refusal" not in calibration
    for key in ("estimate", "low", "high", "judge_mean"):
        assert layered["judge_calibration"][key] == pytest.approx(calibration[key])
    assert [j["judge"] for j in twin["judges"]] == ["judge-a", "judge-b"]
    assert twin["agreement"][0]["judges"] == ["judge-a", "judge-b"]
    assert twin["pairwise"]["judges"] == expected_bias  # its only pairwise verdicts
    page = _get(client, "/judges", {"run": LABELLED}).text
    assert f"{summary['judge_pearson']:.2f}" in page
    # the agreement figures' intervals, the library's (stats.agreement_intervals) as the JSON's
    assert layered["agreement"] == summary["agreement"]
    for key in ("judge_pearson", "judge_krippendorff_alpha", "human_pearson"):
        found = summary["agreement"][key]
        assert found["estimate"] == pytest.approx(summary[key])
        shown = (f"[{found['low']:.2f}, {found['high']:.2f}]" if found["low"] is not None
                 else f"no interval: {found['refusal']}")  # fmt: skip
        assert shown in page, key
    pair = twin["agreement"][0]
    assert pair["low"] is not None and f"[{pair['low']:.2f}, {pair['high']:.2f}]" in page
    assert f"{calibration['estimate']:.3f}" in page and f"{calibration['low']:.3f}" in page
    # a run without labels says so; its pairwise table holds only its verdicts (none here)
    plain = _get(client, "/judges.json", {"run": "alpha-v3"}).json()
    assert plain["layered"]["judge_calibration"] is None and plain["pairwise"]["verdicts"] == 0
    assert "No human labels" in _get(client, "/judges", {"run": "alpha-v3"}).text


def test_repeats_page_shows_pass_at_k_and_links_the_flaky_samples(
    client: TestClient, db: Path
) -> None:
    twin = _get(client, "/repeats.json", {"run": "alpha-v1"}).json()
    expected = _score(db, "alpha-v1", "metric", metric="correct")["runs"]["alpha-v1"]["repeats"]
    assert twin["metric"] == "correct" and twin["repeats"] == expected
    assert [e["k"] for e in expected["pass@k"]] == [1, 2, 3] and expected["n_flaky"] > 0
    page = _get(client, "/repeats", {"run": "alpha-v1"}).text
    for e in expected["pass^k"]:
        assert f"{e['estimate']:.3f}" in page and f"{e['low']:.3f}" in page
    links = re.findall(r'href="(/sample\?[^"]+)" class="sample-link"', page)
    assert len(links) == len(expected["flaky"])
    assert _get(client, links[0].replace("&amp;", "&")).status_code == 200
    other = _get(client, "/repeats.json", {"run": "alpha-v1", "metric": "accuracy"}).json()
    assert other["metric"] == "accuracy"
    listed = {r["run"] for r in _get(client, "/repeats.json").json()["runs"]}
    assert "single" not in listed and set(SERIES) <= listed
    single = _get(client, "/repeats", {"run": "single"})
    assert 'id="no-repeats"' in single.text
    assert _get(client, "/repeats.json", {"run": "single"}).json()["repeats"] is None
    bad = _get(client, "/repeats.json", {"run": "alpha-v1", "metric": "nope"}, status=400).json()
    assert "no metric 'nope'" in bad["error"]


@pytest.mark.parametrize(
    "options", [["--scheme", "metric", "--metric", "accuracy"], ["--scheme", "layered"]]
)
def test_leaderboard_twin_is_what_calipers_leaderboard_json_writes(
    client: TestClient, db: Path, tmp_path: Path, options: list[str]
) -> None:
    out = tmp_path / "board.json"
    assert main(["leaderboard", "--db", str(db), *options, "--json", str(out), "-q"]) == 0
    params = {o.lstrip("-"): v for o, v in zip(options[::2], options[1::2], strict=True)}
    twin = _get(client, "/leaderboard.json", params)
    assert twin.text == out.read_text(encoding="utf-8")  # the same document, byte for byte
    report = twin.json()
    page = _get(client, "/leaderboard", params).text
    ranked = [r["run"] for r in report["ranking"]["runs"]]
    shown = re.findall(r'<td class="left name">([^<]+)</td>', page)
    from markupsafe import escape

    assert shown[: len(ranked)] == [str(escape(r)).replace("\x1b", "\\x1b") for r in ranked]
    best = report["runs"][ranked[0]]["composite"]
    assert f"{best['mean']:.3f}" in page and f"{best['low']:.3f}" in page


def test_history_shows_the_series_imports_and_rubric_history(client: TestClient, db: Path) -> None:
    from calipers.schemes.rubric.history import history_series

    twin = _get(client, "/history.json", {"run": LABELLED}).json()
    assert twin["stem"] == "alpha" and [r["run"] for r in twin["series"]] == SERIES
    runs = {r["run"]: r for r in _get(client, "/runs.json").json()["runs"]}
    assert twin["series"][1]["metrics"] == runs[LABELLED]["metrics"]  # the runs page's numbers
    [imported] = twin["imports"]
    assert (imported["observations"], imported["samples"], imported["tasks"]) == (120, 40, 2)
    assert imported["source"].endswith("store.jsonl") and imported["format"]
    with Store(db, read_only=True) as store:
        assert twin["rubric"] == history_series(store, ["algebra"])
    page = _get(client, "/history", {"run": LABELLED}).text
    assert page.count('class="compare-link"') == 2 and 'class="this"' in page
    assert "Rubric history" in page
    groups = _get(client, "/history.json").json()["stems"]
    assert groups["alpha"] == SERIES and groups["single"] == ["single"]
    by_stem = _get(client, "/history.json", {"stem": "alpha-v"}).json()
    assert [r["run"] for r in by_stem["series"]] == SERIES and "imports" not in by_stem


def test_several_runs_each_against_the_baseline(
    client: TestClient, db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "several.json"
    code = main(["compare", "--db", str(db), "--scheme", "metric", "--metric", "correct",
                 "--baseline", "alpha-v1", "--candidate", "alpha-v2", "--candidate", "alpha-v3",
                 "--gate", "none", "--json", str(out), "-q"])  # fmt: skip
    assert code == 0
    ticked = [("run", "alpha-v3"), ("run", "alpha-v2"), ("run", "alpha-v1"),
              ("baseline", "alpha-v1"), ("scheme", "metric"), ("metric", "correct")]  # fmt: skip
    twin = _get(client, "/compare.json", ticked)
    assert twin.text == out.read_text(encoding="utf-8")
    report = twin.json()
    page = _get(client, "/compare", ticked).text
    assert f'id="verdict">{report["verdict"]}<' in page
    assert page.index('id="verdict"') < page.index('id="pairs"')  # the verdict first
    for pair in report["pairs"]:
        assert f">{pair['verdict']}<" in page
    links = re.findall(r'href="(/compare\?[^"]+)" class="pair-link"', page)
    assert len(links) == 2
    pair = _get(client, links[0].replace("&amp;", "&").replace("/compare?", "/compare.json?"))
    assert pair.json()["pairs"][0]["treatment"] == "alpha-v2"  # in order of import, then name
    # without a baseline chosen, the earliest import is the baseline; the repeated candidate
    # parameter names the same comparison
    again = _get(
        client,
        "/compare.json",
        [
            ("baseline", "alpha-v1"),
            ("candidate", "alpha-v3"),
            ("candidate", "alpha-v2"),
            ("scheme", "metric"),
            ("metric", "correct"),
        ],
    ).json()
    assert [p["treatment"] for p in again["pairs"]] == ["alpha-v3", "alpha-v2"]


def test_flips_filter_by_size(client: TestClient) -> None:
    pair = {"baseline": "alpha-v1", "candidate": "alpha-v3", "scheme": "metric",
            "metric": "correct"}  # fmt: skip
    every: list[dict[str, Any]] = []
    first = _get(client, "/flips.json", pair).json()
    for page in range(1, first["pages"] + 1):
        every += _get(client, "/flips.json", {**pair, "page": str(page)}).json()["items"]
    big = [f for f in every if f["difference"] is not None and abs(f["difference"]) >= 0.5]
    assert 0 < len(big) < len(every)
    sized = _get(client, "/flips.json", {**pair, "size": "0.5"}).json()
    assert sized["total"] == len(big) and sized["filters"]["size"] == 0.5
    assert all(abs(f["difference"]) >= 0.5 for f in sized["items"])
    page = _get(client, "/flips", {**pair, "size": "0.5", "kind": "regressions"}).text
    assert 'id="size"' in page and "changed by 0.5 or more" in page
    for bad in ("-1", "x", "inf"):
        assert _get(client, "/flips.json", {**pair, "size": bad}, status=400).json()["error"]


def _strings(data: Any) -> set[str]:
    if isinstance(data, dict):
        return {s for k, v in data.items() for s in (_strings(k) | _strings(v))}
    if isinstance(data, list):
        return {s for v in data for s in _strings(v)}
    return {data} if isinstance(data, str) else set()


RAW = ["<script>", "<img", "<b>for", "<i>wins", "\x1b"]


def _inert(html: str) -> None:
    for raw in RAW:
        assert raw not in html, raw
    found = re.findall(r"""(?:src|href|action)\s*=\s*["']?\s*(?:[a-z]+:|//)""", html, re.I)
    assert found == ['href="data:'], found


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_inert_on_the_new_pages(client: TestClient, name: str) -> None:
    pages = [
        ("/judges", {}), ("/judges", {"run": name}), ("/repeats", {}), ("/repeats", {"run": name}),
        ("/leaderboard", {}), ("/leaderboard", {"scheme": "metric", "metric": "correct"}),
        ("/history", {}), ("/history", {"run": name}),
        ("/compare", [("baseline", "alpha-v1"), ("candidate", name), ("candidate", "alpha-v2"),
                      ("scheme", "metric")]),
        ("/judges", {"run": name + "-missing"}),
    ]  # fmt: skip
    for path, params in pages:
        page = _get(client, path, params, status=404 if "missing" in str(params) else 200)
        _inert(page.text)
        twin = client.get(path + ".json", params=params)
        assert "\x1b" not in twin.text and "\x9b" not in twin.text  # escaped: \u001b
        if "missing" not in str(params) and path != "/leaderboard":
            assert name in _strings(twin.json())  # the name itself, as data
    from markupsafe import escape

    shown = str(escape(name)).replace("\x1b", "\\x1b")  # control characters made visible
    assert shown in _get(client, "/judges", {"run": name}).text
    # a form submits a name as the page shows it: the viewer finds the run it stands for
    assert _get(client, "/repeats.json", {"run": shown if name == ANSI else name}).json()["run"] \
        == name  # fmt: skip


def test_unknown_runs_and_metrics_are_a_404_that_says_so(client: TestClient) -> None:
    for path, params in [
        ("/judges", {"run": "nope"}), ("/repeats", {"run": "nope"}), ("/history", {"run": "nope"}),
        ("/leaderboard", {"metric": "nope"}), ("/history", {"stem": "nope"}),
        ("/compare", [("baseline", "alpha-v1"), ("candidate", "alpha-v2"), ("candidate", "nope")]),
    ]:  # fmt: skip
        page = _get(client, path, params, status=404)
        assert "nope" in page.text and "Traceback" not in page.text and 'id="hint"' in page.text
        twin = _get(client, path + ".json", params, status=404).json()
        assert twin["status"] == 404 and "nope" in twin["error"] and twin["hint"]
    bad = _get(client, "/leaderboard.json", {"scheme": "rubric"}, status=400).json()
    assert "calipers leaderboard --scheme rubric" in bad["hint"]


def test_new_pages_when_a_writer_holds_the_store(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page shown before is shown as it was while a writer holds the store; one never shown
    answers 503 and reloads itself."""
    from calipers.view import reading
    from test_view import _hold_for_writing, _write

    monkeypatch.setattr(reading, "PAUSES", (0.05,))
    copy = tmp_path / "store.duckdb"
    shutil.copy(db, copy)
    imported = _write(tmp_path / "held.jsonl", _rows("held-run", 0.5, 99, epochs=1))
    with TestClient(create_app(copy), base_url=BASE) as fresh:
        _get(fresh, "/judges", {"run": "alpha-v1"})
        holder = _hold_for_writing(copy, imported)
        try:
            kept = _get(fresh, "/judges", {"run": "alpha-v1"})
            assert "x-calipers-store" in kept.headers and 'id="stale"' in kept.text
            busy = _get(fresh, "/repeats", {"run": "alpha-v1"}, status=503)
            assert "Store busy, retrying" in busy.text and busy.headers["retry-after"] == "1"
            assert _get(fresh, "/leaderboard.json", status=503).json()["status"] == 503
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=30)
        assert "held-run" in _get(fresh, "/history.json").text  # a reload shows the write


@pytest.mark.slow  # a browser: ~3 s
def test_browser_tick_three_runs_and_open_a_pair(chromium: Any, db: Path) -> None:
    import socket
    import threading
    import time

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(db), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        page = chromium.new_page(viewport={"width": 1100, "height": 900})
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(url + "/")
        for run in SERIES:
            page.check(f'input[name="run"][value="{run}"]')
        page.check('input[name="baseline"][value="alpha-v1"]')
        page.click("#compare-button")
        page.wait_for_selector("#pairs")
        assert len(page.locator("#pairs tbody tr").all()) == 2
        page.locator("a.pair-link").first.click()
        page.wait_for_selector("#verdict")
        page.click("#nav-judges")
        page.wait_for_selector("#position-bias")
        page.click("#nav-leaderboard")
        page.wait_for_selector("#leaderboard")
        assert {urlsplit(u).hostname for u in requests} == {"127.0.0.1"}, requests
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
