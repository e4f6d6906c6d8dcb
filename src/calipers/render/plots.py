"""Plots as inline SVG strings, drawn by matplotlib (Agg, no display), reproducible byte for byte:
no date in the metadata, a fixed hash salt for element ids, text kept as text (no embedded font
files), so the page stays small and makes no request.

Every figure is sized to its content and to the page (render/figure.py): no text under 8 pt
(10.7 px), never wider than the page, names cut to fit with the whole name as a tooltip. The plots
with one style per run (bars, difficulty curves, Pareto, strips) are in render/runplots.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from calipers.render.figure import (
    BAD,
    FONT_PT,
    GOOD,
    MAX_WIDTH_IN,
    SMALL_PT,
    drawing,
    line_in,
    plain_text,
    short,
    widest_in,
)
from calipers.render.runplots import curves, grid, grouped_bars, pareto, strip

__all__ = [
    "curves",
    "deltas",
    "forest",
    "grid",
    "grouped_bars",
    "heatmap",
    "history_bands",
    "pareto",
    "plain_text",
    "strip",
]

_NAME_CHARS = 40  # row labels of forest and delta plots


def forest(
    rows: Sequence[tuple[str, float | None, float | None, float | None, bool]],
    *,
    title: str,
    xlabel: str = "treatment − control",
    reference: float | None = 0.0,
    margin: float | None = None,
) -> str:
    """One row per quantity: (label, estimate, low, high, significant); a dashed line at
    `reference` (none when None); with `margin`, the band ±margin shaded and −margin drawn red
    (an interval wholly right of it is non-inferior), labelled inside the plot's top edge, in
    room kept above the first row, so that the label never meets the title above the plot."""
    shown = [r for r in rows if r[1] is not None]
    labels = [short(r[0], _NAME_CHARS) for r in reversed(shown)]
    headroom = 0.0 if margin is None else 0.6  # rows of room for the −margin label
    height = 0.3 * (max(len(shown), 1) + headroom) + 1.1
    with drawing(5.5 + widest_in(labels), height) as (fig, axes):
        for y, (_, est, low, high, significant) in enumerate(reversed(shown)):
            color = GOOD if significant else "#555555"
            if low is not None and high is not None:
                axes.plot([float(low), float(high)], [y, y], color=color, linewidth=2)
            axes.plot([float(est or 0.0)], [y], "o", color=color, markersize=6)
        if reference is not None:
            axes.axvline(reference, color="#999999", linewidth=1, linestyle="--")
        if margin is not None:
            axes.axvspan(-margin, margin, color="#dcefe2", zorder=0)
            axes.axvline(-margin, color=BAD, linewidth=1)
            low_x, high_x = axes.get_xlim()
            # beside the line, on the side with more room, so it stays inside the plot
            right = (-margin - low_x) < 0.5 * (high_x - low_x)
            axes.annotate(
                "−margin", (-margin, 1.0), xycoords=("data", "axes fraction"),
                xytext=(3 if right else -3, -2), textcoords="offset points", color=BAD,
                fontsize=SMALL_PT, ha="left" if right else "right", va="top",
            )  # fmt: skip
        axes.set_yticks(range(len(shown)), labels)
        fig.names(axes.get_yticklabels(), [plain_text(r[0]) for r in reversed(shown)])
        axes.set_xlabel(xlabel)
        axes.set_title(plain_text(title), loc="left")
        axes.set_ylim(-0.6, len(shown) - 0.4 + headroom)
        return fig.svg()


def heatmap(
    values: Sequence[Sequence[float | None]], *, rows: Sequence[str], columns: Sequence[str],
    title: str, label: str,
) -> str:  # fmt: skip
    """A rows × columns grid of values in [0, 1] (None: no data, left blank), each cell labelled;
    column names upright when they do not fit across their column."""
    import numpy as np

    grid_values = np.array([[np.nan if v is None else v for v in row] for row in values], float)
    row_labels = [short(r) for r in rows]
    column_labels = [short(c) for c in columns]
    side = widest_in(row_labels) + 1.6  # row names, colour bar
    room = (MAX_WIDTH_IN - side) / max(len(columns), 1)
    cell = min(max(0.9, widest_in(column_labels) + 0.3), max(room, 0.5))
    upright = widest_in(column_labels) > cell - 0.2
    label_height = widest_in(column_labels) if upright else line_in()
    width = cell * len(columns) + side
    height = 0.36 * len(rows) + label_height + 1.0
    with drawing(width, height) as (fig, axes):
        image = axes.imshow(grid_values, cmap="Reds", vmin=0.0, vmax=1.0, aspect="auto")
        for (i, j), value in np.ndenumerate(grid_values):
            if not np.isnan(value):
                axes.text(j, i, f"{value:.2f}", ha="center", va="center",
                          color="white" if value > 0.6 else "black", fontsize=SMALL_PT)  # fmt: skip
        axes.set_xticks(range(len(columns)), column_labels, rotation=90 if upright else 0)
        axes.set_yticks(range(len(rows)), row_labels)
        fig.names(axes.get_xticklabels(), list(columns))
        fig.names(axes.get_yticklabels(), list(rows))
        axes.set_title(plain_text(title), loc="left")
        fig.figure.colorbar(image, ax=axes, label=label, fraction=0.05)
        return fig.svg()


def deltas(labels: Sequence[str], values: Sequence[float | None], *, title: str) -> str:
    """Horizontal bars, one per label: gains green, losses red, a line at 0."""
    shown = [(label, float(v)) for label, v in zip(labels, values, strict=True) if v is not None]
    names = [short(label, _NAME_CHARS) for label, _ in shown]
    with drawing(5.5 + widest_in(names), 0.28 * max(len(shown), 1) + 1.0) as (fig, axes):
        ys = list(range(len(shown)))
        colors = [GOOD if v > 0 else BAD if v < 0 else "#999999" for _, v in shown]
        axes.barh(ys, [v for _, v in shown], color=colors, height=0.6)
        axes.axvline(0.0, color="#555555", linewidth=1)
        axes.set_yticks(ys, names)
        fig.names(axes.get_yticklabels(), [label for label, _ in shown])
        axes.invert_yaxis()
        axes.set_title(plain_text(title), loc="left")
        return fig.svg()


def history_bands(
    panels: Mapping[str, tuple[Sequence[float], Sequence[float | None], Sequence[float | None]]],
    *, title: str, columns: int = 4,
) -> str:  # fmt: skip
    """Small multiples over time: per panel (values, band mean, band SD), the values as a line, the
    band mean ± 2 SD shaded where it is defined, and values outside it drawn red."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    n_rows = -(-len(panels) // columns)
    with drawing(2.5 * columns, 1.9 * n_rows + 0.5, nrows=n_rows, ncols=columns,
                 squeeze=False) as (fig, grid_axes):  # fmt: skip
        for axes, (panel, (values, means, sds)) in zip(
            grid_axes.flat, panels.items(), strict=False
        ):
            xs = np.arange(1, len(values) + 1)
            mean = np.array([np.nan if m is None else m for m in means], dtype=float)
            sd = np.array([np.nan if s is None else s for s in sds], dtype=float)
            # a box per evaluation: its own band, visible even when it is the only one
            defined = ~np.isnan(mean)
            axes.bar(xs[defined], 4 * sd[defined], bottom=(mean - 2 * sd)[defined],
                     width=0.9, color="#cfe0f3", linewidth=0)  # fmt: skip
            axes.plot(xs[defined], mean[defined], "_", color="#7d9cc0", markersize=8)
            axes.plot(xs, values, "-", color="#1f5fa8", linewidth=1)
            y = np.asarray(values, dtype=float)
            out = np.abs(y - mean) > 2 * sd + 1e-12
            axes.plot(xs[~out], y[~out], "o", color="#1f5fa8", markersize=3)
            axes.plot(xs[out], y[out], "o", color=BAD, markersize=5)
            axes.set_title(short(panel), fontsize=FONT_PT)
            axes.tick_params(labelsize=SMALL_PT)
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        for axes in list(grid_axes.flat)[len(panels) :]:
            axes.set_visible(False)
        fig.figure.suptitle(plain_text(title), x=0.01, ha="left")
        return fig.svg()
