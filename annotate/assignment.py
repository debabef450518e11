"""Which pair an annotator sees next, and in which A/B order.

A pair is reserved for an annotator by an Assignment row; Pair.n_assigned counts the
reservations and is only raised by a conditional UPDATE (`n_assigned < target`), so no pair
is ever handed out beyond the study's overlap target, whatever runs at the same time.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, bindparam, exists, func, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from annotate import gold
from annotate.db import read_session, retrying, session, transaction
from annotate.models import Annotator, Assignment, Pair, Study, utcnow
from annotate.queue_sql import AssignmentRow, Cursor, StudyRules, chosen_position_for

CANDIDATES = 8


@dataclass(frozen=True)
class Progress:
    done: int
    total: int

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.done >= self.total


def _mine(annotator_id):  # an id, or a bound parameter in a prebuilt statement
    # study_id first, so the (study_id, pair_id, annotator_id) unique index answers it
    return exists().where(
        and_(
            Assignment.study_id == Pair.study_id,
            Assignment.pair_id == Pair.id,
            Assignment.annotator_id == annotator_id,
        )
    )


def _reserve(conn: Connection, *, study: StudyRules, pair_id: int) -> bool:
    raised = conn.execute(_RESERVE, {"pair_id": pair_id, "target": study.overlap_target})
    return raised.rowcount == 1


_PAIR = Pair.__table__
_ASSIGNMENT = Assignment.__table__
# Statements of the rare paths, as Core constructs built once with bound parameters
# (SQLAlchemy compiles each once per dialect). The common path is in annotate/queue_sql.py.
_RESERVE = (
    update(_PAIR)
    .where(_PAIR.c.id == bindparam("pair_id"), _PAIR.c.n_assigned < bindparam("target"))
    .values(n_assigned=_PAIR.c.n_assigned + 1)
)
# Real pairs with room that this annotator has not been given, least covered first. (The
# b_ names: bound parameters of an UPDATE of pair may not be named like its columns.)
_OPEN_SOME = (
    select(_PAIR.c.id)
    .where(
        _PAIR.c.study_id == bindparam("b_study"),
        _PAIR.c.is_gold == False,  # noqa: E712
        _PAIR.c.n_assigned < bindparam("b_target"),
        ~_mine(bindparam("b_annotator")),
    )
    .order_by(_PAIR.c.n_assigned, _PAIR.c.position)
    .limit(CANDIDATES)
)
_RELEASE = (
    update(_PAIR)
    .where(_PAIR.c.id == bindparam("pair_id"))
    .values(n_assigned=_PAIR.c.n_assigned - 1)
)


@retrying
def next_assignment(engine: Engine, *, annotator_id: int) -> AssignmentRow | None:
    """The annotator's current pair: the one already open, else a newly reserved one."""
    # Usually the pair is already reserved (the submit that closed the previous one reserved
    # it in the same commit): one read, which on SQLite never queues behind writers.
    with Cursor.autocommit(engine) as cursor:
        current = cursor.active(annotator_id=annotator_id)
    if current is not None:
        return current
    # A reservation lost in a power cut is harmless (a submit recreates it), so its commit
    # skips SQLite's fsync; the answer's commit that follows makes it durable anyway.
    with transaction(engine, durable=False) as conn:
        study = Cursor(conn).study_of(annotator_id=annotator_id, submitting=None)
        return reserve_next(conn, study=study, annotator_id=annotator_id)


def reserve_next(conn: Connection, *, study: StudyRules, annotator_id: int) -> AssignmentRow | None:
    """Inside the caller's write transaction, with `study` read by Cursor.study_of in it: the
    annotator's open assignment if there is one, else a newly reserved pair (gold and
    qualification rules, quota, least-covered pairs below the overlap target, then the pairs
    this annotator skipped), or None. (PostgreSQL's Submit function applies the common part
    of these rules in SQL: migration 0003.)"""
    cursor = Cursor(conn)
    if study.active_id is not None:
        return cursor.assignment_by_id(study.active_id)
    quota = study.items_per_annotator
    if quota is not None and cursor.done_count(annotator_id=annotator_id) >= quota:
        return None
    if (study.qualification_gold or 0) > 0:
        with Session(bind=conn) as s:
            qualified = gold.qualification(s, study=study, annotator_id=annotator_id)
        if qualified.state == gold.FAILED:
            return None
        if qualified.state == gold.PENDING:
            return _serve_gold(conn, study=study, annotator_id=annotator_id)
    reserved = cursor.reserve_and_assign(study=study, annotator_id=annotator_id, now=utcnow())
    if reserved is None:
        return _reserve_contended_or_skipped(conn, study=study, annotator_id=annotator_id)
    if gold.gold_due(annotator_id=annotator_id, key=reserved.pair_id):
        served = _serve_gold(conn, study=study, annotator_id=annotator_id)
        if served is not None:
            cursor.unassign(reserved)  # gold first: give the pair back
            return served
    return reserved


def _reserve_contended_or_skipped(
    conn: Connection, *, study: StudyRules, annotator_id: int
) -> AssignmentRow | None:
    # PostgreSQL, when every open pair is being reserved right now: wait on the row locks.
    keys = {"b_study": study.id, "b_target": study.overlap_target, "b_annotator": annotator_id}
    candidates = conn.execute(_OPEN_SOME, keys).scalars().all()
    if candidates and gold.gold_due(annotator_id=annotator_id, key=candidates[0]):
        served = _serve_gold(conn, study=study, annotator_id=annotator_id)
        if served is not None:
            return served
    for pair_id in candidates:
        if _reserve(conn, study=study, pair_id=pair_id):
            return Cursor(conn).assign(
                study=study, pair_id=pair_id, annotator_id=annotator_id, now=utcnow()
            )
    # Nothing new: offer the pairs this annotator skipped, while they still have room.
    with Session(bind=conn) as s:
        skipped = s.exec(
            select(Assignment)
            .where(Assignment.annotator_id == annotator_id, Assignment.status == "skipped")
            .order_by(Assignment.completed_at, Assignment.id)
        ).all()
        for assignment in skipped:
            if _reserve(conn, study=study, pair_id=assignment.pair_id):
                return _reopen(s, assignment)
    return None


def _reopen(s: Session, assignment: Assignment) -> AssignmentRow:
    assignment.status = "active"
    assignment.assigned_at = utcnow()
    assignment.completed_at = None
    s.add(assignment)
    s.flush()
    return AssignmentRow.of(assignment)


def _count(s: Session, statement) -> int:
    return int(s.exec(statement).one())


_GOLD_UNSEEN = (
    select(_PAIR.c.id)
    .where(
        _PAIR.c.study_id == bindparam("b_study"),
        _PAIR.c.is_gold == True,  # noqa: E712
        ~_mine(bindparam("b_annotator")),
    )
    .order_by(_PAIR.c.position)
    .limit(1)
)
_GOLD_SKIPPED = (
    select(_ASSIGNMENT.c.id)
    .join(_PAIR, _PAIR.c.id == _ASSIGNMENT.c.pair_id)
    .where(
        _ASSIGNMENT.c.annotator_id == bindparam("b_annotator"),
        _ASSIGNMENT.c.status == "skipped",
        _PAIR.c.is_gold == True,  # noqa: E712
    )
    .order_by(_ASSIGNMENT.c.completed_at, _ASSIGNMENT.c.id)
    .limit(1)
)
_RAISE = (
    update(_PAIR)
    .where(_PAIR.c.id == bindparam("pair_id"))
    .values(n_assigned=_PAIR.c.n_assigned + 1)
)


def _serve_gold(conn: Connection, *, study: StudyRules, annotator_id: int) -> AssignmentRow | None:
    """A gold pair this annotator has not seen, reserved without the overlap cap (every
    annotator sees every gold pair once; see annotate/gold.py)."""
    keys = {"b_study": study.id, "b_annotator": annotator_id}
    pair_id = conn.execute(_GOLD_UNSEEN, keys).scalar()
    if pair_id is None:
        skipped_id = conn.execute(_GOLD_SKIPPED, keys).scalar()
        if skipped_id is None:
            return None
        with Session(bind=conn) as s:
            skipped = s.get(Assignment, skipped_id)
            conn.execute(_RAISE, {"pair_id": skipped.pair_id})
            return _reopen(s, skipped)
    conn.execute(_RAISE, {"pair_id": pair_id})
    return Cursor(conn).assign(
        study=study, pair_id=pair_id, annotator_id=annotator_id, now=utcnow()
    )


@retrying
def open_assignment(engine: Engine, *, annotator_id: int, pair_id: int) -> AssignmentRow | None:
    """An assignment this annotator already holds (to go back to an earlier pair)."""
    with read_session(engine) as s:
        assignment = s.exec(
            select(Assignment).where(
                Assignment.annotator_id == annotator_id, Assignment.pair_id == pair_id
            )
        ).first()
        return None if assignment is None else AssignmentRow.of(assignment)


@retrying
def skip(engine: Engine, *, annotator_id: int, pair_id: int) -> None:
    """Put the pair back for others; it returns to this annotator only after everything else."""
    with session(engine, durable=False) as s:
        assignment = s.exec(
            select(Assignment).where(
                Assignment.annotator_id == annotator_id,
                Assignment.pair_id == pair_id,
                Assignment.status == "active",
            )
        ).first()
        if assignment is None:
            return
        assignment.status = "skipped"
        assignment.completed_at = utcnow()
        s.add(assignment)
        s.connection().execute(_RELEASE, {"pair_id": pair_id})


def ensure_assignment(s: Session, *, study_id: int, pair_id: int, annotator_id: int) -> Assignment:
    """The assignment row for a submission that arrives without one (a stale tab, an import)."""
    assignment = s.exec(
        select(Assignment).where(
            Assignment.annotator_id == annotator_id, Assignment.pair_id == pair_id
        )
    ).first()
    if assignment is not None:
        if assignment.status == "skipped":
            s.connection().execute(_RAISE, {"pair_id": pair_id})
        return assignment
    assignment = Assignment(
        study_id=study_id,
        pair_id=pair_id,
        annotator_id=annotator_id,
        chosen_position=chosen_position_for(
            study_id=study_id, pair_id=pair_id, annotator_id=annotator_id
        ),
    )
    try:
        with s.begin_nested():
            s.add(assignment)
            s.flush()
    except IntegrityError:
        return s.exec(
            select(Assignment).where(
                Assignment.annotator_id == annotator_id, Assignment.pair_id == pair_id
            )
        ).one()
    s.connection().execute(_RAISE, {"pair_id": pair_id})
    return assignment


@retrying
def progress(engine: Engine, *, annotator_id: int) -> Progress:
    """Done so far, and done plus what is still open to this annotator (capped by the quota)."""
    with read_session(engine) as s:
        annotator = s.get(Annotator, annotator_id)
        study = s.get(Study, annotator.study_id)
        by_status = dict(
            s.exec(
                select(Assignment.status, func.count())
                .where(Assignment.annotator_id == annotator_id)
                .group_by(Assignment.status)
            ).all()
        )
        # "Pairs with room that this annotator has not touched", counted as two index range
        # counts: a NOT EXISTS per pair would grow with the study (49 ms at 10,000 pairs).
        with_room = _count(
            s,
            select(func.count())
            .select_from(Pair)
            .where(
                Pair.study_id == study.id,
                Pair.is_gold == False,  # noqa: E712
                Pair.n_assigned < study.overlap_target,
            ),
        )
        mine_with_room = _count(
            s,
            select(func.count())
            .select_from(Assignment)
            .join(Pair, Pair.id == Assignment.pair_id)
            .where(
                Assignment.annotator_id == annotator_id,
                Pair.is_gold == False,  # noqa: E712
                Pair.n_assigned < study.overlap_target,
            ),
        )
        available = with_room - mine_with_room
        skipped_with_room = _count(
            s,
            select(func.count())
            .select_from(Assignment)
            .join(Pair, Pair.id == Assignment.pair_id)
            .where(
                Assignment.annotator_id == annotator_id,
                Assignment.status == "skipped",
                Pair.n_assigned < study.overlap_target,
            ),
        )
        done = by_status.get("done", 0)
        total = done + by_status.get("active", 0) + skipped_with_room + available
        if study.items_per_annotator is not None:
            total = min(total, study.items_per_annotator)
        return Progress(done=done, total=max(total, done))


@retrying
def history(engine: Engine, *, annotator_id: int, limit: int = 200) -> list[tuple[int, str]]:
    """(pair id, pair key) of this annotator's completed pairs, most recent first. Gold checks
    are left out: their first answer is what counts (accuracy, qualification)."""
    with read_session(engine) as s:
        return list(
            s.exec(
                select(Pair.id, Pair.pair_key)
                .join(Assignment, Assignment.pair_id == Pair.id)
                .where(
                    Assignment.annotator_id == annotator_id,
                    Assignment.status == "done",
                    Pair.is_gold == False,  # noqa: E712
                )
                .order_by(Assignment.completed_at.desc(), Assignment.id.desc())
                .limit(limit)
            ).all()
        )
