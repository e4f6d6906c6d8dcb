"""Comparison policies: the six verdicts of seed 000 (gates) over a shared paired engine."""
