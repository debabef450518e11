"""The labelling step's hot statements, as plain SQL run on the driver's cursor.

Every Submit stores an answer, closes the annotator's assignment and reserves the next pair,
and the page that follows reads that pair. Through SQLAlchemy each of those statements costs
several times what SQLite or a local PostgreSQL spends running it (benchmarks/README.md), so
the common path runs them here: written once with %(name)s parameters, translated to :name for
sqlite3, inside the caller's SQLAlchemy transaction (same connection, same commit, same
retries). On PostgreSQL the common Submit is one call of a server-side function (migration
0003), committed in the same round trip. The rare paths (gold pairs, skipped pairs, repairs)
stay on SQLAlchemy.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import PoolProxiedConnection

from analysis.aspect_scores import dumps as aspects_json
from analysis.tables import ANSWER_COLUMNS
from annotate.sqlite_engine import readers as sqlite_readers

ASSIGNMENT_COLUMNS = (
    "id",
    "study_id",
    "pair_id",
    "annotator_id",
    "chosen_position",
    "status",
    "assigned_at",
    "completed_at",
    "draft",
)
# An annotation row's answer: the contract's answer columns (its two keys are ids here), plus
# where the answer came from.
ANSWER_FIELDS = (*ANSWER_COLUMNS, "source")
# The answer parameters of migration 0003's annotate_submit_and_next, which predates aspect
# scores: an answer that has them is stored by the full rules (annotations.submit_and_next).
SUBMIT_FUNCTION_FIELDS = tuple(name for name in ANSWER_FIELDS if name != "aspects")


@dataclass(frozen=True)
class AssignmentRow:
    """A read-only copy of an assignment row: which pair an annotator holds, in which A/B
    order, with the draft answers saved so far."""

    id: int
    study_id: int
    pair_id: int
    annotator_id: int
    chosen_position: str
    status: str
    assigned_at: datetime
    completed_at: datetime | None = None
    draft: dict[str, Any] | None = None

    @classmethod
    def of(cls, assignment) -> AssignmentRow:
        """From an ORM Assignment (the rare paths)."""
        return cls(**{name: getattr(assignment, name) for name in ASSIGNMENT_COLUMNS})


class StudyRules(NamedTuple):
    """What the queue needs of the annotator's study, and the annotator's open assignment
    other than the pair being submitted (active_id)."""

    id: int
    overlap_target: int
    items_per_annotator: int | None
    qualification_gold: int | None
    active_id: int | None


_ASSIGNMENT_SELECT = f"SELECT {', '.join(ASSIGNMENT_COLUMNS)} FROM assignment"
_TEXTS = {
    "study_of": """
        SELECT study.id, study.overlap_target, study.items_per_annotator,
               study.qualification_gold,
               (SELECT a.id FROM assignment a
                 WHERE a.annotator_id = %(annotator)s AND a.status = 'active'
                   AND a.pair_id != %(closing)s
                 ORDER BY a.assigned_at, a.id LIMIT 1) AS active_id
          FROM study JOIN annotator ON annotator.study_id = study.id
         WHERE annotator.id = %(annotator)s""",
    "close": """
        UPDATE assignment SET status = 'done', completed_at = %(now)s
         WHERE annotator_id = %(annotator)s AND pair_id = %(pair)s AND status = 'active'""",
    "upsert": (
        f"INSERT INTO annotation (study_id, pair_id, annotator_id, {', '.join(ANSWER_FIELDS)})"
        f" VALUES (%(study)s, %(pair)s, %(annotator)s, "
        f"{', '.join(f'%({name})s' for name in ANSWER_FIELDS)})"
        " ON CONFLICT (study_id, pair_id, annotator_id) DO UPDATE SET "
        + ", ".join(f"{name} = excluded.{name}" for name in ANSWER_FIELDS)
    ),
    # The least-covered real pair with room that this annotator has not been given, picked
    # and reserved in one conditional UPDATE (never above the overlap target). {lock} is
    # PostgreSQL's SKIP LOCKED: many annotators want the same least-covered pair; each takes
    # the first one nobody is reserving right now instead of queueing on its row lock. NO KEY
    # UPDATE, the lock the UPDATE takes anyway: FOR UPDATE would also block every foreign-key
    # check on that pair (each answer and assignment inserted for it) until this commits.
    "reserve_first": """
        UPDATE pair SET n_assigned = n_assigned + 1
         WHERE id = (SELECT p.id FROM pair p
                      WHERE p.study_id = %(study)s AND p.is_gold = FALSE
                        AND p.n_assigned < %(target)s
                        AND NOT EXISTS (SELECT 1 FROM assignment a
                                         WHERE a.study_id = p.study_id AND a.pair_id = p.id
                                           AND a.annotator_id = %(annotator)s)
                      ORDER BY p.n_assigned, p.position LIMIT 1 {lock})
           AND n_assigned < %(target)s
        RETURNING id""",
    "insert_assignment": """
        INSERT INTO assignment (study_id, pair_id, annotator_id, chosen_position, status,
                                assigned_at, completed_at, draft)
        VALUES (%(study_id)s, %(pair_id)s, %(annotator_id)s, %(chosen_position)s,
                %(status)s, %(assigned_at)s, NULL, NULL)
        RETURNING id""",
    "active": _ASSIGNMENT_SELECT + " WHERE annotator_id = %(annotator)s AND status = 'active'"
    " ORDER BY assigned_at, id LIMIT 1",
    "assignment_by_id": _ASSIGNMENT_SELECT + " WHERE id = %(id)s",
    "has_gold": "SELECT 1 FROM pair WHERE study_id = %(study)s AND is_gold = TRUE LIMIT 1",
    "done_count": """
        SELECT count(*) FROM assignment WHERE annotator_id = %(annotator)s AND status = 'done'""",
}
# PostgreSQL only (SQLite has no UPDATE inside WITH, and its statements cost no round trip):
# each pair of statements above that follow one another, as one statement (data-modifying
# WITH), one round trip less each.
_TEXTS["close_and_upsert"] = (
    "WITH closed AS ("
    + _TEXTS["close"]
    + " RETURNING 1) "
    + _TEXTS["upsert"]
    + " RETURNING (SELECT count(*) FROM closed)"
)
# chosen_position_for in SQL: the first byte of sha256("study:pair:annotator"), odd -> A.
_COIN = (
    "CASE WHEN get_byte(sha256(convert_to(CAST(%(study)s AS text) || ':' || CAST(picked.id AS"
    " text) || ':' || CAST(%(annotator)s AS text), 'UTF8')), 0) & 1 = 1 THEN 'A' ELSE 'B' END"
)
_TEXTS["reserve_and_assign"] = (
    "WITH picked AS (" + _TEXTS["reserve_first"] + ") "
    "INSERT INTO assignment (study_id, pair_id, annotator_id, chosen_position, status,"
    " assigned_at, completed_at, draft)"
    f" SELECT %(study)s, picked.id, %(annotator)s, {_COIN}, 'active', %(now)s, NULL, NULL"
    " FROM picked RETURNING id, study_id, pair_id, chosen_position"
)
# PostgreSQL: the common Submit in one call of the server-side function made by migration 0003
# (commits in the same round trip); SQLSTATE AN001 means "apply the full rules".
_TEXTS["submit_function"] = (
    "SELECT * FROM annotate_submit_and_next("
    "%(annotator)s, %(pair)s, %(now)s::timestamp, %(gold_every)s, "
    + ", ".join(
        f"%({name})s::timestamp" if name == "submitted_at" else f"%({name})s"
        for name in SUBMIT_FUNCTION_FIELDS
    )
    + ")"
)
_TEXTS["unassign"] = "DELETE FROM assignment WHERE id = %(id)s"
_TEXTS["release"] = "UPDATE pair SET n_assigned = n_assigned - 1 WHERE id = %(pair)s"
_LOCKS = {"sqlite": "", "postgresql": "FOR NO KEY UPDATE OF p SKIP LOCKED"}
FULL_RULES = "AN001"  # raised by annotate_submit_and_next: it did nothing, apply the full rules


def chosen_position_for(*, study_id: int, pair_id: int, annotator_id: int) -> str:
    """Deterministic, balanced coin: same annotator and pair, same order on every reload."""
    digest = hashlib.sha256(f"{study_id}:{pair_id}:{annotator_id}".encode()).digest()
    return "A" if digest[0] & 1 else "B"


def _translate(dialect: str, text: str) -> str:
    text = text.replace("{lock}", _LOCKS[dialect])
    return re.sub(r"%\((\w+)\)s", r":\1", text) if dialect == "sqlite" else text


_SQL = {dialect: {k: _translate(dialect, v) for k, v in _TEXTS.items()} for dialect in _LOCKS}


def _reserved(row, *, annotator_id: int, now: datetime) -> AssignmentRow:
    """The assignment a reserving statement inserted, from the (id, study_id, pair_id,
    chosen_position) it returned."""
    new_id, study_id, pair_id, chosen_position = row
    return AssignmentRow(
        id=new_id,
        study_id=study_id,
        pair_id=pair_id,
        annotator_id=annotator_id,
        chosen_position=chosen_position,
        status="active",
        assigned_at=now,
    )


class Cursor:
    """The driver's cursor on a SQLAlchemy connection, with this module's statements."""

    def __init__(self, conn: Connection | PoolProxiedConnection | Any, *, dialect=None):
        # A Connection inside a SQLAlchemy transaction, or (`autocommit`) a pooled connection
        # or one of sqlite_engine.readers' driver connections
        self._dialect = dialect or conn.dialect
        self.dialect = self._dialect.name
        self._conn = conn
        if isinstance(conn, PoolProxiedConnection):
            self._dbapi_connection = conn.dbapi_connection
        elif isinstance(conn, Connection):
            self._dbapi_connection = conn.connection.dbapi_connection
        else:
            self._dbapi_connection = conn
        self._sql = _SQL[self.dialect]
        self._cursor = self._dbapi_connection.cursor()

    @classmethod
    @contextmanager
    def autocommit(cls, engine: Engine) -> Iterator[Cursor]:
        """For one statement that is its own transaction (a read; on PostgreSQL also the
        Submit function): a pooled connection in autocommit, without SQLAlchemy's Connection
        and its begin and commit, which cost more than a read. On SQLite it is one of
        sqlite_engine.ReadConnections: in autocommit, so a read takes no lock, and query_only,
        so nothing can be written through it."""
        readers = sqlite_readers(engine)
        if readers is not None:
            with readers.connection() as driver:
                yield cls(driver, dialect=engine.dialect)
            return
        pooled = engine.raw_connection()
        postgres = engine.dialect.name == "postgresql"
        try:
            if postgres:
                pooled.dbapi_connection.autocommit = True
            yield cls(pooled, dialect=engine.dialect)
        finally:
            driver = pooled.dbapi_connection  # None once invalidated
            if postgres and driver is not None and not driver.closed:
                driver.autocommit = False
            pooled.close()

    def _run(self, name: str, params: dict, *, fetch: bool = False):
        """Execute (and fetch one row). Driver errors leave as SQLAlchemy's DBAPIError, as if
        SQLAlchemy had run the statement, so `db.retrying` and the pool treat them the same:
        a lost connection is invalidated and the transaction re-run."""
        try:
            self._cursor.execute(self._sql[name], params)
            return self._cursor.fetchone() if fetch else self._cursor.rowcount
        except self._dialect.loaded_dbapi.Error as exc:
            self._raise(exc, name, params, self._cursor)

    def _raise(self, exc, name: str, params: dict, cursor):
        dialect = self._dialect
        lost = dialect.is_disconnect(exc, self._dbapi_connection, cursor)
        if lost and hasattr(self._conn, "invalidate"):  # (a reader connection is closed)
            self._conn.invalidate(exc)
        raise DBAPIError.instance(
            self._sql[name], params, exc, dialect.loaded_dbapi.Error, connection_invalidated=lost
        ) from exc

    def _time(self, value: datetime | None):
        # SQLite stores SQLAlchemy's DateTime as this text; PostgreSQL takes the object
        if value is None or self.dialect != "sqlite":
            return value
        return value.replace(tzinfo=None).isoformat(" ", "microseconds")  # %Y-%m-%d %H:%M:%S.%f

    def _assignment(self, row) -> AssignmentRow | None:
        if row is None:
            return None
        values = dict(zip(ASSIGNMENT_COLUMNS, row, strict=True))
        if self.dialect == "sqlite":  # PostgreSQL's driver already returns these as objects
            for name in ("assigned_at", "completed_at"):
                if values[name] is not None:
                    values[name] = datetime.fromisoformat(values[name])
            if values["draft"] is not None:
                values["draft"] = json.loads(values["draft"])
        return AssignmentRow(**values)

    def study_of(self, *, annotator_id: int, submitting: int | None) -> StudyRules:
        keys = {"annotator": annotator_id, "closing": -1 if submitting is None else submitting}
        row = self._run("study_of", keys, fetch=True)
        if row is None:
            raise LookupError(f"no annotator with id {annotator_id}")
        return StudyRules(*row)

    def store_answer(
        self, *, study_id: int, pair_id: int, annotator_id: int, values: dict, now: datetime
    ) -> bool:
        """Upsert the answer and mark the annotator's open assignment for this pair done.
        False if there was no open assignment (the caller repairs that)."""
        params = {name: values[name] for name in ANSWER_FIELDS}
        params["submitted_at"] = self._time(params["submitted_at"])
        params["aspects"] = aspects_json(params["aspects"])  # JSON text for either driver
        params.update(study=study_id, pair=pair_id, annotator=annotator_id, now=self._time(now))
        if self.dialect == "postgresql":
            return self._run("close_and_upsert", params, fetch=True)[0] == 1
        closed = self._run("close", params) == 1
        self._run("upsert", params)
        return closed

    def submit_in_one_call(
        self, *, pair_id: int, annotator_id: int, values: dict, now: datetime, gold_every: int
    ) -> tuple[bool, AssignmentRow | None]:
        """PostgreSQL, on an autocommit connection: store the answer, close the assignment and
        reserve the next pair under the common rules, committed in one round trip (migration
        0003's function). Returns whether it was done and the new assignment (None: no pair
        was reserved, the full rules decide); (False, None) when nothing was done and the
        full rules must run instead (no open assignment for the pair, a gold pair due)."""
        if values.get("aspects") is not None:
            return False, None  # the function cannot store them: the full rules do
        params = {name: values[name] for name in SUBMIT_FUNCTION_FIELDS}
        params.update(annotator=annotator_id, pair=pair_id, now=now, gold_every=gold_every)
        try:
            row = self._run("submit_function", params, fetch=True)
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) == FULL_RULES:
                return False, None
            raise
        if row[0] is None:
            return True, None
        return True, _reserved(row, annotator_id=annotator_id, now=now)

    def reserve_and_assign(
        self, *, study: StudyRules, annotator_id: int, now: datetime
    ) -> AssignmentRow | None:
        """Reserve the least-covered open pair for this annotator and give it to them (None
        when no pair has room)."""
        keys = {"study": study.id, "target": study.overlap_target, "annotator": annotator_id}
        if self.dialect == "postgresql":
            row = self._run("reserve_and_assign", {**keys, "now": now}, fetch=True)
            if row is None:
                return None
            return _reserved(row, annotator_id=annotator_id, now=now)
        row = self._run("reserve_first", keys, fetch=True)
        return (
            None
            if row is None
            else self.assign(study=study, pair_id=row[0], annotator_id=annotator_id, now=now)
        )

    def assign(
        self, *, study: StudyRules, pair_id: int, annotator_id: int, now: datetime
    ) -> AssignmentRow:
        """The assignment row for a pair already reserved (n_assigned raised) by the caller."""
        values = {
            "study_id": study.id,
            "pair_id": pair_id,
            "annotator_id": annotator_id,
            "chosen_position": chosen_position_for(
                study_id=study.id, pair_id=pair_id, annotator_id=annotator_id
            ),
            "status": "active",
            "assigned_at": now,
        }
        params = {**values, "assigned_at": self._time(now)}
        (new_id,) = self._run("insert_assignment", params, fetch=True)
        return AssignmentRow(id=new_id, **values)

    def unassign(self, assignment: AssignmentRow) -> None:
        """Undo reserve_and_assign in the same transaction: the pair goes back."""
        self._run("unassign", {"id": assignment.id})
        self._run("release", {"pair": assignment.pair_id})

    def active(self, *, annotator_id: int) -> AssignmentRow | None:
        return self._assignment(self._run("active", {"annotator": annotator_id}, fetch=True))

    def assignment_by_id(self, assignment_id: int) -> AssignmentRow | None:
        return self._assignment(self._run("assignment_by_id", {"id": assignment_id}, fetch=True))

    def has_gold(self, *, study_id: int) -> bool:
        return self._run("has_gold", {"study": study_id}, fetch=True) is not None

    def done_count(self, *, annotator_id: int) -> int:
        return self._run("done_count", {"annotator": annotator_id}, fetch=True)[0]
