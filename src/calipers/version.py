"""The installed version of calipers, read from the package metadata (pyproject.toml is the one
place it is written) when it is first asked for: `importlib.metadata` scans every installed
distribution, 40 ms that a command which never shows the version should not pay."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def calipers_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("calipers")
    except PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return calipers_version()
    raise AttributeError(f"module 'calipers.version' has no attribute {name!r}")
