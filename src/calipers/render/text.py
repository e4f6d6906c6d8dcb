"""User text (run, task, sample and case names, model output, messages that quote them) made
safe to show: in the terminal, rich markup is escaped and control characters — ANSI escape
sequences, OSC hyperlinks, bells, carriage returns — are shown as visible escapes (`\\x1b`), so a
name can neither style, link, move the cursor nor crash the renderer. Plots turn mathtext off
(`text.parse_math`) and show control characters the same way (`visible_controls`)."""

from __future__ import annotations

from rich.markup import escape as _rich_escape

from calipers.data.files import visible_controls

__all__ = ["escape", "visible_controls"]


def escape(text: object) -> str:
    """`text` for rich's console.print / Table cells: literal, whatever it contains."""
    return _rich_escape(visible_controls(str(text)))
