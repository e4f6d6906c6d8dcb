"""The worked examples of docs/flips.md: what changed between two runs — every task's numbers and
the samples that flipped — on two inspect_ai logs of one task and on the demo's data, printed by
the code as `calipers compare` prints them.

    python docs/examples/flips_example.py             # prints the doc's output, from the code
    python docs/examples/flips_example.py one-model   # the two directories of one model

tests/test_flips.py checks that the doc shows exactly what this prints.
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).parent.parent.parent
LOGS = ROOT / "tests" / "fixtures" / "importers" / "inspect"


def render() -> str:
    from rich.console import Console

    import calipers
    from calipers.demo.synthetic import DEMO_MODELS, generate_samples, write_jsonl
    from calipers.render.changes import flips_terminal
    from calipers.render.markdown import compare_markdown
    from calipers.schemes.layered import terminal

    out = io.StringIO()
    console = Console(width=100, record=True, no_color=True, file=out)
    logs = [LOGS / "run-a.eval", LOGS / "run-b.eval"]
    console.print("$ calipers compare run-a.eval run-b.eval --scheme metric --metric match "
                  "--baseline mockllm/model-a --candidate mockllm/model-b --gate none "
                  "--flips 2")  # fmt: skip
    with calipers.open(logs) as samples:
        result = calipers.compare(samples, "metric", metric="match", baseline="mockllm/model-a",
                                  candidates=["mockllm/model-b"])  # fmt: skip
    report = result.to_dict()
    terminal.comparison(result, console)
    flips_terminal(report, console, top=2)

    console.print("\n$ … --json - | jq '.flips[0] | {outcome, table, n_regressions, kinds}'")
    f = report["flips"][0]
    excerpt = {k: f[k] for k in ("outcome", "table", "n_regressions", "n_improvements", "kinds")}
    console.print(json.dumps(excerpt, indent=2), markup=False, highlight=False)
    console.print("\n$ … --json - | jq '.flips[0].regressions[0] | del(.diff, .rationales)'")
    first = {k: v for k, v in f["regressions"][0].items() if k not in ("diff", "rationales")}
    console.print(json.dumps(first, indent=2, ensure_ascii=False), markup=False, highlight=False)

    console.print("\n$ … --markdown - --flips 1   # the flips' part of the summary")
    markdown = compare_markdown(report, flips=1)
    console.print(markdown[markdown.index("**Flips**") :].rstrip(), markup=False,
                  highlight=False)  # fmt: skip

    console.print("\n$ calipers demo   # its data: atlas-small against atlas-large, layered")
    command = "calipers compare --db demo.duckdb --scheme layered --baseline atlas-small"
    console.print(f"$ {command} --candidate atlas-large --gate none --flips 1   # in part")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "samples.jsonl"
        write_jsonl(data, generate_samples(models=DEMO_MODELS[:2]))
        with calipers.open(data) as samples:
            demo = calipers.compare(samples, "layered", baseline="atlas-small",
                                    candidates=["atlas-large"])  # fmt: skip
    part = io.StringIO()
    shown = Console(width=100, record=True, no_color=True, file=part)
    terminal.comparison(demo, shown)
    text = part.getvalue()
    start = text.index("atlas-large: ", text.index("treatment − control"))  # the tasks moved
    console.print(text[start : text.index("* significant")].rstrip(), markup=False,
                  highlight=False)  # fmt: skip
    flips_terminal(demo.to_dict(), console, top=1)
    return "```text\n" + out.getvalue() + "```\n"


def one_model() -> str:
    """Two log directories of one model (run-a.eval in v1/, prompt-v2.eval in v2/) compared in
    one command, as the CLI prints it at 100 columns: the note naming the sides, and the flips."""
    import os
    import shutil
    import subprocess
    import sys

    command = ["compare", "v1", "--vs", "v2", "--scheme", "metric", "--metric", "match",
               "--gate", "none", "--flips", "1", "--html", "compare.html"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for side, log in (("v1", "run-a.eval"), ("v2", "prompt-v2.eval")):
            (Path(tmp) / side).mkdir()
            shutil.copy(LOGS / log, Path(tmp) / side)
        env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
        env.pop("FORCE_COLOR", None)
        done = subprocess.run([sys.executable, "-m", "calipers", *command], cwd=tmp, env=env,
                              capture_output=True, text=True, check=True)  # fmt: skip
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    flips = done.stdout[done.stdout.index("Flips ") :]
    return "".join([
        "```text\n",
        "$ ls v1 v2   # tests/fixtures/importers/inspect/{run-a,prompt-v2}.eval: one model\n",
        "v1:\nrun-a.eval\n\nv2:\nprompt-v2.eval\n",
        f"$ calipers {' '.join(command)}   # in part\n",
        *(f"{line}\n" for line in notes),
        "…\n",
        flips,
        "```\n",
    ])  # fmt: skip


if __name__ == "__main__":
    import sys

    print(one_model() if sys.argv[1:] == ["one-model"] else render(), end="")
