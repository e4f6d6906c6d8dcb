"""Plots as inline SVG strings, drawn by matplotlib (Agg, no display), reproducible byte for byte:
no date in the metadata, a fixed hash salt for element ids, text kept as text (no embedded font
files), so the page stays small and makes no request."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

_STYLE: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "calipers",
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _svg(figure: Any) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog and doctype: inline in HTML
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.DOTALL)


def forest(
    rows: Sequence[tuple[str, float | None, float | None, float | None, bool]],
    *,
    title: str,
    xlabel: str = "treatment − control",
) -> str:
    """One row per quantity: (label, estimate, low, high, significant); a line at 0."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    shown = [r for r in rows if r[1] is not None]
    with plt.rc_context(_STYLE):  # type: ignore[arg-type]
        figure, axes = plt.subplots(figsize=(6.0, 0.45 * max(len(shown), 1) + 0.9))
        try:
            for y, (_, est, low, high, significant) in enumerate(reversed(shown)):
                color = "#1b7f3b" if significant else "#555555"
                if low is not None and high is not None:
                    axes.plot([float(low), float(high)], [y, y], color=color, linewidth=2)
                axes.plot([float(est or 0.0)], [y], "o", color=color, markersize=6)
            axes.axvline(0.0, color="#999999", linewidth=1, linestyle="--")
            axes.set_yticks(range(len(shown)), [r[0] for r in reversed(shown)])
            axes.set_xlabel(xlabel)
            axes.set_title(title, loc="left", fontsize=10)
            axes.set_ylim(-0.6, len(shown) - 0.4)
            return _svg(figure)
        finally:
            plt.close(figure)


def heatmap(
    values: Sequence[Sequence[float | None]], *, rows: Sequence[str], columns: Sequence[str],
    title: str, label: str,
) -> str:  # fmt: skip
    """A rows × columns grid of values in [0, 1] (None: no data, left blank), each cell labelled."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib import pyplot as plt

    grid = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
    with plt.rc_context(_STYLE):  # type: ignore[arg-type]
        figure, axes = plt.subplots(figsize=(1.1 * len(columns) + 2.0, 0.42 * len(rows) + 1.3))
        try:
            image = axes.imshow(grid, cmap="Reds", vmin=0.0, vmax=1.0, aspect="auto")
            for (i, j), value in np.ndenumerate(grid):
                if not np.isnan(value):
                    axes.text(j, i, f"{value:.2f}", ha="center", va="center",
                              color="white" if value > 0.6 else "black", fontsize=8)  # fmt: skip
            axes.set_xticks(range(len(columns)), list(columns), rotation=30, ha="right")
            axes.set_yticks(range(len(rows)), list(rows))
            axes.set_title(title, loc="left", fontsize=10)
            figure.colorbar(image, ax=axes, label=label, fraction=0.05)
            return _svg(figure)
        finally:
            plt.close(figure)


def deltas(labels: Sequence[str], values: Sequence[float | None], *, title: str) -> str:
    """Horizontal bars, one per label: gains green, losses red, a line at 0."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    shown = [(label, float(v)) for label, v in zip(labels, values, strict=True) if v is not None]
    with plt.rc_context(_STYLE):  # type: ignore[arg-type]
        figure, axes = plt.subplots(figsize=(6.0, 0.3 * max(len(shown), 1) + 0.9))
        try:
            ys = range(len(shown))
            colors = ["#1b7f3b" if v > 0 else "#b02020" if v < 0 else "#999999" for _, v in shown]
            axes.barh(list(ys), [v for _, v in shown], color=colors, height=0.6)
            axes.axvline(0.0, color="#555555", linewidth=1)
            axes.set_yticks(list(ys), [label for label, _ in shown])
            axes.invert_yaxis()
            axes.set_title(title, loc="left", fontsize=10)
            return _svg(figure)
        finally:
            plt.close(figure)
