"""docs/robustness.md shows exactly what the code prints for its worked example, and its hand
arithmetic matches kelvin's published numbers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parent.parent
DOC = ROOT / "docs" / "robustness.md"
EXAMPLE = ROOT / "docs" / "examples" / "robustness_example.py"


def load_example():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("robustness_example", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_doc_output_is_what_the_code_prints() -> None:
    text = DOC.read_text()
    block = text.split("<!-- example:begin -->\n", 1)[1].split("<!-- example:end -->", 1)[0]
    assert block == load_example().render()


def test_hand_arithmetic_in_the_doc() -> None:
    invariance, sensitivity = 1 - 8 / 54, 4 / 6
    assert (round(invariance, 3), round(sensitivity, 3)) == (0.852, 0.667)
    assert round((1 - invariance) + (1 - sensitivity), 3) == 0.481
