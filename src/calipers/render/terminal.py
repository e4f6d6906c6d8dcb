"""Terminal primitives shared by every view: numbers, notes and user text made safe for rich."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from calipers.render.text import escape

if TYPE_CHECKING:
    import pandas as pd


def num(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def notes(items: list[str], console: Console) -> None:
    for note in items:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)


def frame_table(frame: pd.DataFrame, *, title: str, max_rows: int = 50) -> Table:
    """A DataFrame as a rich table (for schemes without a view of their own); text is escaped."""
    table = Table(title=escape(title), title_justify="left", pad_edge=False)
    for column in frame.columns:
        table.add_column(escape(str(column)), overflow="fold")
    for row in frame.head(max_rows).itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    if len(frame) > max_rows:
        table.caption = f"… {len(frame) - max_rows} more rows"
    return table


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return escape(str(value))
