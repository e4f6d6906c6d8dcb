"""Names' widths are measured once and kept (calipers.render.figure.widest_in): the same widths as
matplotlib's own measure of each text in the figures' style, whatever was measured before."""

from __future__ import annotations

import matplotlib
import pytest
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties

from calipers.render import figure

TEXTS = ["run-000", "a much longer run name, with commas", "Ünïcode ✓", "", "x" * 80, "run-000"]


def _matplotlibs(text: str, size: float) -> float:
    with matplotlib.rc_context(figure._STYLE):  # type: ignore[arg-type]
        renderer = RendererAgg(10, 10, 72)  # type: ignore[no-untyped-call]
        width, _, _ = renderer.get_text_width_height_descent(
            text, FontProperties(size=size), ismath=False
        )
    return float(width) / 72.0


@pytest.mark.parametrize("size", [figure.FONT_PT, 7.0])
def test_widths_are_matplotlibs_measured_or_kept(
    size: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(figure, "_WIDTHS", {})
    for text in TEXTS:
        assert figure.text_width_in(text, size) == _matplotlibs(text, size)
    assert figure.widest_in(TEXTS, size) == max(_matplotlibs(t, size) for t in TEXTS)
    assert len(figure._WIDTHS) == len(set(TEXTS))  # measured once each
    assert figure.widest_in([], size) == 0.0


def test_a_full_store_of_widths_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(figure, "_WIDTHS", {})
    monkeypatch.setattr(figure, "_MEASURED", 3)
    assert figure.widest_in(TEXTS[:3]) == max(_matplotlibs(t, figure.FONT_PT) for t in TEXTS[:3])
    # two more: over the limit, so the store is emptied and holds the new ones only; the widest
    # still counts the names measured before
    assert figure.widest_in(TEXTS[:5]) == max(_matplotlibs(t, figure.FONT_PT) for t in TEXTS[:5])
    assert set(figure._WIDTHS) == {(t, figure.FONT_PT) for t in TEXTS[3:5]}
