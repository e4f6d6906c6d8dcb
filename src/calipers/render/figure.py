"""What every plot shares: the style, the run palette, text measured before a figure is sized, names
cut to fit with the whole name kept as a tooltip, and the SVG the page inlines.

Sizes are planned for the page: a page's content is 1040 CSS px wide and an SVG is drawn at its own
size (1 in = 72 pt = 96 px) unless it is wider, when the browser shrinks it and its text with it.
So no figure is wider than `MAX_WIDTH_IN`, and no text is smaller than `SMALL_PT` (8 pt = 10.7 px;
the page's rule is ≥ 9 px at 100% zoom). Figures grow in height with their rows and switch layout
(bars to a labelled grid, labels turned upright) rather than shrink their text.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from calipers.render.text import visible_controls

MAX_WIDTH_IN = 10.4  # 998 px: inside the page's 1040 px, so a plot is never scaled down
FONT_PT = 9.0  # 12 px: tick labels, axis labels
SMALL_PT = 8.0  # 10.7 px: legends, cell values, point labels — the smallest text drawn
TITLE_PT = 10.0
LABEL_CHARS = 28  # a name longer than this is cut in a plot (the whole name is its tooltip)

_STYLE: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "calipers",
    "font.family": "sans-serif",
    "font.size": FONT_PT,
    "legend.fontsize": SMALL_PT,
    "axes.titlesize": TITLE_PT,
    "figure.titlesize": TITLE_PT,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "text.parse_math": False,  # names are data: `cost_$_per_$_token` is not mathtext
}

# 20 colours for runs: matplotlib's tab10, then ten more each chosen to be as far as possible (CIE
# Lab) from all before it; the closest pair is ΔE 27.7 apart (tab20's closest: 16.6). Markers
# cycle with period 7, prime to 20, so (colour, marker) repeats only after 140 runs.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#0000f2", "#f200f2", "#4e5900", "#005bf2", "#f2bc85", "#f20079",
    "#591b4a", "#58008c", "#00bf8f", "#005943",
)  # fmt: skip
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
HATCHES = ("", "///", "...", "xx", "\\\\\\")  # bars: a pattern per round of the palette

GOOD, BAD, MUTED = "#1b7f3b", "#b02020", "#777777"


def run_style(index: int) -> dict[str, str]:
    """The colour and marker of the `index`-th run of a plot."""
    return {"color": PALETTE[index % len(PALETTE)], "marker": MARKERS[index % len(MARKERS)]}


def bar_style(index: int) -> dict[str, str]:
    return {
        "color": PALETTE[index % len(PALETTE)],
        "hatch": HATCHES[(index // len(PALETTE)) % len(HATCHES)],
    }


def plain_text(text: object) -> str:
    """A name drawn as itself: mathtext is off in _STYLE; control characters become visible."""
    return visible_controls(str(text))


def short(text: object, limit: int = LABEL_CHARS) -> str:
    """A name cut to `limit` characters, ending in … when cut."""
    shown = plain_text(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


@cache
def _renderer() -> Any:
    from matplotlib.backends.backend_agg import RendererAgg

    return RendererAgg(10, 10, 72)  # type: ignore[no-untyped-call]  # 72 dpi: sizes in points


def text_width_in(text: str, size: float = FONT_PT) -> float:
    """The width of `text` in inches at `size` pt, as matplotlib will draw it."""
    return widest_in([text], size)


# Widths measured, by (text, size): the same run and task names are measured for every plot of a
# page, and each measure was mostly matplotlib's style context (a store's report: 7% of its time
# in measuring names). The style is fixed, so a width never changes.
_WIDTHS: dict[tuple[str, float], float] = {}
_MEASURED = 20_000  # at most this many kept


def widest_in(texts: list[str], size: float = FONT_PT) -> float:
    """The width of the widest of `texts` in inches at `size` pt (0 for none)."""
    known = {t: _WIDTHS.get((t, size)) for t in texts}
    missing = [t for t, width in known.items() if width is None]
    if missing:
        import matplotlib
        from matplotlib.font_manager import FontProperties

        measured: dict[tuple[str, float], float] = {}
        with matplotlib.rc_context(_STYLE):  # type: ignore[arg-type]
            font = FontProperties(size=size)
            for t in missing:
                width, _, _ = _renderer().get_text_width_height_descent(t, font, ismath=False)
                known[t] = measured[(t, size)] = float(width) / 72.0
        if len(_WIDTHS) + len(measured) > _MEASURED:
            _WIDTHS.clear()
        _WIDTHS.update(measured)
    return max((width for width in known.values() if width is not None), default=0.0)


def line_in(size: float = FONT_PT) -> float:
    """The height of one line of text at `size` pt, in inches."""
    return size * 1.3 / 72.0


class Figure:
    """A figure being drawn: its matplotlib objects and the tooltips of the names it cut."""

    def __init__(self, figure: Any) -> None:
        self.figure = figure
        self.titles: dict[str, str] = {}

    def name(self, text_artist: Any, full: object) -> None:
        """Give a drawn name its whole text as a tooltip when the drawing cut it."""
        whole = plain_text(full)
        if text_artist.get_text() != whole:
            gid = f"calipers-name-{len(self.titles) + 1}"
            text_artist.set_gid(gid)
            self.titles[gid] = whole

    def names(self, text_artists: list[Any], full: list[str]) -> None:
        for artist, whole in zip(text_artists, full, strict=False):
            self.name(artist, whole)

    def svg(self) -> str:
        buffer = io.StringIO()
        self.figure.savefig(
            buffer, format="svg", bbox_inches="tight", pad_inches=0.05, metadata={"Date": None}
        )
        text = buffer.getvalue()
        text = text[text.index("<svg") :]  # drop the XML prolog and doctype: inline in HTML
        text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.DOTALL)
        for gid, whole in self.titles.items():
            text = text.replace(
                f'<g id="{gid}">', f'<g id="{gid}"><title>{html.escape(whole)}</title>', 1
            )
        return text


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return plt


@contextmanager
def drawing(width: float, height: float, **subplots: Any) -> Iterator[tuple[Figure, Any]]:
    """A constrained-layout figure of `width` × `height` inches (width capped at MAX_WIDTH_IN),
    closed afterwards; yields it and its axes (`plt.subplots` arguments in `subplots`)."""
    plt = pyplot()
    with plt.rc_context(_STYLE):
        figure, axes = plt.subplots(
            figsize=(min(width, MAX_WIDTH_IN), height), layout="constrained", **subplots
        )
        try:
            yield Figure(figure), axes
        finally:
            plt.close(figure)
