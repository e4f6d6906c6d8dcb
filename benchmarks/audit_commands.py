"""Malformed options, damaged stores, hostile names, leaked keys and network attempts through every
command and every page of `calipers view` (issue 35's audit, the part `audit_inputs.py` does not
cover: that one mutates the data files).

    python benchmarks/audit_commands.py [--json benchmarks/results/audit_commands.json]

Every case runs in a fresh directory, in process through the console script's own function
(`calipers.cli.main.main`; `view`, which serves until stopped, in a subprocess with a deadline).
A case is a defect when:
- an exception escaped the error boundary (a traceback), or the exit code is not documented
  (0 ok, 1 input, 2 data, 3 gate, 130 interrupted);
- a refused command changed the store's bytes or left a file behind;
- a refused bad value was accepted: a number option given `nan`, `1e400`, `abc` or a choice
  given a word it does not list exits 0 (`-1` may be valid for some: listed apart, for review);
- a hostile run name reaches the terminal as a raw escape sequence or HTML unescaped;
- the audit's API key appears in any byte the commands wrote or printed;
- a socket connects anywhere but the loopback (Python's audit hook `socket.connect`);
- a page of the viewer answers 500.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import click

from calipers.cli.main import cli
from calipers.cli.main import main as calipers_main

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-audit-Zq81xQ7mNw3pL0aVc9"
DOCUMENTED_EXITS = {0, 1, 2, 3, 130}
NUMBER_BAD = ["nan", "1e400", "abc", "-1"]
STRING_BAD = ["", "\x1b[2J\x1b[31m<script>x</script>"]
PATH_BAD = ["two.jsonl/x.out", "", "."]  # under a file, empty, a directory
HOSTILE = [
    "<script>alert(1)</script>",
    "\x1b[31mred\x1b[0m\x1b]8;;http://x\x07",
    "[bold]x[/bold]",
    "../../etc/passwd",
    "a\nb\rc",
    "$(touch PWNED)",
    "{{7*7}}",
    "\u202eevil",
]
SUITE = "tasks:\n  - id: t\n    input: hi\n    expected: hi\n  - id: u\n    input: ho\nepochs: 1\n"
PIPELINE = "cat {input} > /dev/null && cp answer.json {output}"
connections: list[str] = []


def _watch_sockets(event: str, args: tuple[object, ...]) -> None:
    if event == "socket.connect":
        address = args[1]
        host = address[0] if isinstance(address, tuple) else str(address)
        if host not in ("127.0.0.1", "::1", "localhost") and not str(host).startswith("/"):
            connections.append(str(address))


def _rows(runs: dict[str, float], n: int = 24) -> str:
    lines = []
    for run, rate in runs.items():
        for i in range(n):
            ok = (i * 7919 % 100) / 100 < rate
            lines.append(
                json.dumps(
                    {
                        "run": run,
                        "task": f"t{i % 2}",
                        "sample_id": f"s{i}",
                        "correct": ok,
                        "output": f"answer {i}",
                        "tokens_out": 10 + i,
                        "cost_usd": 0.001,
                        "scores": {"acc": float(ok)},
                        "judgments": [
                            {"judge": "j", "score": 3.0 + ok, "scale_min": 1.0, "scale_max": 5.0}
                        ],
                    }
                )
            )
    return "\n".join(lines) + "\n"


def prepare(base: Path) -> None:
    """The good inputs every case starts from: two runs in a file and in a store, a suite, an
    assertion-spec file, a robustness check made by `calipers init`."""
    (base / "two.jsonl").write_text(_rows({"a": 0.6, "b": 0.7}))
    (base / "suite.yaml").write_text(SUITE)
    (base / "answer.json").write_text('{"output": "an answer"}')
    specs = [
        {
            "run": "m",
            "task": "t",
            "sample_id": f"s{i}",
            "output": "an answer",
            "assertions": [{"type": "contains", "value": "answer"}],
        }
        for i in range(3)
    ]
    (base / "specs.jsonl").write_text("".join(json.dumps(s) + "\n" for s in specs))
    from calipers.schemes.rubric.definition import DIMENSIONS

    rubric = [
        {
            "run": run,
            "task": "skill",
            "sample_id": f"s{i}",
            "judgments": [
                {"judge": "j", "dimension": d, "score": 5.0 + (i + k + len(run)) % 4}
                for k, d in enumerate(DIMENSIONS)
            ],
        }
        for run in ("a", "bb")
        for i in range(4)
    ]
    (base / "rubric.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rubric))
    with _quiet():
        assert (
            calipers_main(["import", str(base / "two.jsonl"), "--db", str(base / "s.duckdb"), "-q"])
            == 0
        )
        assert calipers_main(["init", str(base / "kelvin"), "-q"]) == 0


@contextlib.contextmanager
def _quiet() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def base_invocations() -> dict[str, list[str]]:
    """A good invocation of each command (paths relative to the case's directory); a bad option
    value is appended to it."""
    run = ["run", "suite.yaml", "--run", "r", "--pipeline", PIPELINE]
    return {
        "import": ["import", "two.jsonl", "--db", "fresh.duckdb"],
        "runs": ["runs", "--db", "s.duckdb"],
        "export": ["export", "out.jsonl", "--db", "s.duckdb"],
        "schema": ["schema"],
        "migrate": ["migrate", "--db", "s.duckdb"],
        "score": ["score", "two.jsonl", "--scheme", "metric", "--metric", "acc"],
        "leaderboard": ["leaderboard", "--db", "s.duckdb", "--scheme", "metric", "--metric", "acc"],
        "schemes": ["schemes"],
        "compare": [
            "compare",
            "two.jsonl",
            "--baseline",
            "a",
            "--candidate",
            "b",
            "--scheme",
            "metric",
            "--metric",
            "acc",
        ],
        "plan": ["plan", "--pass-rate", "0.7", "--effect", "0.05"],
        "grade": ["grade", "specs.jsonl", "-o", "graded.jsonl"],
        "rank": ["rank", "rubric.jsonl"],
        "check": ["check", "--config", "kelvin/kelvin.yaml", "--no-store"],
        "init": ["init", "newdir"],
        "report": ["report", "--db", "s.duckdb", "--json", "r.json"],
        "run": [*run, "--db", "fresh.duckdb"],
        "demo": ["demo", "--dir", "demo"],
        "watch": ["watch", "two.jsonl", "--baseline", "a", "--candidate", "b", "--metric", "acc"],
    }


def bad_values(option: click.Option) -> list[str]:
    kind = type(option.type).__name__
    if kind in ("FiniteRange", "IntRange", "IntParamType", "FloatRange", "FloatParamType"):
        return NUMBER_BAD
    if kind == "Choice":
        return ["nosuch", ""]
    if isinstance(option.type, click.Path):
        return PATH_BAD
    return STRING_BAD


def option_cases() -> Iterator[tuple[str, list[str], str]]:
    ctx = click.Context(cli)
    bases = base_invocations()
    for name in sorted(cli.list_commands(ctx)):
        command = cli.get_command(ctx, name)
        if command is None or name not in bases:
            continue
        yield name, bases[name], "good"
        for option in command.params:
            if not isinstance(option, click.Option) or option.is_flag or option.name == "help":
                continue
            flag = max(option.opts, key=len)
            for value in bad_values(option):
                kind = "Path" if isinstance(option.type, click.Path) else type(option.type).__name__
                yield name, [*bases[name], flag, value], f"{flag}={value!r} ({kind})"


def store_damages(base: Path) -> dict[str, Path]:
    """Stores a user might point --db at by mistake, or that a crash or a disk damaged."""
    good = (base / "s.duckdb").read_bytes()
    made = base / "damaged"
    made.mkdir()
    damages: dict[str, bytes | None] = {
        "empty file": b"",
        "random bytes": os.urandom(4096),
        "truncated": good[: len(good) // 3],
        "text file": b"run,task\nx,y\n",
        "zeroed header": b"\0" * 4096 + good[4096:],
        "directory": None,
    }
    out: dict[str, Path] = {}
    for label, body in damages.items():
        path = made / label.replace(" ", "_")
        if body is None:
            path.mkdir()
        else:
            path.write_bytes(body)
        out[label] = path
    sqlite = made / "sqlite.db"
    import sqlite3

    with contextlib.closing(sqlite3.connect(sqlite)) as con:
        con.execute("create table samples(run text)")
        con.commit()
    out["sqlite file"] = sqlite
    newer = made / "newer.duckdb"
    shutil.copy(base / "s.duckdb", newer)
    import duckdb

    with contextlib.closing(duckdb.connect(str(newer))) as con:
        (table,) = con.execute(
            "select table_name from information_schema.tables where table_name like '%migration%'"
        ).fetchone() or ("",)
        if table:
            cols = [c[0] for c in con.execute(f"describe {table}").fetchall()]
            values = ", ".join(
                "'9999_from_the_future'" if i == 0 else "NULL" for i in range(len(cols))
            )
            con.execute(f"insert into {table} values ({values})")
    out["newer calipers"] = newer
    return out


STORE_COMMANDS = {
    "runs": ["runs"],
    "report": ["report", "--json", "r.json"],
    "export": ["export", "out.jsonl"],
    "migrate": ["migrate"],
    "leaderboard": ["leaderboard", "--scheme", "metric", "--metric", "acc"],
    "score": ["score", "--scheme", "metric", "--metric", "acc"],
    "compare": ["compare", "--baseline", "a", "--candidate", "b", "--metric", "acc"],
    "watch": ["watch", "--baseline", "a", "--candidate", "b", "--metric", "acc"],
    "import": ["import", "two.jsonl"],
    "plan": ["plan", "--baseline", "a", "--effect", "0.05"],
    "grade": ["grade"],
    "rank": ["rank"],
    "run": ["run", "suite.yaml", "--run", "r", "--pipeline", PIPELINE],
}


def _snapshot(directory: Path) -> dict[str, str]:
    found = {}
    for path in directory.rglob("*"):
        if path.is_file():
            found[str(path.relative_to(directory))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def run_case(args: list[str], case: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    before = _snapshot(case)
    old_cwd, old_env = Path.cwd(), dict(os.environ)
    os.chdir(case)
    os.environ.update(env or {})
    escaped, code = False, 0
    with _quiet() as (out, err):
        try:
            code = calipers_main(args)
        except SystemExit as exc:
            code = int(exc.code or 0) if not isinstance(exc.code, str) else 1
        except BaseException as exc:  # an exception that escaped the error boundary
            escaped, code = True, -1
            err.write(f"{type(exc).__name__}: {exc}")
    os.chdir(old_cwd)
    os.environ.clear()
    os.environ.update(old_env)
    after = _snapshot(case)
    text = out.getvalue() + err.getvalue()
    changed = sorted(
        k for k in after if before.get(k) != after[k] and not k.startswith(".calipers")
    )
    return {
        "exit": code,
        "traceback": escaped or "Traceback (most recent call last)" in text,
        "changed": changed,
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "message": err.getvalue().strip().splitlines()[-1:] if err.getvalue().strip() else [],
    }


def _fresh_case(base: Path, work: Path, n: int) -> Path:
    case = work / f"c{n}"
    shutil.copytree(base, case, ignore=shutil.ignore_patterns("damaged"))
    return case


def view_cases(base: Path) -> Iterator[tuple[str, str]]:
    """Hostile and malformed requests to every page of the viewer and its JSON twin."""
    pages = [
        "/",
        "/runs",
        "/compare",
        "/flips",
        "/sample",
        "/judges",
        "/repeats",
        "/leaderboard",
        "/history",
    ]
    pair = "baseline=a&candidate=b"
    queries = [
        "",
        f"?{pair}",
        "?baseline=a&candidate=nosuch",
        "?baseline=%3Cscript%3E&candidate=b",
        "?run=a&run=b",
        "?run=a&run=%3Cscript%3Ex",
        f"?{pair}&page=-1",
        f"?{pair}&page=1e400",
        f"?{pair}&page=nan",
        f"?{pair}&margin=nan",
        f"?{pair}&margin=%3Cb%3E",
        f"?{pair}&metric=nosuch",
        f"?{pair}&scheme=nosuch",
        f"?{pair}&cluster=nosuch",
        f"?{pair}&task=%00",
        f"?{pair}&kind=nosuch&class=%3Cscript%3E",
        "?run=a&other=b&task=t0&id=s1",
        "?run=a&task=t0&id=..%2F..%2Fetc",
        "?run=a&task=%3Cscript%3Ex&id=s1",
        "?q=%3Cscript%3Ealert(1)",
        f"?{pair}&baseline=b",
        "?" + "x" * 9000,
    ]
    for page in pages:
        for twin in ("", ".json"):
            for query in queries:
                path = page + (twin if page != "/" else "")
                yield f"GET {path}{query[:40]}", path + query
    for path in [
        "/..%2f..%2fetc/passwd",
        "/static/../../pyproject.toml",
        "/runs/%3Cscript%3E",
        "/sample/a/t0/s1",
        "/compare/a/b",
        "/" + "a/" * 200,
    ]:
        yield f"GET {path[:40]}", path


def audit_view(base: Path, tally: Counter[tuple[str, str]], bad: list[str]) -> None:
    from starlette.testclient import TestClient

    from calipers.view.app import create_app

    app = create_app(base / "s.duckdb")
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        for name, url in view_cases(base):
            response = client.get(url)
            tally[("view", f"http {response.status_code}")] += 1
            body = response.text
            if response.status_code >= 500:
                bad.append(f"view {name}: {response.status_code}")
            elif response.headers.get("content-type", "").startswith("application/json"):
                # a name is data in JSON (escaping it as HTML would change it); a browser must
                # not read it as a page
                if response.headers.get("x-content-type-options") != "nosniff":
                    bad.append(f"view {name}: JSON without nosniff")
            elif "<script>alert" in body or "<script>x" in body:
                bad.append(f"view {name}: unescaped script")
            if response.status_code < 500 and "content-security-policy" not in response.headers:
                bad.append(f"view {name}: no CSP")
        for method in ("POST", "PUT", "DELETE"):
            response = client.request(method, "/runs")
            tally[("view", f"{method} {response.status_code}")] += 1
            if response.status_code < 400:
                bad.append(f"view {method} /runs accepted ({response.status_code})")
        response = client.get("/runs", headers={"host": "evil.example"})
        tally[("view", f"foreign host {response.status_code}")] += 1
        if response.status_code < 400:
            bad.append("view: a foreign Host header was served")


def audit_view_options(base: Path, tally: Counter[tuple[str, str]], bad: list[str]) -> None:
    """`view`'s own options: served until stopped, so in a subprocess with a deadline; a bad
    value must be refused before it listens."""
    for value in ("-1", "70000", "nan", "abc", ""):
        for flag in ("--port", "--host"):
            if flag == "--host" and value in ("-1", "nan"):
                continue
            args = [
                sys.executable,
                "-m",
                "calipers",
                "view",
                "--db",
                str(base / "s.duckdb"),
                flag,
                value,
            ]
            try:
                done = subprocess.run(args, capture_output=True, text=True, timeout=8)
                code, text = done.returncode, done.stdout + done.stderr
            except subprocess.TimeoutExpired as exc:
                code, text = 0, str(exc.stdout or "") + str(exc.stderr or "")
            tally[("view-options", f"exit {code}" if "Traceback" not in text else "traceback")] += 1
            if "Traceback" in text or code not in DOCUMENTED_EXITS:
                bad.append(f"view {flag} {value!r}: exit {code} {text[-200:]}")
            elif code == 0:
                bad.append(f"view {flag} {value!r}: served")


def audit_names(base: Path, work: Path, tally: Counter[tuple[str, str]], bad: list[str]) -> None:
    for n, name in enumerate(HOSTILE):
        case = work / f"name{n}"
        case.mkdir()
        rows = _rows({"a": 0.6, name: 0.7}, n=12)
        (case / "hostile.jsonl").write_text(rows)
        pair = ["--baseline", "a", "--candidate", name, "--scheme", "metric", "--metric", "acc"]
        metric = ["--scheme", "metric", "--metric", "acc"]
        db = ["--db", "h.duckdb"]
        reports = ["--html", "c.html", "--markdown", "c.md", "--json", "c.json"]
        calls = [
            ["import", "hostile.jsonl", *db],
            ["runs", *db],
            ["compare", *db, *pair],
            ["compare", "hostile.jsonl", *pair, *reports],
            ["score", *db, *metric, "--html", "s.html"],
            ["leaderboard", *db, *metric],
            ["watch", "hostile.jsonl", *pair],
            ["report", *db, "--html", "r.html"],
            ["export", "e.jsonl", *db],
        ]
        for args in calls:
            outcome = run_case(args, case)
            key = "traceback" if outcome["traceback"] else f"exit {outcome['exit']}"
            tally[("names", key)] += 1
            shown = str(outcome["stdout"]) + str(outcome["stderr"])
            label = f"names {name!r} {args[0]}"
            if outcome["traceback"] or outcome["exit"] not in DOCUMENTED_EXITS:
                bad.append(f"{label}: {outcome['exit']} {outcome['message']}")
            if args[1] != "-" and ("\x1b[31mred" in shown or "\x1b]8;;" in shown):
                bad.append(f"{label}: a raw escape sequence in the terminal")
            if "PWNED" in {p.name for p in case.iterdir()}:
                bad.append(f"{label}: a name ran in a shell")
        for page in case.glob("*.html"):
            if "<script>alert(1)</script>" in page.read_text():
                bad.append(f"names {name!r} {page.name}: unescaped in HTML")
        outside = {p.name for p in work.parent.iterdir()} if name.startswith("..") else set()
        if "passwd" in outside:
            bad.append(f"names {name!r}: a name used as a path")


def audit_leaks(base: Path, work: Path, tally: Counter[tuple[str, str]], bad: list[str]) -> None:
    """The key in the environment, printed by a command judge and by a pipeline, on stdout, on
    stderr and in an error: it must appear in no byte written or printed."""
    case = _fresh_case(base, work, 99_999)
    env = {"OPENAI_API_KEY": KEY}
    judge = case / "echo_judge.py"
    judge.write_text(
        "import os, sys, json\nk = os.environ['OPENAI_API_KEY']\n"
        "sys.stderr.write('auth failed for ' + k + '\\n')\n"
        "print(json.dumps({'score': 4, 'rationale': 'key ' + k}))\n"
    )
    failing = case / "fail_judge.py"
    failing.write_text(
        "import os, sys\nsys.stderr.write('denied ' + os.environ['OPENAI_API_KEY'])\nsys.exit(3)\n"
    )
    pipeline = case / "leaky.sh"
    pipeline.write_text(
        'echo "key=$OPENAI_API_KEY" >&2\necho "{\\"decision\\": \\"$OPENAI_API_KEY\\"}" > "$2"\n'
    )
    py = sys.executable
    calls = [
        ["grade", "--db", "s.duckdb", "--judge", f"command:{py} echo_judge.py"],
        ["grade", "--db", "s.duckdb", "--judge", f"command:{py} fail_judge.py"],
        [
            "run",
            "suite.yaml",
            "--run",
            "leak",
            "--pipeline",
            "sh leaky.sh {input} {output}",
            "--db",
            "s.duckdb",
        ],
        [
            "run",
            "suite.yaml",
            "--run",
            "leak2",
            "--pipeline",
            "sh leaky.sh {input} {output}; exit 4",
            "--db",
            "s.duckdb",
        ],
        ["export", "all.jsonl", "--db", "s.duckdb"],
        ["report", "--db", "s.duckdb", "--html", "r.html", "--json", "r.json"],
        ["runs", "--db", "s.duckdb", "--json", "runs.json"],
    ]
    for args in calls:
        outcome = run_case(args, case, env)
        key = "traceback" if outcome["traceback"] else f"exit {outcome['exit']}"
        tally[("leaks", key)] += 1
        if KEY in str(outcome["stdout"]) + str(outcome["stderr"]):
            bad.append(f"leak: {args[0]} printed the key")
        if outcome["traceback"]:
            bad.append(f"leak case {args[0]}: traceback {outcome['message']}")
    for path in case.rglob("*"):
        if path.is_file() and KEY.encode() in path.read_bytes():
            bad.append(f"leak: the key is in {path.relative_to(case)}")
    tally[("leaks", "files scanned")] += sum(1 for p in case.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the tallies here")
    options = parser.parse_args()
    sys.addaudithook(_watch_sockets)
    tally: Counter[tuple[str, str]] = Counter()
    bad: list[str] = []
    review: list[str] = []  # exit 0 on -1 and similar: valid for some options, read by a person
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        base, work = Path(tmp) / "base", Path(tmp) / "work"
        base.mkdir()
        work.mkdir()
        prepare(base)
        n = 0
        for command, args, label in option_cases():
            n += 1
            case = _fresh_case(base, work, n)
            outcome = run_case(args, case)
            key = "traceback" if outcome["traceback"] else f"exit {outcome['exit']}"
            tally[(command, key)] += 1
            where = f"{command} {label}"
            if outcome["traceback"] or outcome["exit"] not in DOCUMENTED_EXITS:
                bad.append(f"{where}: exit {outcome['exit']} {outcome['message']}")
            elif label == "good" and outcome["exit"] != 0:
                bad.append(f"{where}: the good invocation failed: {outcome['message']}")
            elif outcome["exit"] not in (0, 3) and outcome["changed"]:
                bad.append(f"{where}: refused but changed {outcome['changed'][:3]}")
            elif outcome["exit"] == 0 and label != "good":
                value = label.split("=", 1)[1]
                refused = ["nan", "1e400", "abc", "nosuch"]
                if "(Path)" in label:
                    refused += ["", "two.jsonl/x.out"]  # no path is empty or under a file
                if any(value.startswith(repr(v) + " ") for v in refused):
                    bad.append(f"{where}: accepted")
                elif "(Path)" not in label and "(StringParamType)" not in label:
                    review.append(where)
            shutil.rmtree(case)
        for label, store in store_damages(base).items():
            for command, args in STORE_COMMANDS.items():
                n += 1
                case = _fresh_case(base, work, n)
                outcome = run_case([*args, "--db", str(store)], case)
                key = "traceback" if outcome["traceback"] else f"exit {outcome['exit']}"
                tally[("damaged-store", key)] += 1
                where = f"{command} --db <{label}>"
                if outcome["traceback"] or outcome["exit"] not in DOCUMENTED_EXITS:
                    bad.append(f"{where}: exit {outcome['exit']} {outcome['message']}")
                elif outcome["exit"] == 0 and label != "newer calipers":
                    bad.append(f"{where}: accepted")
                elif (
                    label == "newer calipers"
                    and command in ("import", "migrate", "run", "grade")
                    and outcome["exit"] == 0
                ):
                    bad.append(f"{where}: wrote into a newer store")
                shutil.rmtree(case)
        audit_names(base, work, tally, bad)
        audit_leaks(base, work, tally, bad)
        audit_view(base, tally, bad)
        audit_view_options(base, tally, bad)
    if connections:
        bad.append(f"network: {len(connections)} connection(s) left the machine: {connections[:3]}")
    total = sum(c for (e, k), c in tally.items() if k != "files scanned")
    print(f"{total} cases in {time.perf_counter() - start:.0f} s")
    per_entry: Counter[str] = Counter()
    for (entry, key), count in sorted(tally.items()):
        print(f"  {entry:14s} {key:14s} {count}")
        if key != "files scanned":
            per_entry[entry] += count
    print(f"defects: {len(bad)}")
    for line in bad:
        print("  " + line.replace("\x1b", "\\x1b"))
    print(f"exit 0 on a value valid for some options (for review): {len(review)}")
    for line in review:
        print("  " + line.replace("\x1b", "\\x1b"))
    if options.json:
        options.json.write_text(
            json.dumps(
                {
                    "total": total,
                    "per_entry": dict(per_entry),
                    "tally": {f"{e} {k}": c for (e, k), c in sorted(tally.items())},
                    "defects": bad,
                    "review": review,
                    "connections": connections,
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
