"""`calipers report`: everything in the store, as one HTML page and/or a JSON document."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli.main import cli, db_option, stdout_console
from calipers.cli.options import html_option
from calipers.errors import InputError
from calipers.report.json_report import write_json


@cli.command("report")
@html_option
@click.option("--json", "json_out", default=None, metavar="PATH|-", help="Write the JSON report.")
@click.option("-q", "--quiet", is_flag=True, help="No terminal summary.")
@db_option
def report_command(html_out: Path | None, json_out: str | None, quiet: bool, db: Path) -> None:
    """Report everything in the store: its runs and the fields they fill, then every scheme the
    data allows, scored with its defaults (read-only: nothing is recorded)."""
    from calipers.report.html import write_html
    from calipers.report.html.score_pages import store_page
    from calipers.report.store_report import store_report

    if html_out is None and json_out is None:
        raise InputError(
            "nothing to write", hint="Give --html PATH and/or --json PATH (- for stdout)."
        )
    report = store_report(db)
    if json_out:
        write_json(report, json_out)
    if html_out:
        write_html(store_page(report), html_out)
    if quiet or json_out == "-":
        return
    console = stdout_console()
    table = Table(title=f"store {escape(str(db))}", title_justify="left", pad_edge=False)
    for name, justify in (("run", "left"), ("samples", "right"), ("tasks", "right")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for r in report["runs"]:
        table.add_row(escape(r["run"]), f"{r['samples']:,}", str(r["tasks"]))
    console.print(table)
    console.print(f"scored: {', '.join(report['sections']) or 'nothing'}")
    for name, why in report["skipped"].items():
        console.print(f"[yellow]not scored[/] {name}: {escape(why)}", highlight=False)
    if html_out:
        console.print(f"HTML report: {escape(str(html_out))}")
