"""One self-contained HTML page per result: jinja2 templates with autoescape on, plots drawn by
matplotlib as inline SVG, styles inline, and no external request of any kind (no script, font,
image or stylesheet from elsewhere), so the file can be attached to a CI run and opened offline.

Pages are rendered from the report's JSON document (the same dict `--json` writes), so the page
and the JSON never disagree. Every piece of user or model text is escaped by the template engine;
the only markup not escaped is the SVG that matplotlib drew from numbers and escaped labels.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from calipers.data.files import visible_controls, write_atomic
from calipers.errors import InputError
from calipers.version import calipers_version


def _visible(value: Any) -> Any:
    """Control characters in any text a page shows (an ANSI escape in a run name) as `\\xNN`:
    inert in a browser anyway, but visible, and never sent to a terminal that prints the file."""
    from markupsafe import Markup

    if isinstance(value, Markup):
        return Markup(visible_controls(str(value)))
    return visible_controls(value) if isinstance(value, str) else value


def _environment() -> Any:
    return environment()


def environment(*packages: str) -> Any:
    """The pages' jinja2 environment: autoescape on, the `num` and `signed` filters, control
    characters shown. The templates of `packages` (each with a `templates/` folder: the viewer's)
    are found before these, so theirs can extend `base.html.j2` and import its macros."""
    import jinja2

    loaders = [jinja2.PackageLoader(p, "templates") for p in (*packages, "calipers.render")]
    options: dict[str, Any] = {
        "autoescape": True,  # every template, whatever its extension
        "undefined": jinja2.StrictUndefined,
        "trim_blocks": True,
        "lstrip_blocks": True,
        "finalize": _visible,
    }
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders), bytecode_cache=_compiled_templates(options), **options
    )
    env.filters["num"] = _num
    env.filters["signed"] = _signed
    return env


def _compiled_templates(options: dict[str, Any]) -> Any:
    """Templates compiled once and kept between commands, not compiled from source in every
    process: 0.2–0.3 s of CPU of the viewer's cold start (its first page 0.83–0.90 s of CPU
    against 1.09–1.17 s, 2026-11-27) and of every `--html`. jinja2's own cache: a folder of the
    user's in the temp directory (jinja2 makes it mode 0700 and refuses one that is not the
    user's), each file checked against its template's source and jinja2's and Python's versions;
    its name also carries these options, which the compiled code depends on. None where Python
    itself writes no bytecode (PYTHONDONTWRITEBYTECODE) or no such folder can be had."""
    import contextlib
    import hashlib
    import sys

    import jinja2

    if sys.dont_write_bytecode:
        return None
    made = repr(sorted((k, getattr(v, "__qualname__", v)) for k, v in options.items()))
    key = hashlib.sha256(made.encode()).hexdigest()[:12]

    class Cache(jinja2.FileSystemBytecodeCache):
        def dump_bytecode(self, bucket: Any) -> None:
            with contextlib.suppress(OSError):  # a full or read-only disk: the page is made
                super().dump_bytecode(bucket)

    try:
        return Cache(pattern=f"calipers-{key}-%s.cache")
    except (OSError, RuntimeError):  # no temp folder, or one jinja2 finds unsafe
        return None


def _num(value: Any, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{float(value):.{digits}f}"


def _signed(value: Any, digits: int = 3) -> str:
    return "—" if value is None else f"{float(value):+.{digits}f}"


DOCS_URL_VARIABLE = "CALIPERS_DOCS_URL"


def docs_base() -> str:
    """Where a page's docs links point: `docs/` relative to the repository root, or the base URL
    in $CALIPERS_DOCS_URL (e.g. a repository's https://…/blob/main/docs/); docs/reports.md."""
    base = os.environ.get(DOCS_URL_VARIABLE, "").strip() or "docs/"
    return base if base.endswith("/") else base + "/"


def render(
    kind: str, report: dict[str, Any], *, plots: dict[str, str] | None = None, **context: Any
) -> str:
    """The page for a report of `kind` (the name of its template)."""
    template = _environment().get_template(f"{kind}.html.j2")
    page = template.render(
        report=report,
        plots=plots or {},
        version=calipers_version(),
        docs_base=docs_base(),
        **context,
    )
    return str(page)


def write_html(text: str, destination: Path) -> None:
    """Write atomically: a temp file in the same directory, then a rename."""
    if destination.is_dir():
        raise InputError(f"--html {destination}: is a directory", hint="Give a file path.")
    try:
        write_atomic(destination, text, shared=True)
    except OSError as exc:
        raise InputError(f"cannot write {destination}: {exc.strerror}") from exc


def generic_tables(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Tables for a report no template knows (a scheme from another package): each top-level
    mapping of records (e.g. `runs`) or list of records becomes a table of its scalar fields."""
    tables = []
    for key, value in report.items():
        records: list[tuple[str | None, dict[str, Any]]] = []
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            records = [(str(k), v) for k, v in value.items()]
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            records = [(None, v) for v in value]
        if not records or key == "parameters":
            continue
        columns: list[str] = []
        for _, record in records:
            columns += [c for c, v in record.items() if _scalar(v) and c not in columns]
        if not columns:
            continue
        named = records[0][0] is not None
        rows = [
            ([name] if named else []) + [_cell(record.get(c)) for c in columns]
            for name, record in records
        ]
        tables.append((key, {"columns": (["name"] if named else []) + columns, "rows": rows}))
    return tables


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _cell(value: Any) -> str:
    return _num(value, 3) if isinstance(value, float | bool) or value is None else str(value)


def report_page(report: dict[str, Any], *, title: str) -> str:
    """A page for a report that is not a score or a comparison (`run`, `plan`): its top-level
    fields, each mapping of fields, then its tables of records — every value shown as text."""
    from calipers.render.json_report import clean

    report = clean(report)
    fields = [[k, _cell(v)] for k, v in report.items() if _scalar(v)]
    tables: list[tuple[str, dict[str, Any]]] = []
    if fields:
        tables.append(("summary", {"columns": ["field", "value"], "rows": fields}))
    for key, value in report.items():
        if isinstance(value, dict) and value and all(_scalar(v) for v in value.values()):
            rows = [[str(k), _cell(v)] for k, v in value.items()]
            tables.append((key, {"columns": ["field", "value"], "rows": rows}))
    tables += generic_tables(report)
    for key, value in report.items():  # one level down: e.g. bradley_terry's runs
        if isinstance(value, dict) and not all(_scalar(v) for v in value.values()):
            fields = [[str(k), _cell(v)] for k, v in value.items() if _scalar(v)]
            if fields:
                tables.append((key, {"columns": ["field", "value"], "rows": fields}))
            tables += [(f"{key} · {name}", t) for name, t in generic_tables(value)]
    return render("generic-compare", report, title=title, tables=tables)


def generic_page(report: dict[str, Any], *, title: str) -> str:
    """A comparison page for a report no template knows: its verdict and its tables."""
    from calipers.render.json_report import clean

    report = clean(report)
    return render("generic-compare", report, title=title, tables=generic_tables(report))
