"""The order of the tiers, and the groups of runs that may be ranked against each other.

Tier order (docs/reasonscore.md, "Tier order"), one order for the whole result:

1. given (`tier_order`): the listed tiers in that order; tiers no run has are ignored (with a note),
   tiers not listed follow, in the order of the rules below (with a note);
2. vocabulary: every tier is one of trivial < easy < medium < hard < extreme (case-insensitive);
3. numeric: every tier is a number, or the same prefix followed by a number (`1`, `2`, `10`;
   `L1`, `L2`; `depth=2`, `depth=16`): by the number;
4. observed: otherwise, tiers outside the vocabulary are placed by observed difficulty, their mean
   ReasonScore over the runs with a defined score there: each goes just before the first vocabulary
   tier (in vocabulary order) whose mean is lower than its own, or after all of them; several such
   tiers by descending mean, ties in natural order, a tier with no defined score last. Without
   vocabulary tiers this is simply descending mean score.

Comparability: two runs are ranked together only when they cover exactly the same (tier, task)
pairs. Each set of pairs is a group; a run alone in its group is shown and not ranked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

VOCABULARY = ("trivial", "easy", "medium", "hard", "extreme")
_NUMBERED = re.compile(r"^(.*?)(-?\d+(?:\.\d+)?)$")
RULES = {  # rule → how it is said
    "given": "as given",
    "vocabulary": "known names: trivial < easy < medium < hard < extreme",
    "numeric": "by number",
    "observed": "by observed difficulty",
}


def natural_key(text: str) -> list[Any]:
    """'len=8' before 'len=16'; numbers and text never compared with each other."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text)]


@dataclass(frozen=True)
class TierOrder:
    tiers: tuple[str, ...]
    rule: str  # a key of RULES
    notes: tuple[str, ...] = ()


def _numbered(tiers: Sequence[str]) -> list[str] | None:
    """The tiers by their number when all are numbers after one shared prefix; else None."""
    parts = [_NUMBERED.match(t.strip()) for t in tiers]
    if not all(parts):
        return None
    prefixes = {m.group(1).casefold() for m in parts if m}
    if len(prefixes) != 1:
        return None
    number = {t: float(m.group(2)) for t, m in zip(tiers, parts, strict=True) if m}
    return sorted(tiers, key=lambda t: (number[t], natural_key(t)))


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None and math.isfinite(v)]
    return sum(known) / len(known) if known else None


def _default(tiers: Sequence[str], scores: Mapping[str, Sequence[float | None]]) -> TierOrder:
    """Rules 2–4 on `tiers` (no given order)."""
    if all(t.strip().casefold() in VOCABULARY for t in tiers):
        rank = {t: VOCABULARY.index(t.strip().casefold()) for t in tiers}
        return TierOrder(
            tuple(sorted(tiers, key=lambda t: (rank[t], natural_key(t)))), "vocabulary"
        )
    numbered = _numbered(tiers)
    if numbered is not None:
        return TierOrder(tuple(numbered), "numeric")
    mean = {t: _mean(scores.get(t, ())) for t in tiers}
    known = sorted(
        (t for t in tiers if t.strip().casefold() in VOCABULARY),
        key=lambda t: (VOCABULARY.index(t.strip().casefold()), natural_key(t)),
    )
    unknown = sorted(
        (t for t in tiers if t.strip().casefold() not in VOCABULARY),
        key=lambda t: (mean[t] is None, -(mean[t] or 0.0), natural_key(t)),
    )
    merged: list[str] = []
    i = j = 0
    while i < len(known) and j < len(unknown):
        u, k = mean[unknown[j]], mean[known[i]]
        if u is not None and k is not None and u > k:
            merged.append(unknown[j])
            j += 1
        else:
            merged.append(known[i])
            i += 1
    merged += known[i:] + unknown[j:]
    notes: tuple[str, ...] = ()
    if len(tiers) > 1:
        shown = ", ".join(
            f"{t} {'—' if mean[t] is None else format(mean[t], '.0f')}" for t in unknown
        )
        notes = (
            f"tier order inferred from observed difficulty (mean ReasonScore: {shown}): "
            f"{', '.join(merged)}; set the order with --tier-order (Python: tier_order=)",
        )
    return TierOrder(tuple(merged), "observed", notes)


def order_tiers(
    tiers: Iterable[str],
    scores: Mapping[str, Sequence[float | None]],
    given: Sequence[str] | None = None,
) -> TierOrder:
    """The order of `tiers`, easiest first. `scores`: per tier, the tier ReasonScores of the runs
    (None where undefined), used only when the order has to be inferred."""
    observed = list(dict.fromkeys(tiers))
    if not given:
        return _default(observed, scores)
    listed = [t for t in given if t in observed]
    absent = [t for t in given if t not in observed]
    rest = [t for t in observed if t not in listed]
    notes = []
    if absent:
        notes.append(f"--tier-order names tiers no run has: {', '.join(absent)}")
    tail: tuple[str, ...] = ()
    if rest:
        tail = _default(rest, scores).tiers
        notes.append(f"tiers not in --tier-order placed after the listed ones: {', '.join(tail)}")
    return TierOrder(tuple(listed) + tail, "given", tuple(notes))


def parse_tier_order(value: Any) -> tuple[str, ...] | None:
    """`"easy,medium,hard"` or a sequence of names → a tuple; blanks and repeats are errors."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(str(item).strip() for item in items)
    if not names or any(not name for name in names):
        raise ValueError("a comma-separated list of tier names, none empty (e.g. easy,medium,hard)")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"names a tier twice: {', '.join(repeated)}")
    return names


@dataclass(frozen=True)
class Shared:
    """What a group of runs shares: its tiers (in tier order), tasks, and the tasks of each tier."""

    tiers: tuple[str, ...]
    tasks: tuple[str, ...]
    pairs: tuple[tuple[str, tuple[str, ...]], ...]  # (tier, its tasks) in tier order

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]], tier_order: Sequence[str]) -> Shared:
        by_tier: dict[str, set[str]] = {}
        for tier, task in pairs:
            by_tier.setdefault(tier, set()).add(task)
        tiers = tuple(t for t in tier_order if t in by_tier)
        tiers += tuple(sorted((t for t in by_tier if t not in tiers), key=natural_key))
        return cls(
            tiers=tiers,
            tasks=tuple(sorted({task for tasks in by_tier.values() for task in tasks})),
            pairs=tuple((t, tuple(sorted(by_tier[t]))) for t in tiers),
        )

    @property
    def full(self) -> bool:
        """Every tier has every task."""
        return all(len(tasks) == len(self.tasks) for _, tasks in self.pairs)


def _names(names: Sequence[str], limit: int | None) -> str:
    if limit is None or len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", … (+{len(names) - limit} more)"


def describe_shared(
    tiers: Sequence[str],
    tasks: Sequence[str],
    pairs: Mapping[str, Sequence[str]],
    *,
    limit: int | None = 8,
) -> str:
    """'tiers easy, medium, hard × tasks a, b' or, when tiers differ in tasks, 'easy: a, b ·
    hard: a'. Plain text: escape it for the terminal, let the template escape it on a page."""
    if not tiers:
        return "no tiers"
    plural = "s" if len(tasks) != 1 else ""
    if all(len(pairs.get(t, ())) == len(tasks) for t in tiers):
        tier_word = "tiers" if len(tiers) > 1 else "tier"
        return (
            f"{tier_word} {_names(list(tiers), limit)} × {len(tasks)} task{plural}: "
            f"{_names(list(tasks), limit)}"
        )
    return " · ".join(f"{t}: {_names(list(pairs.get(t, ())), limit)}" for t in tiers)
