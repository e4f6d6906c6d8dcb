"""Scoring schemes, one module per method, registered by name."""

from __future__ import annotations

from calipers.schemes.base import Scheme, SchemeResult
from calipers.schemes.registry import available, get_scheme, register

__all__ = ["Scheme", "SchemeResult", "available", "get_scheme", "register"]
