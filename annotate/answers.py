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
    aspects: dict[str, int | None] = field(default_factory=dict)  # aspect_key(0, "A") -> 2

    def as_draft(self) -> dict:
        return {
            "slot": self.slot,
            "ratings": self.ratings,
            "reason": self.reason,
            "comment": self.comment,
            "aspects": self.aspects,
        }

    @classmethod
    def from_draft(cls, draft: dict | None) -> FormState:
        draft = draft or {}
        return cls(
            slot=draft.get("slot"),
            ratings=dict(draft.get("ratings") or {}),
            reason=draft.get("reason"),
            comment=draft.get("comment") or "",
            aspects=dict(draft.get("aspects") or {}),
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
            aspects=aspects_to_form(annotation.aspects, chosen_position=chosen_position),
        )


def aspect_key(index: int, slot: str) -> str:
    """The form's key of the match score of rubric aspect ``index`` (0-based, in the pair's
    order) for the response in ``slot``."""
    return f"aspect{index}_{slot}"


def aspects_to_form(aspects: list[dict] | None, *, chosen_position: str) -> dict[str, int]:
    """Stored scores (chosen/rejected) -> the form's slots A/B."""
    other = other_slot(chosen_position)
    form = {}
    for index, entry in enumerate(aspects or []):
        form[aspect_key(index, chosen_position)] = entry["chosen"]
        form[aspect_key(index, other)] = entry["rejected"]
    return form


def aspects_to_answer(
    scores: dict[str, int | None], *, chosen_position: str, n_aspects: int
) -> list[dict[str, int]] | None:
    """The form's slots A/B -> one {chosen, rejected} per aspect; None unless every score of
    the pair's aspects is given (the study has no aspect check, or the pair no aspects)."""
    other = other_slot(chosen_position)
    entries = [
        {
            "chosen": scores.get(aspect_key(i, chosen_position)),
            "rejected": scores.get(aspect_key(i, other)),
        }
        for i in range(n_aspects)
    ]
    if not entries or any(v is None for e in entries for v in e.values()):
        return None
    return entries


def missing_answers(study: Study, form: FormState, *, n_aspects: int = 0) -> list[str]:
    """Names of the required answers not given yet, in the order they appear on the page.
    ``n_aspects``: the pair's rubric aspects, scored when the study has the aspect check."""
    missing = []
    if form.slot not in (*SLOTS, *((TIE,) if study.allow_ties else ())):
        missing.append("which response this user would prefer")
    for dimension in study.dimensions:
        for slot in SLOTS:
            if form.ratings.get(f"{dimension}_{slot}") is None:
                missing.append(f"{DIMENSION_HELP[dimension][0].lower()} of response {slot}")
    if study.aspect_check:
        for index in range(n_aspects):
            for slot in SLOTS:
                if form.aspects.get(aspect_key(index, slot)) is None:
                    missing.append(f"how well response {slot} covers aspect {index + 1}")
    if study.reasons and form.reason not in study.reasons:
        missing.append("what mainly decided your choice")
    return missing


def to_answer(
    form: FormState, *, chosen_position: str, seconds: float | None, n_aspects: int = 0
) -> Answer:
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
        aspects=aspects_to_answer(
            form.aspects, chosen_position=chosen_position, n_aspects=n_aspects
        ),
    )
