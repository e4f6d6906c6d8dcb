"""Cases as kelvin 0.3.0 reads them: a markdown file per case, `## Header` sections as typed units.

A case file is read as UTF-8 text (universal newlines, as `Path.read_text` does, so CRLF files
parse like LF files). A line `## <words>` starts a unit; its type is the header's words, lowercased
and joined by `_` (`## Gate  Rule` → `gate_rule`). Text before the first header is the preamble: it
is pinned at the top of every rendering and never perturbed. Only `##` followed by a space or tab
opens a unit: `###`, `#` and `##Header` are body text, and so is a `## ` line inside a code fence
(kelvin does not know about fences; neither do we, to give the same units).

`render_case` writes a case (or a perturbed list of its units) back to markdown exactly as kelvin
does, byte for byte: that text is what the pipeline reads and what the cache key hashes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from calipers.errors import InputError

# `##`, at least one space or tab, the header text, optional trailing blanks, end of line. `$` under
# MULTILINE is "before a \n or at the end": text after read_text has only \n line ends.
_UNIT_HEADER = re.compile(r"^##[ \t]+(.+?)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Unit:
    """One `## Header` section of a case."""

    type: str  # normalised header: lowercase words joined by "_"
    content: str  # the body between this header and the next, stripped
    raw_header: str  # the header as written (stripped); rendering uses this, not `type`
    index: int  # 0-based position in the source case; -1 for inserted filler


@dataclass(frozen=True)
class Case:
    """A parsed case file: a pinned preamble and its typed units in file order."""

    name: str  # the file name without `.md`
    source_path: Path
    preamble: str
    units: tuple[Unit, ...]

    def units_of_type(self, unit_type: str) -> list[Unit]:
        return [u for u in self.units if u.type == unit_type]

    def render(self) -> str:
        """The baseline input: the case as kelvin writes it to `baseline/input.md`."""
        return render_case(self.preamble, self.units)


def normalize_unit_type(raw_header: str) -> str:
    """kelvin's type of a header: trimmed, lowercased, every whitespace run replaced by one `_`.

    Lowercasing and splitting are Python's Unicode-aware `str.lower` / `str.split()`, as in kelvin:
    `## Ärger  Über\u00a0Regeln` → `ärger_über_regeln` (a no-break space separates words too).
    Punctuation is kept: `## Gate-Rule (v2)` → `gate-rule_(v2)`.
    """
    return "_".join(raw_header.strip().lower().split())


def parse_case_text(text: str, *, name: str, source_path: Path | None = None) -> Case:
    """Split case text into preamble and units. `text` must already have `\\n` line ends."""
    path = source_path if source_path is not None else Path(f"{name}.md")
    headers = list(_UNIT_HEADER.finditer(text))
    if not headers:
        return Case(name=name, source_path=path, preamble=text.strip(), units=())
    units = []
    for position, header in enumerate(headers):
        body_end = headers[position + 1].start() if position + 1 < len(headers) else len(text)
        raw = header.group(1)
        units.append(
            Unit(
                type=normalize_unit_type(raw),
                content=text[header.end() : body_end].strip(),
                raw_header=raw.strip(),
                index=position,
            )
        )
    return Case(
        name=name,
        source_path=path,
        preamble=text[: headers[0].start()].strip(),
        units=tuple(units),
    )


def parse_case(path: Path) -> Case:
    """Read and parse one case file. Unreadable or non-UTF-8 files raise `InputError`.

    A UTF-8 byte-order mark is kept, as kelvin keeps it: a file starting with a BOM and then
    `## Header` therefore has that first header inside its preamble (the line does not start with
    `##`). We reproduce this rather than fix it, so the inputs stay identical to kelvin's.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: case file is not valid UTF-8 (byte {exc.start})",
            hint="Save the case file as UTF-8.",
        ) from exc
    except IsADirectoryError as exc:
        raise InputError(
            f"{path}: is a directory, but every `*.md` entry in the cases directory is read as a "
            "case file",
            hint="Rename the directory so it does not end in `.md`, or move it elsewhere.",
        ) from exc
    except OSError as exc:
        raise InputError(
            f"{path}: cannot read case file: {exc.strerror or exc}",
            hint="Check that the file exists and is readable.",
        ) from exc
    return parse_case_text(text, name=path.stem, source_path=path)


def case_files(cases_dir: Path) -> list[Path]:
    """The case files kelvin reads: `cases_dir.glob("*.md")`, not recursive, sorted by path.

    The match is case-sensitive on POSIX (`A.MD` is not a case) and includes dot-files
    (`.draft.md` is); sorting is by code point, so `B.md` comes before `a.md`.
    """
    return sorted(cases_dir.glob("*.md"))


def load_cases(cases_dir: Path, *, config_file: Path | None = None) -> list[Case]:
    """Every case in `cases_dir`, in kelvin's order. No directory or no case is an `InputError`
    (kelvin exits 1 with "No cases found")."""
    where = f"{config_file}: field 'cases': " if config_file is not None else ""
    if not cases_dir.exists():
        raise InputError(
            f"{where}cases directory {cases_dir} does not exist",
            hint="Set `cases:` in kelvin.yaml to a directory holding one `*.md` file per case.",
        )
    if not cases_dir.is_dir():
        raise InputError(
            f"{where}{cases_dir} is a file, not a directory of cases",
            hint="Set `cases:` in kelvin.yaml to a directory holding one `*.md` file per case.",
        )
    cases = [parse_case(p) for p in case_files(cases_dir)]
    if not cases:
        raise InputError(
            f"No cases found in {cases_dir}: it holds no `*.md` file",
            hint=f"Add one or more `*.md` case files to {cases_dir}, or point `cases:` in "
            "kelvin.yaml at a directory that has them.",
        )
    return cases


def render_case(preamble: str, units: Iterable[Unit]) -> str:
    """kelvin's rendering: the preamble (if any), then `## <raw header>`, a blank line and the
    content for each unit, blocks separated by one blank line, and one final newline.

    Each block is right-stripped, so a unit with empty content renders as its header line alone.
    An empty case (no preamble, no units) renders as the empty string.
    """
    blocks = [preamble] if preamble else []
    blocks.extend(f"## {u.raw_header}\n\n{u.content}".rstrip() for u in units)
    text = "\n\n".join(blocks)
    if text and not text.endswith("\n"):
        text += "\n"
    return text


def select_cases(cases: Sequence[Case], *, only: str | None) -> list[Case]:
    """The cases to run: all, or the one named by `--only` (a file stem); unknown is an error.

    Peers for pad_content and swap always come from every case, not only the selected ones.
    """
    if only is None:
        return list(cases)
    chosen = [c for c in cases if c.name == only]
    if not chosen:
        names = ", ".join(c.name for c in cases)
        raise InputError(
            f"--only {only!r}: no such case. Available: {names}",
            hint="A case's name is its file name without `.md` (cases/envelop.md is `envelop`).",
        )
    return chosen


def unit_type_counts(cases: Iterable[Case]) -> dict[str, int]:
    """How many units of each type the cases hold, by type name (kelvin echoes this at start)."""
    counts: dict[str, int] = {}
    for case in cases:
        for unit in case.units:
            counts[unit.type] = counts.get(unit.type, 0) + 1
    return dict(sorted(counts.items()))


def check_governing_types(
    cases: Sequence[Case], governing_types: Sequence[str], *, config_file: Path | None = None
) -> None:
    """kelvin's fail-fast check: every declared governing type must occur in some case, else swap
    would silently produce nothing for it. Raises `InputError` (kelvin exits 1)."""
    discovered = {u.type for c in cases for u in c.units}
    unknown = [t for t in governing_types if t not in discovered]
    if unknown:
        where = f"{config_file}: field 'governing_types': " if config_file is not None else ""
        raise InputError(
            f"{where}declared governing_types not found in any case: {', '.join(unknown)}. "
            f"Discovered types: {', '.join(sorted(discovered)) or '(none)'}",
            hint="Types are normalised headers: `## Gate Rule` is `gate_rule`. Rename the header "
            "in the case files or use the normalised name in `governing_types:`.",
        )
