"""Compiled templates are kept between processes (render/html.py `_compiled_templates`): the
second environment renders from the cache without compiling, the same text; a cache that cannot
be written costs nothing but the speed; none is written where Python writes no bytecode."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import jinja2
import pytest

from calipers.render.html import environment

TEMPLATE = "_interval.html.j2"  # macros: rendered without a context


def _render(env: jinja2.Environment) -> str:
    macros = env.get_template(TEMPLATE).module
    return str(macros.bounds({"low": 0.125, "high": 0.5, "refusal": None}))


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return tmp_path


def _cached(temp: Path) -> list[Path]:
    return sorted(temp.glob("_jinja2-cache-*/calipers-*.cache"))


def test_a_second_process_renders_from_the_compiled_template(
    temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _render(environment())
    files = _cached(temp)
    assert len(files) == 1 and files[0].stat().st_size > 0
    assert (files[0].parent.stat().st_mode & 0o777) == 0o700  # the user's alone

    def no_compile(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(jinja2.Environment, "compile", no_compile)
    assert _render(environment()) == first


def test_a_cache_that_cannot_be_written_costs_only_the_speed(
    temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", full_disk)
    assert _render(environment())
    assert _cached(temp) == []


def test_no_cache_where_python_writes_no_bytecode(
    temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert environment().bytecode_cache is None
    _render(environment())
    assert list(temp.iterdir()) == []
