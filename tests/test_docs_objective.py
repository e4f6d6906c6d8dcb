"""docs/objective.md shows exactly what the code prints for its worked example, and its hand
arithmetic holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import doc_examples

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "objective.md"


def load_example():  # type: ignore[no-untyped-def]
    return doc_examples.load_example("objective")


def test_doc_output_is_what_the_code_prints() -> None:
    block = doc_examples.example_block("objective")
    assert block == load_example().render()


def test_example_data_is_what_the_script_builds() -> None:
    example = load_example()
    shipped = [json.loads(line) for line in example.DATA.read_text().splitlines()]
    assert shipped == example.samples()


def test_hand_arithmetic_in_the_doc() -> None:
    v1 = 0.6 * (3 / 4 + 4 / 4) / 2 + 0.4 * (0.7 + 0.8) / 2
    v2 = 0.6 * 1 + 0.4 * (0.9 + 0.8) / 2 + 0.1 * (1 - (0.03 / 0.04 + 4 / 6) / 2)
    assert v1 == pytest.approx(0.825)
    assert v2 == pytest.approx(0.9692, abs=5e-5)
    assert "delta +0.144" in DOC.read_text() and f"{v2 - v1:+.3f}" == "+0.144"


def test_doc_cost_example_is_what_the_code_prints() -> None:
    """docs/objective.md, the cost beside the leaderboard: exactly what the code prints."""
    import doc_examples

    assert doc_examples.example_block("objective", "cost") == load_example().cost()
