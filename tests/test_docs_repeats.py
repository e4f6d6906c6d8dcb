"""docs/repeats.md shows exactly what the code prints for its worked example, and the example's
figures are inspect's own: the headline accuracy, and the samples its reductions show as neither
always right nor always wrong."""

from __future__ import annotations

import sys
from pathlib import Path

import doc_examples

sys.path.insert(0, str(Path(__file__).parent))
from test_import_inspect import header


def test_doc_output_is_what_the_code_prints() -> None:
    assert doc_examples.example_block("repeats") == doc_examples.load_example("repeats").render()


def test_the_example_agrees_with_inspects_own_numbers() -> None:
    log = header("errors.eval")
    (entry,) = [e for e in log["results"]["scores"] if e["name"] == "match"]
    (reduction,) = [r for r in log["reductions"] if r["scorer"] == "match"]
    flipping = [s for s in reduction["samples"] if 0 < s["value"] < 1]
    block = doc_examples.example_block("repeats")
    assert f"{entry['metrics']['accuracy']['value']:.2f}" in block  # 0.69
    assert f"{len(flipping)} of {len(reduction['samples'])}" in block  # 4 of 6
