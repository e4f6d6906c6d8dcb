"""docs/layered.md shows exactly what the code prints for its worked example."""

from __future__ import annotations

import json
from pathlib import Path

import doc_examples

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "layered.md"


def load_example():  # type: ignore[no-untyped-def]
    return doc_examples.load_example("layered")


def test_doc_output_is_what_the_code_prints() -> None:
    block = doc_examples.example_block("layered")
    assert block == load_example().render()


def test_example_data_is_what_the_script_builds() -> None:
    example = load_example()
    shipped = [json.loads(line) for line in example.DATA.read_text().splitlines()]
    assert shipped == example.samples()


def test_hand_arithmetic_in_the_doc() -> None:
    rows = load_example().samples()
    fact = {
        r: [
            1 + 4 * sum(a["passed"] for a in x["assertions"][:4]) / 4 for x in rows if x["run"] == r
        ]
        for r in ("prompt-v1", "prompt-v2")
    }
    gain = sum(fact["prompt-v2"]) / 30 - sum(fact["prompt-v1"]) / 30
    assert round(gain, 3) == 0.667
