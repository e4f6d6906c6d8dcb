"""calipers: the measurement layer for LLM and agent evaluations."""

from __future__ import annotations

__version__ = "0.1.0"
