"""The labelling page's read: the study, the pair to show and the annotator's progress."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import defer
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select

from annotate.labelling.answers import FormState
from annotate.labelling.drafts import REVISED_DRAFTS
from annotate.labelling.earlier import previous_pair_in
from annotate.queue.assignment import Progress, next_assignment, progress_in
from annotate.queue.rules import AssignmentRow
from annotate.store import db
from annotate.store.models import Annotation, Annotator, Assignment, Pair, Study


@dataclass(frozen=True)
class Item:
    """One pair as the page shows it. `pair` is read without its past posts (hundreds on
    real records, shown only when their panel is opened): `posts_count` says how many there
    are, `posts` holds them when they were asked for (None otherwise)."""

    pair: Pair
    assignment: AssignmentRow
    annotation: Annotation | None
    posts_count: int = 0
    posts: list[dict[str, Any]] | None = None
    away: bool = False  # the page said it went away (closed or hidden; rules.py, rule 8)

    @property
    def editing(self) -> bool:
        return self.annotation is not None

    def initial_form(self) -> FormState:
        if self.annotation is not None:
            return FormState.from_annotation(self.annotation, self.assignment.chosen_position)
        return FormState.from_draft(self.assignment.draft)


def mark_guidelines_seen(engine: Engine, *, annotator_id: int) -> None:
    """The annotator has read the study's guidelines (their Start button): from now on the
    labelling page shows pairs first (label_page's `guidelines_seen`)."""
    seen = update(Annotator).where(col(Annotator.id) == annotator_id).values(guidelines_seen=True)
    db.write(engine, lambda s: s.execute(seen))


@dataclass(frozen=True)
class LabelPage:
    """What one run of the labelling page shows: the study, the pair (None: nothing left),
    the annotator's progress and whether an earlier pair can be reopened."""

    study: Study
    item: Item | None
    progress: Progress | None
    can_go_back: bool = False
    guidelines_first: bool = False  # the study's guidelines, before any pair is reserved
    # a pair was revised while this annotator had it open: its draft is to be dropped, and said
    # (labelling.drafts.drop_revised_drafts)
    revised_draft: bool = False


def label_page(
    engine: Engine,
    *,
    annotator_id: int,
    study_id: int,
    pair_id: int | None = None,
    posts_for: int | None = None,
    guidelines_seen: bool = True,
) -> LabelPage:
    """Everything a page run shows, in one read unit of work (db.read): usually the next pair
    is already reserved (the Submit that closed the previous one reserved it in its commit).
    When it is not (the first pair, after a skip or a release), the full rules reserve one in a
    write (next_assignment) and the page is read again. `pair_id`: an earlier pair reopened;
    `posts_for`: the pair whose past posts the page asked for; `guidelines_seen` False: a
    study with guidelines shows them first (guidelines_first) and reserves nothing."""

    def read(s: Session) -> LabelPage:
        return _read_page(
            s,
            annotator_id=annotator_id,
            study_id=study_id,
            pair_id=pair_id,
            posts_for=posts_for,
            guidelines_seen=guidelines_seen,
        )

    page = db.read(engine, read)
    if page.item is not None or page.guidelines_first or pair_id is not None:
        return page
    if next_assignment(engine, annotator_id=annotator_id) is None:
        return page
    return db.read(engine, read)


_PAIR_SHOWN = select(Pair).options(defer(Pair.profile))  # type: ignore[arg-type]


def _posts_count(s: Session) -> ColumnElement[int]:
    """How many past posts a pair has, counted by the database (a profile absent or not a
    list counts 0): PostgreSQL's json_typeof, SQLite's json_type."""
    type_of = func.json_typeof if s.get_bind().dialect.name == "postgresql" else func.json_type
    return case((type_of(Pair.profile) == "array", func.json_array_length(Pair.profile)), else_=0)


def _read_page(
    s: Session,
    *,
    annotator_id: int,
    study_id: int,
    pair_id: int | None,
    posts_for: int | None,
    guidelines_seen: bool,
) -> LabelPage:
    study = s.get_one(Study, study_id)
    if not guidelines_seen and study.guidelines.strip():
        return LabelPage(study=study, item=None, progress=None, guidelines_first=True)
    item = _read_item(s, annotator_id=annotator_id, pair_id=pair_id, posts_for=posts_for)
    before = item.pair.id if item is not None and item.editing else None
    revised = s.exec(
        select(Assignment.id)
        .where(Assignment.annotator_id == annotator_id, *REVISED_DRAFTS)
        .limit(1)
    ).first()
    return LabelPage(
        study=study,
        item=item,
        progress=progress_in(s, annotator_id=annotator_id, study=study),
        can_go_back=previous_pair_in(s, annotator_id=annotator_id, before=before) is not None,
        revised_draft=revised is not None,
    )


def _read_item(
    s: Session, *, annotator_id: int, pair_id: int | None, posts_for: int | None
) -> Item | None:
    mine = select(Assignment).where(Assignment.annotator_id == annotator_id)
    if pair_id is not None:  # an earlier answer: to the pair's current version only
        row = s.exec(
            mine.join(Pair, col(Pair.id) == Assignment.pair_id).where(
                Assignment.pair_id == pair_id, Assignment.pair_version == Pair.version
            )
        ).first()
    else:
        row = s.exec(
            mine.where(Assignment.status == "active")
            .order_by(col(Assignment.assigned_at), col(Assignment.id))
            .limit(1)
        ).first()
    if row is None:
        return None
    assignment = AssignmentRow.of(row)
    pair = s.exec(_PAIR_SHOWN.where(Pair.id == assignment.pair_id)).one()
    annotation = s.exec(
        select(Annotation).where(
            Annotation.pair_id == assignment.pair_id,
            Annotation.annotator_id == assignment.annotator_id,
            Annotation.pair_version == assignment.pair_version,
        )
    ).first()
    posts = None
    if posts_for == pair.id:
        posts = list(s.exec(select(Pair.profile).where(Pair.id == pair.id)).one() or [])
        count = len(posts)
    else:
        count = s.exec(select(_posts_count(s)).where(Pair.id == pair.id)).one()
    return Item(
        pair=pair,
        assignment=assignment,
        annotation=annotation,
        posts_count=count,
        posts=posts,
        away=row.away_since is not None and row.status == "active",
    )
