"""The labelling step as the page needs it: the item to show, drafts and submission."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from sqlalchemy import bindparam, case, exists, func, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import defer
from sqlmodel import Session, select

from annotate.annotations import Loaded, submit_and_next, submit_answer
from annotate.answers import FormState, to_answer
from annotate.earlier_answers import previous_pair_in
from annotate.queue.assignment import Progress, next_assignment, progress_in
from annotate.queue.rules import AssignmentRow, GivenAway
from annotate.store import db
from annotate.store.models import Annotation, Annotator, Assignment, Pair, Study, utcnow

DRAFT_SECONDS = "seconds"


@dataclass(frozen=True)
class Item:
    """One pair as the page shows it. `pair` is read without its past posts (hundreds on
    real records, shown only when their panel is opened): `posts_count` says how many there
    are, `posts` holds them when they were asked for (None otherwise)."""

    pair: Pair
    assignment: AssignmentRow
    annotation: Annotation | None
    posts_count: int = 0
    posts: list[dict] | None = None
    away: bool = False  # the page said it went away (closed or hidden; rules.py, rule 8)

    @property
    def editing(self) -> bool:
        return self.annotation is not None

    def initial_form(self) -> FormState:
        if self.annotation is not None:
            return FormState.from_annotation(self.annotation, self.assignment.chosen_position)
        return FormState.from_draft(self.assignment.draft)


def load_study(engine: Engine, *, study_id: int) -> Study:
    return db.read(engine, lambda s: s.get(Study, study_id))


def mark_guidelines_seen(engine: Engine, *, annotator_id: int) -> None:
    """The annotator has read the study's guidelines (their Start button): from now on the
    labelling page shows pairs first (label_page's `guidelines_seen`)."""
    seen = update(Annotator).where(Annotator.id == annotator_id).values(guidelines_seen=True)
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
    keys = {
        "annotator_id": annotator_id,
        "study_id": study_id,
        "pair_id": pair_id,
        "posts_for": posts_for,
        "guidelines_seen": guidelines_seen,
    }
    page = db.read(engine, lambda s: _read_page(s, **keys))
    if page.item is not None or page.guidelines_first or pair_id is not None:
        return page
    if next_assignment(engine, annotator_id=annotator_id) is None:
        return page
    return db.read(engine, lambda s: _read_page(s, **keys))


def current_item(engine: Engine, *, annotator_id: int, pair_id: int | None = None) -> Item | None:
    """The pair to show: an earlier one being revisited, else the annotator's next pair."""
    study_id = db.read(engine, lambda s: s.get(Annotator, annotator_id).study_id)
    return label_page(engine, annotator_id=annotator_id, study_id=study_id, pair_id=pair_id).item


_PAIR_SHOWN = select(Pair).options(defer(Pair.profile))  # type: ignore[arg-type]


def _posts_count(s: Session):
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
    study = s.get(Study, study_id)
    if not guidelines_seen and study.guidelines.strip():
        return LabelPage(study=study, item=None, progress=None, guidelines_first=True)
    item = _read_item(s, annotator_id=annotator_id, pair_id=pair_id, posts_for=posts_for)
    before = item.pair.id if item is not None and item.editing else None
    return LabelPage(
        study=study,
        item=item,
        progress=progress_in(s, annotator_id=annotator_id, study=study),
        can_go_back=previous_pair_in(s, annotator_id=annotator_id, before=before) is not None,
    )


def _read_item(
    s: Session, *, annotator_id: int, pair_id: int | None, posts_for: int | None
) -> Item | None:
    mine = select(Assignment).where(Assignment.annotator_id == annotator_id)
    if pair_id is not None:
        row = s.exec(mine.where(Assignment.pair_id == pair_id)).first()
    else:
        row = s.exec(
            mine.where(Assignment.status == "active")
            .order_by(Assignment.assigned_at, Assignment.id)
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


_ASSIGNMENT = Assignment.__table__  # type: ignore[attr-defined]
_ANNOTATOR = Annotator.__table__  # type: ignore[attr-defined]
# Built once (SQLAlchemy compiles it once per dialect): drafts are most of what the server hears.
_OPEN_DRAFT = (
    _ASSIGNMENT.c.id == bindparam("b_id"),
    _ASSIGNMENT.c.status.in_(bindparam("b_statuses", expanding=True)),
)
_ACCOUNT = (_ANNOTATOR.c.id == _ASSIGNMENT.c.annotator_id, _ANNOTATOR.c.active)
_DRAFT_VALUES = {"draft": bindparam("b_draft"), "away_since": bindparam("b_away")}
# a deactivated account keeps nothing, also from a tab still open
_SAVE_DRAFT = (
    update(_ASSIGNMENT).where(*_OPEN_DRAFT, exists().where(*_ACCOUNT)).values(**_DRAFT_VALUES)
)
# ... nor one signed out or given a new link since the page's key was made (draft_key)
_SAVE_SIGNED_DRAFT = (
    update(_ASSIGNMENT)
    .where(
        *_OPEN_DRAFT,
        exists().where(
            *_ACCOUNT, _ANNOTATOR.c.token_hash.is_not_distinct_from(bindparam("b_sign_in"))
        ),
    )
    .values(**_DRAFT_VALUES)
)
SIGN_IN_UNCHECKED = object()  # save_draft's default: the caller checked the sign-in itself


def save_draft(
    engine: Engine,
    *,
    assignment_id: int,
    form: FormState,
    seconds: float | None = None,
    away: bool = False,
    statuses: tuple[str, ...] = ("active",),
    sign_in: str | object | None = SIGN_IN_UNCHECKED,
) -> bool:
    """Keep the answers given so far, and the seconds spent on the pair until now (so that a
    reload does not restart the time on item), in an open assignment (`statuses`) of an
    active account; whether it was kept. `away`: the page sent it as it went away (closed or
    hidden), which starts rule 8's AWAY_HOLD. `sign_in`: the account's token hash the page's
    draft key was made with, which must still be the account's. A draft lost in a power cut costs seconds of
    typing: its commit skips SQLite's fsync (db.session's durable=False)."""
    draft = form.as_draft()
    if seconds is not None:
        draft[DRAFT_SECONDS] = round(seconds, 1)
    # a draft comes from a page that shows the pair: it is not away (rules.py, rule 8), unless
    # it is the page's last word before it went away
    params = {
        "b_id": assignment_id,
        "b_statuses": list(statuses),
        "b_draft": draft,
        "b_away": utcnow() if away else None,
    }
    statement = _SAVE_DRAFT
    if sign_in is not SIGN_IN_UNCHECKED:
        statement = _SAVE_SIGNED_DRAFT
        params["b_sign_in"] = sign_in
    return db.write_connection(
        engine, lambda conn: conn.execute(statement, params).rowcount == 1, durable=False
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
    try:
        return submit_and_next(engine, **keys, answer=answer, loaded=loaded)
    except GivenAway:
        # released while the page was away and filled by others: the answer stays the draft
        # of the released reservation (it is shown again if the pair comes back)
        save_draft(
            engine,
            assignment_id=item.assignment.id,
            form=form,
            seconds=seconds,
            statuses=("active", "skipped"),
        )
        raise
