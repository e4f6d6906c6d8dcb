"""Plots with one style per run: grouped bars (a labelled grid when bars would not fit), difficulty
curves, score against tokens with the Pareto frontier, and strips of scores per task.

Runs keep one style in a plot, in the order they are given: colour from a 20-colour palette and,
where points are drawn, a marker cycling with period 7 (render/figure.py), so 16 runs and more stay
apart. Names longer than a plot can show are cut, with the whole name as a tooltip."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from calipers.render.figure import (
    FONT_PT,
    GOOD,
    MAX_WIDTH_IN,
    SMALL_PT,
    bar_style,
    drawing,
    line_in,
    plain_text,
    run_style,
    short,
    text_width_in,
    widest_in,
)

_BAR_IN = 0.14  # one bar's width
_GROUP_GAP_IN = 0.3
_CELL_IN = 0.48  # one column of a grid
_LEGEND_KEY_IN = 0.55  # a legend entry's marker and padding


def _legend_width(names: list[str]) -> float:
    return widest_in([short(n) for n in names], SMALL_PT) + _LEGEND_KEY_IN


def grouped_bars(
    groups: Sequence[str], series: Mapping[str, Sequence[float | None]], *, title: str,
    ylabel: str,
) -> str:  # fmt: skip
    """Bars per group (x), one colour per series; a missing value leaves its bar out, and a
    series without any value is left out (its legend entry would have no bar, in a default
    colour). When the bars would not fit the page at a readable width, a labelled grid instead
    (`grid`)."""
    series = {name: values for name, values in series.items()
              if any(v is not None for v in values)}  # fmt: skip
    names = list(series)
    group_in = _BAR_IN * max(len(names), 1) + _GROUP_GAP_IN
    axis_in = group_in * len(groups) + 0.9
    if axis_in + _legend_width(names) > MAX_WIDTH_IN:
        return grid(groups, series, title=title, label=ylabel)
    group_labels = [short(g) for g in groups]
    upright = widest_in(group_labels) > group_in - 0.05
    label_height = widest_in(group_labels) if upright else line_in()
    height = max(2.6 + label_height, line_in(SMALL_PT) * (len(names) + 1) + label_height + 0.8)
    with drawing(max(4.5, axis_in + _legend_width(names)), height) as (fig, axes):
        width = 0.8 / max(len(names), 1)
        for k, (name, values) in enumerate(series.items()):
            xs = [i + (k - (len(names) - 1) / 2) * width for i in range(len(groups))]
            pairs = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
            axes.bar([x for x, _ in pairs], [v for _, v in pairs], width=width * 0.95,
                     label=short(name), edgecolor="white", linewidth=0.3,
                     **bar_style(k))  # fmt: skip
        axes.set_xticks(range(len(groups)), group_labels, rotation=90 if upright else 0)
        fig.names(axes.get_xticklabels(), list(groups))
        axes.set_ylabel(plain_text(ylabel))
        axes.set_title(plain_text(title), loc="left")
        legend = axes.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.names(legend.get_texts(), names)
        return fig.svg()


def _cell_format(values: list[float]) -> str:
    if all(float(v).is_integer() for v in values) or max(map(abs, values), default=0) >= 100:
        return "{:.0f}"
    return "{:.2f}"


def grid(
    groups: Sequence[str], series: Mapping[str, Sequence[float | None]], *, title: str,
    label: str,
) -> str:  # fmt: skip
    """The values of grouped bars as a table of shaded cells, each with its value: the longer of
    groups and series down the side, the other across the top (split into several blocks when
    there are more columns than fit the page). A missing value is a blank cell."""
    import numpy as np

    names = list(series)
    matrix = [[series[n][g] for n in names] for g in range(len(groups))]  # groups × series
    rows, columns = list(groups), names
    if len(names) > len(groups):
        rows, columns = names, list(groups)
        matrix = [list(col) for col in zip(*matrix, strict=True)] if matrix else []
    values = np.array([[np.nan if v is None else float(v) for v in row] for row in matrix], float)
    present = [float(v) for v in values.flat if not np.isnan(v)]
    fmt = _cell_format(present)
    low, high = (min(present), max(present)) if present else (0.0, 1.0)
    row_labels = [short(r) for r in rows]
    column_labels = [short(c) for c in columns]
    side_in = widest_in(row_labels) + 0.4
    room = MAX_WIDTH_IN - side_in - 0.2
    across = widest_in(column_labels, SMALL_PT) + 0.12  # a column as wide as its name
    cell = max(across, _CELL_IN) if max(across, _CELL_IN) * len(columns) <= room else _CELL_IN
    fitting = max(1, int(room // cell))
    per_block = math.ceil(len(columns) / math.ceil(len(columns) / fitting))  # balanced blocks
    blocks = [list(range(i, min(i + per_block, len(columns))))
              for i in range(0, len(columns), per_block)]  # fmt: skip
    upright = across > cell
    top_in = (widest_in(column_labels, SMALL_PT) if upright else line_in(SMALL_PT)) + 0.15
    block_in = 0.25 * len(rows) + top_in
    width = side_in + cell * min(per_block, len(columns)) + 0.2
    with drawing(width, block_in * len(blocks) + 0.5, nrows=len(blocks), squeeze=False,
                 gridspec_kw={"height_ratios": [1] * len(blocks)}) as (fig, axes_grid):  # fmt: skip
        for axes, block in zip(axes_grid[:, 0], blocks, strict=True):
            part = values[:, block]
            axes.imshow(part, cmap="Blues", vmin=low - 0.15 * (high - low or 1), vmax=high,
                        aspect="auto")  # fmt: skip
            for (i, j), value in np.ndenumerate(part):
                if not np.isnan(value):
                    dark = (value - low) / (high - low or 1) > 0.6
                    axes.text(j, i, fmt.format(value), ha="center", va="center",
                              fontsize=SMALL_PT, color="white" if dark else "black")  # fmt: skip
            axes.xaxis.tick_top()
            axes.set_xticks(range(len(block)), [column_labels[c] for c in block],
                            rotation=90 if upright else 0, fontsize=SMALL_PT)  # fmt: skip
            axes.set_yticks(range(len(rows)), row_labels)
            axes.set_xlim(-0.5, per_block - 0.5)  # a short last block keeps the cells' width
            axes.tick_params(length=0)
            for spine in axes.spines.values():
                spine.set_visible(False)
            fig.names(axes.get_xticklabels(), [columns[c] for c in block])
            fig.names(axes.get_yticklabels(), rows)
        fig.figure.suptitle(f"{plain_text(title)} · {plain_text(label)} in each cell", x=0.01,
                            ha="left")  # fmt: skip
        return fig.svg()


def curves(
    panels: Mapping[str, tuple[Sequence[str], Mapping[str, Sequence[float | None]]]],
    *, title: str, ylabel: str, columns: int = 3,
) -> str:  # fmt: skip
    """Small multiples: per panel (title → (x labels, {series: y values})) one line per series, on
    a shared 0–1 y axis; a missing value breaks its line. x labels stand upright; when every panel
    has the same ones, only the bottom panel of each column shows them."""
    names: list[str] = []  # one style per series across panels, in the order they come
    for _, series in panels.values():
        names += [s for s in series if s not in names]
    columns = max(1, min(columns, 3, len(panels)))
    n_rows = -(-len(panels) // columns)
    axis_labels = [[short(x, 32) for x in labels] for labels, _ in panels.values()]
    shared = all(labels == axis_labels[0] for labels in axis_labels)
    label_in = widest_in([x for labels in axis_labels for x in labels], SMALL_PT) + 0.1
    legend_columns = max(1, int(MAX_WIDTH_IN // _legend_width(names)))
    legend_in = line_in(SMALL_PT) * 1.2 * math.ceil(len(names) / legend_columns)
    height = n_rows * 2.0 + label_in * (1 if shared else n_rows) + legend_in + 0.6
    panel_in = MAX_WIDTH_IN / columns
    with drawing(MAX_WIDTH_IN, height, nrows=n_rows, ncols=columns, squeeze=False,
                 sharey=True) as (fig, grid_axes):  # fmt: skip
        flat = list(grid_axes.flat)
        for index, (axes, (panel, (labels, series))) in enumerate(
            zip(flat, panels.items(), strict=False)
        ):
            for name, values in series.items():
                ys = [float("nan") if v is None else v for v in values]
                axes.plot(range(len(ys)), ys, "-", markersize=4, linewidth=1.2,
                          label=short(name), **run_style(names.index(name)))  # fmt: skip
            shown = axis_labels[index]
            step = max(1, math.ceil(len(shown) * line_in(SMALL_PT) / (panel_in - 0.6)))
            ticks = list(range(0, len(shown), step))
            axes.set_xticks(ticks, [shown[i] for i in ticks], rotation=90, fontsize=SMALL_PT)
            fig.names(axes.get_xticklabels(), [plain_text(labels[i]) for i in ticks])
            below = index + columns < len(panels)
            if shared and below:
                axes.tick_params(labelbottom=False)
            axes.set_title(short(panel, 40), fontsize=FONT_PT)
            axes.set_ylim(0.0, 1.05)
        for axes in flat[len(panels) :]:
            axes.set_visible(False)
        grid_axes[0][0].set_ylabel(plain_text(ylabel))
        handles, labels = grid_axes[0][0].get_legend_handles_labels()
        seen = {label for label in labels}
        for axes in flat[1 : len(panels)]:  # a series absent from the first panel
            for handle, label in zip(*axes.get_legend_handles_labels(), strict=True):
                if label not in seen:
                    handles.append(handle)
                    labels.append(label)
                    seen.add(label)
        legend = fig.figure.legend(handles, labels, loc="outside lower left", frameon=False,
                                   ncol=legend_columns)  # fmt: skip
        fig.names(legend.get_texts(), names)
        fig.figure.suptitle(plain_text(title), x=0.01, ha="left")
        return fig.svg()


def pareto(
    points: Sequence[tuple[str, float, float]], frontier: Sequence[str], *, title: str,
    xlabel: str, ylabel: str,
) -> str:  # fmt: skip
    """A scatter of (label, x, y), lower x and higher y better, one style per run (listed in the
    legend, in the order given); the frontier's points joined by a step line and drawn filled,
    the dominated ones hollow. Each point is named beside it where the name fits without
    touching another name or point; the legend names them all."""
    names = [p[0] for p in points]
    legend_in = _legend_width(names)
    height = max(3.8, line_in(SMALL_PT) * (len(points) + 2) + 0.8)
    with drawing(6.4 + legend_in, height) as (fig, axes):
        on = sorted((p for p in points if p[0] in frontier), key=lambda p: p[1])
        if len(on) > 1:
            axes.step([p[1] for p in on], [p[2] for p in on], where="post", color=GOOD,
                      linewidth=1.2, label="Pareto frontier")  # fmt: skip
        for k, (label, x, y) in enumerate(points):
            style = run_style(k)
            best = label in frontier
            axes.plot([x], [y], linestyle="none", markersize=7, label=short(label),
                      markerfacecolor=style["color"] if best else "white",
                      markeredgewidth=1.4, **style)  # fmt: skip
        axes.margins(0.12)
        axes.set_xlabel(plain_text(xlabel))
        axes.set_ylabel(plain_text(ylabel))
        axes.set_title(plain_text(title) + "\nfilled: on the frontier · hollow: dominated",
                       loc="left")  # fmt: skip
        legend = axes.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.names(legend.get_texts()[-len(points) :] if points else [], names)
        _name_points(fig, axes, points)
        return fig.svg()


def _name_points(fig: Any, axes: Any, points: Sequence[tuple[str, float, float]]) -> None:
    """Greedy labels: each point in turn gets the first of eight places around it whose box
    stays inside the axes and touches no earlier label and no point; a point with no such place
    goes unnamed (the legend has it)."""
    from matplotlib.transforms import Bbox

    figure = fig.figure
    figure.canvas.draw()  # the layout, so that data map to their final place
    renderer = figure.canvas.get_renderer()
    frame = axes.get_window_extent(renderer)
    scale = figure.dpi / 72.0
    centres = [axes.transData.transform((x, y)) for _, x, y in points]
    marker = 5 * scale
    taken = [Bbox.from_extents(cx - marker, cy - marker, cx + marker, cy + marker)
             for cx, cy in centres]  # fmt: skip
    gap = 4 * scale
    for (label, x, y), (cx, cy) in zip(points, centres, strict=True):
        text = axes.annotate(short(label, 24), (x, y), xytext=(0, 0), textcoords="offset points",
                             fontsize=SMALL_PT, ha="left", va="bottom")  # fmt: skip
        text.set_in_layout(False)
        fig.name(text, label)
        box = text.get_window_extent(renderer)
        w, h = box.width, box.height
        for dx, dy in ((gap, gap), (gap, -gap - h), (-gap - w, gap), (-gap - w, -gap - h),
                       (-w / 2, marker + 1), (-w / 2, -marker - 1 - h), (marker + 2, -h / 2),
                       (-marker - 2 - w, -h / 2)):  # fmt: skip
            place = Bbox.from_bounds(cx + dx, cy + dy, w, h)
            inside = frame.contains(place.x0, place.y0) and frame.contains(place.x1, place.y1)
            if inside and not any(place.overlaps(other) for other in taken):
                text.xyann = (dx / scale, dy / scale)
                taken.append(place)
                break
        else:
            text.remove()
            fig.titles.pop(text.get_gid() or "", None)


def strip(
    rows: Sequence[str], values: Mapping[str, Mapping[str, Sequence[float]]], *, title: str,
    xlabel: str, xlim: tuple[float, float] | None = None,
) -> str:  # fmt: skip
    """Per row (a task) the values of each series (a run: {row: values}) as points side by side
    within the row, one style per series; a legend names the series."""
    names = list(values)
    row_labels = [short(r) for r in rows]
    row_in = max(0.4, 0.06 * len(names) + 0.1)
    height = max(row_in * len(rows) + 1.2, line_in(SMALL_PT) * (len(names) + 1) + 1.0)
    width = 6.0 + widest_in(row_labels) + _legend_width(names)
    with drawing(width, height) as (fig, axes):
        band = 0.7
        for k, name in enumerate(names):
            offset = (k - (len(names) - 1) / 2) * band / max(len(names), 1)
            xs, ys = [], []
            for i, row in enumerate(rows):
                for v in values[name].get(row, ()):
                    xs.append(float(v))
                    ys.append(i + offset)
            axes.plot(xs, ys, linestyle="none", markersize=5, label=short(name), alpha=0.9,
                      **run_style(k))  # fmt: skip
        axes.set_yticks(range(len(rows)), row_labels)
        fig.names(axes.get_yticklabels(), list(rows))
        axes.set_ylim(len(rows) - 0.5, -0.5)
        for i in range(1, len(rows)):
            axes.axhline(i - 0.5, color="#e5e5e5", linewidth=0.8)
        if xlim is not None:
            axes.set_xlim(*xlim)
        axes.set_xlabel(plain_text(xlabel))
        axes.set_title(plain_text(title), loc="left")
        legend = axes.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.names(legend.get_texts(), names)
        return fig.svg()


__all__ = ["curves", "grid", "grouped_bars", "pareto", "strip", "text_width_in"]
