"""`calipers report`: everything in the store, as one HTML page and/or a JSON document."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.cli.main import cli
from calipers.cli.options import db_option, html_option, json_option, quiet_option, runs_option
from calipers.cli.output import emit
from calipers.errors import InputError
from calipers.render.text import escape


@cli.command("report")
@runs_option
@html_option
@json_option
@quiet_option
@db_option
def report_command(
    runs: tuple[str, ...], html_out: Path | None, json_out: str | None, db: Path
) -> None:
    """Report everything in the store: its runs and the fields they fill, then every scheme the
    data allows, scored with its defaults (read-only: nothing is recorded)."""
    from calipers.report.score_pages import store_page
    from calipers.report.store_report import store_report

    if html_out is None and json_out is None:
        raise InputError(
            "nothing to write", hint="Give --html PATH and/or --json PATH (- for stdout)."
        )
    report = store_report(db, runs=runs or None)
    emit(report, json_out=json_out, html_out=html_out, page=store_page, show=summary(report, db))


def summary(report: dict[str, Any], db: Path) -> Callable[[Console], None]:
    def show(console: Console) -> None:
        table = Table(title=f"store {escape(str(db))}", title_justify="left", pad_edge=False)
        for name, justify in (("run", "left"), ("samples", "right"), ("tasks", "right")):
            table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
        for r in report["runs"]:
            table.add_row(escape(r["run"]), f"{r['samples']:,}", str(r["tasks"]))
        console.print(table)
        console.print(f"scored: {escape(', '.join(report['sections'])) or 'nothing'}")
        for name, why in report["skipped"].items():
            console.print(f"[yellow]not scored[/] {escape(name)}: {escape(why)}", highlight=False)

    return show
