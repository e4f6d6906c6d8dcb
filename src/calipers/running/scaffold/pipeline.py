"""A small deterministic pipeline for `calipers init`: it reads a company brief and decides the
funding stage from the evidence in it, the way a well-behaved pipeline should.

    python pipeline.py INPUT.md OUTPUT.json

It reads only the `## Gate Rule` sections (the governing evidence), so reordering the brief or
padding it with neutral notes leaves its decision alone, and swapping in another company's gate
rule changes it. It has one flaw on purpose: it merges every Gate Rule section it finds, so when
the check pads a brief with another company's sections, it is sometimes fooled — which is what
the check's invariance score shows.
"""

import json
import re
import sys

STAGES = ("idea", "pre-seed", "seed", "growth")


def sections(text: str) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip().lower()
            out.setdefault(current, [])
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def decide(text: str) -> str:
    rule = sections(text).get("gate rule", "")
    for stage in reversed(STAGES):
        if re.search(rf"\bstage:\s*{re.escape(stage)}\b", rule, re.IGNORECASE):
            return stage
    return "idea"


def main() -> None:
    source, target = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as fh:
        text = fh.read()
    with open(target, "w", encoding="utf-8") as fh:
        json.dump({"stage": decide(text), "chars_read": len(text)}, fh)


if __name__ == "__main__":
    main()
