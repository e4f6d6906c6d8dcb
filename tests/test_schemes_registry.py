"""Schemes are registered by name; third-party ones arrive through the entry-point group."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.data.sampleset import SampleSet
from calipers.errors import InputError
from calipers.schemes import Scheme, SchemeResult, available, get_scheme, registry


class CountScheme(Scheme):
    name = "count-test"
    description = "counts samples"
    required_fields = ("run",)
    higher_is_better = True

    def score(self, samples: SampleSet, **options: Any) -> SchemeResult:
        raise NotImplementedError


def test_builtin_scheme_declares_fields_and_direction() -> None:
    cls = available()["reasonscore"]
    assert cls.required_fields == ("run", "task", "correct") and cls.higher_is_better


def test_unknown_scheme_names_the_available_ones() -> None:
    with pytest.raises(InputError) as info:
        get_scheme("nope")
    assert "reasonscore" in (info.value.hint or "")


def test_entry_point_plugins_are_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint("count-test", f"{__name__}:CountScheme", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep])
    assert isinstance(get_scheme("count-test"), CountScheme)


def test_broken_plugin_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint("broken", "no_such_module_xyz:Scheme", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep])
    with pytest.raises(InputError, match="broken"):
        available()


def test_schemes_command_lists_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schemes"]) == 0
    assert "reasonscore" in capsys.readouterr().out


def test_unknown_fields_warn_when_scoring_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "good" / "unknown_field.jsonl"
    assert main(["score", str(path), "--scheme", "reasonscore", "-q"]) == 0
    assert "'mood'" in capsys.readouterr().err
