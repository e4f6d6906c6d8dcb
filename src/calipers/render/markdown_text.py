"""The text primitives of the Markdown summaries: `escape`, which makes a piece of data inert as
GitHub-flavoured Markdown, and the formats of numbers, intervals and tables
(`calipers.render.markdown`, `calipers.render.changes`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

# ------------------------------------------------------------------------------- escaping

# ANSI / ECMA-48 sequences: CSI (7- and 8-bit), OSC (hyperlinks, titles), DCS/SOS/PM/APC strings,
# and the two-character escapes. Stripped whole, so no parameter bytes are left behind as text.
_ANSI = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]P^_X]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x85\u2028\u2029]")
# what is left of the C0 and C1 controls, and the bidirectional overrides that reorder what a
# reader sees (tab becomes a space first)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Every character that starts Markdown anywhere in a line, plus `:` and `@` (GFM autolinks:
# http://…, mailto:…, name@host) and `$` (GitHub math). A backslash makes each one literal, in a
# paragraph and in a table cell alike (`\|` does not end a cell).
_SPECIAL = re.compile(r"[\\`*_\[\]<>|#~$&:@!]")
# Only at the start of the text: list items, headings by underline, ordered lists.
_LEADING = re.compile(r"^(?:([-+=])|(\d+)(?=[.)]))")
_WORD_JOINER = "\u2060"
# GitHub rewrites text after rendering Markdown, backslashes or not: @mentions, #123 and GH-123
# issue references, :shortcode: emoji. An invisible word joiner after the trigger breaks each.
_GITHUB_REFERENCE = re.compile(r"(\\@)(?=[A-Za-z0-9])|(\\#)(?=\d)|(?<![A-Za-z0-9])(GH-)(?=\d)")
_EMOJI = re.compile(r"(\\:)(?=[\w+-]+\\:)")
_WWW = re.compile(r"(?i)(?<![A-Za-z0-9])(www)\.")


def escape(text: object) -> str:
    """`text` (a name, a reason, a note) as literal Markdown on one line, trimmed: ANSI
    sequences and control characters removed, each line break shown as ↵, every character
    with a Markdown meaning backslash-escaped (`| * _ \\` < > [ ] # ~ $ & : @ !`, and a
    leading `-`, `+`, `=` or `1.`), `www.` and `@`/`#`/`:` kept from becoming links,
    mentions, issue references or emoji."""
    s = _ANSI.sub("", str(text))
    s = _LINE_BREAK.sub("↵", s).replace("\t", " ")
    s = _CONTROL.sub("", s)
    s = _SPECIAL.sub(lambda m: "\\" + m.group(), s.strip())
    s = _LEADING.sub(lambda m: "\\" + m.group() if m.group(1) else m.group(2) + "\\", s)
    s = _WWW.sub(r"\1\\.", s)
    s = _GITHUB_REFERENCE.sub(lambda m: next(g for g in m.groups() if g) + _WORD_JOINER, s)
    return _EMOJI.sub(lambda m: m.group(1) + _WORD_JOINER, s)


# ------------------------------------------------------------------------------- numbers


def num(x: Any, digits: int = 3) -> str:
    return "—" if not isinstance(x, int | float) or isinstance(x, bool) else f"{x:.{digits}f}"


def signed(x: Any, digits: int = 3) -> str:
    return "—" if not isinstance(x, int | float) or isinstance(x, bool) else f"{x:+.{digits}f}"


def bounds(low: Any, high: Any, fmt: Callable[[Any, int], str] = signed, digits: int = 3) -> str:
    if low is None or high is None:
        return "—"
    return f"\\[{fmt(low, digits)}, {fmt(high, digits)}\\]"


def level(confidence: Any) -> str:
    return f"{confidence:.0%}" if isinstance(confidence, int | float) else "—"


def table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines
