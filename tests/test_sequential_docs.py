"""docs/sequential.md shows exactly what the code prints for its worked example: a run that stops
early (`calipers run --stop`) and the same decision replayed by `calipers watch`."""

from __future__ import annotations

import re

import pytest

import doc_examples

pytestmark = pytest.mark.xdist_group("run-stop")  # pipelines as processes: one worker


def test_doc_output_is_what_the_code_prints() -> None:
    block = doc_examples.example_block("sequential")
    assert block == doc_examples.rendered("sequential")
    # the run stopped early, and the replay from the store stopped at the same unit
    stops = [int(n) for n in re.findall(r"stopped at unit (\d+) of 150", block)]
    assert len(stops) == 2 and stops[0] == stops[1] < 75
