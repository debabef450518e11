"""The labelling step's statements, as plain SQL run on the driver's cursor, and PostgreSQL's
submit function generated from them.

Every Submit stores an answer, closes the annotator's assignment and reserves the next pair,
and the page that follows reads that pair. Through SQLAlchemy each of those statements costs
several times what SQLite or a local PostgreSQL spends running it (benchmarks/README.md), so
the common path runs them here: written once with %(name)s parameters, translated to :name for
sqlite3, inside the caller's transaction (same connection, same commit, same retries).

The rules that decide which statement runs are in annotate/queue/rules.py. `Cursor` is
the fast Queue for them: the common operations here, the rare ones (gold pairs, skipped pairs,
expired reservations) raise NeedsFullRules so that the caller runs the full rules
(annotate/queue/assignment.py). On PostgreSQL the common Submit is one call of a server-side
function, built below from the same fragments and the one list of answer columns, and
installed (replaced) by annotate/store/schema.py under the migration lock: annotate/engine.py
hands `SUBMIT_FUNCTION` to it (the storage layer imports nothing from here).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NoReturn

from sqlalchemy import JSON
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import PoolProxiedConnection

from analysis.vocabulary import ANSWER_COLUMNS
from annotate.queue.rules import (
    ASSIGNMENT_COLUMNS,
    GOLD_EVERY,
    AssignmentRow,
    Coins,
    NeedsFullRules,
    Queue,
    StudyRules,
    ab_coin_sql,
    gold_coin_sql,
)
from annotate.store import db, schema
from annotate.store.clock import naive_utc
from annotate.store.models import Annotation, table_of
from annotate.store.sqlite_engine import readers as sqlite_readers

# An annotation row's answer: the annotations table's answer columns (its two keys are ids here), plus
# where the answer came from. Every submit path derives its columns from this list.
ANSWER_FIELDS = (*ANSWER_COLUMNS, "source")
# SQLModel sets __table__ on table models without declaring it
_ANNOTATION = table_of(Annotation)
_JSON_FIELDS = frozenset(
    name for name in ANSWER_FIELDS if isinstance(_ANNOTATION.c[name].type, JSON)
)


# The version an answer is given to: the one the page showed (%(version)s), or where the
# caller does not say (None), the pair's current version.
VERSION_SQL = (
    "COALESCE(CAST(%(version)s AS integer), (SELECT v.version FROM pair v WHERE v.id = %(pair)s))"
)


def _upsert_sql(answer_fields: tuple[str, ...]) -> str:
    """One row per (study, pair, annotator, version): a later answer replaces the earlier one,
    except for a gold pair, whose first answer is final (qualification and accuracy count it;
    a second tab must not replace a failed answer)."""
    return (
        "INSERT INTO annotation (study_id, pair_id, annotator_id, pair_version, "
        f"{', '.join(answer_fields)})"
        f" VALUES (%(study)s, %(pair)s, %(annotator)s, {VERSION_SQL}, "
        f"{', '.join(f'%({name})s' for name in answer_fields)})"
        " ON CONFLICT (study_id, pair_id, annotator_id, pair_version) DO UPDATE SET "
        + ", ".join(f"{name} = excluded.{name}" for name in answer_fields)
        + " WHERE NOT EXISTS (SELECT 1 FROM pair g WHERE g.id = excluded.pair_id"
        " AND g.is_gold = TRUE)"
    )


_ASSIGNMENT_SELECT = f"SELECT {', '.join(ASSIGNMENT_COLUMNS)} FROM assignment"
_TEXTS = {
    # StudyRules, in its field order
    "study_of": """
        SELECT study.id, study.overlap_target, study.items_per_annotator,
               study.qualification_gold, study.reservation_timeout, study.coin_secret,
               annotator.active AS annotator_active,
               (SELECT a.id FROM assignment a
                 WHERE a.annotator_id = %(annotator)s AND a.status = 'active'
                   AND a.pair_id != %(closing)s
                 ORDER BY a.assigned_at, a.id LIMIT 1) AS active_id,
               (study.adaptive_min IS NOT NULL) AS adaptive
          FROM study JOIN annotator ON annotator.study_id = study.id
         WHERE annotator.id = %(annotator)s""",
    "coin_secret": """
        SELECT study.coin_secret FROM study JOIN annotator ON annotator.study_id = study.id
         WHERE annotator.id = %(annotator)s""",
    # the open assignment of the version answered (an earlier version's is closed as 'revised')
    "close": f"""
        UPDATE assignment SET status = 'done', completed_at = %(now)s
         WHERE annotator_id = %(annotator)s AND pair_id = %(pair)s AND status = 'active'
           AND pair_version = {VERSION_SQL}""",
    "upsert": _upsert_sql(ANSWER_FIELDS),
    # The least-covered real queued pair with room whose current version this annotator has not
    # been given, picked and reserved in one conditional UPDATE (never above the overlap
    # target); it returns the pair and its version. {lock} is
    # PostgreSQL's SKIP LOCKED: many annotators want the same least-covered pair; each takes
    # the first one nobody is reserving right now instead of queueing on its row lock. NO KEY
    # UPDATE, the lock the UPDATE takes anyway: FOR UPDATE would also block every foreign-key
    # check on that pair (each answer and assignment inserted for it) until this commits.
    "reserve_first": """
        UPDATE pair SET n_assigned = n_assigned + 1
         WHERE id = (SELECT p.id FROM pair p
                      WHERE p.study_id = %(study)s AND p.is_gold = FALSE
                        AND p.queued = TRUE AND p.n_assigned < COALESCE(p.target, %(target)s)
                        AND NOT EXISTS (SELECT 1 FROM assignment a
                                         WHERE a.study_id = p.study_id AND a.pair_id = p.id
                                           AND a.annotator_id = %(annotator)s
                                           AND a.pair_version = p.version)
                      ORDER BY p.n_assigned, p.position LIMIT 1 {lock})
           AND n_assigned < COALESCE(target, %(target)s)
        RETURNING id, version""",
    "insert_assignment": """
        INSERT INTO assignment (study_id, pair_id, annotator_id, chosen_position, status,
                                assigned_at, completed_at, draft, pair_version)
        VALUES (%(study)s, %(new_pair)s, %(annotator)s, %(new_position)s,
                'active', %(now)s, NULL, NULL, %(new_version)s)
        RETURNING id""",
    "active": _ASSIGNMENT_SELECT + " WHERE annotator_id = %(annotator)s AND status = 'active'"
    " ORDER BY assigned_at, id LIMIT 1",
    "assignment_by_id": _ASSIGNMENT_SELECT + " WHERE id = %(id)s",
    "has_gold": "SELECT 1 FROM pair WHERE study_id = %(study)s AND is_gold = TRUE LIMIT 1",
    "done_count": """
        SELECT count(*) FROM assignment WHERE annotator_id = %(annotator)s AND status = 'done'""",
    # the annotator's position in their queue: every pair given so far (the gold coin's key)
    "given_count": "SELECT count(*) FROM assignment WHERE annotator_id = %(annotator)s",
    "unassign": "DELETE FROM assignment WHERE id = %(id)s",
    "release": "UPDATE pair SET n_assigned = n_assigned - 1 WHERE id = %(pair)s AND n_assigned > 0",
}
# PostgreSQL only (SQLite has no UPDATE inside WITH, and its statements cost no round trip):
# the close and the upsert as one statement (data-modifying WITH), one round trip less. (Both
# run whatever the SELECT reads; the upsert of a gold pair's second answer returns no row.)
_TEXTS["close_and_upsert"] = (
    "WITH closed AS ("
    + _TEXTS["close"]
    + " RETURNING 1), stored AS ("
    + _TEXTS["upsert"]
    + " RETURNING 1) SELECT count(*) FROM closed"
)
_LOCKS = {"sqlite": "", "postgresql": "FOR NO KEY UPDATE OF p SKIP LOCKED"}
FULL_RULES = "AN001"  # raised by annotate_submit_and_next: it did nothing, apply the full rules


# --- PostgreSQL's submit function, generated -------------------------------------------------
FUNCTION = "annotate_submit_and_next"


def _pg_type(name: str) -> str:
    # SQLAlchemy's dialect constructors carry no annotations
    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
    return _ANNOTATION.c[name].type.compile(dialect=dialect)


def _plpgsql(text: str, names: dict[str, str]) -> str:
    """A fragment with its %(name)s parameters replaced by PL/pgSQL expressions."""
    text = text.replace("{lock}", _LOCKS["postgresql"])
    return re.sub(r"%\((\w+)\)s", lambda m: names[m.group(1)], text)


def submit_function_sql(answer_fields: tuple[str, ...] = ANSWER_FIELDS) -> str:
    """CREATE FUNCTION annotate_submit_and_next: the common Submit in one call (one round trip,
    committed with it in autocommit), the rules of rules.reserve_next for the
    common case, built from this module's fragments:

    - an adaptive study (each answer moves its pair's target, annotate/queue/targets.py, in
      Python), no open assignment for the submitted pair (a stale tab, a re-run after a lost
      acknowledgement), an unknown or deactivated annotator, or a gold pair due in a study
      that has gold pairs: it raises SQLSTATE AN001 and changes nothing; the app then applies
      the full rules;
    - another open assignment, the quota reached or a qualification to pass: the answer is
      stored and no pair is reserved (new_id is null); the app applies the full rules in a
      second transaction, as next_assignment does;
    - otherwise the least-covered real pair with room is reserved and assigned, with the A/B
      coin of Coins.chosen_position (the padded HMAC keys come from the app).
    """
    rule_names = {
        "annotator": "p_annotator",
        "pair": "p_pair",
        "closing": "p_pair",
        "now": "p_now",
        "study": "rules.id",
        "target": "rules.overlap_target",
        "new_pair": "v_pair",
        "new_position": "v_position",
        "new_version": "v_new_version",
        "version": "p_version",
    }
    assert not rule_names.keys() & set(answer_fields), "an answer column named like a parameter"
    names = {**rule_names, **{name: f"p_{name}" for name in answer_fields}}
    fragments = {
        key: _plpgsql(text, names)
        for key, text in {**_TEXTS, "upsert": _upsert_sql(answer_fields)}.items()
        if key
        in (
            "study_of",
            "close",
            "upsert",
            "reserve_first",
            "insert_assignment",
            "has_gold",
            "done_count",
            "given_count",
        )
    }
    coin_keys = {"inner": "p_coin_inner", "outer": "p_coin_outer"}
    ab_coin = ab_coin_sql(pair="v_pair", annotator="p_annotator", **coin_keys)
    gold_coin = gold_coin_sql(
        every="p_gold_every", annotator="p_annotator", position="v_given", **coin_keys
    )
    answer_args = ", ".join(f"p_{name} {_pg_type(name)}" for name in answer_fields)
    return f"""
CREATE FUNCTION {FUNCTION}(
    p_annotator integer, p_pair integer, p_version integer, p_now timestamp with time zone,
    p_gold_every integer, p_coin_inner bytea, p_coin_outer bytea, {answer_args})
RETURNS TABLE (new_id integer, new_study integer, new_pair integer, new_position varchar,
               new_version integer)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
    rules record;
    closed integer;
    v_id integer;
    v_pair integer;
    v_new_version integer;
    v_position varchar;
    v_given bigint;
BEGIN
    SELECT * INTO rules FROM ({fragments["study_of"]}) AS r;
    IF NOT FOUND OR NOT rules.annotator_active THEN
        RAISE EXCEPTION 'no such active annotator' USING ERRCODE = '{FULL_RULES}';
    END IF;
    IF rules.adaptive THEN
        RAISE EXCEPTION 'adaptive study: the answer moves its pair''s target'
            USING ERRCODE = '{FULL_RULES}';
    END IF;
    {fragments["close"]};
    GET DIAGNOSTICS closed = ROW_COUNT;
    IF closed = 0 THEN
        RAISE EXCEPTION 'no open assignment' USING ERRCODE = '{FULL_RULES}';
    END IF;
    {fragments["upsert"]};
    IF rules.active_id IS NULL
       AND COALESCE(rules.qualification_gold, 0) = 0
       AND (rules.items_per_annotator IS NULL
            OR ({fragments["done_count"]}) < rules.items_per_annotator) THEN
        {fragments["reserve_first"]} INTO v_pair, v_new_version;
        IF v_pair IS NOT NULL THEN
            v_position := {ab_coin};
            {fragments["insert_assignment"]} INTO v_id;
            IF EXISTS ({fragments["has_gold"]}) THEN
                v_given := ({fragments["given_count"]});
                IF {gold_coin} THEN
                    RAISE EXCEPTION 'gold pair due' USING ERRCODE = '{FULL_RULES}';
                END IF;
            END IF;
        END IF;
    END IF;
    RETURN QUERY SELECT v_id, rules.id, v_pair, v_position, v_new_version;
END
$fn$"""


def _function_call(answer_fields: tuple[str, ...] = ANSWER_FIELDS) -> str:
    args = ", ".join(f"CAST(%({name})s AS {_pg_type(name)})" for name in answer_fields)
    return (
        f"SELECT * FROM {FUNCTION}(%(annotator)s, %(pair)s, CAST(%(version)s AS integer),"
        " %(now)s, %(gold_every)s,"
        f" %(coin_inner)s, %(coin_outer)s, {args})"
    )


_TEXTS["submit_function"] = _function_call()
_FUNCTION_SQL = submit_function_sql()
_FUNCTION_VERSION = "annotate " + hashlib.sha256(_FUNCTION_SQL.encode()).hexdigest()[:16]
_FUNCTION_COMMENT = f"""
    SELECT obj_description(p.oid, 'pg_proc') FROM pg_proc p
     WHERE p.proname = '{FUNCTION}' AND p.pronamespace = current_schema()::regnamespace"""
# Every version of the function (migration 0003's included), whatever its arguments: CREATE OR
# REPLACE with another argument list would add an overload instead of replacing it.
_DROP_FUNCTIONS = f"""
DO $drop$
DECLARE f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.proname = '{FUNCTION}'
                AND p.pronamespace = current_schema()::regnamespace LOOP
        EXECUTE 'DROP FUNCTION ' || f;
    END LOOP;
END
$drop$"""


def functions_installed(conn: Connection) -> bool:
    """Whether the database holds this code's version of the server-side functions (always
    true on SQLite, which has none)."""
    if conn.dialect.name != "postgresql":
        return True
    comments = conn.exec_driver_sql(_FUNCTION_COMMENT).scalars().all()
    return comments == [_FUNCTION_VERSION]


def install_functions(conn: Connection) -> None:
    """Replace the server-side functions with this code's version (PostgreSQL; nothing on
    SQLite). Run under the migration lock, in the upgrade's transaction (annotate/store/schema.py),
    after the migrations: they are derived from the current tables, not frozen in one."""
    if functions_installed(conn):
        return
    for statement in (
        _DROP_FUNCTIONS,
        _FUNCTION_SQL,
        f"COMMENT ON FUNCTION {FUNCTION} IS '{_FUNCTION_VERSION}'",
    ):
        conn.exec_driver_sql(statement.replace("%", "%%"))  # no parameters: % is SQL's


# Handed to every schema creation and upgrade by the app's one engine door (annotate/engine.py).
SUBMIT_FUNCTION = schema.Generated(
    FUNCTION, installed=functions_installed, install=install_functions
)


def _translate(dialect: str, text: str) -> str:
    text = text.replace("{lock}", _LOCKS[dialect])
    return re.sub(r"%\((\w+)\)s", r":\1", text) if dialect == "sqlite" else text


_SQL = {dialect: {k: _translate(dialect, v) for k, v in _TEXTS.items()} for dialect in _LOCKS}


def _reserved(row: Sequence[Any], *, annotator_id: int, now: datetime) -> AssignmentRow:
    """The assignment a reserving statement inserted, from the (id, study_id, pair_id,
    chosen_position, pair_version) it returned."""
    new_id, study_id, pair_id, chosen_position, pair_version = row
    return AssignmentRow(
        id=new_id,
        study_id=study_id,
        pair_id=pair_id,
        annotator_id=annotator_id,
        chosen_position=chosen_position,
        pair_version=pair_version,
        status="active",
        assigned_at=now,
    )


class Cursor(Queue):
    """The driver's cursor on a SQLAlchemy connection, with this module's statements."""

    def __init__(
        self, conn: Connection | PoolProxiedConnection | Any, *, dialect: Dialect | None = None
    ) -> None:
        # A Connection inside a SQLAlchemy transaction, or (`autocommit`) a pooled connection
        # or one of sqlite_engine.readers' driver connections
        self._dialect = dialect or conn.dialect
        self.dialect = self._dialect.name
        self._conn = conn
        self._dbapi_connection: Any  # the driver's connection (sqlite3 or psycopg)
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
        with db.autocommit(engine) as pooled:
            yield cls(pooled, dialect=engine.dialect)

    def _run(self, name: str, params: dict[str, Any], *, fetch: bool = False) -> Any:
        """Execute (and fetch one row). Driver errors leave as SQLAlchemy's DBAPIError, as if
        SQLAlchemy had run the statement, so `db.retrying` and the pool treat them the same:
        a lost connection is invalidated and the transaction re-run."""
        try:
            self._cursor.execute(self._sql[name], params)
            return self._cursor.fetchone() if fetch else self._cursor.rowcount
        except self._dialect.loaded_dbapi.Error as exc:
            self._raise(exc, name, params, self._cursor)

    def _raise(self, exc: Any, name: str, params: dict[str, Any], cursor: Any) -> NoReturn:
        # exc: the driver's own Error (sqlite3's or psycopg's), as the dialect's checks take it
        dialect = self._dialect
        lost = dialect.is_disconnect(exc, self._dbapi_connection, cursor)
        if lost and hasattr(self._conn, "invalidate"):  # (a reader connection is closed)
            self._conn.invalidate(exc)
        raise DBAPIError.instance(
            self._sql[name], params, exc, dialect.loaded_dbapi.Error, connection_invalidated=lost
        ) from exc

    def _time(self, value: datetime | None) -> datetime | str | None:
        # SQLite stores SQLAlchemy's DateTime as this text; PostgreSQL takes the object
        if value is None or self.dialect != "sqlite":
            return value
        return naive_utc(value).isoformat(" ", "microseconds")  # %Y-%m-%d %H:%M:%S.%f

    def _assignment(self, row: Sequence[Any] | None) -> AssignmentRow | None:
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
        values = StudyRules(*row)
        return values._replace(
            annotator_active=bool(values.annotator_active), adaptive=bool(values.adaptive)
        )

    def coins_of(self, *, annotator_id: int) -> Coins | None:
        """The keyed coins of the annotator's study (None: no such annotator)."""
        row = self._run("coin_secret", {"annotator": annotator_id}, fetch=True)
        return None if row is None else Coins(row[0])

    def _answer_params(self, values: dict[str, Any]) -> dict[str, Any]:
        params = {name: values.get(name) for name in ANSWER_FIELDS}
        params["submitted_at"] = self._time(params["submitted_at"])
        for name in _JSON_FIELDS:
            if params[name] is not None:
                params[name] = json.dumps(params[name])
        return params

    def store_answer(
        self,
        *,
        study_id: int,
        pair_id: int,
        annotator_id: int,
        values: dict[str, Any],
        now: datetime,
        version: int | None,
    ) -> bool:
        """Upsert the answer to the pair's `version` (None: its current one) and mark the
        annotator's open assignment for that version done. False if there was no open
        assignment (the caller repairs that, or hands over to the full rules)."""
        params = self._answer_params(values)
        params.update(
            study=study_id,
            pair=pair_id,
            annotator=annotator_id,
            now=self._time(now),
            version=version,
        )
        if self.dialect == "postgresql":
            return bool(self._run("close_and_upsert", params, fetch=True)[0] == 1)
        closed = bool(self._run("close", params) == 1)
        self._run("upsert", params)
        return closed

    def submit_in_one_call(
        self,
        *,
        pair_id: int,
        annotator_id: int,
        values: dict[str, Any],
        now: datetime,
        coins: Coins,
        version: int | None,
    ) -> tuple[bool, AssignmentRow | None]:
        """PostgreSQL, on an autocommit connection: store the answer, close the assignment and
        reserve the next pair under the common rules, committed in one round trip (the
        generated function, submit_function_sql). Returns whether it was done and the new
        assignment (None: no pair was reserved, the full rules decide); (False, None) when
        nothing was done and the full rules must run instead."""
        params = self._answer_params(values)
        params.update(
            annotator=annotator_id,
            pair=pair_id,
            version=version,
            now=now,
            gold_every=GOLD_EVERY,
            coin_inner=coins.inner,
            coin_outer=coins.outer,
        )
        try:
            row = self._run("submit_function", params, fetch=True)
        except DBAPIError as exc:
            # AN001: the function says so; 42883: no such function (yet), e.g. a replica of
            # another release replaced it: the full rules do the same work
            if getattr(exc.orig, "sqlstate", None) in (FULL_RULES, "42883"):
                return False, None
            raise
        if row[0] is None:
            return True, None
        return True, _reserved(row, annotator_id=annotator_id, now=now)

    # --- the Queue of annotate/queue/rules.py: the common operations -----------------

    def reserve_least_covered(
        self, *, study: StudyRules, annotator_id: int, now: datetime
    ) -> AssignmentRow | None:
        """Reserve the least-covered open pair for this annotator and give it to them (None
        when no pair has room, or on PostgreSQL none that nobody is reserving right now)."""
        keys = {"study": study.id, "target": study.overlap_target, "annotator": annotator_id}
        row = self._run("reserve_first", keys, fetch=True)
        if row is None:
            return None
        pair_id, version = row
        return self.assign(
            study=study, pair_id=pair_id, pair_version=version, annotator_id=annotator_id, now=now
        )

    def assign(
        self,
        *,
        study: StudyRules,
        pair_id: int,
        pair_version: int,
        annotator_id: int,
        now: datetime,
    ) -> AssignmentRow:
        """The assignment row for a pair (its current version) already reserved (n_assigned
        raised) by the caller."""
        values: dict[str, Any] = {
            "study_id": study.id,
            "pair_id": pair_id,
            "annotator_id": annotator_id,
            "chosen_position": study.coins.chosen_position(
                pair_id=pair_id, annotator_id=annotator_id
            ),
            "pair_version": pair_version,
        }
        params = {
            "study": study.id,
            "new_pair": pair_id,
            "annotator": annotator_id,
            "new_position": values["chosen_position"],
            "new_version": pair_version,
            "now": self._time(now),
        }
        (new_id,) = self._run("insert_assignment", params, fetch=True)
        return AssignmentRow(id=new_id, status="active", assigned_at=now, **values)

    def unassign(self, assignment: AssignmentRow) -> None:
        """Undo a reservation in the same transaction: the pair goes back."""
        self._run("unassign", {"id": assignment.id})
        self._run("release", {"pair": assignment.pair_id})

    def active(self, *, annotator_id: int) -> AssignmentRow | None:
        return self._assignment(self._run("active", {"annotator": annotator_id}, fetch=True))

    def assignment_by_id(self, assignment_id: int) -> AssignmentRow | None:
        return self._assignment(self._run("assignment_by_id", {"id": assignment_id}, fetch=True))

    def has_gold(self, *, study_id: int) -> bool:
        return bool(self._run("has_gold", {"study": study_id}, fetch=True) is not None)

    def done_count(self, *, annotator_id: int) -> int:
        return int(self._run("done_count", {"annotator": annotator_id}, fetch=True)[0])

    def given_count(self, *, annotator_id: int) -> int:
        return int(self._run("given_count", {"annotator": annotator_id}, fetch=True)[0])

    # --- the rare operations: the full rules (assignment.FullQueue) ---------------------

    def qualification_state(self, *, study: StudyRules, annotator_id: int) -> str:
        raise NeedsFullRules

    def serve_gold(
        self, *, study: StudyRules, annotator_id: int, now: datetime
    ) -> AssignmentRow | None:
        raise NeedsFullRules

    def open_candidates(self, *, study: StudyRules, annotator_id: int) -> list[int]:
        raise NeedsFullRules

    def reserve_pair(
        self, *, study: StudyRules, pair_id: int, annotator_id: int, now: datetime
    ) -> AssignmentRow | None:
        raise NeedsFullRules

    def reopen_skipped(
        self, *, study: StudyRules, annotator_id: int, now: datetime
    ) -> AssignmentRow | None:
        raise NeedsFullRules

    def release_expired(self, *, study: StudyRules, now: datetime) -> int:
        raise NeedsFullRules

    def skipped_with_room(self, *, study: StudyRules, annotator_id: int) -> int:
        raise NeedsFullRules
