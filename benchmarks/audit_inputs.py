"""Malformed and adversarial inputs through the command line's entry points (issue 35's audit,
re-runnable): every case must end with a documented exit code (1 or 2 for bad input), no
traceback, and no store written when the input was refused.

    python benchmarks/audit_inputs.py [--json benchmarks/results/audit_inputs.json]

Each case is a mutation of one line of a good sample file (tests/fixtures/good/small.jsonl) or
of a good CSV or suite YAML, run in a fresh directory through the `calipers` entry point in
process (`calipers.cli.main.main`, the console script's own function: a traceback is an
exception that escaped its error boundary).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from calipers.cli.main import main as calipers_main

ROOT = Path(__file__).resolve().parent.parent
GOOD = (ROOT / "tests" / "fixtures" / "good" / "small.jsonl").read_text().splitlines()
FIELDS = ["run", "task", "sample_id", "correct", "tokens_out", "scores", "judgments",
          "assertions", "decision", "human", "epoch", "group"]  # fmt: skip
BAD_VALUES: dict[str, str] = {
    "null": "null",
    "string": '"yes"',
    "empty string": '""',
    "bool": "true",
    "int": "7",
    "negative": "-3",
    "float": "2.5",
    "NaN": "NaN",
    "Infinity": "Infinity",
    "huge int": "1" + "0" * 400,
    "1e400": "1e400",
    "list": "[1, 2]",
    "object": '{"x": 1}',
    "nested NaN": '{"x": NaN}',
    "deep": "[" * 2000 + "]" * 2000,
    "duplicate inner key": '{"score": 4, "score": 5}',
}
LINE_DAMAGE: dict[str, Callable[[str], str]] = {
    "trailing comma": lambda s: s[:-1] + ",}",
    "truncated": lambda s: s[: len(s) // 2],
    "duplicate top key": lambda s: s[:-1] + ', "run": "other"}',
    "not an object": lambda s: "[" + s + "]",
    "bare word": lambda s: "hello",
    "single quotes": lambda s: s.replace('"', "'"),
    "control char": lambda s: s.replace("s0", "s\x000"),
    "invalid utf-8": lambda s: s.replace("s0", "s\udcff0"),
    "BOM first": lambda s: "\ufeff" + s,
    "comment": lambda s: "// " + s,
    "two objects": lambda s: s + s,
    "empty object": lambda s: "{}",
}


def _set_field(line: str, field: str, raw: str) -> str:
    body = json.loads(line)
    body[field] = "__RAW__"
    return json.dumps(body).replace('"__RAW__"', raw)


def jsonl_cases() -> Iterator[tuple[str, str]]:
    for field in FIELDS:
        for name, raw in BAD_VALUES.items():
            yield f"jsonl {field}={name}", _set_field(GOOD[0], field, raw)
        yield (
            f"jsonl {field} missing",
            json.dumps({k: v for k, v in json.loads(GOOD[0]).items() if k != field}),
        )
    for name, damage in LINE_DAMAGE.items():
        yield f"jsonl line {name}", damage(GOOD[0])


def csv_cases() -> Iterator[tuple[str, str]]:
    good = (ROOT / "tests" / "fixtures" / "good" / "small.csv").read_text().splitlines()
    header, row = good[0], good[1]
    yield "csv BOM header", "\ufeff" + header + "\n" + row
    yield "csv CRLF", header + "\r\n" + row + "\r\n"
    yield "csv duplicate column", header + "," + header.split(",")[0] + "\n" + row + ",x"
    yield "csv short row", header + "\n" + ",".join(row.split(",")[:2])
    yield "csv long row", header + "\n" + row + ",extra,extra"
    yield "csv no header", row
    yield "csv empty", ""
    yield "csv quote open", header + '\n"' + row
    for i, column in enumerate(header.split(",")):
        cells = row.split(",")
        for name, value in (("empty", ""), ("NaN", "NaN"), ("word", "maybe"), ("inf", "inf")):
            changed = cells.copy()
            changed[i] = value
            yield f"csv {column}={name}", header + "\n" + ",".join(changed)


SUITE = "tasks:\n  - id: t\n    input: hi\n    expected: hi\nepochs: 1\n"
SUITE_CASES = {
    "duplicate key": SUITE + "epochs: 2\n",
    "epochs string": SUITE.replace("epochs: 1", 'epochs: "2"'),
    "epochs bool": SUITE.replace("epochs: 1", "epochs: true"),
    "epochs zero": SUITE.replace("epochs: 1", "epochs: 0"),
    "epochs nan": SUITE.replace("epochs: 1", "epochs: .nan"),
    "unknown key": SUITE + "colour: blue\n",
    "tasks not a list": "tasks: 3\n",
    "empty": "",
    "not a mapping": "- 1\n- 2\n",
    "tab indent": SUITE.replace("  - id", "\t- id"),
    "duplicate tasks": SUITE + "tasks: []\n",
    "weight string": SUITE.replace(
        "    expected: hi",
        "    expected: hi\n    assertions:\n      - {type: contains, value: hi, weight: '2'}",
    ),
    "exit code 999": SUITE + "transient_exit_codes: [999]\n",
    "anchor bomb": "a: &a [" + ",".join(["x"] * 50) + "]\nb: &b [" + ",".join(["*a"] * 50) + "]\n",
}


def run_case(args: list[str], workdir: Path) -> dict[str, object]:
    store = workdir / "store.duckdb"
    out, err = io.StringIO(), io.StringIO()
    escaped = False
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = calipers_main(args)
        except SystemExit as exc:  # pragma: no cover - main returns its code
            code = int(exc.code or 0)
        except BaseException as exc:  # a traceback: escaped the error boundary
            escaped = True
            code = -1
            err.write(f"{type(exc).__name__}: {exc}")
    text = out.getvalue() + err.getvalue()
    return {
        "exit": code,
        "traceback": escaped or "Traceback (most recent call last)" in text,
        "store_written": store.exists() and code != 0,
        "message": err.getvalue().strip().splitlines()[:1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the tallies here")
    options = parser.parse_args()
    tally: Counter[tuple[str, str]] = Counter()
    bad: list[str] = []
    accepted: list[str] = []  # exit 0: the mutation is valid data (read as documented)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        jobs: list[tuple[str, str, str]] = []
        for name, line in jsonl_cases():
            text = "\n".join([line, *GOOD[1:]]) + "\n"
            jobs += [("import", name, text), ("score", name, text)]
        for name, text in csv_cases():
            jobs += [("import-csv", name, text), ("score-csv", name, text)]
        for name, text in SUITE_CASES.items():
            jobs.append(("run", name, text))
        for n, (entry, name, text) in enumerate(jobs):
            case = work / f"c{n}"
            case.mkdir()
            store = case / "store.duckdb"
            if entry in ("import", "score"):
                path = case / "in.jsonl"
            elif entry.endswith("csv"):
                path = case / "in.csv"
            else:
                path = case / "suite.yaml"
            path.write_bytes(text.encode("utf-8", "surrogateescape"))
            if entry.startswith("import"):
                args = ["import", str(path), "--db", str(store)]
            elif entry.startswith("score"):
                args = ["score", str(path), "--scheme", "metric", "--metric", "acc"]
            else:
                args = ["run", str(path), "--run", "r", "--pipeline",
                        "cat {input} > {output}", "--db", str(store)]  # fmt: skip
            outcome = run_case(args, case)
            key = "traceback" if outcome["traceback"] else f"exit {outcome['exit']}"
            tally[(entry, key)] += 1
            if outcome["exit"] == 0:
                accepted.append(f"{entry} {name}")
            if outcome["traceback"] or (outcome["store_written"] and entry.startswith("import")):
                bad.append(f"{entry} {name}: {outcome}")
    total = sum(tally.values())
    print(f"{total} malformed inputs")
    for (entry, key), count in sorted(tally.items()):
        print(f"  {entry:11s} {key:10s} {count}")
    print(f"defects (traceback, or a refused import that wrote its store): {len(bad)}")
    for line in bad:
        print("  " + line)
    if options.json:
        options.json.write_text(json.dumps({
            "total": total, "tally": {f"{e} {k}": c for (e, k), c in sorted(tally.items())},
            "defects": bad, "accepted": accepted,
        }, indent=1) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()
