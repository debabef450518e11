"""What the labelling form collects, what is still missing, and how it maps to an Answer."""

from __future__ import annotations

from dataclasses import dataclass, field

from analysis.vocabulary import DIMENSIONS, SLOTS, TIE
from annotate.annotations import Answer, other_slot, preference_from_slot, slot_from_preference
from annotate.models import Annotation, Study
from annotate.wording import DIMENSION_HELP


@dataclass
class FormState:
    """The form as the annotator sees it: slots A/B, never chosen/rejected."""

    slot: str | None = None  # a slot ("A", "B") or TIE
    ratings: dict[str, int | None] = field(default_factory=dict)  # "correctness_A" -> 4
    reason: str | None = None
    comment: str = ""

    def as_draft(self) -> dict:
        return {
            "slot": self.slot,
            "ratings": self.ratings,
            "reason": self.reason,
            "comment": self.comment,
        }

    @classmethod
    def from_draft(cls, draft: dict | None) -> FormState:
        draft = draft or {}
        return cls(
            slot=draft.get("slot"),
            ratings=dict(draft.get("ratings") or {}),
            reason=draft.get("reason"),
            comment=draft.get("comment") or "",
        )

    @classmethod
    def from_annotation(cls, annotation: Annotation, chosen_position: str) -> FormState:
        other = other_slot(chosen_position)
        ratings = {}
        for dimension in DIMENSIONS:
            ratings[f"{dimension}_{chosen_position}"] = getattr(annotation, f"{dimension}_chosen")
            ratings[f"{dimension}_{other}"] = getattr(annotation, f"{dimension}_rejected")
        return cls(
            slot=slot_from_preference(annotation.preference, chosen_position),
            ratings=ratings,
            reason=annotation.main_reason,
            comment=annotation.comment or "",
        )


def missing_answers(study: Study, form: FormState) -> list[str]:
    """Names of the required answers not given yet, in the order they appear on the page."""
    missing = []
    if form.slot not in (*SLOTS, *((TIE,) if study.allow_ties else ())):
        missing.append("which response this user would prefer")
    for dimension in study.dimensions:
        for slot in SLOTS:
            if form.ratings.get(f"{dimension}_{slot}") is None:
                missing.append(f"{DIMENSION_HELP[dimension][0].lower()} of response {slot}")
    if study.reasons and form.reason not in study.reasons:
        missing.append("what mainly decided your choice")
    return missing


def to_answer(form: FormState, *, chosen_position: str, seconds: float | None) -> Answer:
    """Map the slots back to chosen/rejected for storage."""
    other = other_slot(chosen_position)
    ratings = {}
    for dimension in DIMENSIONS:
        ratings[f"{dimension}_chosen"] = form.ratings.get(f"{dimension}_{chosen_position}")
        ratings[f"{dimension}_rejected"] = form.ratings.get(f"{dimension}_{other}")
    return Answer(
        preference=preference_from_slot(form.slot, chosen_position),
        chosen_position=chosen_position,
        ratings=ratings,
        main_reason=form.reason,
        comment=form.comment.strip() or None,
        seconds=None if seconds is None else round(seconds, 1),
    )
