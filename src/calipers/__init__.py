"""calipers: the measurement layer for LLM and agent evaluations.

    import calipers

    with calipers.open("results.jsonl") as samples:          # or a DataFrame, or db=...
        calipers.score(samples, "reasonscore").to_frame("task")
        calipers.compare(samples, "metric", baseline="a", candidates=["b"], metric="accuracy")

The names below are loaded on first use, so `import calipers` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from calipers.api import (
        Samples,
        available_schemes,
        compare,
        load,
        open,
        open_sides,
        plan,
        rank,
        score,
        watch,
    )
    from calipers.errors import CalipersError, DataError, GateFailed, InputError, ValidationError

__all__ = [
    "CalipersError",
    "DataError",
    "GateFailed",
    "InputError",
    "Samples",
    "ValidationError",
    "__version__",
    "available_schemes",
    "compare",
    "load",
    "open",
    "open_sides",
    "plan",
    "rank",
    "score",
    "watch",
]
_API = {
    "Samples", "available_schemes", "compare", "load", "open", "open_sides", "plan", "rank",
    "score", "watch",
}  # fmt: skip
_ERRORS = {"CalipersError", "DataError", "GateFailed", "InputError", "ValidationError"}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the package metadata on first use (40 ms)
        from calipers.version import calipers_version

        return calipers_version()
    if name in _API:
        from calipers import api

        return getattr(api, name)
    if name in _ERRORS:
        from calipers import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'calipers' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
