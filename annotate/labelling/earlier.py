"""An annotator's earlier answers as the labelling page lists them: every one, newest first,
with the start of its question and the answer given (in the A/B slots the annotator saw)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from analysis.vocabulary import TIE
from annotate.labelling.slots import slot_from_preference
from annotate.queue.assignment import history_in
from annotate.store import db
from annotate.store.models import Annotation, Assignment, Pair

QUESTION_START = 90  # characters of the question shown in the list
CHUNK = 500  # pair ids per query (well under every database's parameter limit)
ANSWER_WORDS = {"A": "Response A", "B": "Response B", TIE: "No preference"}


@dataclass(frozen=True)
class EarlierAnswer:
    pair_id: int
    question: str
    answer: str


def earlier_answers(engine: Engine, *, annotator_id: int) -> list[EarlierAnswer]:
    """Every earlier answer of this annotator, newest first (no cap: the list reaches them all).
    Which pairs count, and their order, is `assignment.history_in`'s rule (gold checks left out).
    One snapshot: the pairs listed and their details agree."""
    done, details = db.read(engine, lambda s: _read_answers(s, annotator_id=annotator_id))
    answers = []
    for pair_id in done:
        question, preference, chosen_position = details[pair_id]
        question = " ".join((question or "").split())
        if len(question) > QUESTION_START:
            question = question[:QUESTION_START].rstrip() + "…"
        slot = slot_from_preference(preference, chosen_position) if preference else None
        answer = ANSWER_WORDS.get(slot, "no answer") if slot is not None else "no answer"
        answers.append(EarlierAnswer(pair_id, question, answer))
    return answers


# A pair's question (its start), the answer's preference (None: no answer) and the A/B order
_Details = tuple[str | None, str | None, str]


def _read_answers(s: Session, *, annotator_id: int) -> tuple[list[int], dict[int, _Details]]:
    done = [pair_id for pair_id, _key in history_in(s, annotator_id=annotator_id, limit=None)]
    details: dict[int, _Details] = {}
    for start in range(0, len(done), CHUNK):
        ids = done[start : start + CHUNK]
        rows = s.exec(
            select(
                Pair.id,
                func.substr(Pair.question, 1, QUESTION_START + 1),
                Annotation.preference,
                Assignment.chosen_position,
            )
            .join(Assignment, col(Assignment.pair_id) == Pair.id)
            .outerjoin(
                Annotation,
                and_(
                    col(Annotation.pair_id) == Assignment.pair_id,
                    col(Annotation.annotator_id) == Assignment.annotator_id,
                    col(Annotation.pair_version) == Assignment.pair_version,
                ),
            )
            .where(
                Assignment.annotator_id == annotator_id,
                col(Assignment.pair_version) == Pair.version,
                col(Pair.id).in_(ids),
            )
        ).all()
        for pair_id, question, preference, chosen_position in rows:
            assert pair_id is not None  # a primary key
            details[pair_id] = (question, preference, chosen_position)
    return done, details


def previous_pair(engine: Engine, *, annotator_id: int, before: int | None) -> int | None:
    """The pair answered just before pair `before` (the latest answered one when None), by
    `earlier_answers`' rule (gold checks left out); None where there is none."""
    return db.read(engine, lambda s: previous_pair_in(s, annotator_id=annotator_id, before=before))


def previous_pair_in(s: Session, *, annotator_id: int, before: int | None) -> int | None:
    """`previous_pair`, inside the caller's read (for a new pair: the latest answer only)."""
    limit = 1 if before is None else None
    ids = [pair_id for pair_id, _key in history_in(s, annotator_id=annotator_id, limit=limit)]
    if before is None or before not in ids:
        return ids[0] if ids else None
    position = ids.index(before) + 1
    return ids[position] if position < len(ids) else None
