"""Which pair an annotator sees next, and in which A/B order: the rules of
annotate/queue/rules.py on the database, reservations released, progress counted.

A pair is reserved for an annotator by an Assignment row; Pair.n_assigned counts the
reservations and is only changed by conditional or relative UPDATEs (`n_assigned < target`,
`n_assigned - 1`), never written back from a value read earlier, so no pair is ever handed
out beyond its target (the study's overlap, or the pair's own in an adaptive study:
annotate/queue/targets.py), whatever runs at the same time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Exists,
    and_,
    bindparam,
    exists,
    func,
    update,
)
from sqlalchemy import select as core_select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from annotate.queue import gold, rules
from annotate.queue.rules import AssignmentRow, Coins, StudyRules
from annotate.queue.sql import Cursor
from annotate.store.clock import as_utc
from annotate.store.db import read_session, retrying, transaction
from annotate.store.models import Annotator, Assignment, Pair, Study, table_of, utcnow

CANDIDATES = 8


@dataclass(frozen=True)
class Progress:
    done: int
    total: int

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.done >= self.total


@dataclass(frozen=True)
class QueueStatus:
    """Why an annotator has no pair: `answered` so far, `busy_until` when every pair left
    is reserved by others (the earliest time one of those reservations expires), and
    `screened_out` when they failed the qualification."""

    answered: int
    busy_until: datetime | None
    screened_out: bool = False

    @property
    def earns_completion(self) -> bool:
        """Whether a crowd platform's completion code may be shown: some work was done, the
        qualification was not failed, and nothing is merely waiting for other people's
        reservations."""
        return self.answered > 0 and self.busy_until is None and not self.screened_out


def _mine(annotator_id: int | BindParameter[Any]) -> Exists:
    """Whether this annotator was given the pair's current version (an id, or a bound
    parameter in a prebuilt statement): an answer imported for it has its assignment too."""
    # study_id first, so the (study_id, pair_id, annotator_id, pair_version) unique index
    # answers it
    return exists().where(
        and_(
            col(Assignment.study_id) == Pair.study_id,
            col(Assignment.pair_id) == Pair.id,
            col(Assignment.annotator_id) == annotator_id,
            col(Assignment.pair_version) == Pair.version,
        )
    )


_PAIR = table_of(Pair)
_ASSIGNMENT = table_of(Assignment)
# Statements of the rare paths, as Core constructs built once with bound parameters
# (SQLAlchemy compiles each once per dialect). The common path is in annotate/queue/sql.py.
# (The b_ names: bound parameters of an UPDATE of pair may not be named like its columns.)
# A pair's target: its own in an adaptive study (annotate/queue/targets.py), else the study's.
_TARGET = func.coalesce(_PAIR.c.target, bindparam("b_target"))
# (Both return the pair's current version: the one reserved.)
_RESERVE = (
    update(_PAIR)
    .where(_PAIR.c.id == bindparam("b_pair"), _PAIR.c.n_assigned < _TARGET)
    .values(n_assigned=_PAIR.c.n_assigned + 1)
    .returning(_PAIR.c.version)
)
_RAISE = (
    update(_PAIR)
    .where(_PAIR.c.id == bindparam("b_pair"))
    .values(n_assigned=_PAIR.c.n_assigned + 1)
    .returning(_PAIR.c.version)
)
_RELEASE = (
    update(_PAIR)
    .where(_PAIR.c.id == bindparam("b_pair"), _PAIR.c.n_assigned > 0)
    .values(n_assigned=_PAIR.c.n_assigned - 1)
)
# Real pairs with room that this annotator has not been given, least covered first.
_OPEN_SOME = (
    select(_PAIR.c.id)
    .where(
        _PAIR.c.study_id == bindparam("b_study"),
        _PAIR.c.is_gold == False,  # noqa: E712
        _PAIR.c.queued == True,  # noqa: E712  (sampled studies: only the sample)
        _PAIR.c.n_assigned < _TARGET,
        ~_mine(bindparam("b_annotator")),
    )
    .order_by(_PAIR.c.n_assigned, _PAIR.c.position)
    .limit(CANDIDATES)
)
_GOLD_UNSEEN = (
    select(_PAIR.c.id)
    .where(
        _PAIR.c.study_id == bindparam("b_study"),
        _PAIR.c.is_gold == True,  # noqa: E712
        ~_mine(bindparam("b_annotator")),
    )
    .order_by(_PAIR.c.position)
)
_SKIPPED = (
    select(_ASSIGNMENT.c.id, _ASSIGNMENT.c.pair_id)
    .join(_PAIR, _PAIR.c.id == _ASSIGNMENT.c.pair_id)
    .where(
        _ASSIGNMENT.c.annotator_id == bindparam("b_annotator"),
        _ASSIGNMENT.c.status == "skipped",
        _ASSIGNMENT.c.pair_version == _PAIR.c.version,
    )
    .order_by(_ASSIGNMENT.c.completed_at, _ASSIGNMENT.c.id)
)
_GOLD_SKIPPED = _SKIPPED.where(_PAIR.c.is_gold == True).limit(1)  # noqa: E712
# Rule 9's count: this annotator's skipped real pairs (current version) that still have room.
_SKIPPED_WITH_ROOM = (
    select(func.count())
    .select_from(_ASSIGNMENT.join(_PAIR, _PAIR.c.id == _ASSIGNMENT.c.pair_id))
    .where(
        _ASSIGNMENT.c.annotator_id == bindparam("b_annotator"),
        _ASSIGNMENT.c.status == "skipped",
        _ASSIGNMENT.c.pair_version == _PAIR.c.version,
        _PAIR.c.is_gold == False,  # noqa: E712
        _PAIR.c.n_assigned < _TARGET,
    )
)


class FullQueue(Cursor):
    """The Queue of the full rules: the common operations of Cursor, and the rare ones on the
    SQLAlchemy connection of the caller's write transaction."""

    def __init__(self, conn: Connection):
        super().__init__(conn)
        self.conn = conn

    def qualification_state(self, *, study: StudyRules, annotator_id: int) -> str:
        with Session(bind=self.conn) as s:
            return gold.qualification(s, study=study, annotator_id=annotator_id).state

    def serve_gold(
        self, *, study: StudyRules, annotator_id: int, now: datetime
    ) -> AssignmentRow | None:
        """A gold pair this annotator has not seen (else one they skipped), reserved without
        the overlap cap (every annotator sees every gold pair once; see annotate/queue/gold.py)."""
        keys = {"b_study": study.id, "b_annotator": annotator_id}
        unseen = list(self.conn.execute(_GOLD_UNSEEN, keys).scalars().all())
        pair_id = rules.next_gold(study.coins, annotator_id=annotator_id, pair_ids=unseen)
        if pair_id is None:
            skipped = self.conn.execute(_GOLD_SKIPPED, keys).first()
            if skipped is None:
                return None
            self.conn.execute(_RAISE, {"b_pair": skipped.pair_id})
            return self._reopen(skipped.id, now=now)
        version = self.conn.execute(_RAISE, {"b_pair": pair_id}).scalar_one()
        return self.assign(
            study=study, pair_id=pair_id, pair_version=version, annotator_id=annotator_id, now=now
        )

    def open_candidates(self, *, study: StudyRules, annotator_id: int) -> list[int]:
        # PostgreSQL, when every open pair is being reserved right now: wait on the row locks.
        keys = {"b_study": study.id, "b_target": study.overlap_target, "b_annotator": annotator_id}
        return list(self.conn.execute(_OPEN_SOME, keys).scalars().all())

    def reserve_pair(
        self, *, study: StudyRules, pair_id: int, annotator_id: int, now: datetime
    ) -> AssignmentRow | None:
        raised = self.conn.execute(_RESERVE, {"b_pair": pair_id, "b_target": study.overlap_target})
        version = raised.scalar()
        if version is None:
            return None
        return self.assign(
            study=study, pair_id=pair_id, pair_version=version, annotator_id=annotator_id, now=now
        )

    def reopen_skipped(
        self, *, study: StudyRules, annotator_id: int, now: datetime
    ) -> AssignmentRow | None:
        for skipped in self.conn.execute(_SKIPPED, {"b_annotator": annotator_id}).all():
            raised = self.conn.execute(
                _RESERVE, {"b_pair": skipped.pair_id, "b_target": study.overlap_target}
            )
            if raised.scalar() is not None:
                return self._reopen(skipped.id, now=now)
        return None

    def skipped_with_room(self, *, study: StudyRules, annotator_id: int) -> int:
        keys = {"b_annotator": annotator_id, "b_target": study.overlap_target}
        return int(self.conn.execute(_SKIPPED_WITH_ROOM, keys).scalar_one())

    def release_expired(self, *, study: StudyRules, now: datetime) -> int:
        return (
            release_expired(
                self.conn, study_id=study.id, timeout=study.reservation_timeout, now=now
            )
            + release_answerless(self.conn, study_id=study.id, now=now)
            + release_away(self.conn, study_id=study.id, now=now)
            + release_gone(self.conn, study_id=study.id, now=now)
        )

    def _reopen(self, assignment_id: int, *, now: datetime) -> AssignmentRow:
        self.conn.execute(
            update(_ASSIGNMENT)
            .where(_ASSIGNMENT.c.id == assignment_id)
            .values(status="active", assigned_at=now, completed_at=None, seen_at=None)
        )
        reopened = self.assignment_by_id(assignment_id)
        if reopened is None:  # the row was just updated in this transaction
            raise LookupError(f"no assignment with id {assignment_id}")
        return reopened


# --- releasing reservations -----------------------------------------------------------------


def _release(conn: Connection, *conditions: ColumnElement[bool], now: datetime) -> int:
    """Release the open reservations matching `conditions`, each in one statement that
    changes the rows it reads (no count read and written back): the assignment becomes
    'skipped' (the pair can come back to its annotator later, and a late answer is still
    stored), the pair's n_assigned goes down by one."""
    released = (
        conn.execute(
            update(_ASSIGNMENT)
            .where(_ASSIGNMENT.c.status == "active", *conditions)
            .values(status="skipped", completed_at=now)
            .returning(_ASSIGNMENT.c.pair_id)
        )
        .scalars()
        .all()
    )
    # sorted: concurrent releases take the pairs' row locks in one order
    for pair_id in sorted(released):
        conn.execute(_RELEASE, {"b_pair": pair_id})
    return len(released)


def _connection(s: Session | Connection) -> Connection:
    return s.connection() if isinstance(s, Session) else s


def release_reservations(
    s: Session | Connection, *, annotator_id: int, now: datetime | None = None
) -> int:
    """Inside the caller's write transaction (deactivating an account): every pair the
    annotator holds open goes back to the pool. Returns how many."""
    return _release(_connection(s), _ASSIGNMENT.c.annotator_id == annotator_id, now=now or utcnow())


def release_expired(
    s: Session | Connection, *, study_id: int, timeout: int, now: datetime | None = None
) -> int:
    """Inside the caller's write transaction: the study's reservations held longer than
    `timeout` seconds go back to the pool (study.reservation_timeout; the queue runs this when
    it finds no pair with room). Returns how many."""
    now = now or utcnow()
    return _release(
        _connection(s),
        _ASSIGNMENT.c.study_id == study_id,
        _ASSIGNMENT.c.assigned_at < now - timedelta(seconds=timeout),
        now=now,
    )


def release_answerless(
    s: Session | Connection, *, study_id: int, now: datetime | None = None
) -> int:
    """Inside the caller's write transaction: the study's reservations held longer than
    ANSWERLESS_HOLD seconds by crowd participants who have answered nothing (rules.py, rule 8).
    Invited annotators (personal links) keep the study's timeout."""
    now = now or utcnow()
    done = aliased(Assignment)
    answered = exists().where(
        and_(col(done.annotator_id) == Assignment.annotator_id, col(done.status) == "done")
    )
    crowd = exists().where(
        and_(col(Annotator.id) == Assignment.annotator_id, col(Annotator.external_id).is_not(None))
    )
    return _release(
        _connection(s),
        _ASSIGNMENT.c.study_id == study_id,
        _ASSIGNMENT.c.assigned_at < now - timedelta(seconds=rules.ANSWERLESS_HOLD),
        crowd,
        ~answered,
        now=now,
    )


def release_away(s: Session | Connection, *, study_id: int, now: datetime | None = None) -> int:
    """Inside the caller's write transaction: the study's reservations whose page went away
    (closed or hidden) more than AWAY_HOLD seconds ago (rules.py, rule 8). Their drafts stay."""
    now = now or utcnow()
    return _release(
        _connection(s),
        _ASSIGNMENT.c.study_id == study_id,
        _ASSIGNMENT.c.away_since < now - timedelta(seconds=rules.AWAY_HOLD),
        now=now,
    )


# When the page showing an open reservation last said it is there: its last draft, heartbeat
# or return, else the reservation itself (rules.py, rule 8).
LAST_SEEN = func.coalesce(_ASSIGNMENT.c.seen_at, _ASSIGNMENT.c.assigned_at)


def release_gone(s: Session | Connection, *, study_id: int, now: datetime | None = None) -> int:
    """Inside the caller's write transaction: the study's reservations whose page stopped
    talking (no draft, heartbeat or return) more than GONE_HOLD seconds ago: a crashed or
    killed browser, a phone that lost its network (rules.py, rule 8). Their drafts stay."""
    now = now or utcnow()
    return _release(
        _connection(s),
        _ASSIGNMENT.c.study_id == study_id,
        LAST_SEEN < now - timedelta(seconds=rules.gone_hold()),  # noqa: SIM300 (a column)
        now=now,
    )


@retrying
def mark_away(engine: Engine, *, assignment_id: int, away: bool) -> str | None:
    """The page showing this assignment went away (closed or hidden) or is back (or says it
    is still there, its heartbeat): the lease of rule 8 starts or ends, and the page was seen
    now. Returns the assignment's status (None: no such assignment); a released one
    ("skipped") is not taken back here."""
    with transaction(engine, durable=False) as conn:
        status = conn.execute(
            select(_ASSIGNMENT.c.status).where(_ASSIGNMENT.c.id == assignment_id)
        ).scalar()
        if status == "active":
            conn.execute(
                update(_ASSIGNMENT)
                .where(_ASSIGNMENT.c.id == assignment_id, _ASSIGNMENT.c.status == "active")
                .values(away_since=utcnow() if away else None, seen_at=utcnow())
            )
        return status


# --- the labelling step ---------------------------------------------------------------------


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
    full rules (rules.choose_next) on the database."""
    return rules.choose_next(FullQueue(conn), study=study, annotator_id=annotator_id, now=utcnow())


@retrying
def skip(engine: Engine, *, annotator_id: int, pair_id: int) -> None:
    """Put the pair back for others; it returns to this annotator after the pairs they have
    not seen, or sooner once they skipped a few (rules.py, rule 9: `after_skip`)."""
    now = utcnow()
    with transaction(engine, durable=False) as conn:
        released = _release(
            conn,
            _ASSIGNMENT.c.annotator_id == annotator_id,
            _ASSIGNMENT.c.pair_id == pair_id,
            now=now,
        )
        if released:
            study = Cursor(conn).study_of(annotator_id=annotator_id, submitting=None)
            rules.after_skip(FullQueue(conn), study=study, annotator_id=annotator_id, now=now)


def close_answered(
    conn: Connection, *, study_id: int, annotator_id: int, pair_id: int, pair_version: int
) -> None:
    """Inside the caller's write transaction, for an answer to the pair's current version
    without an open assignment (a skipped pair, a stale tab, an expired reservation): make sure
    the assignment exists and is done (ensure_assignment's rule for taking a pair back)."""
    with Session(bind=conn) as s:
        assignment = ensure_assignment(
            s,
            study_id=study_id,
            pair_id=pair_id,
            annotator_id=annotator_id,
            pair_version=pair_version,
        )
        if assignment.status != "done":
            conn.execute(
                update(_ASSIGNMENT)
                .where(_ASSIGNMENT.c.id == assignment.id)
                .values(status="done", completed_at=utcnow())
            )


def ensure_assignment(
    s: Session, *, study_id: int, pair_id: int, annotator_id: int, pair_version: int
) -> Assignment:
    """The assignment row of the pair's current version (`pair_version`) for a submission that
    arrives without an open one (a stale tab, a skipped pair, an expired reservation): the pair
    is counted again. A released (skipped) one is taken back only while its pair has room,
    else GivenAway (rule 8)."""
    mine = select(Assignment).where(
        Assignment.annotator_id == annotator_id,
        Assignment.pair_id == pair_id,
        Assignment.pair_version == pair_version,
    )
    assignment = s.exec(mine).first()
    if assignment is not None:
        if assignment.status == "skipped":
            # a released reservation: taken back while the pair has room (rule 8)
            target = s.get_one(Study, study_id).overlap_target
            taken = s.connection().execute(_RESERVE, {"b_pair": pair_id, "b_target": target})
            if taken.scalar() is None:
                raise rules.GivenAway
        return assignment
    coins = Coins(s.get_one(Study, study_id).coin_secret)
    assignment = Assignment(
        study_id=study_id,
        pair_id=pair_id,
        annotator_id=annotator_id,
        chosen_position=coins.chosen_position(pair_id=pair_id, annotator_id=annotator_id),
        pair_version=pair_version,
    )
    try:
        with s.begin_nested():
            s.add(assignment)
            s.flush()
    except IntegrityError:
        return s.exec(mine).one()
    s.connection().execute(_RAISE, {"b_pair": pair_id})
    return assignment


def _target_of(study: Study) -> ColumnElement[int]:
    """A pair's target in a query of this study's pairs (see _TARGET)."""
    return func.coalesce(Pair.target, study.overlap_target)


def _count(s: Session, statement: SelectOfScalar[int]) -> int:
    return int(s.exec(statement).one())


@retrying
def progress(engine: Engine, *, annotator_id: int) -> Progress:
    """Done so far, and done plus what is still to come for this annotator (capped by the
    quota). Gold checks count like any pair, those still to come included, so that the total
    does not change when one is shown."""
    with read_session(engine) as s:
        annotator = s.get_one(Annotator, annotator_id)
        return progress_in(s, annotator_id=annotator_id, study=s.get_one(Study, annotator.study_id))


def _progress_counts() -> Any:
    """The counts of `progress_in` as one statement with bound parameters (b_annotator,
    b_study, b_target), built once: a page run pays one round trip and no statement building."""
    mine = _ASSIGNMENT.c.annotator_id == bindparam("b_annotator")
    with_room = _PAIR.c.n_assigned < _TARGET
    real = (_PAIR.c.is_gold == False, _PAIR.c.queued == True)  # noqa: E712

    def count(*conditions: Any, joined: bool) -> Any:
        # joined: this annotator's assignments of the pairs' current versions
        source = (
            _ASSIGNMENT.join(
                _PAIR,
                and_(
                    _PAIR.c.id == _ASSIGNMENT.c.pair_id,
                    _PAIR.c.version == _ASSIGNMENT.c.pair_version,
                ),
            )
            if joined
            else _PAIR
        )
        return select(func.count()).select_from(source).where(*conditions).scalar_subquery()

    return core_select(
        select(func.count())
        .select_from(_ASSIGNMENT)
        .where(mine, _ASSIGNMENT.c.status == "done")
        .scalar_subquery()
        .label("done"),
        select(func.count())
        .select_from(_ASSIGNMENT)
        .where(mine, _ASSIGNMENT.c.status == "active")
        .scalar_subquery()
        .label("active"),
        # "pairs with room that this annotator has not touched" as two index range counts: a
        # NOT EXISTS per pair would grow with the study (49 ms at 10,000 pairs)
        count(_PAIR.c.study_id == bindparam("b_study"), *real, with_room, joined=False).label(
            "with_room"
        ),
        count(mine, *real, with_room, joined=True).label("mine_with_room"),
        count(mine, _ASSIGNMENT.c.status == "skipped", with_room, joined=True).label(
            "skipped_with_room"
        ),
        count(
            _PAIR.c.study_id == bindparam("b_study"),
            _PAIR.c.is_gold == True,  # noqa: E712
            ~_mine(bindparam("b_annotator")),
            joined=False,
        ).label("gold_unseen"),
    )


_PROGRESS = _progress_counts()


def progress_in(s: Session, *, annotator_id: int, study: Study) -> Progress:
    """`progress`, inside the caller's read (the labelling page's one unit of work)."""
    keys = {"b_annotator": annotator_id, "b_study": study.id, "b_target": study.overlap_target}
    row = s.connection().execute(_PROGRESS, keys).one()
    available = row.with_room - row.mine_with_room
    # every gold pair not met yet comes before the queue ends (rules.py, rule 7)
    total = row.done + row.active + row.skipped_with_room + available + row.gold_unseen
    if study.items_per_annotator is not None:
        total = min(total, study.items_per_annotator)
    return Progress(done=row.done, total=max(total, row.done))


@retrying
def queue_status(engine: Engine, *, annotator_id: int) -> QueueStatus:
    """For an annotator the queue gave nothing: what they answered, and whether (until when)
    the pairs left are only reserved by other people, who may not answer them."""
    with read_session(engine) as s:
        annotator = s.get_one(Annotator, annotator_id)
        study = s.get_one(Study, annotator.study_id)
        answered = _count(
            s,
            select(func.count())
            .select_from(Assignment)
            .where(Assignment.annotator_id == annotator_id, Assignment.status == "done"),
        )
        quota = study.items_per_annotator
        if not annotator.active or (quota is not None and answered >= quota):
            return QueueStatus(answered=answered, busy_until=None)
        if gold.qualification(s, study=study, annotator_id=annotator_id).state == gold.FAILED:
            return QueueStatus(answered=answered, busy_until=None, screened_out=True)
        held = aliased(Assignment)
        # from the study's open reservations (index ix_assignment_open), a few per annotator:
        # the earliest held since, and the earliest whose page went away (rule 8)
        last_seen = func.coalesce(held.seen_at, held.assigned_at)
        earliest, away, seen = s.exec(
            select(func.min(held.assigned_at), func.min(held.away_since), func.min(last_seen))
            .select_from(held)
            .join(Pair, col(Pair.id) == held.pair_id)
            .where(
                held.study_id == study.id,
                held.status == "active",
                held.annotator_id != annotator_id,
                Pair.is_gold == False,  # noqa: E712
                Pair.queued == True,  # noqa: E712
                Pair.n_assigned >= _target_of(study),
                ~_mine(annotator_id),
            )
        ).one()
    if earliest is None:
        return QueueStatus(answered=answered, busy_until=None)
    busy_until = as_utc(earliest) + timedelta(seconds=study.reservation_timeout)
    if away is not None:
        busy_until = min(busy_until, as_utc(away) + timedelta(seconds=rules.AWAY_HOLD))
    if seen is not None:
        busy_until = min(busy_until, as_utc(seen) + timedelta(seconds=rules.gone_hold()))
    return QueueStatus(answered=answered, busy_until=busy_until)


def history_in(s: Session, *, annotator_id: int, limit: int | None) -> list[tuple[int, str]]:
    """(pair id, pair key) of this annotator's completed pairs, most recent first, inside the
    caller's read. Gold checks are left out: their first answer is what counts (accuracy,
    qualification); so are answers to an earlier version of a pair (its text is not the
    pair's any more: they cannot be changed)."""
    rows = s.exec(
        select(Pair.id, Pair.pair_key)
        .join(
            Assignment,
            (col(Assignment.pair_id) == Pair.id) & (col(Assignment.pair_version) == Pair.version),
        )
        .where(
            Assignment.annotator_id == annotator_id,
            Assignment.status == "done",
            Pair.is_gold == False,  # noqa: E712
        )
        .order_by(col(Assignment.completed_at).desc(), col(Assignment.id).desc())
        .limit(limit)
    ).all()
    # a stored pair's id is never None (the model's id is None only before its insert)
    return [(pair_id, key) for pair_id, key in rows if pair_id is not None]
