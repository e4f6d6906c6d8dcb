"""Readability measured in the browser: the rendered size of every piece of text on a page (HTML
and the plots' SVG <text>, whose font size is scaled by the SVG's own transform and by the width
the page gives it), and the boxes of text that overlap within one plot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Every text node outside SVG: the computed font size of its element. Every SVG <text>: its
# computed font size (in the SVG's user units) times the scale of its screen transform, so a plot
# shrunk to fit the page counts at the size it is drawn.
_SIZES = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const element = node.parentElement;
    if (!text || element.closest('svg, style, script')) continue;
    out.push(['html', parseFloat(getComputedStyle(element).fontSize), text.slice(0, 60)]);
  }
  for (const element of document.querySelectorAll('svg text')) {
    const text = element.textContent.trim();
    const m = element.getScreenCTM();
    if (!text || !m) continue;
    const scale = Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
    out.push(['svg', parseFloat(getComputedStyle(element).fontSize) * scale, text.slice(0, 60)]);
  }
  return out;
}"""

# Per SVG, every pair of <text> whose boxes on screen overlap by more than `tolerance` px each
# way (axis-aligned boxes: the plots rotate text by 0 or 90 degrees only, so a box is the text).
_OVERLAPS = """(tolerance) => {
  const out = [];
  document.querySelectorAll('svg').forEach((svg, index) => {
    const boxes = [];
    for (const element of svg.querySelectorAll('text')) {
      const text = element.textContent.trim();
      const r = element.getBoundingClientRect();
      if (text && r.width > 0 && r.height > 0) boxes.push([text, r]);
    }
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, p] = boxes[i], [b, q] = boxes[j];
        const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
        const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (w > tolerance && h > tolerance) out.push([index, a.slice(0, 40), b.slice(0, 40)]);
      }
    }
  });
  return out;
}"""


@dataclass
class TextSize:
    kind: str  # html or svg
    px: float
    text: str


def open_everything(page: Any) -> None:
    """Open every <details>, so that the text inside is laid out and measured too."""
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true })")


def text_sizes(page: Any) -> list[TextSize]:
    return [TextSize(kind, float(px), text) for kind, px, text in page.evaluate(_SIZES)]


def smallest(page: Any, kind: str | None = None) -> TextSize:
    sizes = [s for s in text_sizes(page) if kind is None or s.kind == kind]
    return min(sizes, key=lambda s: s.px)


def overlapping_text(page: Any, tolerance: float = 0.5) -> list[tuple[int, str, str]]:
    return [(int(i), a, b) for i, a, b in page.evaluate(_OVERLAPS, tolerance)]
