"""Which response sat in which slot: the A/B mapping between what an annotator picked and
chosen/rejected, written once."""

from __future__ import annotations

from analysis.vocabulary import SIDES, SLOTS, TIE


def preference_from_slot(slot: str | None, chosen_position: str) -> str:
    """Map the slot the annotator picked (A, B or tie) back to chosen/rejected/tie (ValueError
    for any other, None included: no slot was picked)."""
    if slot == TIE:
        return TIE
    if slot not in SLOTS or chosen_position not in SLOTS:
        raise ValueError(f"unknown slot {slot!r} or position {chosen_position!r}")
    chosen, rejected = SIDES
    return chosen if slot == chosen_position else rejected


def other_slot(slot: str) -> str:
    """The other response slot: B for A, A for B."""
    first, second = SLOTS
    return second if slot == first else first


def slot_from_preference(preference: str, chosen_position: str) -> str:
    if preference == TIE:
        return TIE
    same = preference == SIDES[0]
    return chosen_position if same else other_slot(chosen_position)
