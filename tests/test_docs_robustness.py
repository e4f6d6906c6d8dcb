"""docs/robustness.md shows exactly what the code prints for its worked example, and its hand
arithmetic matches kelvin's published numbers."""

from __future__ import annotations

from pathlib import Path

import doc_examples

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "robustness.md"


def load_example():  # type: ignore[no-untyped-def]
    return doc_examples.load_example("robustness")


def test_doc_output_is_what_the_code_prints() -> None:
    block = doc_examples.example_block("robustness")
    assert block == load_example().render()


def test_hand_arithmetic_in_the_doc() -> None:
    invariance, sensitivity = 1 - 8 / 54, 4 / 6
    assert (round(invariance, 3), round(sensitivity, 3)) == (0.852, 0.667)
    assert round((1 - invariance) + (1 - sensitivity), 3) == 0.481
