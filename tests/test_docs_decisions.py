"""docs/decisions.md shows exactly what the code prints for its worked examples, and its hand
arithmetic about the reference case holds (scipy's binomial for McNemar)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy import stats

import doc_examples

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "decisions.md"


def load_example():  # type: ignore[no-untyped-def]
    return doc_examples.load_example("decisions")


def test_doc_output_is_what_the_code_prints() -> None:
    block = doc_examples.example_block("decisions")
    assert block == load_example().render()


def test_hand_arithmetic_in_the_doc() -> None:
    # 45 of 100 discordant pairs favour B: the one-sided exact McNemar p is P(Bin(100, ½) ≤ 45)
    assert stats.binom.cdf(45, 100, 0.5) == pytest.approx(0.184, abs=5e-4)
    assert "p = 0.184" in DOC.read_text()
