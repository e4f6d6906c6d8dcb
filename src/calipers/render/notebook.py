"""How results show in a Python session: a readable `repr` and an HTML table for notebooks, both
from the result's own `to_frame` (pandas escapes the text)."""

from __future__ import annotations

from typing import Any


def describe_result(result: Any, title: str) -> str:
    """A readable repr: the title and the run-level frame."""
    try:
        frame = result.to_frame("run") if hasattr(result, "header") else result.to_frame()
        body = frame.to_string(max_rows=20, max_cols=8)
    except Exception:  # a repr must never raise
        body = ""
    return f"<{title}>\n{body}" if body else f"<{title}>"


def result_html(result: Any, title: str) -> str:
    """Notebook display: the title and the run-level frame, escaped by pandas."""
    from html import escape

    try:
        frame = result.to_frame("run") if hasattr(result, "header") else result.to_frame()
    except Exception:  # a scheme without a run level: its default level
        frame = result.to_frame()
    table = str(frame.to_html(max_rows=50, escape=True))
    return f"<p><strong>{escape(title)}</strong></p>" + table
