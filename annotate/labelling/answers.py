"""What the labelling form collects, what is still missing, and how it maps to an Answer."""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from analysis.aspects.scores import parse_aspects
from analysis.vocabulary import ASPECT_SCORES, DIMENSIONS, RATING_COLUMNS, SLOTS, TIE
from annotate.labelling.slots import other_slot, preference_from_slot, slot_from_preference
from annotate.store.models import Annotation, Study, utcnow
from annotate.store.text import visible_nul
from annotate.wording import DIMENSION_HELP

MAX_COMMENT = 4000


@dataclass
class Answer:
    preference: str
    chosen_position: str | None
    ratings: dict[str, int | None] = field(default_factory=dict)  # e.g. {"correctness_chosen": 4}
    main_reason: str | None = None
    comment: str | None = None
    seconds: float | None = None
    submitted_at: datetime | None = None
    # Aspect check: one {"chosen": 0-2, "rejected": 0-2} per rubric aspect, in the pair's order.
    aspects: list[dict[str, int | None]] | None = None

    def values(self) -> dict[str, Any]:
        unknown = set(self.ratings) - set(RATING_COLUMNS)
        if unknown:
            raise ValueError(f"unknown rating columns: {sorted(unknown)}")
        return {
            "preference": self.preference,
            "chosen_position": self.chosen_position,
            **{column: self.ratings.get(column) for column in RATING_COLUMNS},
            "main_reason": self.main_reason,
            # typed text: a NUL is kept as a visible mark (annotate/store/text.py says why)
            "comment": visible_nul(self.comment or "") or None,
            "seconds": self.seconds,
            "submitted_at": self.submitted_at or utcnow(),
            "aspects": parse_aspects(self.aspects),  # refuses a malformed list (ValueError)
        }


@dataclass
class FormState:
    """The form as the annotator sees it: slots A/B, never chosen/rejected."""

    slot: str | None = None  # a slot ("A", "B") or TIE
    ratings: dict[str, int | None] = field(default_factory=dict)  # "correctness_A" -> 4
    reason: str | None = None
    comment: str = ""
    # aspect check only: "0_A" -> 2 (aspect index in the pair's order, slot)
    aspects: dict[str, int | None] = field(default_factory=dict)

    def as_draft(self) -> dict[str, Any]:
        draft: dict[str, Any] = {
            "slot": self.slot,
            "ratings": self.ratings,
            "reason": self.reason,
            "comment": self.comment,
        }
        if self.aspects:
            draft["aspects"] = self.aspects
        return draft

    @classmethod
    def from_draft(cls, draft: Mapping[str, Any] | None) -> FormState:
        draft = draft or {}
        return cls(
            slot=draft.get("slot"),
            ratings=dict(draft.get("ratings") or {}),
            reason=draft.get("reason"),
            comment=draft.get("comment") or "",
            aspects=dict(draft.get("aspects") or {}),
        )

    @classmethod
    def from_browser(cls, payload: object, *, study: Study, n_aspects: int) -> FormState:
        """The form as the labelling component sent it. The browser is not trusted: a value
        outside what the study asks counts as not given (and is then named as missing)."""
        sent: dict[Any, Any] = payload if isinstance(payload, dict) else {}
        ratings_in = sent.get("ratings")
        ratings_in = ratings_in if isinstance(ratings_in, dict) else {}
        aspects_in = sent.get("aspects")
        aspects_in = aspects_in if isinstance(aspects_in, dict) else {}
        scale = range(study.scale_min, study.scale_max + 1)
        ratings = {
            f"{d}_{slot}": _int_in(ratings_in.get(f"{d}_{slot}"), scale)
            for d in study.dimensions
            for slot in SLOTS
        }
        aspects = {
            f"{i}_{slot}": _int_in(aspects_in.get(f"{i}_{slot}"), ASPECT_SCORES)
            for i in range(n_aspects if study.aspect_check else 0)
            for slot in SLOTS
        }
        slots = (*SLOTS, *((TIE,) if study.allow_ties else ()))
        comment = sent.get("comment")
        slot, reason = sent.get("slot"), sent.get("reason")
        return cls(
            slot=slot if slot in slots else None,
            ratings=ratings,
            reason=reason if reason in study.reasons else None,
            comment=comment[:MAX_COMMENT] if isinstance(comment, str) else "",
            aspects=aspects,
        )

    @classmethod
    def from_annotation(cls, annotation: Annotation, chosen_position: str) -> FormState:
        other = other_slot(chosen_position)
        ratings = {}
        for dimension in DIMENSIONS:
            ratings[f"{dimension}_{chosen_position}"] = getattr(annotation, f"{dimension}_chosen")
            ratings[f"{dimension}_{other}"] = getattr(annotation, f"{dimension}_rejected")
        aspects = {}
        for i, scores in enumerate(getattr(annotation, "aspects", None) or []):
            aspects[f"{i}_{chosen_position}"] = scores.get("chosen")
            aspects[f"{i}_{other}"] = scores.get("rejected")
        return cls(
            slot=slot_from_preference(annotation.preference, chosen_position),
            ratings=ratings,
            reason=annotation.main_reason,
            comment=annotation.comment or "",
            aspects=aspects,
        )


def _int_in(value: object, allowed: Container[int]) -> int | None:
    return (
        value
        if isinstance(value, int) and not isinstance(value, bool) and value in allowed
        else None
    )


@dataclass(frozen=True)
class Question:
    """One answer the form asks for: `kind` slot | rating | aspect | reason."""

    kind: str
    field: str  # "slot", "correctness_A", "0_A" (aspect index, slot), "reason"
    name: str  # as the page names it when it is missing
    slot: str | None = None


def form_questions(study: Study, *, n_aspects: int = 0) -> list[Question]:
    """Every required answer, in the order of docs/reference/addresses.md, keys: the choice, the ratings
    (each dimension, response A then B: the digit cursor's order), with the aspect check the
    aspect scores (each aspect, A then B), the main reason."""
    questions = [Question("slot", "slot", "which response this user would prefer")]
    for dimension in study.dimensions:
        title = DIMENSION_HELP[dimension][0].lower()
        for slot in SLOTS:
            questions.append(
                Question("rating", f"{dimension}_{slot}", f"{title} of response {slot}", slot)
            )
    if study.aspect_check:
        for i in range(n_aspects):
            for slot in SLOTS:
                questions.append(
                    Question("aspect", f"{i}_{slot}", f"aspect {i + 1} in response {slot}", slot)
                )
    if study.reasons:
        questions.append(Question("reason", "reason", "what mainly decided your choice"))
    return questions


def _given(study: Study, form: FormState, question: Question) -> bool:
    if question.kind == "slot":
        return form.slot in (*SLOTS, *((TIE,) if study.allow_ties else ()))
    if question.kind == "rating":
        return form.ratings.get(question.field) is not None
    if question.kind == "aspect":
        return form.aspects.get(question.field) is not None
    return form.reason in study.reasons


def missing_questions(study: Study, form: FormState, *, n_aspects: int = 0) -> list[Question]:
    return [q for q in form_questions(study, n_aspects=n_aspects) if not _given(study, form, q)]


def aspects_from_slots(
    form: FormState, *, chosen_position: str
) -> list[dict[str, int | None]] | None:
    """The aspect scores as stored (`annotation.aspects`): one {"chosen", "rejected"} per
    aspect in the pair's order, mapped back from the slots the annotator saw."""
    if not form.aspects:
        return None
    other = other_slot(chosen_position)
    count = 1 + max(int(key.split("_")[0]) for key in form.aspects)
    return [
        {
            "chosen": form.aspects.get(f"{i}_{chosen_position}"),
            "rejected": form.aspects.get(f"{i}_{other}"),
        }
        for i in range(count)
    ]


def to_answer(form: FormState, *, chosen_position: str, seconds: float | None) -> Answer:
    """Map the slots back to chosen/rejected for storage."""
    other = other_slot(chosen_position)
    ratings = {}
    for dimension in DIMENSIONS:
        ratings[f"{dimension}_chosen"] = form.ratings.get(f"{dimension}_{chosen_position}")
        ratings[f"{dimension}_rejected"] = form.ratings.get(f"{dimension}_{other}")
    return Answer(
        aspects=aspects_from_slots(form, chosen_position=chosen_position),
        preference=preference_from_slot(form.slot, chosen_position),
        chosen_position=chosen_position,
        ratings=ratings,
        main_reason=form.reason,
        comment=form.comment.strip() or None,
        seconds=None if seconds is None else round(seconds, 1),
    )
