"""One output path for every command: the JSON report (`--json PATH|-`), the HTML page
(`--html PATH`), the terminal view, and a line saying where each file was written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from calipers.cli.main import stdout_console
from calipers.render.html import write_html
from calipers.render.json_report import write_json
from calipers.render.text import escape


def emit(
    report: dict[str, Any],
    *,
    json_out: str | None,
    html_out: Path | None,
    page: Callable[[dict[str, Any]], str] | None = None,
    show: Callable[[Console], None] | None = None,
) -> None:
    """Write the JSON and the page, then show the result in the terminal — unless the JSON goes
    to stdout, which then holds nothing else."""
    if json_out:
        write_json(report, json_out)
    if html_out is not None:
        if page is None:
            raise AssertionError("a page was asked for a report that has none")
        write_html(page(report), html_out)
    if json_out == "-":
        return
    console = stdout_console()
    if show is not None:
        show(console)
    for kind, path in (("JSON", json_out), ("HTML", html_out)):
        if path:
            console.print(f"[dim]{kind} report → {escape(str(path))}[/]", highlight=False)
