"""docs/rubric.md shows exactly what the code prints for its worked example."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import doc_examples

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "rubric.md"


def load_example():  # type: ignore[no-untyped-def]
    return doc_examples.load_example("rubric")


def test_doc_output_is_what_the_code_prints() -> None:
    block = doc_examples.example_block("rubric")
    assert block == load_example().render()


def test_example_data_is_what_the_script_builds() -> None:
    example = load_example()
    shipped = [json.loads(line) for line in example.DATA.read_text().splitlines()]
    assert shipped == example.samples()


def test_hand_arithmetic_in_the_doc() -> None:
    weights = [Decimal(w) for w in ("0.25", "0.20", "0.15", "0.15", "0.10", "0.10", "0.05")]
    pairs = load_example().OUTPUTS["agent-b"]["scores"]
    means = [Decimal(a + b) / 2 for a, b in pairs]
    assert sum(m * w for m, w in zip(means, weights, strict=True)) == Decimal("8.425")
