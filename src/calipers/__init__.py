"""calipers: the measurement layer for LLM and agent evaluations."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__version__ = "0.1.0"
__all__ = ["__version__", "load"]


def load(path_or_store: str | Path | object, *, run: str | None = None) -> pa.Table:
    """Samples as a pyarrow Table (`.to_pandas()`, `polars.from_arrow(...)`).

    Accepts a sample file (JSON Lines, CSV, Parquet), a store file (`.duckdb`) or a `Store`.
    """
    from calipers.data.source import open_samples
    from calipers.data.store import Store

    if isinstance(path_or_store, Store):
        return path_or_store.samples([run] if run else None).to_arrow()
    path = Path(str(path_or_store))
    if path.suffix in (".duckdb", ".db"):
        return open_samples(None, db=path, run=run).to_arrow()
    return open_samples(path, run=run).to_arrow()
