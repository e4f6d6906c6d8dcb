"""One output path for every command: the JSON report (`--json PATH|-`), the HTML page
(`--html PATH`), the Markdown summary (`--markdown PATH|-`), the terminal view, and a line saying
where each file was written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from calipers.cli.main import stdout_console
from calipers.cli.options import one_stdout
from calipers.render.html import write_html
from calipers.render.json_report import write_json
from calipers.render.markdown import write_markdown
from calipers.render.text import escape


def emit(
    report: dict[str, Any],
    *,
    json_out: str | None,
    html_out: Path | None,
    page: Callable[[dict[str, Any]], str] | None = None,
    show: Callable[[Console], None] | None = None,
    markdown_out: str | None = None,
    markdown: Callable[[dict[str, Any]], str] | None = None,
) -> None:
    """Write the JSON, the page and the Markdown summary, then show the result in the terminal
    — unless a report goes to stdout (`-`), which then holds nothing else."""
    one_stdout(json=json_out, markdown=markdown_out)
    if json_out:
        write_json(report, json_out)
    if html_out is not None:
        if page is None:
            raise AssertionError("a page was asked for a report that has none")
        write_html(page(report), html_out)
    if markdown_out:
        if markdown is None:
            raise AssertionError("a Markdown summary was asked for a report that has none")
        write_markdown(markdown(report), markdown_out)
    if "-" in (json_out, markdown_out):
        return
    console = stdout_console()
    if show is not None:
        show(console)
    for kind, path in (("JSON", json_out), ("HTML", html_out), ("Markdown", markdown_out)):
        if path:
            console.print(f"[dim]{kind} report → {escape(str(path))}[/]", highlight=False)
