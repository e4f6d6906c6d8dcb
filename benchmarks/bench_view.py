"""`calipers view` on a store of 100 runs × 10,000 samples: cold start and page times.

    .venv/bin/python benchmarks/bench_view.py          # the 100 × 10k store
    .venv/bin/python benchmarks/bench_view.py --big    # also the flips of a 2 × 1M comparison
    .venv/bin/python benchmarks/bench_view.py --screenshots docs/images   # the pages' pictures

Builds (once) benchmarks/data/view_100x10k.duckdb in SQL: 100 runs (run-000 … run-099) of
10,000 samples in 10 tasks, one epoch each — `correct` and scores{accuracy}, an input, the
expected answer and an output, cost and tokens, two assertions and an overall judgment with a
rationale, so the runs page computes a layered composite for every run. Then starts `calipers
view --port 0` in a fresh process (run from bytecode, `_machine.bytecode_env`) and times, over
HTTP on 127.0.0.1:

- cold start: from the process start to the listening line, and to the first runs page;
- each page the first time it is asked for (computed: a comparison is made, its plots drawn) and
  again (kept until the store changes: the median of 5).

With --big, the same server process is started on benchmarks/data/compare_metric_2x1m.duckdb (two
runs of 500,000 samples × 2 epochs; bench_compare.py builds it) and times the comparison page and
the first page of its flips. Goals (issue 37): cold start ≤ 1 s, any page ≤ 300 ms, the flips of a
2 × 1M comparison, first page, ≤ 1 s.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import urlopen

sys.path.insert(0, str(Path(__file__).parent))
from _machine import bytecode_env, save

DATA = Path(__file__).parent / "data"
STORE = DATA / "view_100x10k.duckdb"
BIG = DATA / "compare_metric_2x1m.duckdb"
RUNS, SAMPLES = 100, 10_000


def build_store(path: Path) -> None:
    """Built under a name of its own, then renamed: two benchmarks that start at once (each
    finding no store) must not both insert into one file (a store found with 2 × 10,000 rows per
    run, every key twice, read as two epochs of every sample, 2026-11-27)."""
    from calipers.data.store import Store

    building = path.with_name(f"{path.name}.building-{os.getpid()}")
    building.unlink(missing_ok=True)
    with Store(building) as store:
        store.con.execute(
            f"""
            INSERT INTO samples (run, task, sample_id, epoch, correct, scores, input, expected,
                                 output, cost_usd, tokens_in, tokens_out, assertions, judgments,
                                 source, imported_at)
            SELECT printf('run-%03d', r), 'task-' || (i % 10), 's' || i, 0, ok,
                   MAP {{'accuracy': ok::DOUBLE}},
                   'Question ' || i || ': what is ' || i || ' + ' || i || '? Answer briefly.',
                   (2 * i)::VARCHAR,
                   CASE WHEN ok THEN 'The answer is ' || (2 * i) || '.'
                        ELSE 'I think it is ' || (2 * i + 1) || ', roughly.' END,
                   0.001, 40, 12,
                   [{{'name': 'has-number', 'type': 'contains', 'layer': NULL, 'weight': 1.0,
                      'passed': ok, 'value': NULL, 'detail': NULL}},
                    {{'name': 'short', 'type': 'max_length', 'layer': NULL, 'weight': 1.0,
                      'passed': random() < 0.9, 'value': NULL, 'detail': NULL}}],
                   [{{'judge': 'judge-a', 'dimension': NULL,
                      'score': CASE WHEN ok THEN 4 ELSE 2 END, 'scale_min': NULL,
                      'scale_max': NULL,
                      'rationale': CASE WHEN ok THEN 'Right and brief.' ELSE 'Wrong sum.' END,
                      'red_flags': NULL, 'bonuses': NULL, 'error': NULL, 'prompt_hash': NULL,
                      'repeat': 0}}],
                   'benchmarks/bench_view.py', now()::TIMESTAMP
            FROM (SELECT r, i, random() < 0.6 + 0.001 * r AS ok
                  FROM range({RUNS}) a(r), range({SAMPLES}) b(i))
            """
        )
        store.refresh_layer_inputs()  # what an import does with the samples it writes
        store.con.execute("CHECKPOINT")  # all in the file: no write-ahead log left to rename
    building.replace(path)


class Server:
    """`calipers view --db DB --port 0` in a fresh process; `url` once it listens."""

    def __init__(self, db: Path) -> None:
        calipers = Path(sys.executable).with_name("calipers")
        self.start = time.perf_counter()
        self.process = subprocess.Popen(
            [str(calipers), "view", "--db", str(db), "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=bytecode_env(),
        )  # fmt: skip
        atexit.register(self.kill)  # a benchmark that fails midway leaves no server behind
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.listening_s = time.perf_counter() - self.start
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        if not found:
            self.process.kill()
            raise RuntimeError(f"calipers view did not start: {line!r} {self.process.stderr}")
        self.url = found.group(0)

    def get(self, path: str, **params: str | list[str]) -> float:
        """Seconds for one request (its whole body read); a non-200 is an error."""
        address = self.url + path + ("?" + urlencode(params, doseq=True) if params else "")
        t0 = time.perf_counter()
        with urlopen(address, timeout=600) as response:
            response.read()
            if response.status != 200:
                raise RuntimeError(f"{address}: {response.status}")
        return time.perf_counter() - t0

    def first_page_s(self) -> float:
        """From the process start to the runs page's answer (polling until it listens)."""
        while True:
            try:
                self.get("/")
                return time.perf_counter() - self.start
            except OSError:
                time.sleep(0.01)

    def complete_s(self) -> float:
        """From the process start until the runs page shows every layered composite (computed on
        a thread after the first page when there are many)."""
        while True:
            with urlopen(self.url + "/runs.json", timeout=600) as response:
                if not json.loads(response.read())["layered_pending"]:
                    return time.perf_counter() - self.start
            time.sleep(0.05)

    def cpu_s(self) -> float:
        """CPU seconds the server has used (user + system, every thread)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def settled_s(self) -> tuple[float, float]:
        """Wait until the server's work ahead is done (its CPU time still for a second): (the
        seconds waited, the CPU seconds it used meanwhile)."""
        t0, start = time.perf_counter(), self.cpu_s()
        last, still = start, time.perf_counter()
        while time.perf_counter() - still < 1.0:
            time.sleep(0.1)
            now = self.cpu_s()
            if now - last > 0.02:
                last, still = now, time.perf_counter()
        return time.perf_counter() - t0, last - start

    def peak_rss_mb(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]

    def stop(self) -> None:
        self.process.send_signal(2)  # Ctrl-C
        self.process.communicate(timeout=30)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def load() -> float:
    """The 1-minute load average: the machine is shared, so each figure carries it."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def timed(server: Server, label: str, path: str, **params: str | list[str]) -> dict[str, float]:
    first = server.get(path, **params)
    again = statistics.median(server.get(path, **params) for _ in range(5))
    now = load()
    print(f"{label:<44} first {first * 1000:8.1f} ms   again {again * 1000:7.1f} ms   load {now}")
    return {"first_ms": first * 1000, "again_ms": again * 1000, "load": now}


def until_verdict(server: Server, path: str, **params: str) -> float:
    """Seconds until the flips page shows its verdict (the comparison, made on a thread)."""
    t0 = time.perf_counter()
    while True:
        with urlopen(server.url + path + ".json?" + urlencode(params), timeout=600) as response:
            if json.loads(response.read())["verdict"] is not None:
                return time.perf_counter() - t0
        time.sleep(0.05)


def bench_store() -> dict[str, object]:
    if not STORE.exists():
        t0 = time.perf_counter()
        build_store(STORE)
        print(f"built {STORE} in {time.perf_counter() - t0:.1f} s")
    from calipers.data.store import Store

    with Store(STORE):  # untimed: a store from an older calipers is upgraded by a write
        pass
    warm = Server(STORE)  # untimed: fills the bytecode cache (see bytecode_env)
    warm.first_page_s()
    warm.stop()
    server = Server(STORE)
    before = load()
    first = server.first_page_s()
    # the server's CPU seconds (every thread) by then: steadier than the wall on a shared machine
    first_cpu = server.cpu_s()
    cold = {"listening_s": server.listening_s, "first_runs_page_s": first,
            "first_runs_page_cpu_s": first_cpu, "composites_shown_s": server.complete_s(),
            "load": before}  # fmt: skip
    print(
        f"cold start: listening {cold['listening_s']:.2f} s, first runs page "
        f"{cold['first_runs_page_s']:.2f} s ({first_cpu:.2f} s of the server's CPU), every "
        f"layered composite shown {cold['composites_shown_s']:.2f} s   load {before}"
    )
    # the warm-up's imports and the leaderboard computed ahead (once no page was asked for in a
    # second), done by the time one has picked runs: the pages below are timed without them
    time.sleep(1.5)
    waited, worked = server.settled_s()
    cold["ahead_done_s"], cold["ahead_cpu_s"] = waited + 1.5, worked
    print(f"work ahead (the page's leaderboard) done {waited + 1.5:.1f} s after the last page, "
          f"{worked:.1f} s of CPU   load {load()}")  # fmt: skip
    metric = {"baseline": "run-000", "candidate": "run-001", "scheme": "metric",
              "metric": "accuracy"}  # fmt: skip
    layered = {"baseline": "run-002", "candidate": "run-003", "scheme": "layered"}
    other = {"baseline": "run-004", "candidate": "run-005", "scheme": "metric",
             "metric": "correct", "margin": "0.02"}  # fmt: skip
    sample = {"run": "run-000", "other": "run-001", "task": "task-3", "id": "s13",
              "scheme": "metric", "metric": "accuracy"}  # fmt: skip
    pages = {
        "runs (/)": timed(server, "runs (/), after the first", "/"),
        "runs.json": timed(server, "runs.json", "/runs.json"),
        "search": timed(server, "runs, ?q=run-09", "/", q="run-09"),
        "compare.json metric": timed(
            server, "compare.json metric (computes)", "/compare.json", **metric
        ),
        "compare metric": timed(server, "compare metric (plots drawn first)", "/compare", **metric),
        "compare metric, another pair": timed(
            server, "compare metric + margin, a new pair", "/compare", **other
        ),
        "compare layered": timed(server, "compare layered (computes)", "/compare", **layered),
        "flips regressions": timed(
            server, "flips, regressions", "/flips", **metric, kind="regressions"
        ),
        "flips page 40": timed(server, "flips, page 40", "/flips", **metric, page="40"),
        "flips task, class": timed(
            server,
            "flips, task-3, stable",
            "/flips",
            **metric,
            task="task-3",
            **{"class": "stable"},
        ),
        "flips.json": timed(server, "flips.json", "/flips.json", **metric),
        "sample": timed(server, "sample (with its comparison line)", "/sample", **sample),
        "sample.json": timed(
            server, "sample.json, another", "/sample.json", **{**sample, "id": "s23"}
        ),
        "flips, size": timed(server, "flips, size ≥ 1", "/flips", **metric, size="1"),
        "compare several": timed(
            server,
            "compare, 3 candidates (computes)",
            "/compare",
            **{
                "baseline": "run-010",
                "candidate": ["run-011", "run-012", "run-013"],
                "scheme": "metric",
                "metric": "correct",
            },
        ),
        "judges": timed(server, "judges, the store (runs, position bias)", "/judges"),
        "judges of a run": timed(
            server, "judges of a run (layered score)", "/judges", run="run-020"
        ),
        "repeats": timed(server, "repeats of a run (one epoch)", "/repeats", run="run-021"),
        # the page's own (no options: layered here) is computed ahead once nobody waits
        "leaderboard layered": timed(
            server, "leaderboard, layered, 100 runs (ahead)", "/leaderboard", scheme="layered"
        ),
        "leaderboard metric": timed(
            server,
            "leaderboard, metric accuracy, 100 runs",
            "/leaderboard",
            scheme="metric",
            metric="accuracy",
        ),
        "leaderboard metric, another": timed(
            server,
            "leaderboard, metric correct, 100 runs",
            "/leaderboard",
            scheme="metric",
            metric="correct",
        ),
        "leaderboard layered, 90%": timed(
            server,
            "leaderboard, layered, 90%, 100 runs",
            "/leaderboard",
            scheme="layered",
            confidence="0.9",
        ),
        "history": timed(server, "history of a run (series of 100)", "/history", run="run-022"),
        "history.json": timed(server, "history.json, the stems", "/history.json"),
    }
    rss = server.peak_rss_mb()
    server.stop()
    print(f"server peak RSS {rss:.0f} MB")
    return {"runs": RUNS, "samples_per_run": SAMPLES, "cold": cold, "pages": pages,
            "peak_rss_mb": rss}  # fmt: skip


def bench_big() -> dict[str, object]:
    if not BIG.exists():
        from bench_compare import build_metric_store

        t0 = time.perf_counter()
        build_metric_store(BIG)
        print(f"built {BIG} in {time.perf_counter() - t0:.1f} s")
    from calipers.data.store import Store

    with Store(BIG):  # untimed: a store from an older calipers is upgraded by a write
        pass
    server = Server(BIG)
    server.first_page_s()
    time.sleep(1.5)
    server.settled_s()  # the warm-up's imports done (no leaderboard ahead: 2M observations)
    pair = {"baseline": "control", "candidate": "treatment", "scheme": "metric",
            "metric": "accuracy"}  # fmt: skip
    before, cpu_before = load(), server.cpu_s()
    flips_cold = server.get("/flips", **pair, kind="regressions")
    # the server's CPU for it (and the first moment of the comparison's thread, started then)
    flips_cpu = server.cpu_s() - cpu_before
    verdict = until_verdict(server, "/flips", **pair, kind="regressions")
    print(f"2 × 1M: flips, first page {flips_cold * 1000:.0f} ms ({flips_cpu:.2f} s of CPU; the "
          f"flips alone), its verdict {verdict:.1f} s later (the comparison, on a thread)   "
          f"load {before}")  # fmt: skip
    pages = {
        "flips first page": {"first_ms": flips_cold * 1000, "cpu_s": flips_cpu, "load": before},
        "flips verdict shown after": {"s": verdict, "load": load()},
        "flips page 2": timed(
            server, "2 × 1M: flips, page 2", "/flips", **pair, kind="regressions", page="2"
        ),
        "flips task filter": timed(
            server, "2 × 1M: flips, task-7", "/flips", **pair, task="task-7"
        ),
        "compare": timed(server, "2 × 1M: compare (plots drawn first)", "/compare", **pair),
    }
    rss = server.peak_rss_mb()
    server.stop()
    print(f"server peak RSS {rss:.0f} MB")
    return {"pages": pages, "peak_rss_mb": rss}


# (image in docs/images, address on the screenshots' store, height shown at most)
SHOTS = [
    ("view-runs", "/", 1000),
    ("view-compare", "/compare?baseline=alpha-v1&candidate=alpha-v3&scheme=metric&metric=correct",
     1600),
    ("view-several", "/compare?baseline=alpha-v1&candidate=alpha-v2&candidate=alpha-v3"
     "&scheme=metric&metric=correct", 900),
    ("view-flips", "/flips?baseline=alpha-v1&candidate=alpha-v3&scheme=metric&metric=correct"
     "&kind=regressions&size=0.5", 1400),
    ("view-sample", "/sample?run=alpha-v1&other=alpha-v3&task=algebra&id=q03&scheme=metric"
     "&metric=correct", 1400),
    ("view-judges", "/judges?run=alpha-v2", 1600),
    ("view-repeats", "/repeats?run=alpha-v1", 1400),
    ("view-leaderboard", "/leaderboard?scheme=metric&metric=correct", 1000),
    ("view-history", "/history?run=alpha-v2", 1600),
]  # fmt: skip


def screenshots(out: Path) -> None:
    """The viewer's pages in headless Chromium (tests/browser.py), 1400 px wide, on the store
    tests/test_view_pages.py builds (three versions of a run, judges, human labels, pairwise
    verdicts, rubric history), reduced as page_screenshots.py reduces the reports' pictures."""
    import socket
    import tempfile
    import threading

    import uvicorn

    sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
    from browser import browser
    from calipers.view import create_app
    from page_screenshots import WIDTH, _png
    from test_view_pages import build_store

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = build_store(Path(tmp) / "store.duckdb")
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(create_app(db), log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        try:
            with browser() as chromium:
                for name, address, most in SHOTS:
                    page = chromium.new_page(viewport={"width": WIDTH, "height": 900})
                    page.goto(url + address, wait_until="load")
                    full = page.evaluate("document.documentElement.scrollHeight")
                    clip = {"x": 0, "y": 0, "width": WIDTH, "height": min(full, most)}
                    data = _png(page.screenshot(clip=clip, full_page=True))
                    (out / f"{name}.png").write_bytes(data)
                    print(f"{name}.png  {WIDTH}×{clip['height']} px  {len(data) / 1000:.0f} KB")
                    page.close()
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            sock.close()


def cost_overhead() -> dict[str, object]:
    """What the cost figures add to the calls the viewer and the reports make, in process: each
    call timed with them and with the cost function replaced by one that returns None (best of
    5, after one warm call), on the 100 × 10k store (every sample has cost_usd)."""
    from unittest import mock

    import calipers
    import calipers.schemes.layered as paired
    import calipers.schemes.objective.scheme as objective
    import calipers.schemes.reasonscore.costs as reasonscore
    from calipers.data.store import Store

    def best(fn: object) -> float:
        fn()  # type: ignore[operator]
        found = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn()  # type: ignore[operator]
            found.append(time.perf_counter() - t0)
        return min(found)

    ten = [f"run-{i:03d}" for i in range(10)]
    out: dict[str, object] = {}
    with Store(STORE, read_only=True) as store:
        cases = [
            ("reasonscore, 10 runs", lambda: calipers.score(store.samples(ten), "reasonscore"),
             reasonscore, "reasonscore_cost"),
            ("reasonscore, 100 runs", lambda: calipers.score(store.samples(), "reasonscore"),
             reasonscore, "reasonscore_cost"),
            ("objective, 10 runs", lambda: calipers.score(store.samples(ten), "objective"),
             objective, "objective_cost"),
            ("compare metric 2 × 10k", lambda: calipers.compare(
                store.samples(), "metric", baseline="run-000", candidates=["run-001"],
                metric="accuracy"), paired, "analyse_cost"),
            ("compare layered 2 × 10k", lambda: calipers.compare(
                store.samples(), "layered", baseline="run-002", candidates=["run-003"]),
             paired, "analyse_cost"),
        ]  # fmt: skip
        for label, fn, module, name in cases:
            try:
                with_cost = best(fn)
            except calipers.errors.InputError as exc:  # the store's data does not suit it
                print(f"{label:<28} not measured: {exc.message[:90]}")
                continue
            with mock.patch.object(module, name, lambda *a, **k: None):
                without = best(fn)
            share = (with_cost - without) / with_cost
            print(f"{label:<28} with cost {with_cost * 1000:7.1f} ms, without "
                  f"{without * 1000:7.1f} ms: {share:+.0%}   load {load()}")  # fmt: skip
            out[label] = {"with_ms": with_cost * 1000, "without_ms": without * 1000,
                          "share": share, "load": load()}  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="also the 2 × 1M comparison's flips")
    parser.add_argument("--cost", action="store_true",
                        help="also what the cost figures add to score and compare")  # fmt: skip
    parser.add_argument("--screenshots", type=Path, metavar="DIR",
                        help="only the pages' screenshots, into DIR (docs/images)")  # fmt: skip
    args = parser.parse_args()
    if args.screenshots:
        screenshots(args.screenshots)
        return
    DATA.mkdir(exist_ok=True)
    result: dict[str, object] = {"store_100x10k": bench_store()}
    if args.big:
        result["compare_2x1m"] = bench_big()
    if args.cost:
        result["cost_overhead"] = cost_overhead()
    print(json.dumps(result, indent=2))
    save("view", result)


if __name__ == "__main__":
    main()
