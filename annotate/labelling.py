"""The labelling step as the page needs it: the item to show, drafts and submission."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import select

from annotate.annotations import Loaded, submit_and_next, submit_answer
from annotate.answers import FormState, to_answer
from annotate.queue.assignment import next_assignment, open_assignment
from annotate.queue.rules import AssignmentRow
from annotate.store.db import read_session, retrying, session
from annotate.store.models import Annotation, Assignment, Pair, Study

DRAFT_SECONDS = "seconds"


@dataclass(frozen=True)
class Item:
    pair: Pair
    assignment: AssignmentRow
    annotation: Annotation | None

    @property
    def editing(self) -> bool:
        return self.annotation is not None

    def initial_form(self) -> FormState:
        if self.annotation is not None:
            return FormState.from_annotation(self.annotation, self.assignment.chosen_position)
        return FormState.from_draft(self.assignment.draft)


@retrying
def load_study(engine: Engine, *, study_id: int) -> Study:
    with read_session(engine) as s:
        return s.get(Study, study_id)


def current_item(engine: Engine, *, annotator_id: int, pair_id: int | None = None) -> Item | None:
    """The pair to show: an earlier one being revisited, else the annotator's next pair."""
    if pair_id is not None:
        assignment = open_assignment(engine, annotator_id=annotator_id, pair_id=pair_id)
    else:
        assignment = next_assignment(engine, annotator_id=annotator_id)
    if assignment is None:
        return None
    return _item(engine, assignment)


@retrying
def _item(engine: Engine, assignment: AssignmentRow) -> Item:
    with read_session(engine) as s:
        pair = s.get(Pair, assignment.pair_id)
        annotation = s.exec(
            select(Annotation).where(
                Annotation.pair_id == assignment.pair_id,
                Annotation.annotator_id == assignment.annotator_id,
            )
        ).first()
        return Item(pair=pair, assignment=assignment, annotation=annotation)


@retrying
def save_draft(
    engine: Engine, *, assignment_id: int, form: FormState, seconds: float | None = None
) -> None:
    """Keep the answers given so far, and the seconds spent on the pair until now (so that a
    reload does not restart the time on item)."""
    draft = form.as_draft()
    if seconds is not None:
        draft[DRAFT_SECONDS] = round(seconds, 1)
    with session(engine) as s:
        s.execute(
            update(Assignment)
            .where(Assignment.id == assignment_id, Assignment.status == "active")
            .values(draft=draft)
        )


def draft_key(
    secret: str | None, *, assignment_id: int, annotator_id: int, sign_in: str | None
) -> str:
    """The key that lets a page save drafts of this assignment without a page run (the
    labelling form is given it with the pair; annotate/web/drafts.py checks it): HMAC-SHA256
    with the study's secret, of a message no coin uses. `sign_in` is the account's token hash
    when the page was shown: Sign out and a new link change it, so a tab left open saves no
    more drafts (a Prolific participant's stays: their address is their sign-in)."""
    message = f"draft:{assignment_id}:{annotator_id}:{sign_in or ''}".encode()
    return hmac.new((secret or "").encode(), message, hashlib.sha256).hexdigest()


def draft_seconds(draft: dict | None) -> float:
    """Seconds spent on the pair before the draft was saved (0 for an older draft)."""
    value = (draft or {}).get(DRAFT_SECONDS)
    return float(value) if isinstance(value, int | float) else 0.0


def submit(
    engine: Engine, *, item: Item, form: FormState, seconds: float | None
) -> AssignmentRow | None:
    """Commit the answer (replacing the earlier one the form showed; StaleAnswer when another
    was stored after the form was loaded). For a new pair the same commit reserves
    the annotator's next pair (returned), so the page that follows only reads; an edit of an
    earlier answer leaves the queue alone (returns None)."""
    if item.annotation is not None and item.annotation.seconds is not None and seconds is not None:
        seconds += item.annotation.seconds  # time spent on an earlier visit still counts
    answer = to_answer(form, chosen_position=item.assignment.chosen_position, seconds=seconds)
    keys = {"annotator_id": item.assignment.annotator_id, "pair_id": item.pair.id}
    # what this form showed: an answer stored since (another tab) is not replaced (StaleAnswer)
    loaded = Loaded(submitted_at=item.annotation.submitted_at if item.editing else None)
    if item.editing:
        submit_answer(engine, **keys, answer=answer, loaded=loaded)
        return None
    return submit_and_next(engine, **keys, answer=answer, loaded=loaded)
