"""Which pair an annotator sees next, and in which A/B order.

A pair is reserved for an annotator by an Assignment row; Pair.n_assigned counts the
reservations and is only raised by a conditional UPDATE (`n_assigned < target`), so no pair
is ever handed out beyond the study's overlap target, whatever runs at the same time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlalchemy import and_, bindparam, exists, func, insert, update
from sqlalchemy.engine import Connection, Engine, Row
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from annotate import gold
from annotate.db import read_connection, read_session, retrying, session
from annotate.models import Annotator, Assignment, Pair, Study, utcnow

CANDIDATES = 8


def chosen_position_for(*, study_id: int, pair_id: int, annotator_id: int) -> str:
    """Deterministic, balanced coin: same annotator and pair, same order on every reload."""
    digest = hashlib.sha256(f"{study_id}:{pair_id}:{annotator_id}".encode()).digest()
    return "A" if digest[0] & 1 else "B"


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


def _reserve(s: Session, *, study: Study | Row, pair_id: int, annotator_id: int) -> bool:
    # Core execution: the ORM's UPDATE path (session synchronisation) tripled its cost
    raised = s.connection().execute(_RESERVE, {"pair_id": pair_id, "target": study.overlap_target})
    return raised.rowcount == 1


_PAIR = Pair.__table__
_ASSIGNMENT = Assignment.__table__
# Hot-path statements as Core constructs built once with bound parameters: SQLAlchemy compiles
# each once per dialect (compiled cache) and every call only passes values.
_RESERVE = (
    update(_PAIR)
    .where(_PAIR.c.id == bindparam("pair_id"), _PAIR.c.n_assigned < bindparam("target"))
    .values(n_assigned=_PAIR.c.n_assigned + 1)
)
_ACTIVE = (
    select(_ASSIGNMENT)
    .where(
        _ASSIGNMENT.c.annotator_id == bindparam("annotator_id"),
        _ASSIGNMENT.c.status == "active",
    )
    .order_by(_ASSIGNMENT.c.assigned_at, _ASSIGNMENT.c.id)
    .limit(1)
)
_INSERT = insert(_ASSIGNMENT).returning(_ASSIGNMENT.c.id)
_STUDY = Study.__table__
_ANNOTATOR = Annotator.__table__
_ACTIVE_BY_ID = select(_ASSIGNMENT).where(_ASSIGNMENT.c.id == bindparam("b_id"))
_STUDY_OF = (
    select(
        _STUDY.c.id,
        _STUDY.c.overlap_target,
        _STUDY.c.items_per_annotator,
        _STUDY.c.qualification_gold,
        # the annotator's open assignment (as _ACTIVE), leaving out the pair being submitted
        select(_ASSIGNMENT.c.id)
        .where(
            _ASSIGNMENT.c.annotator_id == bindparam("annotator_id"),
            _ASSIGNMENT.c.status == "active",
            _ASSIGNMENT.c.pair_id != bindparam("b_closing"),
        )
        .order_by(_ASSIGNMENT.c.assigned_at, _ASSIGNMENT.c.id)
        .limit(1)
        .scalar_subquery()
        .label("active_id"),
    )
    .join(_ANNOTATOR, _ANNOTATOR.c.study_id == _STUDY.c.id)
    .where(_ANNOTATOR.c.id == bindparam("annotator_id"))
)
# Real pairs with room that this annotator has not been given, least covered first. (The
# b_ names: bound parameters of an UPDATE of pair may not be named like its columns.)
_OPEN_PAIRS = (
    select(_PAIR.c.id)
    .where(
        _PAIR.c.study_id == bindparam("b_study"),
        _PAIR.c.is_gold == False,  # noqa: E712
        _PAIR.c.n_assigned < bindparam("b_target"),
        ~_mine(bindparam("b_annotator")),
    )
    .order_by(_PAIR.c.n_assigned, _PAIR.c.position)
)
_OPEN_SOME = _OPEN_PAIRS.limit(CANDIDATES)


def _reserve_first(first):
    """Pick the least-covered open pair and reserve it in one statement (the conditional
    UPDATE as in _reserve), returning its id."""
    return (
        update(_PAIR)
        .where(
            _PAIR.c.id == first.correlate(None).scalar_subquery(),
            _PAIR.c.n_assigned < bindparam("b_target"),
        )
        .values(n_assigned=_PAIR.c.n_assigned + 1)
        .returning(_PAIR.c.id)
    )


_RESERVE_FIRST = {
    # SQLite: writers take turns (BEGIN IMMEDIATE), so the pair picked still has room.
    "sqlite": _reserve_first(_OPEN_PAIRS.limit(1)),
    # PostgreSQL: many annotators want the same least-covered pair; take the first one nobody
    # is reserving right now (SKIP LOCKED) instead of queueing on its row lock.
    "postgresql": _reserve_first(_OPEN_PAIRS.limit(1).with_for_update(of=_PAIR, skip_locked=True)),
}
_RELEASE = (
    update(_PAIR)
    .where(_PAIR.c.id == bindparam("pair_id"))
    .values(n_assigned=_PAIR.c.n_assigned - 1)
)


def _assignment(row) -> Assignment:
    """A detached Assignment from a Core row (the callers only read it)."""
    return Assignment(**row._mapping)


def _active(conn: Connection, annotator_id: int) -> Assignment | None:
    row = conn.execute(_ACTIVE, {"annotator_id": annotator_id}).first()
    return None if row is None else _assignment(row)


def study_of(s: Session, annotator_id: int, *, submitting: int | None = None) -> Row:
    """What reserve_next needs, read in one Core query: the rules of the annotator's study
    (id, overlap_target, items_per_annotator, qualification_gold) and the id of the
    annotator's open assignment (active_id), other than the one for pair `submitting`, which
    the caller closes in the same transaction."""
    keys = {"annotator_id": annotator_id, "b_closing": -1 if submitting is None else submitting}
    return s.connection().execute(_STUDY_OF, keys).one()


def _count(s: Session, statement) -> int:
    return int(s.exec(statement).one())


def done_count(s: Session, annotator_id: int) -> int:
    return _count(
        s,
        select(func.count())
        .select_from(Assignment)
        .where(Assignment.annotator_id == annotator_id, Assignment.status == "done"),
    )


def _quota_reached(s: Session, study: Study | Row, annotator_id: int) -> bool:
    return (
        study.items_per_annotator is not None
        and done_count(s, annotator_id) >= study.items_per_annotator
    )


@retrying
def next_assignment(engine: Engine, *, annotator_id: int) -> Assignment | None:
    """The annotator's current pair: the one already open, else a newly reserved one."""
    # Usually the pair is already reserved (the submit that closed the previous one reserved
    # it in the same commit): a read transaction, which on SQLite never queues behind writers.
    with read_connection(engine) as conn:
        current = _active(conn, annotator_id)
    if current is not None:
        return current
    # A reservation lost in a power cut is harmless (a submit recreates it), so its commit
    # skips SQLite's fsync; the answer's commit that follows makes it durable anyway.
    with session(engine, durable=False) as s:
        return reserve_next(s, study=study_of(s, annotator_id), annotator_id=annotator_id)


def reserve_next(s: Session, *, study: Row, annotator_id: int) -> Assignment | None:
    """Inside the caller's write transaction, with `study` read by study_of in it: the
    annotator's open assignment if there is one, else a newly reserved pair (gold and
    qualification rules, quota, least-covered pairs below the overlap target, then the pairs
    this annotator skipped), or None."""
    conn = s.connection()
    if study.active_id is not None:
        return _assignment(conn.execute(_ACTIVE_BY_ID, {"b_id": study.active_id}).one())
    if _quota_reached(s, study, annotator_id):
        return None
    qualified = gold.qualification(s, study=study, annotator_id=annotator_id)
    if qualified.state == gold.FAILED:
        return None
    if qualified.state == gold.PENDING:
        return _serve_gold(s, study=study, annotator_id=annotator_id)
    keys = {"b_study": study.id, "b_target": study.overlap_target, "b_annotator": annotator_id}
    reserved = conn.execute(_RESERVE_FIRST[conn.dialect.name], keys).scalar()
    if reserved is not None:
        if gold.gold_due(annotator_id=annotator_id, key=reserved):
            served = _serve_gold(s, study=study, annotator_id=annotator_id)
            if served is not None:
                conn.execute(_RELEASE, {"pair_id": reserved})  # gold first: give the pair back
                return served
        return _new_assignment(conn, study=study, pair_id=reserved, annotator_id=annotator_id)
    # PostgreSQL, when every open pair is being reserved right now: wait on the row locks.
    candidates = conn.execute(_OPEN_SOME, keys).scalars().all()
    if candidates and gold.gold_due(annotator_id=annotator_id, key=candidates[0]):
        served = _serve_gold(s, study=study, annotator_id=annotator_id)
        if served is not None:
            return served
    for pair_id in candidates:
        if _reserve(s, study=study, pair_id=pair_id, annotator_id=annotator_id):
            return _new_assignment(conn, study=study, pair_id=pair_id, annotator_id=annotator_id)
    # Nothing new: offer the pairs this annotator skipped, while they still have room.
    skipped = s.exec(
        select(Assignment)
        .where(Assignment.annotator_id == annotator_id, Assignment.status == "skipped")
        .order_by(Assignment.completed_at, Assignment.id)
    ).all()
    for assignment in skipped:
        if _reserve(s, study=study, pair_id=assignment.pair_id, annotator_id=annotator_id):
            assignment.status = "active"
            assignment.assigned_at = utcnow()
            assignment.completed_at = None
            s.add(assignment)
            s.flush()
            return assignment
    return None


def _new_assignment(
    conn: Connection, *, study: Study | Row, pair_id: int, annotator_id: int
) -> Assignment:
    values = {
        "study_id": study.id,
        "pair_id": pair_id,
        "annotator_id": annotator_id,
        "chosen_position": chosen_position_for(
            study_id=study.id, pair_id=pair_id, annotator_id=annotator_id
        ),
        "status": "active",
        "assigned_at": utcnow(),
        "completed_at": None,
        "draft": None,
    }
    return Assignment(id=conn.execute(_INSERT, values).scalar_one(), **values)


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


def _serve_gold(s: Session, *, study: Study | Row, annotator_id: int) -> Assignment | None:
    """A gold pair this annotator has not seen, reserved without the overlap cap (every
    annotator sees every gold pair once; see annotate/gold.py)."""
    conn = s.connection()
    keys = {"b_study": study.id, "b_annotator": annotator_id}
    pair_id = conn.execute(_GOLD_UNSEEN, keys).scalar()
    if pair_id is None:
        skipped_id = conn.execute(_GOLD_SKIPPED, keys).scalar()
        if skipped_id is None:
            return None
        skipped = s.get(Assignment, skipped_id)
        conn.execute(_RAISE, {"pair_id": skipped.pair_id})
        skipped.status = "active"
        skipped.assigned_at = utcnow()
        skipped.completed_at = None
        s.add(skipped)
        s.flush()
        return skipped
    conn.execute(_RAISE, {"pair_id": pair_id})
    return _new_assignment(conn, study=study, pair_id=pair_id, annotator_id=annotator_id)


@retrying
def open_assignment(engine: Engine, *, annotator_id: int, pair_id: int) -> Assignment | None:
    """An assignment this annotator already holds (to go back to an earlier pair)."""
    with read_session(engine) as s:
        return s.exec(
            select(Assignment).where(
                Assignment.annotator_id == annotator_id, Assignment.pair_id == pair_id
            )
        ).first()


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
