"""docs/rankings.md shows exactly what the code prints for its worked example, and the figures
it quotes from that example are the example's."""

from __future__ import annotations

from pathlib import Path

import doc_examples

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "rankings.md"


def load_example():  # type: ignore[no-untyped-def]
    return doc_examples.load_example("rankings")


def test_doc_output_is_what_the_code_prints() -> None:
    block = doc_examples.example_block("rankings")
    assert block == load_example().render()


def test_quoted_figures_match_the_example() -> None:
    block = doc_examples.example_block("rankings")
    assert "tie groups: m1 | m3, m2 | m4 | m6, m5" in block
    assert "0.73         0.86" in block  # flip rate and first shown, as the prose says
    text = DOC.read_text()
    assert "the flip rate is 0.73 and the first-shown share 0.86" in text
    assert "one order (a first):   alpha > bravo > charlie > delta" in block
