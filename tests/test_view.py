"""`calipers view`: every page and its JSON twin over a store built here (Starlette's test client),
the compare twin against `calipers compare --json`, hostile names inert on every page, the
security headers on every response, a store busy with a writer in another process (503, then the
page), a writer importing while pages are read in a loop, the command's errors and Ctrl-C, and
one flow in headless Chromium (runs → compare → flips → sample) that requests nothing elsewhere."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from starlette.testclient import TestClient

from browser import HOSTILE as BROWSER_HOSTILE
from calipers.cli.main import main
from calipers.data.store import Store
from calipers.view import create_app
from calipers.view.comparing import PER_PAGE

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
# names that would be markup, a script or terminal markup if any page did not escape them
HOSTILE = ["<script>alert(1)</script>", "[red]x[/]", '"><img src=x onerror=alert(1)>']
HOSTILE_TASK = "<script>alert('task')</script>"
HOSTILE_ID = "\"><img src=x onerror=alert('id')>"
RAW_MARKUP = ["<script>", "<img src=x", '<a href="javascript', "<b>roughly"]
BASE = "http://127.0.0.1"
CALIPERS = [sys.executable, "-c", "from calipers.cli.main import run; run()"]  # the command


def _rows(run: str, shift: float, seed: int, *, say: str = "") -> list[dict[str, Any]]:
    """Two tasks × 30 samples × 2 epochs of pass/fail answers with text, a judge with a
    rationale, telemetry; `shift` moves the pass rate, `say` is put into every output."""
    import random

    rng = random.Random(seed)
    out = []
    for task in ("arithmetic", HOSTILE_TASK):
        for i in range(30):
            sid = HOSTILE_ID if (task == "arithmetic" and i == 29) else f"s{i:02d}"
            for epoch in range(2):
                ok = rng.random() < 0.62 + 0.01 * (i % 7) + shift
                error = "timeout after 30 s" if run == "new" and i == 7 and epoch == 1 else None
                answer = f"The answer is {2 * i}." if ok else f"I think it is {2 * i + 1}, roughly."
                why = "Right and brief." if ok else f"Wrong sum <b>roughly</b>.{say}"
                out.append({
                    "run": run, "task": task, "sample_id": sid, "epoch": epoch,
                    "input": f"What is {i} + {i}? Answer briefly.", "expected": str(2 * i),
                    "output": None if error else answer + say, "error": error,
                    "correct": None if error else ok,
                    "scores": {} if error else {"accuracy": float(ok)},
                    "cost_usd": 0.001, "tokens_in": 40, "tokens_out": 12, "latency_s": 0.8,
                    "assertions": [] if error else [
                        {"type": "contains", "name": "has-number", "passed": ok}],
                    "judgments": [] if error else [
                        {"judge": "judge-a", "score": 4 if ok else 2, "rationale": why}],
                })  # fmt: skip
    return out


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of runs base and new (a regression), the docs' layered example (prompt-v1,
    prompt-v2), and one run per hostile name with base's samples and hostile outputs."""
    tmp = tmp_path_factory.mktemp("view")
    rows = _rows("base", 0.0, 1) + _rows("new", -0.25, 2)
    for k, name in enumerate(HOSTILE + BROWSER_HOSTILE):
        rows += _rows(name, -0.1, 10 + k, say=f" {name}")
    store_path = tmp / "store.duckdb"
    with Store(store_path) as store:
        store.import_files([_write(tmp / "runs.jsonl", rows), EXAMPLES / "layered.jsonl"])
    return store_path


@pytest.fixture(scope="module")
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(db), base_url=BASE) as test_client:
        yield test_client


def _get(client: TestClient, path: str, **params: Any) -> Any:
    response = client.get(path, params=params)
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert response.headers["x-content-type-options"] == "nosniff"
    return response


PAIR = {"baseline": "base", "candidate": "new"}
SAMPLE = {"run": "base", "other": "new", "task": "arithmetic", "id": "s07", "scheme": "layered"}
PAGES = [
    ("/", {}),
    ("/compare", PAIR),
    ("/compare", {**PAIR, "scheme": "metric", "metric": "correct", "margin": "0.05"}),
    ("/flips", {**PAIR, "kind": "regressions"}),
    ("/sample", SAMPLE),
]


@pytest.mark.parametrize(("path", "params"), PAGES)
def test_every_page_and_its_json_twin(
    client: TestClient, db: Path, path: str, params: dict[str, str]
) -> None:
    page = _get(client, path, **params)
    assert page.status_code == 200, page.text[-800:]
    assert page.headers["content-type"].startswith("text/html")
    twin_path = "/runs.json" if path == "/" else path + ".json"
    assert f'href="{twin_path}' in page.text  # the page links its twin
    twin = _get(client, twin_path, **params)
    assert twin.status_code == 200
    assert twin.headers["content-type"].startswith("application/json")
    data = twin.json()
    if path == "/":
        runs = {r["run"]: r for r in data["runs"]}
        assert {"base", "new", "prompt-v1", "prompt-v2", *HOSTILE} <= set(runs)
        assert (runs["base"]["samples"], runs["base"]["observations"]) == (60, 120)
        assert runs["base"]["metrics"]["correct"]["n"] == 120 and runs["new"]["errors"] == 2
        assert runs["base"]["cost_usd"] == pytest.approx(0.12)
        # the layered composite: the mean `calipers score --scheme layered` reports
        import calipers

        with calipers.open(db=db) as samples:
            scored = calipers.score(samples, "layered").to_dict()["runs"]
        assert runs["prompt-v1"]["layered"] == pytest.approx(
            scored["prompt-v1"]["composite"]["mean"]
        )
        assert runs["new"]["layered"] == pytest.approx(scored["new"]["composite"]["mean"])
    elif path == "/compare":
        assert data["kind"] == "compare" and data["pairs"][0]["treatment"] == "new"
        assert f'id="verdict">{data["pairs"][0]["verdict"]}<' in page.text
        if "margin" in params:
            decision = data["pairs"][0]["margin"]["decision"]
            assert "margin-decision" in page.text and decision in page.text
    elif path == "/flips":
        assert data["filters"]["kind"] == "regressions" and data["items"]
        assert {i["direction"] for i in data["items"]} == {"regression"}
    else:
        assert data["task"] == "arithmetic" and data["runs"] == ["base", "new"]
        assert [e["epoch"] for e in data["epochs"]] == [0, 1]
        assert data["change"]["sample_id"] == "s07"


def test_many_layered_runs_show_their_composites_when_computed(
    client: TestClient, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past SYNC_LIMIT observations the composites are computed on a thread: the runs page
    shows at once, says they are coming and reloads itself until they are there."""
    from calipers.view import runs as listing

    expected = {r["run"]: r["layered"] for r in _get(client, "/runs.json").json()["runs"]}
    monkeypatch.setattr(listing, "SYNC_LIMIT", 0)
    with TestClient(create_app(db), base_url=BASE) as fresh:
        first = _get(fresh, "/")
        data = _get(fresh, "/runs.json").json()
        if data["layered_pending"]:  # (the thread may already be done on a fast machine)
            assert 'id="pending"' in first.text and '<meta http-equiv="refresh"' in first.text
        deadline = time.monotonic() + 30
        while data["layered_pending"] and time.monotonic() < deadline:
            time.sleep(0.05)
            data = _get(fresh, "/runs.json").json()
        assert {r["run"]: r["layered"] for r in data["runs"]} == expected
        assert 'id="pending"' not in _get(fresh, "/").text


@pytest.mark.parametrize(
    "options",
    [
        ["--scheme", "metric", "--metric", "correct", "--margin", "0.05", "--cluster", "sample_id"],
        ["--scheme", "layered"],
    ],
)
def test_compare_twin_is_what_calipers_compare_json_writes(
    client: TestClient, db: Path, tmp_path: Path, options: list[str]
) -> None:
    out = tmp_path / "compare.json"
    code = main(["compare", "--db", str(db), "--baseline", "base", "--candidate", "new",
                 *options, "--gate", "none", "--json", str(out), "-q"])  # fmt: skip
    assert code == 0
    params = dict(
        PAIR, **{o.lstrip("-"): v for o, v in zip(options[::2], options[1::2], strict=True)}
    )
    twin = _get(client, "/compare.json", **params)
    assert twin.status_code == 200
    assert twin.text == out.read_text(encoding="utf-8")  # the same document, byte for byte


def test_the_compare_query_reads_as_the_command_line_does(client: TestClient) -> None:
    ticked = client.get("/compare.json", params=[("run", "new"), ("run", "base")]).json()
    assert (ticked["control"], ticked["pairs"][0]["treatment"]) == ("base", "new")
    assert ticked["scheme"] == "layered"  # both runs have assertions and judgments
    one = client.get("/compare", params={"run": "base"})
    assert one.status_code == 400 and "tick two runs" in one.text
    other = client.get("/compare.json", params={**PAIR, "scheme": "objective"})
    assert other.status_code == 400 and "calipers compare --scheme objective" in other.text
    switched = client.get("/compare", params={**PAIR, "scheme": "layered", "metric": "correct"})
    assert switched.status_code == 200 and "the metric left out" in switched.text
    level = client.get("/compare.json", params={**PAIR, "confidence": "0.9"}).json()
    assert level["parameters"]["confidence_level"] == 0.9
    bad = client.get("/compare.json", params={**PAIR, "confidence": "2"}).json()
    assert bad["status"] == 400 and "`confidence`" in bad["error"]  # named as in the query
    metric = client.get("/compare.json", params={**PAIR, "scheme": "metric"}).json()
    assert metric["parameters"]["metric"] == "correct"  # the first metric both runs have


def test_flips_are_filtered_paged_and_ordered(client: TestClient) -> None:
    every = _get(client, "/flips.json", **PAIR).json()
    summary = every["summary"]
    assert every["total"] == summary["n_regressions"] + summary["n_improvements"] > PER_PAGE
    assert len(every["items"]) == PER_PAGE and every["pages"] == 2
    sizes = [abs(i["difference"]) for i in every["items"] if i["difference"] is not None]
    assert sizes == sorted(sizes, reverse=True)
    second = _get(client, "/flips.json", **PAIR, page="2").json()
    assert len(second["items"]) == every["total"] - PER_PAGE
    page = _get(client, "/flips", **PAIR, page="2")
    assert 'rel="prev"' in page.text and "page 2 of 2" in page.text
    regressions = _get(client, "/flips.json", **PAIR, kind="regressions").json()
    assert regressions["total"] == summary["n_regressions"]
    improved = _get(client, "/flips.json", **PAIR, kind="improvements", task="arithmetic").json()
    assert {(i["direction"], i["task"]) for i in improved["items"]} == {
        ("improvement", "arithmetic")
    }
    assert improved["total"] == summary["tasks"]["arithmetic"]["n_improvements"]
    errors = _get(client, "/flips.json", **PAIR, **{"class": "error"}).json()
    assert {i["kind"] for i in errors["items"]} == {"error"} and errors["total"] >= 1
    for bad, status in (({"kind": "sideways"}, 400), ({"class": "odd"}, 400),
                        ({"task": "nope"}, 404), ({"page": "x"}, 400)):  # fmt: skip
        response = _get(client, "/flips.json", **PAIR, **bad)
        assert response.status_code == status and response.json()["error"]


def test_sample_page_shows_both_sides_the_diff_the_judges_and_where_it_came_from(
    client: TestClient, db: Path
) -> None:
    twin = _get(client, "/sample.json", **SAMPLE).json()
    sides = twin["epochs"][1]["sides"]
    assert sides["new"]["error"] == "timeout after 30 s" and sides["new"]["output"] is None
    assert sides["base"]["telemetry"]["tokens_in"] == 40
    assert sides["base"]["source"].endswith("runs.jsonl") and sides["base"]["imported_at"]
    page = _get(client, "/sample", **SAMPLE).text
    assert "What is 7 + 7? Answer briefly." in page and "timeout after 30 s" in page
    assert "judge-a" in page and "runs.jsonl" in page
    flipped = next(
        i
        for i in _get(client, "/flips.json", **PAIR, kind="regressions").json()["items"]
        if i["kind"] == "stable"
    )
    params = {**SAMPLE, "task": flipped["task"], "id": flipped["sample_id"]}
    page = _get(client, "/sample", **params).text
    assert "<del>" in page and "<ins>" in page  # the word diff of the two outputs
    assert "Wrong sum &lt;b&gt;roughly&lt;/b&gt;." in page  # a rationale, escaped
    missing = _get(client, "/sample", **{**SAMPLE, "id": "none-such"})
    assert missing.status_code == 404 and "has no sample" in missing.text


def _inert(html: str) -> None:
    for raw in RAW_MARKUP:
        assert raw not in html, raw
    # no address on any page leaves the server: every src, href and action is a path here
    found = re.findall(r"""(?:src|href|action)\s*=\s*["']?\s*(?:[a-z]+:|//)""", html, re.I)
    assert found == ['href="data:'], found  # the empty icon, which spares a /favicon.ico


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_inert_on_every_page(client: TestClient, name: str) -> None:
    pair = {"baseline": "base", "candidate": name}
    pages = {
        "/": {},
        "/compare": pair,
        "/flips": {**pair, "kind": "regressions"},
        "/sample": {
            "run": name,
            "other": "base",
            "task": HOSTILE_TASK,
            "id": "s01",
            "scheme": "metric",
            "metric": "correct",
        },
        "/flips?task": {**pair, "task": HOSTILE_TASK},
        "/sample?id": {"run": "base", "other": name, "task": "arithmetic", "id": HOSTILE_ID},
        "/compare?missing": {"baseline": "base", "candidate": name + "-missing"},
    }
    for key, params in pages.items():
        path = key.split("?")[0]
        page = _get(client, path, **params)
        assert page.status_code == (404 if "missing" in key else 200), (key, page.text[-600:])
        _inert(page.text)
        if path != "/" and "missing" not in key:
            twin = _get(client, path + ".json", **params)
            assert twin.status_code == 200
            assert name in json.dumps(twin.json(), ensure_ascii=False)
    runs = _get(client, "/").text
    from markupsafe import escape

    assert str(escape(name)) in runs and str(escape(HOSTILE_TASK)) not in runs
    assert str(escape(HOSTILE_TASK)) in _get(client, "/compare", **pair).text


def test_every_response_carries_the_security_headers(client: TestClient) -> None:
    responses = [
        client.get("/nowhere"),
        client.post("/", data={"x": "1"}),
        client.get("/compare", params={"baseline": "base"}),
        client.get("/", headers={"host": "evil.example"}),  # DNS rebinding: refused
    ]
    assert [r.status_code for r in responses] == [404, 405, 400, 400]
    assert (
        "no page at /nowhere" in responses[0].text
        and "Pages are read with GET" in responses[1].text
    )
    assert client.get("/nowhere.json").json()["status"] == 404
    for response in responses:
        assert "form-action 'self'" in response.headers["content-security-policy"]
        assert response.headers["x-content-type-options"] == "nosniff"


def _hold_for_writing(db: Path, imported: Path) -> subprocess.Popen[str]:
    """Another process that imports `imported` into the store and then keeps it open for
    writing (DuckDB's lock), until its stdin closes."""
    code = (
        "import sys; from calipers.data.store import Store\n"
        "with Store(sys.argv[1]) as store:\n"
        "    store.import_files([sys.argv[2]]); print('held', flush=True); sys.stdin.read()"
    )
    env = {**os.environ, "CALIPERS_LOCK_WAIT": "20"}
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(db), str(imported)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder  # fmt: skip


def test_a_store_busy_with_a_writer_shows_pages_as_they_were_or_503(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calipers.view import reading

    monkeypatch.setattr(reading, "PAUSES", (0.05,))
    imported = _write(tmp_path / "held.jsonl", _rows("held-run", 0.0, 99))
    with TestClient(create_app(db), base_url=BASE) as fresh:
        assert _get(fresh, "/").status_code == 200  # kept, for the store as it is now
        holder = _hold_for_writing(db, imported)
        try:
            # written, still held: the runs page as it was, said so, and reloading itself
            kept = _get(fresh, "/")
            assert kept.status_code == 200 and "x-calipers-store" in kept.headers
            assert 'id="stale"' in kept.text and '<meta http-equiv="refresh"' in kept.text
            assert "held-run" not in kept.text
            assert "held-run" not in _get(fresh, "/runs.json").text
            # a page never shown has nothing to show: 503, and the page reloads itself
            busy = _get(fresh, "/sample", **SAMPLE)
            assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
            assert "Store busy, retrying" in busy.text
            assert '<meta http-equiv="refresh" content="1">' in busy.text
            assert _get(fresh, "/sample.json", **SAMPLE).json()["status"] == 503
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=30)
            fresh_page = _get(fresh, "/")
            assert fresh_page.status_code == 200 and "held-run" in fresh_page.text
            assert "x-calipers-store" not in fresh_page.headers
            assert _get(fresh, "/sample", **SAMPLE).status_code == 200
        finally:
            holder.kill()
            holder.wait()


def test_pages_read_in_a_loop_while_another_process_imports(db: Path, tmp_path: Path) -> None:
    """Two `calipers import`s in another process while pages are requested in a loop: the
    imports succeed (the viewer never starves them), every request succeeds — at worst after one
    503 and the retry its page asks for — and the new runs show on reload. Each page is kept
    for the store's state: a write makes it read again, or shown as it was while the writer
    still holds the store (503 is for a page never shown: tested above)."""
    files = [_write(tmp_path / f"more{k}.jsonl", _rows(f"later-{k}", 0.0, 50 + k)) for k in (0, 1)]
    results: list[int] = []

    def write() -> None:
        env = {**os.environ, "CALIPERS_LOCK_WAIT": "30"}
        for path in files:
            command = [*CALIPERS, "import", str(path), "--db", str(db), "-q"]
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
            results.append(done.returncode)

    writer = threading.Thread(target=write)
    statuses: list[tuple[str, int]] = []
    pages = [("/", {}), ("/compare.json", PAIR), ("/flips", PAIR), ("/sample", SAMPLE)]
    with TestClient(create_app(db), base_url=BASE) as fresh:
        assert {fresh.get(url, params=params).status_code for url, params in pages} == {200}
        writer.start()
        while writer.is_alive():
            for url, params in pages:
                response = fresh.get(url, params=params)
                if response.status_code == 503:  # the page's own retry, a second later
                    time.sleep(1)
                    response = fresh.get(url, params=params)
                statuses.append((url, response.status_code))
        writer.join()
        assert results == [0, 0]
        assert {s for _, s in statuses} == {200}, [s for s in statuses if s[1] != 200]
        runs = {r["run"] for r in fresh.get("/runs.json").json()["runs"]}
        assert {"later-0", "later-1"} <= runs
    assert len(statuses) >= 6  # the loop ran while both imports did


def test_view_command_errors_say_what_and_how(
    tmp_path: Path, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", "--db", str(tmp_path / "none.duckdb")]) == 1
    err = capsys.readouterr().err
    assert "no store at" in err and "--db PATH" in err and "Traceback" not in err
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["view", "--db", str(db), "--host", "0.0.0.0", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert "warning:" in err and "0.0.0.0" in err and f"port {port}" in err and "--port" in err


@pytest.mark.slow  # a process start and a server: ~3 s
def test_view_serves_until_ctrl_c_and_stops_cleanly(db: Path) -> None:
    server = subprocess.Popen(
        [*CALIPERS, "view", "--db", str(db), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line
        from urllib.request import urlopen

        with urlopen(url.group(0) + "runs.json", timeout=60) as response:
            assert response.status == 200 and json.loads(response.read())["runs"]
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    finally:
        server.kill()
    assert server.returncode in (0, 130) and "Traceback" not in err


@pytest.fixture
def served(db: Path) -> Iterator[str]:
    """The app under uvicorn on a thread, on 127.0.0.1 and a free port."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(db), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.mark.slow  # a browser: ~3 s
def test_browser_flow_runs_compare_flips_sample_offline(chromium: Any, served: str) -> None:
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    requests: list[str] = []
    dialogs: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(served + "/")
    page.check('input[name="run"][value="base"]')
    page.check('input[name="run"][value="new"]')
    page.click("#compare-button")
    page.wait_for_selector("#verdict")
    assert page.inner_text("#verdict") == "REGRESS"
    page.click("#regressions-link")
    page.wait_for_selector("#flips")
    directions = page.locator("#flips tbody tr td:nth-child(3)").all_inner_texts()
    assert directions and all("regression" in d for d in directions)
    page.locator("a.sample-link").first.click()
    page.wait_for_selector("#input")
    assert "Answer briefly." in page.inner_text("#input")
    page.goto(served + "/compare?baseline=base&candidate=" + "%3Cscript%3Ealert(1)%3C%2Fscript%3E")
    page.wait_for_selector("#verdict")
    assert page.evaluate("window.__pwned") is None and dialogs == []
    hosts = {urlsplit(url).hostname for url in requests}
    assert hosts == {"127.0.0.1"}, requests
