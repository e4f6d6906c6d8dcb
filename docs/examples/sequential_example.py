"""The worked example of docs/sequential.md: a run that stops as soon as its comparison with the
baseline is decided, and what it saved; then the same decision replayed by `calipers watch` from
the store, printed by the code as the commands print them.

    python docs/examples/sequential_example.py     # prints the doc's output, from the code

The suite has 150 questions; the pipeline is a shell script that answers "yes" (the expected
answer) when the question's checksum mod 100 is below the version's rate: v1 35%, v2 70%. Every
number below is computed, never typed; tests/test_sequential_docs.py checks that the doc shows
exactly what this prints.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

N_TASKS = 150
PIPELINE = """\
h=$(cksum < "$2" | cut -d' ' -f1)
if [ $((h % 100)) -lt "$1" ]; then a=yes; else a=no; fi
printf '{"output": "%s", "cost_usd": 0.004, "tokens_in": 900, "tokens_out": 60}' "$a" > "$3"
"""


def _command(args: list[str]) -> str:
    """What `calipers ARGS` prints on its standard output (100 columns, no colour)."""
    from calipers.cli.main import main

    out = io.StringIO()
    env = {"COLUMNS": "100", "NO_COLOR": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            main(args)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return out.getvalue()


def render() -> str:
    import yaml

    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        check = [{"type": "contains", "value": "yes"}]
        tasks = [{"id": f"q{i:03d}", "input": f"question {i}", "expected": "yes",
                  "assertions": check} for i in range(N_TASKS)]  # fmt: skip
        (root / "suite.yaml").write_text(yaml.safe_dump({"name": "faq", "tasks": tasks}))
        (root / "answer.sh").write_text(PIPELINE)
        db = str(root / "store.duckdb")

        def run(name: str, rate: int, *extra: str) -> list[str]:
            return ["run", str(root / "suite.yaml"), "--run", name, "--db", db, "--pipeline",
                    f"sh {root / 'answer.sh'} {rate} {{input}} {{output}}", "-j", "4",
                    *extra]  # fmt: skip

        _command(run("v1", 35))
        lines.append("$ calipers run suite.yaml --run v2 --pipeline 'sh answer.sh 70 {input} "
                     "{output}' \\\n    --stop hybrid --baseline v1 --seed 7")  # fmt: skip
        report = root / "v2.json"
        _command(run("v2", 70, "--stop", "hybrid", "--baseline", "v1", "--seed", "7",
                     "--json", str(report)))  # fmt: skip
        stop = json.loads(report.read_text())["stop"]
        from calipers.render.sequential import stop_text

        pair = stop["pairs"][0]
        saved = stop["saved"]
        lines += [
            f"--stop hybrid vs v1: {stop['verdict']} ({'decided' if stop['decided'] else 'not decided'})",
            f"  {pair['decision']['reason']}",
            f"  {stop_text(pair)}",
            f"  saved {stop['tasks_not_needed']} of {stop['tasks_planned']} tasks: "
            f"~${saved['cost_usd']:.2f}, ~{saved['tokens_in']:,.0f} input and "
            f"~{saved['tokens_out']:,.0f} output tokens (at the mean per task run)",
            "",
            "$ calipers watch --db store.duckdb --scheme layered --baseline v1 --candidate v2 "
            "--design hybrid --n-planned 150 --gate none",
        ]
        lines.append(_command(["watch", "--db", db, "--scheme", "layered", "--baseline", "v1",
                               "--candidate", "v2", "--design", "hybrid", "--n-planned",
                               str(N_TASKS), "--gate", "none"]).rstrip())  # fmt: skip
    return "```\n" + "\n".join(lines).replace(tmp, "…") + "\n```\n"


if __name__ == "__main__":
    print(render(), end="")
