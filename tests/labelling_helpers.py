"""Reads the tests make of the labelling step that the app itself does not need (the page reads
through annotate.labelling.page.label_page, the Submit through annotate.labelling.step)."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from annotate.labelling.answers import FormState, missing_questions
from annotate.labelling.page import Item, label_page
from annotate.store import db
from annotate.store.models import Annotation, Annotator, Pair, Study


def load_study(engine: Engine, *, study_id: int) -> Study | None:
    return db.read(engine, lambda s: s.get(Study, study_id))


def current_item(engine: Engine, *, annotator_id: int, pair_id: int | None = None) -> Item | None:
    """The pair to show: an earlier one being revisited, else the annotator's next pair."""
    study_id = db.read(engine, lambda s: s.get_one(Annotator, annotator_id).study_id)
    assert study_id is not None
    return label_page(engine, annotator_id=annotator_id, study_id=study_id, pair_id=pair_id).item


def get_answer(engine: Engine, *, annotator_id: int, pair_id: int) -> Annotation | None:
    """This annotator's answer to the pair's current version (None: not answered)."""
    mine = (
        select(Annotation)
        .join(Pair, col(Pair.id) == Annotation.pair_id)
        .where(
            Annotation.annotator_id == annotator_id,
            Annotation.pair_id == pair_id,
            Annotation.pair_version == Pair.version,
        )
    )
    return db.read(engine, lambda s: s.exec(mine).first())


def missing_answers(study: Study, form: FormState, *, n_aspects: int = 0) -> list[str]:
    """Names of the required answers not given yet, in the order they appear on the page."""
    return [q.name for q in missing_questions(study, form, n_aspects=n_aspects)]
