"""Pairwise preferences made elsewhere — arena battle logs, human preference tables, another
tool's judge verdicts — read into the rows `calipers grade --pairwise` stores
(`calipers.grading.pairwise.PairVerdict`), so that `calipers rank --pairwise FILE` fits them by
the same Bradley–Terry, intervals and tie groups (docs/rankings.md, "Preference files").

Files: CSV, JSON Lines, a JSON array of objects, or Parquet; one row per judgment, in one of two
shapes (decided by the columns; other columns are ignored):

    arena    model_a, model_b, winner ∈ {model_a, model_b, tie, tie (bothbad)}
             (the LMSYS Chatbot Arena logs and MT-bench judgments use exactly these)
    ab       a, b, winner ∈ {a, b, tie}

`winner` may also be the name of either model. Optional: `question_id` (or `sample_id`): the
item judged, which the bootstrap resamples as a unit (its turns, judges and orders together);
`judge`; `turn`. The model in `model_a` / `a` is the one shown first (left).

Both ties count as half a win each, the convention of `calipers.stats.bradley_terry` (and of the
arena's own maximum-likelihood fit, which counts a tie as one win each way).

**Orders.** Two rows with the same question_id, judge and turn that name the same two models in
opposite positions are the two orders of one judgment and combine as calipers' own verdicts do:
the verdict when they agree, a tie when they disagree (the preference followed the position).
Rows repeated in one position pair up with the other position's in file order; a row left without
a counterpart — and every row of a file without question_id — is a judgment made in one order
(an arena battle, one human vote), whose outcome is its verdict.

Errors name the file, the line (the row of a Parquet file, the item of a list given in Python),
the field and what to write instead; every problem of the file is reported at once. Model names
are data: never paths, and escaped wherever they are shown.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any, Literal

from calipers.errors import InputError, Problem, ValidationError
from calipers.grading.pairwise import PairVerdict, Verdict

Shape = Literal["arena", "ab"]
COLUMNS: dict[Shape, tuple[str, str]] = {"arena": ("model_a", "model_b"), "ab": ("a", "b")}
WINNERS: dict[Shape, dict[str, str]] = {
    "arena": {"model_a": "first", "model_b": "second", "tie": "tie", "tie (bothbad)": "tie"},
    "ab": {"a": "first", "b": "second", "tie": "tie"},
}
ITEM_COLUMNS = ("question_id", "sample_id")
UNNAMED_JUDGE = "(unnamed)"
HINT = (
    "A preference file has one row per judgment with columns model_a, model_b, winner "
    "(model_a | model_b | tie | tie (bothbad)) or a, b, winner (a | b | tie), winner also the "
    "name of either model; optional question_id, judge, turn (docs/rankings.md, "
    "'Preference files')."
)


@dataclass(frozen=True)
class Preferences:
    """A preference file's judgments as pairwise rows, and what the file held."""

    rows: tuple[PairVerdict, ...]
    origin: str
    shape: Shape
    n_rows: int

    @property
    def runs(self) -> list[str]:
        return sorted({name for r in self.rows for name in (r.run_a, r.run_b)})

    def to_dict(self) -> dict[str, Any]:
        both = sum(not r.one_order for r in self.rows)
        return {
            "file": self.origin, "shape": self.shape, "rows": self.n_rows,
            "both_orders": both, "one_order": len(self.rows) - both,
        }  # fmt: skip

    def select(self, *, runs: Sequence[str] = (), judges: Sequence[str] = ()) -> list[PairVerdict]:
        """The rows between the given runs (both of a pair among them) by the given judges;
        a run or judge the file does not name is an error, not an empty ranking."""
        for asked, have, flag in (
            (runs, self.runs, "run"),
            (judges, sorted({r.judge for r in self.rows}), "judge-name"),
        ):
            unknown = [name for name in asked if name not in have]
            if unknown:
                raise InputError(
                    f"{self.origin} has no {flag.split('-')[0]} {', '.join(map(repr, unknown))}",
                    hint=f"It names: {', '.join(have[:20])}{' …' if len(have) > 20 else ''}.",
                    parameters=["runs" if flag == "run" else "judges"],
                )
        return [
            r for r in self.rows
            if (not runs or (r.run_a in runs and r.run_b in runs))
            and (not judges or r.judge in judges)
        ]  # fmt: skip


def read_preferences(path: Path) -> Preferences:
    """The judgments of a preference file (CSV, JSON Lines, JSON array, Parquet; module doc)."""
    origin = str(path)
    if not path.is_file():
        what = "a directory, not a preference file" if path.is_dir() else "no such file"
        raise InputError(f"{origin}: {what}", hint=HINT)
    unit = "row" if path.suffix.lower() in (".parquet", ".pq") else "line"
    return preferences_from_records(_records(path), origin=origin, unit=unit)


def preferences_from_records(
    records: Iterable[tuple[int, Mapping[str, Any]]], *, origin: str, unit: str = "line"
) -> Preferences:
    """Judgments from (line, record) pairs: what `read_preferences` reads, or rows given in
    Python (`calipers.rank`)."""
    problems: list[Problem] = []
    shape: Shape | None = None
    judged: list[_Judgment] = []
    n_rows = 0
    for line, record in records:
        n_rows += 1
        if not isinstance(record, Mapping):
            problems.append(Problem("not an object", origin, line, None, "an object of "
                                    "columns", type(record).__name__, unit))  # fmt: skip
            continue
        if shape is None:
            shape = _shape(record, origin, line, unit)
        found = _judgment(record, shape, origin, line, unit, problems)
        if found is not None:
            judged.append(found)
    if n_rows == 0:
        raise ValidationError(
            [Problem("no judgments: the file is empty (or holds only a header)", origin, 1,
                     unit=unit)],
            hint=HINT,
        )  # fmt: skip
    if problems:
        raise ValidationError(problems, hint=HINT)
    assert shape is not None
    return Preferences(tuple(_pair_orders(judged)), origin, shape, n_rows)


def _shape(record: Mapping[str, Any], origin: str, line: int, unit: str) -> Shape:
    for shape, (first, second) in COLUMNS.items():
        if first in record and second in record:
            return shape
    for first, second in COLUMNS.values():
        if (first in record) != (second in record):
            missing = second if first in record else first
            break
    else:
        missing = "model_a"
    have = ", ".join(list(map(str, record))[:12]) or "none"
    raise ValidationError(
        [Problem(f"missing column '{missing}': a preference file needs model_a, model_b, winner "
                 "(arena) or a, b, winner", origin, line, missing, "model_a and model_b, or a "
                 "and b", f"columns {have}", unit)],
        hint=HINT,
    )  # fmt: skip


@dataclass(frozen=True)
class _Judgment:
    line: int
    first: str  # shown first (model_a / a)
    second: str
    said: str  # first, second or tie
    item: str | None
    judge: str
    turn: int


def _judgment(
    record: Mapping[str, Any], shape: Shape, origin: str, line: int, unit: str,
    problems: list[Problem],
) -> _Judgment | None:  # fmt: skip
    def problem(message: str, field: str, expected: str | None, got: Any) -> None:
        shown = None if got is None else (repr(got) if isinstance(got, str) else str(got))
        problems.append(Problem(message, origin, line, field, expected, shown, unit))

    before = len(problems)
    names = []
    for column in COLUMNS[shape]:
        value = record.get(column)
        if column not in record:
            problem(f"missing column '{column}'", column, "a model's name", None)
        elif not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
            problem("a model's name is needed", column, "a non-empty name", value)
        names.append(str(value).strip() if isinstance(value, str | int) else "")
    first, second = names
    if first and first == second:
        problem("a model judged against itself; the two columns must name different models",
                COLUMNS[shape][1], f"a model other than {first!r}", second)  # fmt: skip
    said = None
    if "winner" not in record:
        problem("missing column 'winner'", "winner", _expected(shape), None)
    elif _missing(record["winner"]):
        problem("no winner given (null or empty)", "winner", _expected(shape), None)
    else:
        said = _winner(record["winner"], shape, first, second)
        if said is None:
            problem("unknown winner", "winner", _expected(shape), record["winner"])
        elif said == "ambiguous":
            problem("the winner is both a keyword and the other model's name: write the model's "
                    "position keyword", "winner", _expected(shape), record["winner"])  # fmt: skip
    item = next((record[c] for c in ITEM_COLUMNS if not _missing(record.get(c))), None)
    judge = record.get("judge")
    turn = _whole(record.get("turn"))
    if turn is None:
        problem("turn must be a whole number", "turn", "a whole number (or leave it out)",
                record.get("turn"))  # fmt: skip
    if len(problems) > before or said is None or turn is None:
        return None
    return _Judgment(
        line, first, second, said, None if item is None else str(item),
        UNNAMED_JUDGE if _missing(judge) else str(judge), turn,
    )  # fmt: skip


def _missing(value: Any) -> bool:
    """Nothing there: absent, null, an empty cell, or a DataFrame's NaN."""
    return value is None or (isinstance(value, str) and not value.strip()) or value != value


def _whole(value: Any) -> int | None:
    """A turn: a whole number (0 when absent), else None."""
    if _missing(value):
        return 0
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    text = str(value).strip()
    return int(text) if text.lstrip("-").isdigit() else None


def _expected(shape: Shape) -> str:
    return " | ".join(WINNERS[shape]) + " | the name of either model"


def _winner(value: Any, shape: Shape, first: str, second: str) -> str | None:
    """first, second, tie; 'ambiguous' when a keyword and a model's name disagree; None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    keyword = WINNERS[shape].get(text.lower())
    named = "first" if text == first else "second" if text == second else None
    if keyword is not None and named is not None and keyword != named:
        return "ambiguous"
    return keyword or named


def _pair_orders(judged: Sequence[_Judgment]) -> Iterator[PairVerdict]:
    """Rows as PairVerdicts: the two orders of one judgment combined (module doc)."""
    groups: dict[tuple[str, str, int, str, str], tuple[list[_Judgment], list[_Judgment]]] = (
        defaultdict(lambda: ([], []))
    )
    for j in judged:
        run_a, run_b = sorted((j.first, j.second))
        if j.item is None:  # nothing says which rows judged the same item: each its own
            yield _row(j.judge, run_a, run_b, f"line {j.line}", j.turn, 0, j, None)
            continue
        groups[(j.judge, j.item, j.turn, run_a, run_b)][j.first != run_a].append(j)
    for (judge, item, turn, run_a, run_b), (ab, ba) in groups.items():
        for repeat, (one, other) in enumerate(zip_longest(ab, ba)):
            yield _row(judge, run_a, run_b, item, turn, repeat, one, other)


def _row(
    judge: str, run_a: str, run_b: str, item: str, turn: int, repeat: int,
    ab: _Judgment | None, ba: _Judgment | None,
) -> PairVerdict:  # fmt: skip
    """One judgment in run terms: `ab` shows run_a first, `ba` run_b first (either may be a
    row of either position when the row is alone)."""
    if ab is not None and ba is None and ab.first != run_a:
        ab, ba = None, ab
    if ba is not None and ab is None and ba.first == run_a:
        ab, ba = ba, None
    return PairVerdict(
        judge, run_a, run_b, "", item, turn, repeat, _verdict(ab, run_a), _verdict(ba, run_a),
        one_order=ab is None or ba is None,
    )  # fmt: skip


def _verdict(j: _Judgment | None, run_a: str) -> Verdict | None:
    if j is None:
        return None
    if j.said == "tie":
        return "tie"
    winner = j.first if j.said == "first" else j.second
    return "a" if winner == run_a else "b"


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow's many error types: a damaged or non-Parquet file
            raise InputError(f"{path}: not a readable Parquet file ({exc})", hint=HINT) from exc
        yield from enumerate(table.to_pylist(), start=1)
        return
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})",
                         hint=HINT) from exc  # fmt: skip
    start = text.lstrip()[:1]
    if suffix in (".csv", ".tsv") or (suffix not in (".json", ".jsonl", ".ndjson")
                                      and start not in ("[", "{")):  # fmt: skip
        yield from _csv_records(path, text, "\t" if suffix == ".tsv" else ",")
    elif start == "[":
        yield from _json_array(path, text)
    else:
        yield from _json_lines(path, text)


def _csv_records(path: Path, text: str, delimiter: str) -> Iterator[tuple[int, Any]]:
    reader = csv.reader(text.splitlines(keepends=True), delimiter=delimiter)
    header = next(reader, None)
    if header is None:
        return
    header = [h.strip() for h in header]
    twice = sorted({h for h in header if h and header.count(h) > 1})
    if twice:
        raise ValidationError([Problem("the column appears twice in the header", str(path), 1,
                                       twice[0])], hint=HINT)  # fmt: skip
    _shape(dict.fromkeys(header), str(path), 1, "line")  # a column missing: said once, line 1
    if "winner" not in header:
        raise ValidationError([Problem("missing column 'winner'", str(path), 1, "winner",
                                       "a column winner", f"columns {', '.join(header)}")],
                              hint=HINT)  # fmt: skip
    line = reader.line_num
    for values in reader:
        start, line = line + 1, reader.line_num
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            raise ValidationError([Problem(
                f"{len(values)} fields where the header has {len(header)} (a comma inside a "
                "name must be quoted)", str(path), start)], hint=HINT)  # fmt: skip
        yield start, dict(zip(header, values, strict=True))


def _json_array(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """The items of a JSON array with the line each starts on."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError([Problem(f"not valid JSON: {exc.msg}", str(path), exc.lineno)],
                              hint=HINT) from exc  # fmt: skip
    decoder, index, line = json.JSONDecoder(), text.index("[") + 1, 1
    line += text.count("\n", 0, index)
    for item in items:
        while text[index] in " \t\r\n,":
            line += text[index] == "\n"
            index += 1
        _, end = decoder.raw_decode(text, index)
        yield line, item
        line += text.count("\n", index, end)
        index = end


def _json_lines(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    lines = text.splitlines()
    if len(lines) > 1 and text.lstrip().startswith("{"):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict):
            raise ValidationError([Problem(
                "one JSON object, not preferences: expected a JSON array of objects, JSON Lines "
                "(one object a line) or CSV", str(path), 1)], hint=HINT)  # fmt: skip
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValidationError([Problem(f"not valid JSON: {exc.msg}", str(path), number)],
                                  hint=HINT) from exc  # fmt: skip
