"""Plots as inline SVG strings, drawn by matplotlib (Agg, no display), reproducible byte for byte:
no date in the metadata, a fixed hash salt for element ids, text kept as text (no embedded font
files), so the page stays small and makes no request."""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

from calipers.render.text import visible_controls

_STYLE: dict[str, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "calipers",
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "text.parse_math": False,  # names are data: `cost_$_per_$_token` is not mathtext
}


def plain_text(text: object) -> str:
    """A name drawn as itself: mathtext is off in _STYLE; control characters become visible."""
    return visible_controls(str(text))


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
    reference: float | None = 0.0,
    margin: float | None = None,
) -> str:
    """One row per quantity: (label, estimate, low, high, significant); a dashed line at
    `reference` (none when None); with `margin`, the band ±margin shaded and −margin drawn red
    (an interval wholly right of it is non-inferior)."""
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
            if reference is not None:
                axes.axvline(reference, color="#999999", linewidth=1, linestyle="--")
            if margin is not None:
                axes.axvspan(-margin, margin, color="#dcefe2", zorder=0)
                axes.axvline(-margin, color="#b3261e", linewidth=1)
                axes.annotate(
                    "−margin", (-margin, 1.0), xycoords=("data", "axes fraction"),
                    color="#b3261e", fontsize=8, ha="right", va="bottom",
                )  # fmt: skip
            axes.set_yticks(range(len(shown)), [plain_text(r[0]) for r in reversed(shown)])
            axes.set_xlabel(xlabel)
            axes.set_title(plain_text(title), loc="left", fontsize=10)
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
            axes.set_xticks(
                range(len(columns)), [plain_text(c) for c in columns], rotation=30, ha="right"
            )
            axes.set_yticks(range(len(rows)), [plain_text(r) for r in rows])
            axes.set_title(plain_text(title), loc="left", fontsize=10)
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
            axes.set_yticks(list(ys), [plain_text(label) for label, _ in shown])
            axes.invert_yaxis()
            axes.set_title(plain_text(title), loc="left", fontsize=10)
            return _svg(figure)
        finally:
            plt.close(figure)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return plt


_COLORS = ("#1f5fa8", "#d1731f", "#2b8a3e", "#8e44ad", "#b02020", "#5f6b73", "#c2a400", "#0f8b8d")


def grouped_bars(
    groups: Sequence[str], series: dict[str, Sequence[float | None]], *, title: str, ylabel: str
) -> str:
    """Bars per group (x), one colour per series; a missing value leaves its bar out."""
    plt = _pyplot()
    width = 0.8 / max(len(series), 1)
    with plt.rc_context(_STYLE):
        figure, axes = plt.subplots(figsize=(max(4.0, 1.2 * len(groups) + 2.5), 3.0))
        try:
            for k, (name, values) in enumerate(series.items()):
                xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(groups))]
                pairs = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
                axes.bar([x for x, _ in pairs], [v for _, v in pairs], width=width * 0.95,
                         color=_COLORS[k % len(_COLORS)], label=plain_text(name))  # fmt: skip
            axes.set_xticks(range(len(groups)), [plain_text(g) for g in groups])
            axes.set_ylabel(ylabel)
            axes.set_title(plain_text(title), loc="left", fontsize=10)
            axes.legend(fontsize=8, frameon=False, bbox_to_anchor=(1.0, 1.0), loc="upper left")
            return _svg(figure)
        finally:
            plt.close(figure)


def curves(
    panels: Mapping[str, tuple[Sequence[str], Mapping[str, Sequence[float | None]]]],
    *, title: str, ylabel: str, columns: int = 4,
) -> str:  # fmt: skip
    """Small multiples: per panel (title → (x labels, {series: y values})) one line per series, on
    a shared 0–1 y axis; a missing value breaks its line."""
    plt = _pyplot()
    names: list[str] = []  # one colour per series across panels, in the order they come
    for _, series in panels.values():
        names += [s for s in series if s not in names]
    n_rows = -(-len(panels) // columns)
    with plt.rc_context(_STYLE):
        figure, grid = plt.subplots(
            n_rows, columns, figsize=(2.5 * columns, 2.1 * n_rows + 0.6), squeeze=False,
            sharey=True,
        )  # fmt: skip
        try:
            for axes, (panel, (labels, series)) in zip(grid.flat, panels.items(), strict=False):
                for name, values in series.items():
                    ys = [float("nan") if v is None else v for v in values]
                    color = _COLORS[names.index(name) % len(_COLORS)]
                    axes.plot(range(len(ys)), ys, "o-", color=color, markersize=3, linewidth=1.2,
                              label=plain_text(name))  # fmt: skip
                axes.set_xticks(range(len(labels)), [plain_text(x) for x in labels], rotation=45,
                                ha="right", fontsize=6)  # fmt: skip
                axes.set_title(plain_text(panel), fontsize=9)
                axes.set_ylim(0.0, 1.05)
            for axes in list(grid.flat)[len(panels) :]:
                axes.set_visible(False)
            grid[0][0].set_ylabel(ylabel)
            handles, labels = grid[0][0].get_legend_handles_labels()
            figure.legend(handles, labels, loc="upper right", fontsize=8, frameon=False,
                          ncol=min(len(names), 4))  # fmt: skip
            figure.suptitle(title, x=0.01, ha="left", fontsize=10)
            figure.tight_layout(rect=(0, 0, 1, 0.95))
            return _svg(figure)
        finally:
            plt.close(figure)


def pareto(
    points: Sequence[tuple[str, float, float]], frontier: Sequence[str], *, title: str,
    xlabel: str, ylabel: str,
) -> str:  # fmt: skip
    """A scatter of (label, x, y), lower x and higher y better; the frontier's points joined by a
    step line and drawn filled, the dominated ones hollow."""
    plt = _pyplot()
    with plt.rc_context(_STYLE):
        figure, axes = plt.subplots(figsize=(6.0, 3.6))
        try:
            on = sorted((p for p in points if p[0] in frontier), key=lambda p: p[1])
            if len(on) > 1:
                axes.step([p[1] for p in on], [p[2] for p in on], where="post", color="#1b7f3b",
                          linewidth=1.2, label="Pareto frontier")  # fmt: skip
            for label, x, y in points:
                best = label in frontier
                axes.plot([x], [y], "o", markersize=7, color="#1b7f3b" if best else "#777777",
                          markerfacecolor=None if best else "white")  # fmt: skip
                axes.annotate(
                    plain_text(label), (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8
                )
            axes.set_xlabel(xlabel)
            axes.set_ylabel(ylabel)
            axes.set_title(plain_text(title), loc="left", fontsize=10)
            return _svg(figure)
        finally:
            plt.close(figure)


def history_bands(
    panels: Mapping[str, tuple[Sequence[float], Sequence[float | None], Sequence[float | None]]],
    *, title: str, columns: int = 4,
) -> str:  # fmt: skip
    """Small multiples over time: per panel (values, band mean, band SD), the values as a line, the
    band mean ± 2 SD shaded where it is defined, and values outside it drawn red."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    n_rows = -(-len(panels) // columns)
    with plt.rc_context(_STYLE):
        figure, grid = plt.subplots(
            n_rows, columns, figsize=(2.5 * columns, 1.9 * n_rows + 0.5), squeeze=False,
        )  # fmt: skip
        try:
            for axes, (panel, (values, means, sds)) in zip(grid.flat, panels.items(), strict=False):
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
                axes.plot(xs[out], y[out], "o", color="#b02020", markersize=5)
                axes.set_title(plain_text(panel), fontsize=9)
                axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            for axes in list(grid.flat)[len(panels) :]:
                axes.set_visible(False)
            figure.suptitle(title, x=0.01, ha="left", fontsize=10)
            figure.tight_layout(rect=(0, 0, 1, 0.94))
            return _svg(figure)
        finally:
            plt.close(figure)
