"""Perturbations as kelvin 0.3.0 makes them: byte-identical inputs for the same seed and cases.

Every kind draws from its own generator, derived from the run's seed and the names that qualify it
(kind, case, and for swaps the governing type) through SHA-256, so adding a case or a type never
shifts another's variants. The draws below are made in kelvin's order with Python's
`random.Random` (the same Mersenne Twister and the same `shuffle` / `randint` / `sample` /
`choice`), which is what makes the rendered inputs identical to kelvin's.

Kinds (kelvin's defaults, in kelvin's order, then the opt-in one):

- `reorder` (invariance): the units shuffled, preamble pinned; 3 variants; skipped with a warning
  below 2 units. Each variant reshuffles a fresh copy until the order differs from the file's
  (at most 16 shuffles).
- `pad_length` (invariance): 2–4 neutral `## Reference Note` paragraphs inserted at random
  positions; 3 variants; runs even for a single case.
- `pad_content` (invariance): 2–4 units drawn without replacement from the other cases inserted at
  random positions; 3 variants; skipped below 2 peer units, insert count capped at the pool size.
- `swap` (sensitivity): per governing type, a unit of that type replaced (in place, with the peer's
  header and content) by a same-type unit of another case; up to 3 variants per type, capped by the
  case's units of the type and the peer pool.
- `swap_condition` (sensitivity, kelvin's `counterfactual_swap`): only the condition list of a
  gate-rule sentence ("… requires: X, Y. All conditions are met. …") is replaced by a peer's,
  keeping the focal state phrase and details.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from calipers.running.cases import Case, Unit, render_case

VARIANTS_PER_KIND: Final = 3  # kelvin's TARGET_COUNT, the same for every kind
PAD_MIN_INSERT: Final = 2
PAD_MAX_INSERT: Final = 4

INVARIANCE_KINDS: Final = ("reorder", "pad_length", "pad_content")
SENSITIVITY_KINDS: Final = ("swap",)
DEFAULT_KINDS: Final = ("reorder", "pad_length", "pad_content", "swap")  # kelvin's order
ALL_KINDS: Final = (*DEFAULT_KINDS, "swap_condition")

FILLER_HEADER: Final = "Reference Note"
FILLER_TYPE: Final = "reference_note"

# kelvin's bank of neutral administrative paragraphs for pad_length, verbatim (kelvin-eval 0.3.0,
# Apache-2.0): the inserted text must be the same bytes, so it cannot be reworded.
FILLER_PARAGRAPHS: Final[tuple[str, ...]] = (
    "This document is reviewed quarterly by the operations team. Any revisions are tracked in "
    "the internal revision log maintained alongside the records archive.",
    "Records in this section are retained for seven years in accordance with the organization's "
    "standard document-retention policy. Requests for earlier access should be routed through "
    "the records coordinator before being escalated.",
    "Formatting in the following sections follows the internal style guide last updated in the "
    "previous fiscal year. Headings use title case, paragraphs are single-spaced, and footnotes "
    "appear inline rather than at the bottom of the page.",
    "Contact details for document owners are maintained in a separate directory and are "
    "intentionally omitted from this file to reduce the need for revisions when personnel "
    "changes occur. The directory is refreshed on a rolling basis throughout the year.",
    "Translations of this document, where available, are produced by an external vendor and are "
    "provided for convenience only. In the event of any inconsistency between the source text "
    "and a translated version, the source text takes precedence for all operational purposes.",
    "Printed copies of this document are considered uncontrolled. The canonical version is the "
    "one stored in the shared repository; users consulting a printout should verify freshness "
    "against the timestamp shown in the repository metadata before acting on any of the content "
    "below.",
    "Questions about the scope or applicability of any section should be directed to the "
    "administrative coordinator assigned to the relevant workstream. Routine clarifications are "
    "typically resolved within one business day.",
    "Accessibility accommodations for reviewers are available upon request. The standard "
    "accommodations list is maintained separately and covers alternate-format documents, "
    "extended review windows, and live walkthroughs with a subject-matter liaison where needed.",
)


@dataclass(frozen=True)
class Perturbation:
    """One perturbed input, ready to write to `<case>/perturbations/<variant_id>/input.md`."""

    case_name: str
    kind: str
    variant_id: str  # e.g. "reorder-01", "swap-gate_rule-02", as kelvin names them
    text: str  # the rendered markdown the pipeline reads
    notes: dict[str, Any] = field(default_factory=dict)  # kelvin's per-variant notes, same keys

    @property
    def governing_type(self) -> str | None:
        value = self.notes.get("governing_type")
        return value if isinstance(value, str) else None


@dataclass
class PerturbationBatch:
    """The variants of one case (in kelvin's order) and kelvin's skip warnings and cap notes."""

    perturbations: list[Perturbation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    caps: list[str] = field(default_factory=list)

    def extend(self, other: PerturbationBatch) -> None:
        self.perturbations.extend(other.perturbations)
        self.warnings.extend(other.warnings)
        self.caps.extend(other.caps)


def rng_for(seed: int, *components: str) -> random.Random:
    """kelvin's derived generator: the first 8 bytes (big-endian) of
    sha256("<seed>|<component>|…") seed a `random.Random`. Independent of PYTHONHASHSEED."""
    key = "|".join((str(seed), *components)).encode("utf-8")
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def peer_units(
    case: Case, all_cases: Sequence[Case], *, unit_type: str | None = None
) -> list[tuple[str, Unit]]:
    """(peer case name, unit) for every unit of every other case, in case then unit order;
    only units of `unit_type` when given. A case is "other" when its name differs."""
    return [
        (peer.name, unit)
        for peer in all_cases
        if peer.name != case.name
        for unit in peer.units
        if unit_type is None or unit.type == unit_type
    ]


def _variant_id(kind: str, number: int, governing_type: str | None = None) -> str:
    middle = f"-{governing_type}" if governing_type is not None else ""
    return f"{kind}{middle}-{number:02d}"


# ── invariance ────────────────────────────────────────────────────────────────────────────────


def reorder_variants(case: Case, *, seed: int) -> PerturbationBatch:
    batch = PerturbationBatch()
    if len(case.units) < 2:
        batch.warnings.append(
            f"{case.name}: reorder skipped — case has {len(case.units)} unit(s), need ≥2"
        )
        return batch
    rng = rng_for(seed, "reorder", case.name)
    original = [u.index for u in case.units]
    for number in range(1, VARIANTS_PER_KIND + 1):
        order = list(case.units)
        for _ in range(16):  # shuffles accumulate on the copy until it is not the file's order
            rng.shuffle(order)
            if [u.index for u in order] != original:
                break
        batch.perturbations.append(
            Perturbation(
                case_name=case.name,
                kind="reorder",
                variant_id=_variant_id("reorder", number),
                text=render_case(case.preamble, order),
                notes={"order": [u.index for u in order]},
            )
        )
    return batch


def pad_length_variants(case: Case, *, seed: int) -> PerturbationBatch:
    batch = PerturbationBatch()
    rng = rng_for(seed, "pad_length", case.name)
    for number in range(1, VARIANTS_PER_KIND + 1):
        count = rng.randint(PAD_MIN_INSERT, PAD_MAX_INSERT)
        # All paragraphs are drawn (with replacement) before any position: kelvin's draw order.
        paragraphs = [rng.choice(FILLER_PARAGRAPHS) for _ in range(count)]
        units = list(case.units)
        inserted = []
        for paragraph in paragraphs:
            position = rng.randint(0, len(units))
            units.insert(position, Unit(FILLER_TYPE, paragraph, FILLER_HEADER, -1))
            inserted.append({"position": position, "length_chars": len(paragraph)})
        batch.perturbations.append(
            Perturbation(
                case_name=case.name,
                kind="pad_length",
                variant_id=_variant_id("pad_length", number),
                text=render_case(case.preamble, units),
                notes={
                    "insert_count": count,
                    "inserted": inserted,
                    "total_chars": sum(len(p) for p in paragraphs),
                },
            )
        )
    return batch


def pad_content_variants(case: Case, all_cases: Sequence[Case], *, seed: int) -> PerturbationBatch:
    batch = PerturbationBatch()
    pool = peer_units(case, all_cases)
    if len(pool) < PAD_MIN_INSERT:
        batch.warnings.append(
            f"{case.name}: pad_content skipped — peer pool has {len(pool)} unit(s), "
            f"need ≥{PAD_MIN_INSERT}"
        )
        return batch
    most = min(PAD_MAX_INSERT, len(pool))
    if most < PAD_MAX_INSERT:
        batch.caps.append(
            f"{case.name}: pad_content insert count capped at {most} (peer pool has "
            f"{len(pool)} unit(s); target up to {PAD_MAX_INSERT})"
        )
    rng = rng_for(seed, "pad_content", case.name)
    for number in range(1, VARIANTS_PER_KIND + 1):
        count = rng.randint(PAD_MIN_INSERT, most)
        picked = rng.sample(pool, count)
        units = list(case.units)
        inserted: list[dict[str, Any]] = []
        for source_case, unit in picked:
            position = rng.randint(0, len(units))
            units.insert(position, unit)
            inserted.append(
                {
                    "from_case": source_case,
                    "type": unit.type,
                    "source_index": unit.index,
                    "position": position,
                }
            )
        batch.perturbations.append(
            Perturbation(
                case_name=case.name,
                kind="pad_content",
                variant_id=_variant_id("pad_content", number),
                text=render_case(case.preamble, units),
                notes={"insert_count": count, "inserted": inserted},
            )
        )
    return batch


# ── sensitivity ───────────────────────────────────────────────────────────────────────────────


def _replace_unit(case: Case, index: int, replacement: Unit) -> list[Unit]:
    return [replacement if u.index == index else u for u in case.units]


def swap_variants(
    case: Case, all_cases: Sequence[Case], *, seed: int, governing_types: Sequence[str]
) -> PerturbationBatch:
    batch = PerturbationBatch()
    for gtype in governing_types:
        targets = case.units_of_type(gtype)
        if not targets:
            batch.warnings.append(
                f"{case.name}: swap skipped for type '{gtype}' — case has no units of this type"
            )
            continue
        pool = peer_units(case, all_cases, unit_type=gtype)
        if not pool:
            batch.warnings.append(
                f"{case.name}: swap skipped for type '{gtype}' — "
                "peer pool has no units of this type"
            )
            continue
        count = min(VARIANTS_PER_KIND, len(targets), len(pool))
        if count < VARIANTS_PER_KIND:
            batch.caps.append(
                f"{case.name}: swap-{gtype} capped at {count} (case positions={len(targets)}, "
                f"peer pool={len(pool)}, target={VARIANTS_PER_KIND})"
            )
        rng = rng_for(seed, "swap", case.name, gtype)
        chosen_targets = rng.sample(targets, count)  # positions first, then peers: kelvin's order
        chosen_peers = rng.sample(pool, count)
        for number, (target, (peer_case, peer)) in enumerate(
            zip(chosen_targets, chosen_peers, strict=True), start=1
        ):
            # The peer's header and content take the target's position (and index).
            replacement = Unit(peer.type, peer.content, peer.raw_header, target.index)
            batch.perturbations.append(
                Perturbation(
                    case_name=case.name,
                    kind="swap",
                    variant_id=_variant_id("swap", number, gtype),
                    text=render_case(case.preamble, _replace_unit(case, target.index, replacement)),
                    notes={
                        "governing_type": gtype,
                        "position_replaced": target.index,
                        "original_header": target.raw_header,
                        "from_case": peer_case,
                        "peer_source_index": peer.index,
                    },
                )
            )
    return batch


# The state sentences that may follow a gate rule's condition list. A peer is eligible only with
# the same one, so the swapped rule stays coherent with the case's own facts.
GATE_STATE_PHRASES: Final = (
    "All conditions are met.",
    "None of these conditions are currently met.",
    "Some conditions are met.",
    "All conditions are currently met.",
)
# "<intro ending in 'requires:' and blanks><conditions>.<blanks><rest>", the shortest intro and
# the shortest condition list that fit (so the list ends at its first ". ").
_GATE_RULE = re.compile(r"^(.*?\brequires:\s+)(.+?)\.\s+(.+)$", re.DOTALL)


@dataclass(frozen=True)
class GateRule:
    """A gate-rule body split for swap_condition: intro, condition list, state phrase, details."""

    intro: str
    conditions: str
    state_phrase: str
    details: str

    def with_conditions(self, conditions: str) -> str:
        return f"{self.intro}{conditions}. {self.state_phrase} {self.details}"


def parse_gate_rule(body: str) -> GateRule | None:
    """The parts of "… requires: <conditions>. <state phrase> <details>", or None if the body
    does not have that shape or its state sentence is not one of `GATE_STATE_PHRASES`."""
    match = _GATE_RULE.match(body.strip())
    if match is None:
        return None
    intro, conditions, rest = match.groups()
    for phrase in GATE_STATE_PHRASES:
        if rest.startswith(phrase):
            details = rest[len(phrase) :].strip()
            return GateRule(intro, conditions.strip(), phrase, details)
    return None


def swap_condition_variants(
    case: Case, all_cases: Sequence[Case], *, seed: int, governing_types: Sequence[str]
) -> PerturbationBatch:
    """kelvin's counterfactual swap. Variant numbers restart at 01 for every unit of a type, as in
    kelvin, so a case with two parseable units of one type yields repeated variant ids."""
    batch = PerturbationBatch()
    for gtype in governing_types:
        focal_units = case.units_of_type(gtype)
        if not focal_units:
            batch.warnings.append(
                f"{case.name}: swap_condition skipped for type '{gtype}' — "
                "case has no units of this type"
            )
            continue
        rng = rng_for(seed, "swap_condition", case.name, gtype)  # one per type, shared by units
        for focal in focal_units:
            parsed = parse_gate_rule(focal.content)
            if parsed is None:
                batch.caps.append(
                    f"{case.name}: swap_condition clean-parse FAILED for {gtype} unit at index "
                    f"{focal.index} (no 'requires:' + state-phrase structure)"
                )
                continue
            eligible = [
                (peer_case, peer_rule)
                for peer_case, peer in peer_units(case, all_cases, unit_type=gtype)
                if (peer_rule := parse_gate_rule(peer.content)) is not None
                and peer_rule.state_phrase == parsed.state_phrase
                and peer_rule.conditions != parsed.conditions
            ]
            if not eligible:
                batch.warnings.append(
                    f"{case.name}: swap_condition found no eligible peers for {gtype} "
                    "(same state_phrase + different condition list)"
                )
                continue
            count = min(VARIANTS_PER_KIND, len(eligible))
            if count < VARIANTS_PER_KIND:
                batch.caps.append(
                    f"{case.name}: swap_condition-{gtype} capped at {count} "
                    f"(eligible peers={len(eligible)}, target={VARIANTS_PER_KIND})"
                )
            for number, (peer_case, peer_rule) in enumerate(rng.sample(eligible, count), start=1):
                replacement = Unit(
                    focal.type,
                    parsed.with_conditions(peer_rule.conditions),
                    focal.raw_header,
                    focal.index,
                )
                batch.perturbations.append(
                    Perturbation(
                        case_name=case.name,
                        kind="swap_condition",
                        variant_id=_variant_id("swap_condition", number, gtype),
                        text=render_case(
                            case.preamble, _replace_unit(case, focal.index, replacement)
                        ),
                        notes={
                            "governing_type": gtype,
                            "position_replaced": focal.index,
                            "from_case": peer_case,
                            "state_phrase_preserved": parsed.state_phrase,
                            "focal_condition_list": parsed.conditions,
                            "peer_condition_list": peer_rule.conditions,
                        },
                    )
                )
    return batch


# ── all kinds of one case ─────────────────────────────────────────────────────────────────────


def generate_variants(
    case: Case,
    all_cases: Sequence[Case],
    *,
    seed: int,
    governing_types: Sequence[str],
    kinds: Sequence[str] = DEFAULT_KINDS,
) -> PerturbationBatch:
    """Every variant of `case` for the given kinds, in kelvin's generator order (reorder,
    pad_length, pad_content, swap, swap_condition) whatever the order of `kinds`.

    `all_cases` are every case of the run, `case` included (it is excluded from its own peers);
    with `--only`, still pass every case, as kelvin draws peers from all of them.
    """
    unknown = [k for k in kinds if k not in ALL_KINDS]
    if unknown:
        raise ValueError(f"unknown perturbation kind(s): {', '.join(unknown)}")
    batch = PerturbationBatch()
    if "reorder" in kinds:
        batch.extend(reorder_variants(case, seed=seed))
    if "pad_length" in kinds:
        batch.extend(pad_length_variants(case, seed=seed))
    if "pad_content" in kinds:
        batch.extend(pad_content_variants(case, all_cases, seed=seed))
    if "swap" in kinds:
        batch.extend(swap_variants(case, all_cases, seed=seed, governing_types=governing_types))
    if "swap_condition" in kinds:
        batch.extend(
            swap_condition_variants(case, all_cases, seed=seed, governing_types=governing_types)
        )
    return batch


def single_case_warning(all_cases: Sequence[Case]) -> str | None:
    """kelvin's run-level warning when the run has one case (so no peers), else None."""
    if len(all_cases) != 1:
        return None
    return (
        "Only one case in the run: pad_content and swap will be skipped (no peers). "
        "reorder and pad_length still run."
    )
