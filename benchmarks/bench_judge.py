"""Judge calls against an OpenAI-compatible endpoint on 127.0.0.1 that answers in 50 ms.

    .venv/bin/python benchmarks/bench_judge.py [--samples 1000] [--jobs 8 32 128] [--latency 0.05]
    .venv/bin/python benchmarks/bench_judge.py --src /tmp/before/src   # another checkout's code

`calipers grade --judge openai:m@URL -j J --no-cache` over a store of N samples with outputs, one
fresh process per run, its own empty project directory. The endpoint is this file run with
`--serve` in its own process: asyncio, HTTP/1.1 keep-alive, it holds every request for `latency`
seconds, then answers a chat completion whose content is a judge reply ({"score": 1..5}).

Measured per run: the whole command's wall time (Python start-up and the store included) and
calls/s over it; the judging phase as the endpoint saw it (first request received → last answer
sent) and calls/s over that; the ideal, J / latency calls/s; the client's CPU (user + system of the
calipers process, from wait4) per call; its peak RSS. After each run the store must hold N readable
judgments. The client alone (`--alone`, a fresh process, the same -j): its calls as the endpoint saw
them and its whole process (Python start and `import openai` included); the whole command is
printed over both (issue 39's "within 2× a bare async client's wall time, whole command").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

ROOT = Path(__file__).parent.parent
BIN = Path(sys.executable).parent


# --- the endpoint -----------------------------------------------------------------------------


def serve(port_file: Path, latency: float, jitter: float = 0.0) -> None:
    draw = random.Random(0)
    stats = {"n": 0, "first": None, "last": None, "in_flight": 0, "max_in_flight": 0}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if head.startswith(b"GET /stats"):
                    body = json.dumps(stats).encode()
                else:
                    await reader.readexactly(length)
                    now = time.perf_counter()
                    stats["first"] = stats["first"] or now
                    stats["in_flight"] += 1
                    stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
                    # uniform in latency ± jitter: the mean, and so the ideal, is `latency`
                    await asyncio.sleep(latency + jitter * (2 * draw.random() - 1))
                    stats["in_flight"] -= 1
                    stats["n"] += 1
                    reply = json.dumps({"score": 1 + stats["n"] % 5, "rationale": "ok"})
                    body = json.dumps({
                        "id": f"c{stats['n']}", "object": "chat.completion", "created": 0,
                        "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": reply}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }).encode()  # fmt: skip
                    stats["last"] = time.perf_counter()
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port = server.sockets[0].getsockname()[1]
        port_file.write_text(str(port))
        async with server:
            await server.serve_forever()

    asyncio.run(main())


class Endpoint:
    def __init__(self, latency: float, jitter: float = 0.0) -> None:
        self.latency = latency
        self.jitter = jitter

    def __enter__(self) -> Endpoint:
        self._dir = tempfile.TemporaryDirectory(prefix="bench-judge-ep-")
        port_file = Path(self._dir.name) / "port"
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port_file),
             "--latency", str(self.latency), "--jitter", str(self.jitter)],
        )  # fmt: skip
        for _ in range(200):
            if port_file.exists() and port_file.read_text():
                break
            time.sleep(0.05)
        self.port = int(port_file.read_text())
        self.url = f"http://127.0.0.1:{self.port}/v1"
        return self

    def stats(self) -> dict[str, Any]:
        with socket.create_connection(("127.0.0.1", self.port)) as s:
            s.sendall(b"GET /stats HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
                data += s.recv(65536)
        result: dict[str, Any] = json.loads(data.split(b"\r\n\r\n", 1)[1])
        return result

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait()
        self._dir.cleanup()


# --- the client runs --------------------------------------------------------------------------


def alone(url: str, jobs: int, calls: int) -> None:
    """The official client by itself, no calipers around it: `calls` raw posts of a judge-sized
    request through `AsyncOpenAI` on the transport calipers uses, `jobs` at a time. What the
    client and this machine allow against the endpoint: the floor calipers' rate is held to."""
    import openai

    from calipers.grading.async_judges import _http_client
    from calipers.grading.judges import OpenAIJudge, PromptTemplate

    # the request calipers sends for a sample of the store below: the same template and size
    prompt = PromptTemplate.load("overall").render(task="Question 1: what is 1 + 1?", output="2")
    body = OpenAIJudge("m", "m", base_url=url).request_body(prompt)

    async def main() -> None:
        client = openai.AsyncOpenAI(
            base_url=url, api_key="sk-bench", http_client=_http_client(jobs)
        )
        todo = iter(range(calls))

        async def worker() -> None:
            for _ in todo:
                await client.post("/chat/completions", body=body, cast_to=str)

        await asyncio.gather(*(worker() for _ in range(jobs)))
        await client.close()

    asyncio.run(main())


def one_alone(endpoint: Endpoint, jobs: int, calls: int, env: dict[str, str]) -> dict[str, Any]:
    command = [sys.executable, __file__, "--alone", endpoint.url, str(jobs), str(calls)]
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"the client alone failed ({status})")
    after = endpoint.stats()
    phase = after["last"] - after["first"]
    return {"wall_s": wall, "phase_s": phase, "phase_calls_per_s": after["n"] / phase,
            "cpu_ms_per_call": 1000 * (usage.ru_utime + usage.ru_stime) / after["n"]}  # fmt: skip


def make_store(root: Path, samples: int, env: dict[str, str]) -> None:
    lines = [
        json.dumps({"run": "bench", "task": f"t{i % 20}", "sample_id": f"s{i:05d}",
                    "input": f"Question {i}: what is {i} + {i}?", "output": f"It is {2 * i}."})
        for i in range(samples)
    ]  # fmt: skip
    (root / "samples.jsonl").write_text("\n".join(lines) + "\n")
    subprocess.run(
        [str(BIN / "calipers"), "import", "samples.jsonl", "-q"],
        cwd=root, env=env, check=True, capture_output=True,
    )  # fmt: skip


def judged(root: Path) -> int:
    import duckdb

    con = duckdb.connect(str(root / ".calipers" / "calipers.duckdb"), read_only=True)
    try:
        row = con.execute(
            "SELECT count(*) FROM samples, unnest(judgments) AS j(j) WHERE j.j.score IS NOT NULL"
        ).fetchone()
        return int(row[0]) if row else 0
    finally:
        con.close()


def one_run(
    endpoint: Endpoint, jobs: int, samples: int, env: dict[str, str], tmp: Path
) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix=f"j{jobs}-", dir=tmp))
    make_store(root, samples, env)
    before = endpoint.stats()
    command = [
        sys.executable, "-m", "calipers", "grade", "--judge", f"openai:m@{endpoint.url}",
        "-j", str(jobs), "--no-cache", "-q",
    ]  # fmt: skip
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=root, env={**env, "OPENAI_API_KEY": "sk-bench"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    stderr = process.stderr.read().decode() if process.stderr else ""
    if status != 0:
        raise SystemExit(f"grade failed ({status}): {stderr}")
    after = endpoint.stats()
    calls = after["n"] - before["n"]
    if calls != samples or judged(root) != samples:
        raise SystemExit(f"expected {samples} calls and judgments, got {calls} / {judged(root)}")
    phase = after["last"] - after["first"] if before["n"] == 0 else None
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "wall_s": wall, "calls_per_s": calls / wall,
        "phase_s": phase, "phase_calls_per_s": calls / phase if phase else None,
        "cpu_s": cpu, "cpu_ms_per_call": 1000 * cpu / calls,
        "peak_rss_mb": usage.ru_maxrss / 1024, "max_in_flight": after["max_in_flight"],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--alone", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument(
        "--jitter", type=float, default=0.0, help="each answer in latency ± jitter s (uniform)"
    )
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--jobs", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--repeat", type=int, default=3, help="runs per -j (the median is kept)")
    parser.add_argument("--src", type=Path, help="run calipers from this src/ (e.g. a checkout)")
    parser.add_argument("--label", default="after", help="the key in results/judge.json")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.latency, args.jitter)
        return
    if args.alone:
        alone(args.alone[0], int(args.alone[1]), int(args.alone[2]))
        return
    from _machine import bytecode_env

    env = bytecode_env()
    if args.src:
        env["PYTHONPATH"] = str(args.src.resolve())
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench-judge-") as tmp:
        with Endpoint(args.latency, args.jitter) as endpoint:  # untimed: fills the bytecode cache
            one_run(endpoint, args.jobs[0], 50, env, Path(tmp))
        for jobs in args.jobs:
            runs = []
            for _ in range(args.repeat):
                # a fresh endpoint per run, so that its first/last times are this run's
                with Endpoint(args.latency, args.jitter) as endpoint:
                    runs.append(one_run(endpoint, jobs, args.samples, env, Path(tmp)))
            floors = []
            for _ in range(args.repeat):
                with Endpoint(args.latency, args.jitter) as endpoint:
                    floors.append(one_alone(endpoint, jobs, args.samples, env))
            best = sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]
            floor = statistics.median(f["phase_calls_per_s"] for f in floors)
            ideal = jobs / args.latency
            rows[str(jobs)] = {**best, "ideal_calls_per_s": ideal,
                               "walls_s": [r["wall_s"] for r in runs],
                               "phase_calls_per_s_all": [r["phase_calls_per_s"] for r in runs],
                               "client_alone_calls_per_s": floor,
                               "client_alone_all": [f["phase_calls_per_s"] for f in floors],
                               "client_alone_cpu_ms_per_call": statistics.median(
                                   f["cpu_ms_per_call"] for f in floors),
                               # its calls alone, and its whole process (start, import, calls)
                               "client_alone_phase_s": statistics.median(
                                   f["phase_s"] for f in floors),
                               "client_alone_wall_s": statistics.median(
                                   f["wall_s"] for f in floors)}  # fmt: skip
            alone_phase = rows[str(jobs)]["client_alone_phase_s"]
            alone_wall = rows[str(jobs)]["client_alone_wall_s"]
            print(
                f"-j {jobs:>4}: {best['wall_s']:6.2f} s  {best['calls_per_s']:6.0f} calls/s "
                f"(phase {best['phase_calls_per_s']:6.0f}/s; ideal {ideal:.0f}/s, "
                f"{best['phase_calls_per_s'] / ideal:.0%}; the client alone {floor:.0f}/s, "
                f"{floor / ideal:.0%})  "
                f"CPU {best['cpu_ms_per_call']:.2f} ms/call  RSS {best['peak_rss_mb']:.0f} MB  "
                f"in flight ≤ {best['max_in_flight']}  (walls "
                + ", ".join(f"{w:.2f}" for w in sorted(r["wall_s"] for r in runs))
                + f"); the client alone: calls {alone_phase:.2f} s, whole process "
                f"{alone_wall:.2f} s, CPU {rows[str(jobs)]['client_alone_cpu_ms_per_call']:.2f} "
                f"ms/call; whole command ÷ its calls {best['wall_s'] / alone_phase:.2f}×, "
                f"÷ its whole process {best['wall_s'] / alone_wall:.2f}×",
                flush=True,
            )
    from _machine import RESULTS, save

    path = RESULTS / "judge.json"
    previous = json.loads(path.read_text()) if path.exists() else {}
    body = {k: v for k, v in previous.items() if k != "machine"}
    body[args.label] = {"samples": args.samples, "latency_s": args.latency,
                        "jitter_s": args.jitter, "runs": rows,
                        "load_before": os.getloadavg()[0],
                        "median_wall_s": {k: statistics.median(v["walls_s"])
                                          for k, v in rows.items()}}  # fmt: skip
    save("judge", body)


if __name__ == "__main__":
    main()
